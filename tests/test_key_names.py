"""Column names and category values outside MLflow's key alphabet
(``age (years)``, ``wage €/week``, the missing-value code ``.``, ``a/b`` next to ``a_b``) reach
MLflow through one injective encoder (``names.key_segment``); a gate run on such a table is recorded
with status ok, every key valid, and no two names sharing a key."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate import names
from privacy_gate.names import bounded_key, disclosure_metric, key_segment, subgroup_metric

from .conftest import EXAMPLE

HOSTILE = [
    "age (years)",
    "hours per week (h)",
    "wage €/week",
    "âge (années)",
    ".",
    "..",
    "",
    " ",
    "a/b",
    "a_b",
    "a_b-h0123456789",
    "x_y",
    "a_x_b",
    "a:b",
    "line\nbreak",
    "tab\tname",
    "/",
    "//",
    "-",
    "#9231c165fc",
    "_9231c165fc",
    "Outlying-US(Guam-USVI-etc)",
    "Outlying-US_Guam-USVI-etc_",
    "1st-4th|Preschool",
    "1st-4th_Preschool",
    " Female",
    "Female",
    "x" * 400,
]


def _mlflow_accepts(key: str) -> bool:
    from mlflow.exceptions import MlflowException
    from mlflow.utils.validation import (
        _validate_metric_name,
        _validate_param_name,
        _validate_tag_name,
    )

    try:
        for check in (_validate_metric_name, _validate_param_name, _validate_tag_name):
            check(key)
    except MlflowException:
        return False
    return len(key) <= names.MAX_KEY_LENGTH


def test_key_segments_are_valid_and_injective():
    segments = [key_segment(t) for t in HOSTILE]
    assert len(set(segments)) == len(HOSTILE), "two names share a key segment"
    for text, seg in zip(HOSTILE, segments):
        assert "/" not in seg and names.INTERSECTION_JOIN not in seg, (text, seg)
        assert _mlflow_accepts(bounded_key(subgroup_metric(("col",), (text,), "dcr.auc"))), text
        assert _mlflow_accepts(bounded_key(disclosure_metric("inference", "risk", text))), text
    assert key_segment("a/b") != key_segment("a_b") and key_segment(".") != key_segment("_")


def test_intersections_stay_apart():
    keys = {
        subgroup_metric(c, v, "n_members")
        for c, v in [
            (("a_x_b",), ("v",)),
            (("a", "b"), ("v", "w")),
            (("a_", "x_b"), ("v", "w")),
            (("a__x", "b"), ("v", "w")),
            (("a", "b"), ("v_x_w", "u")),
            (("a", "b"), ("v", "x_w_x_u")),
        ]
    }
    assert len(keys) == 6


def test_plain_names_keep_their_keys():
    """Golden keys of ordinary names are unchanged (tests/golden)."""
    assert (
        subgroup_metric(("sex", "race"), ("Female", "Black"), "dcr.auc")
        == "subgroup/sex_x_race/Female_x_Black/dcr.auc"
    )
    assert (
        subgroup_metric(("marital_status",), ("Married-AF-spouse",), "n_members")
        == "subgroup/marital_status/Married-AF-spouse/n_members"
    )
    assert (
        disclosure_metric("inference", "risk_lower", "capital_gain")
        == "inference.capital_gain.risk_lower"
    )
    assert key_segment("âge") == "âge"
    assert (
        key_segment("#9231c165fc") == "_9231c165fc"
    )  # a hashed record value keeps its key (test_label_privacy)
    assert bounded_key("subgroup/sex/Female/dcr.auc") == "subgroup/sex/Female/dcr.auc"


RENAMED = {
    "age": "age (years)",
    "hours_per_week": "hours per week (h)",
    "capital_gain": "wage €/week",
    "education": "âge (années)",
    "race": "race/ethnicity",
}
#: race values: the missing-value code ".", and two values that a lossy encoder maps to one key
RACE_VALUES = {"Other": ".", "Amer-Indian-Eskimo": "a/b", "Asian-Pac-Islander": "a_b"}


@pytest.fixture(scope="module")
def hostile_files(small_adult, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-names")
    real = pd.read_csv(small_adult / "real.csv")
    independent = pd.read_csv(small_adult / "independent.csv")
    for df in (real, independent):
        df["race"] = df["race"].replace(RACE_VALUES)
    real, independent = real.rename(columns=RENAMED), independent.rename(columns=RENAMED)
    for name, df in {
        "train": real.iloc[:1800],
        "holdout": real.iloc[1800:2400],
        "reference": real.iloc[2400:],
        "synthetic": independent,
    }.items():
        df.to_csv(folder / f"{name}.csv", index=False)
    spec = yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"]
    spec["columns"] = {RENAMED.get(c, c): col for c, col in spec["columns"].items()}
    race = spec["columns"]["race/ethnicity"]
    race["categories"] = [RACE_VALUES.get(v, v) for v in race["categories"]]
    spec["subgroups"] = ["sex", "race/ethnicity"]
    spec["quasi_identifiers"] = [
        RENAMED.get(c, c) for c in spec.get("quasi_identifiers") or []
    ] or None
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True))
    (folder / "judging.yaml").write_text(
        yaml.safe_dump(
            {
                "attacks": [{"name": "dcr"}],
                "targets": {"n_members": 300, "n_non_members": 300, "seed": 5},
                "audit": {"min_group_size": 30, "intersections": [["sex", "race/ethnicity"]]},
                "mace": {"n_permutations": 20},
            }
        )
    )
    return folder


def test_a_gate_on_hostile_names_is_recorded_with_valid_keys(hostile_files, tmp_path):
    from mlflow.tracking import MlflowClient

    from privacy_gate import tracking
    from privacy_gate.cli import app

    f = hostile_files
    args = [
        "gate",
        *(
            x
            for part in ("train", "holdout", "reference", "synthetic")
            for x in (f"--{part}", str(f / f"{part}.csv"))
        ),
        "--spec",
        str(f / "spec.yaml"),
        "--config",
        str(f / "judging.yaml"),
        "--workdir",
        str(tmp_path),
        "--json",
        "--orchestrator",
        "local",
    ]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "ok", (summary["reasons"], result.stderr[-3000:])
    run = MlflowClient(tracking.default_tracking_uri(tmp_path)).get_run(summary["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.tags[names.TAG_STATUS] == "ok"
    logged = {**run.data.metrics, **run.data.params, **run.data.tags}
    assert all(_mlflow_accepts(k) for k in logged), [k for k in logged if not _mlflow_accepts(k)]
    # every figure is recorded under its key among the run's figures (the MLflow metrics are the
    # headline)
    figures = json.loads(
        Path(
            MlflowClient(tracking.default_tracking_uri(tmp_path)).download_artifacts(
                summary["run_id"], names.ART_METRICS_ALL
            )
        ).read_text()
    )
    # the three race values have three keys (and "." is not a path step)
    race = {
        k.split("/")[2]
        for k in figures
        if k.startswith(f"subgroup/{key_segment('race/ethnicity')}/")
    }
    assert {key_segment(v) for v in RACE_VALUES.values()} <= race
    # a secret column (not a declared quasi-identifier) with a name outside MLflow's alphabet
    assert any(k.startswith(f"inference.{key_segment('wage €/week')}.") for k in figures)
    assert any(
        k.startswith(f"subgroup/sex{names.INTERSECTION_JOIN}{key_segment('race/ethnicity')}/")
        for k in figures
    )
