"""A category value holding ANSI codes and line breaks cannot forge lines on the
terminal (``VERDICT: APPROVE`` after the real verdict): every console output of data-derived text
goes through ``safe_text.console_line`` (the verdict, ``review``, ``review --pending``,
decisions)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate.safe_text import console_line, console_lines

from .conftest import EXAMPLE

FORGED = "x\n\x1b[32mVERDICT: APPROVE"


def _forged_lines(text: str) -> list[str]:
    """Lines a terminal would show starting with ``VERDICT:`` (any line break a terminal honours;
    colour codes are invisible there)."""
    import re

    shown = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", text)
    return [
        line
        for line in re.split(r"[\n\r\x0b\x0c\x85\u2028\u2029]", shown)
        if line.lstrip().startswith("VERDICT:")
    ]


@pytest.mark.parametrize(
    "text",
    [
        FORGED,
        "a\r\nVERDICT: APPROVE",
        "a\x1b]0;title\x07b\x1b[2Jc",
        "a\u2028VERDICT: APPROVE",
        "a\x85VERDICT: APPROVE",
        "a\x9b31mb",
        "a\u202eb\tc\x00d",
    ],
)
def test_console_line_is_one_line_without_escapes(text):
    line = console_line(text)
    assert (
        not _forged_lines("\n" + line.replace("VERDICT: APPROVE", "") + "\n")
        and len(_forged_lines(line)) == 0
    )
    assert line.isprintable() and "\x1b" not in line and "\x9b" not in line
    assert console_lines(["VERDICT: REVIEW", text]).count("\n") == 1


def test_console_line_keeps_ordinary_text():
    assert (
        console_line("race=Black: dcr.auc = 0.71 violates max 0.7 (<=) — âge (années) 🟡")
        == "race=Black: dcr.auc = 0.71 violates max 0.7 (<=) — âge (années) 🟡"
    )
    assert console_line(FORGED) == "x\\nVERDICT: APPROVE"


@pytest.fixture(scope="module")
def forged_files(small_adult, tmp_path_factory):
    """The small Adult table with race "Other" renamed to the forged value (declared in the spec,
    so group labels show it), and rules that flag every subgroup for review."""
    folder = tmp_path_factory.mktemp("forged")
    real = pd.read_csv(small_adult / "real.csv")
    independent = pd.read_csv(small_adult / "independent.csv")
    for df in (real, independent):
        df["race"] = df["race"].replace({"Black": FORGED})
    for name, df in {
        "train": real.iloc[:1800],
        "holdout": real.iloc[1800:2400],
        "reference": real.iloc[2400:],
    }.items():
        df.to_parquet(folder / f"{name}.parquet", index=False)
    train = real.iloc[:1800]
    leaked = pd.concat([independent, train[train["race"] == FORGED]], ignore_index=True)
    leaked.to_parquet(folder / "synthetic.parquet", index=False)
    spec = yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"]
    spec["columns"]["race"]["categories"] = [
        FORGED if v == "Black" else v for v in spec["columns"]["race"]["categories"]
    ]
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec))
    (folder / "judging.yaml").write_text(
        yaml.safe_dump(
            {
                "attacks": [{"name": "dcr"}],
                "targets": {"n_members": 300, "n_non_members": 300, "seed": 5},
                "audit": {"min_group_size": 30},
                "mace": {"n_permutations": 20},
                "disclosure": {"enabled": False},
                # the forged group's training rows are copied into the release (below), so its
                # rank test flags it; the bars are loosened by key so the copies REVIEW rather
                # than BLOCK
                "gate": {
                    "rules": [
                        {"metric": m, **({"attack": "any"} if a else {}), "max": 1.0}
                        for m, a in (
                            ("exposed.share_lower", False),
                            ("copies.excess_share", False),
                            ("agreement.excess_share", False),
                            ("auc", True),
                            ("tpr_at_fpr_0.01", True),
                            ("mace.advantage_lower", True),
                        )
                    ]
                },
            }
        )
    )
    return folder


def test_a_forged_value_prints_no_verdict_line(forged_files, tmp_path):
    from privacy_gate.cli import app

    f = forged_files
    runner = CliRunner()
    args = [
        "gate",
        *(
            x
            for part in ("train", "holdout", "reference", "synthetic")
            for x in (f"--{part}", str(f / f"{part}.parquet"))
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
    result = runner.invoke(app, args, catch_exceptions=False)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["verdict"] == "REVIEW" and summary["status"] == "ok", (
        summary["reasons"],
        result.stderr[-3000:],
    )
    assert any(
        FORGED in g for g in summary["flagged_subgroups"]
    )  # the JSON keeps the value (escaped by JSON)
    console = result.stderr  # with --json the verdict is printed on stderr
    assert _forged_lines(console) == [
        next(line for line in console.splitlines() if line.startswith("VERDICT: REVIEW"))
    ]
    assert "\x1b" not in console and "x\\nVERDICT: APPROVE" in console

    run_id = summary["run_id"]
    for args in (["review", run_id], ["review", "--pending"]):
        out = runner.invoke(app, [*args, "--workdir", str(tmp_path)], catch_exceptions=False)
        assert out.exit_code == 0, out.stderr
        assert not _forged_lines(out.stdout), out.stdout
        assert "\x1b" not in out.stdout and "x\\nVERDICT: APPROVE" in out.stdout, out.stdout
    out = runner.invoke(
        app,
        ["reject", run_id, "--reviewer", "ann", "--comment", FORGED, "--workdir", str(tmp_path)],
        catch_exceptions=False,
    )
    assert out.exit_code == 0, out.stderr
    shown = runner.invoke(
        app, ["review", run_id, "--workdir", str(tmp_path)], catch_exceptions=False
    ).stdout
    assert not _forged_lines(shown) and "decided: reject by ann" in shown and "\x1b" not in shown
