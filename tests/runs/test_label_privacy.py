"""Group labels taken from the data are record values: a category value only training records hold
must not reach any file or output of a gate, a review and an approval.

Two values are planted in a column the spec lists as a subgroup but declares no categories for:
one held by 30 training rows (an ordinary subgroup of its own) and one held by 5 (the rare-values
family). Neither is held by any holdout or reference record, so neither may be shown; their groups
are still audited, under hashed labels.
"""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate.cli import app

from ..conftest import EXAMPLE, lighten, review_rules, write_group_leak

PLANTED = ("Zq-Planted-Occupation-7731", "Xv-Rare-Occupation-0042")
GROUP = "race=Asian-Pac-Islander"
runner = CliRunner()


def _invoke(args: list[str]) -> tuple[int, str, str]:
    r = runner.invoke(app, args, catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def planted(small_adult, tmp_path_factory):
    folder = tmp_path_factory.mktemp("planted")
    real = pd.read_csv(small_adult / "real.csv")
    train = real.iloc[:1800].copy()
    others = train.index[train["race"] != "Asian-Pac-Islander"]
    train.loc[others[:30], "occupation"] = PLANTED[0]
    train.loc[others[30:35], "occupation"] = PLANTED[1]
    # an independent release plus verbatim copies of one race group's training rows: a REVIEW
    write_group_leak(small_adult, folder, train=train)
    spec = yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"]
    spec["columns"]["occupation"] = {"kind": "categorical"}  # no public category list
    spec["subgroups"] = ["sex", "race", "occupation"]
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec))
    judging = lighten(
        {
            "gate": {"rules": review_rules(), "max_verbatim_copy_share": 0.05},
            "audit": {"intersections": []},
        }
    )
    (folder / "judging.yaml").write_text(yaml.safe_dump(judging))
    return folder


def test_a_training_only_value_reaches_no_file(prefect_server, planted, tmp_path):
    workdir = tmp_path / "wd"
    code, out, err = _invoke(
        [
            "gate",
            "--train",
            str(planted / "train.csv"),
            "--holdout",
            str(planted / "holdout.csv"),
            "--reference",
            str(planted / "reference.csv"),
            "--synthetic",
            str(planted / "synthetic.csv"),
            "--spec",
            str(planted / "spec.yaml"),
            "--config",
            str(planted / "judging.yaml"),
            "--workdir",
            str(workdir),
            "--json",
        ]
    )
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["verdict"] == "REVIEW", summary["reasons"]
    assert GROUP in summary["flagged_subgroups"]
    # the planted groups were audited, under hashed labels
    shown = {k.split("/")[2] for k in summary["metrics"] if k.startswith("subgroup/occupation/")}
    hashed = {v for v in shown if re.fullmatch(r"_[0-9a-f]{10}", v)}  # '#' + hash, as a metric key
    assert len(hashed) >= 2, sorted(
        shown
    )  # the planted values, and any value too rare outside train
    assert (
        "subgroup/occupation/Sales/membership_test.p_adjusted" in summary["metrics"]
    )  # a common value is shown
    run_id = summary["run_id"]
    outputs = [out, err]
    for args in (["review", run_id], ["approve", run_id, "--reviewer", "ana", "--suppress", GROUP]):
        code, text, err = _invoke([*args, "--workdir", str(workdir)])
        assert code == 0, err
        outputs += [text, err]
    assert "published: " in outputs[-2]
    leaks = [
        str(p.relative_to(workdir))
        for p in workdir.rglob("*")
        if p.is_file() and any(v.encode() in p.read_bytes() for v in PLANTED)
    ]
    assert leaks == []
    assert not any(v in text for v in PLANTED for text in outputs)
