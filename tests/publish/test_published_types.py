"""A published release keeps the input's types: booleans stay booleans,
integer-coded categories stay integers, integer counts stay integers. The gate judges a conformed
table (categories as text, numbers as floats); releases used to be published in those judging
types ("True"/"False" and "3" as text, 39 as 39.0). What CSV cannot express is in the reader
contract (docs/records.md): an integer or boolean column with gaps reads back as float / object.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.data import conform
from privacy_gate.publication.publish import ReleaseStore, read_quarantined
from privacy_gate.spec import DatasetSpec

from ..conftest import EXAMPLE, lighten

runner = CliRunner()
BASE = yaml.safe_load(EXAMPLE.read_text())
TYPED_COLUMNS = {
    "smoker": {"kind": "categorical"},  # bool
    "region": {"kind": "categorical", "categories": [1, 2, 3, 4, 5]},  # integer codes
    "plan": {"kind": "categorical"},  # integer codes with gaps
    "insured": {"kind": "categorical"},
}  # bool with gaps


def _typed(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = len(df)
    gaps = rng.random(n) < 0.05
    plan = pd.Series(rng.integers(0, 4, n), dtype="Int64").mask(gaps)
    insured = pd.Series(rng.random(n) < 0.8, dtype="boolean").mask(rng.random(n) < 0.05)
    return df.assign(
        smoker=rng.random(n) < 0.3,
        region=rng.integers(1, 6, n),
        plan=plan.to_numpy(),
        insured=insured.to_numpy(),
    )


def _spec() -> dict:
    spec = copy.deepcopy(BASE["dataset"]["spec"])
    spec["columns"].update(TYPED_COLUMNS)
    return spec


@pytest.fixture(scope="module")
def typed(small_adult, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("typed")
    real = _typed(pd.read_csv(small_adult / "real.csv"), 1)
    real.to_csv(folder / "real.csv", index=False)
    for name, part in {
        "train": real.iloc[:1800],
        "holdout": real.iloc[1800:2400],
        "reference": real.iloc[2400:],
    }.items():
        part.to_csv(folder / f"{name}.csv", index=False)
    _typed(pd.read_csv(small_adult / "independent.csv"), 2).to_csv(
        folder / "synthetic.csv", index=False
    )
    (folder / "spec.yaml").write_text(yaml.safe_dump(_spec()))
    return folder


def _judging(folder: Path) -> Path:
    path = folder / "judging.yaml"
    path.write_text(yaml.safe_dump(lighten({"attacks": [{"name": "dcr"}, {"name": "domias"}]})))
    return path


def test_a_gate_only_release_is_published_in_the_types_it_was_given(typed, tmp_path):
    args = [
        "gate",
        *(
            a
            for k in ("train", "holdout", "reference", "synthetic")
            for a in (f"--{k}", str(typed / f"{k}.csv"))
        ),
        "--spec",
        str(typed / "spec.yaml"),
        "--config",
        str(_judging(typed)),
        "--workdir",
        str(tmp_path),
        "--orchestrator",
        "local",
        "--json",
    ]
    result = runner.invoke(app, args, catch_exceptions=False)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.exit_code == 0 and summary["verdict"] == "APPROVE", (
        summary["reasons"],
        result.stderr[-2000:],
    )
    (published,) = (tmp_path / "published").glob("adult-*/adult-*.parquet")
    out = pd.read_parquet(published)
    given = pd.read_csv(typed / "synthetic.csv")
    dtypes = out.dtypes.astype(str).to_dict()
    assert dtypes["smoker"] == "bool" and dtypes["region"] == "int64"
    assert (
        dtypes["plan"] == "Int64" and dtypes["insured"] == "boolean"
    )  # gaps: pandas' nullable types
    assert (
        dtypes["age"] == "int64"
        and dtypes["hours_per_week"] == "int64"
        and dtypes["education"] == "object"
    )
    for column in ("smoker", "region", "age", "fnlwgt"):
        assert out[column].tolist() == given[column].tolist(), column
    assert (
        out["plan"].astype("Float64").tolist() == pd.array(given["plan"], dtype="Float64").tolist()
    )
    assert out["insured"].isna().sum() == given["insured"].isna().sum()
    assert (
        out["insured"].dropna().astype(bool).to_numpy()
        == given["insured"].dropna().astype(bool).to_numpy()
    ).all()


def test_a_csv_release_keeps_what_csv_can_express(typed, tmp_path):
    """A release run publishing CSV: booleans, integer codes and counts read back as bool and
    int64 (they were "True", "3" and "39.0"); columns with gaps read back as CSV allows (the reader
    contract), and conform to exactly the judged values."""
    raw = lighten(copy.deepcopy(BASE))
    raw["dataset"]["path"] = str(typed / "real.csv")
    raw["dataset"]["spec"] = _spec()
    raw["generator"] = {"name": "file", "path": str(typed / "synthetic.csv")}
    raw["attacks"] = [{"name": "dcr"}, {"name": "domias"}]
    raw["publish"] = {"format": "csv"}
    cfg = tmp_path / "release.yaml"
    cfg.write_text(yaml.safe_dump(raw))
    result = runner.invoke(
        app,
        ["run", str(cfg), "--workdir", str(tmp_path / "wd"), "--orchestrator", "local", "--json"],
        catch_exceptions=False,
    )
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.exit_code == 0 and summary["verdict"] == "APPROVE", (
        summary["reasons"],
        result.stderr[-2000:],
    )
    (published,) = (tmp_path / "wd" / "published").glob("adult-*/adult-*.csv")
    out = pd.read_csv(published)
    dtypes = out.dtypes.astype(str).to_dict()
    assert dtypes["smoker"] == "bool" and dtypes["region"] == "int64"
    assert dtypes["age"] == "int64" and dtypes["capital_gain"] == "int64"
    assert (
        dtypes["plan"] == "float64" and dtypes["insured"] == "object"
    )  # CSV has no integer or boolean gap
    text = published.read_text()
    assert "True" in text and ",3," in text and "39.0" not in text
    spec = DatasetSpec.model_validate(_spec())
    given = conform(pd.read_csv(typed / "synthetic.csv"), spec, source="given")
    pd.testing.assert_frame_equal(conform(out, spec, source="published"), given)


# ---------------------------------------------------------------- what is restored, and what is not


def test_the_quarantined_file_is_written_in_the_input_types_and_reads_back_as_judged(tmp_path):
    from privacy_gate.data.types import restore_types, value_types

    raw = pd.DataFrame(
        {
            "flag": [True, False, True, False],
            "code": [1, 2, 3, 1],
            "gap": [1.0, None, 2.0, 3.0],
            "n": [3, 4, 5, 6],
            "x": [0.5, 1.5, 2.5, 3.5],
            "word": ["a", "b", "a", "c"],
        }
    )
    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "columns": {
                "flag": {"kind": "categorical"},
                "code": {"kind": "categorical"},
                "gap": {"kind": "categorical"},
                "n": {"kind": "numeric"},
                "x": {"kind": "numeric"},
                "word": {"kind": "categorical"},
            },
        }
    )
    judged = conform(raw, spec, source="t")
    store = ReleaseStore(workdir=tmp_path)
    for fmt in ("parquet", "csv"):
        q = store.quarantine(restore_types(judged, value_types(raw, spec)), fmt=fmt)
        back = read_quarantined(q.path)
        assert (
            back["flag"].dtype == bool
            and back["code"].dtype == "int64"
            and back["n"].dtype == "int64"
        )
        assert back["x"].dtype == "float64" and back["word"].dtype == object
        assert str(back["gap"].dtype) == ("Int64" if fmt == "parquet" else "float64")
        pd.testing.assert_frame_equal(conform(back, spec, source="back"), judged)


@pytest.mark.parametrize(
    "judged, spec_column, why",
    [
        ({"c": ["1", "2", "other"]}, {"kind": "categorical"}, "a category that is not an integer"),
        ({"c": [1.0, 2.5, 3.0]}, {"kind": "numeric"}, "a generated value that is not whole"),
        (
            {"c": ["True", "maybe", "False"]},
            {"kind": "categorical"},
            "a value that is not a boolean",
        ),
    ],
)
def test_a_column_that_cannot_be_restored_without_loss_keeps_its_judged_values(
    judged, spec_column, why
):
    from privacy_gate.data.types import restore_types

    frame = pd.DataFrame(judged)
    kind = "bool" if "maybe" in frame["c"].astype(str).tolist() else "int"
    out = restore_types(frame, {"c": kind})
    pd.testing.assert_frame_equal(out, frame, obj=why)
