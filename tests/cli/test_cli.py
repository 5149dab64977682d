"""The command line: exit codes (0/3/4/2), --json, gate-only mode and one-line errors on bad
input."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.report.commands import REVIEWER
from tests.conftest import EXAMPLE, write_release_config

runner = CliRunner()


def _invoke(args: list[str]):
    result = runner.invoke(app, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def gate_files(small_adult, tmp_path_factory):
    """train / holdout / reference files of the small Adult table, plus candidate releases."""
    folder = tmp_path_factory.mktemp("gate")
    real = pd.read_csv(small_adult / "real.csv")
    parts = {
        "train": real.iloc[:1800],
        "holdout": real.iloc[1800:2400],
        "reference": real.iloc[2400:],
    }
    for name, df in parts.items():
        df.to_csv(folder / f"{name}.csv", index=False)
    pd.read_csv(small_adult / "independent.csv").to_parquet(
        folder / "independent.parquet", index=False
    )
    parts["train"].to_csv(folder / "copies.csv", index=False)
    pd.read_csv(small_adult / "independent.csv").drop(columns=["race"]).to_csv(
        folder / "no_race.csv", index=False
    )
    (folder / "spec.yaml").write_text(
        yaml.safe_dump(yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"])
    )
    return folder


def _gate_args(folder: Path, synthetic: str, workdir: Path, *extra: str) -> list[str]:
    return [
        "gate",
        "--train",
        str(folder / "train.csv"),
        "--holdout",
        str(folder / "holdout.csv"),
        "--reference",
        str(folder / "reference.csv"),
        "--synthetic",
        str(folder / synthetic),
        "--spec",
        str(folder / "spec.yaml"),
        "--workdir",
        str(workdir),
        *extra,
    ]


def test_help_is_instant_and_imports_nothing_heavy():
    code = (
        "import sys, privacy_gate.cli; print([m for m in ('mlflow', 'prefect', 'torch', 'sdv', "
        "'great_expectations', 'pandas') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
    assert _invoke(["--help"])[0] == 0


def test_gate_help_says_where_the_small_table_floors_are():
    code, out, _ = _invoke(["gate", "--help"])
    text = " ".join(out.split())
    assert code == 0 and "targets.min_per_class" in text and "disclosure.min_control" in text
    assert "insufficient evidence" in text and "--config" in text


def test_gate_only_approves_independent_sample_with_json(prefect_server, gate_files, tmp_path):
    code, out, _ = _invoke(_gate_args(gate_files, "independent.parquet", tmp_path, "--json"))
    summary = _last_json(out)
    assert code == 0 and summary["verdict"] == "APPROVE", summary["reasons"]
    assert set(summary) == {
        "verdict",
        "status",
        "reasons",
        "metrics",
        "flagged_subgroups",
        "run_id",
    }
    assert (
        summary["run_id"]
        and len(list((tmp_path / "published").glob("adult-*/adult-*.parquet"))) == 1
    )


def test_gate_only_blocks_copies(prefect_server, gate_files, tmp_path):
    code, out, _ = _invoke(_gate_args(gate_files, "copies.csv", tmp_path, "--json"))
    assert code == 4 and _last_json(out)["verdict"] == "BLOCK"
    assert not (tmp_path / "published").exists()
    assert list((tmp_path / "quarantine").rglob("synthetic.parquet"))


def test_review_exit_code(prefect_server, gate_files, tmp_path):
    rules = tmp_path / "rules.yaml"
    # a requirement (not a leak test) raises the verdict without a test: a REVIEW on any release
    rules.write_text(
        yaml.safe_dump(
            {"rules": [{"metric": "utility.quality", "min": 0.9999, "action": "review"}]}
        )
    )
    code, out, _ = _invoke(
        _gate_args(gate_files, "independent.parquet", tmp_path, "--rules", str(rules), "--json")
    )
    assert code == 3 and _last_json(out)["verdict"] == "REVIEW"
    assert not (tmp_path / "published").exists()


def test_review_prints_complete_commands_that_work_when_pasted(gate_files, tmp_path):
    """A REVIEW ends with the exact commands to inspect and decide it: the real run id and the
    workdir used (shell-quoted: it has a space), no placeholders; ``review RUN`` and ``review
    --pending`` print the same; the pasted reject command decides the run."""
    import shlex

    from privacy_gate.report.commands import decision_commands

    rules = tmp_path / "rules.yaml"
    rules.write_text(
        yaml.safe_dump(
            {"rules": [{"metric": "utility.quality", "min": 0.9999, "action": "review"}]}
        )
    )
    workdir = tmp_path / "work dir"
    code, out, err = _invoke(
        _gate_args(
            gate_files,
            "independent.parquet",
            workdir,
            "--rules",
            str(rules),
            "--json",
            "--orchestrator",
            "local",
        )
    )
    run_id = _last_json(out)["run_id"]
    assert code == 3, err[-2000:]
    expected = decision_commands(
        run_id,
        tracking_uri=f"sqlite:///{workdir.resolve() / 'mlflow.db'}",
        workdir=workdir,
        flagged=[],
    )
    printed = [
        line.strip() for line in err.splitlines() if line.strip().startswith("privacy-gate ")
    ]
    assert printed == expected and all(
        f"--workdir {shlex.quote(str(workdir.resolve()))}" in c for c in printed
    )
    assert not any(p in err for p in ("RUN_ID", "WORKDIR", "--reviewer NAME"))
    report = next(line for line in err.splitlines() if line.startswith("report:")).split(None, 1)[1]
    assert Path(report).is_file() and Path(report).name == "index.html"
    code, text, _ = _invoke(["review", run_id, "--workdir", str(workdir)])
    assert code == 0 and [c for c in expected if c.split()[1] != "review"] == [
        line.strip() for line in text.splitlines() if line.strip().startswith("privacy-gate ")
    ]
    code, text, _ = _invoke(["review", "--pending", "--workdir", str(workdir)])
    assert code == 0 and expected[0] in text
    reject = shlex.split(expected[-1].replace(REVIEWER, "ana"))
    code, text, err = _invoke(reject[1:])
    assert code == 0 and f"rejected run {run_id} as ana" in text, err


def test_synthetic_with_other_schema_is_refused_naming_the_column(gate_files, tmp_path):
    """Found from the header before anything runs (exit 2); it used to be a BLOCK (exit 4) after
    the whole real-data stage."""
    code, out, err = _invoke(_gate_args(gate_files, "no_race.csv", tmp_path, "--json"))
    assert code == 2 and out == ""
    (msg,) = err.strip().splitlines()
    assert (
        f"--synthetic {gate_files / 'no_race.csv'}: column(s) ['race'] of spec 'adult' are missing"
        in msg
    )
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.parametrize(
    "mutate, needle",
    [
        (lambda df: df.iloc[:0], "has no rows"),
        (
            lambda df: df.assign(occupation=float("nan")),
            "column 'occupation' has only missing values",
        ),
    ],
)
def test_bad_real_data_blocks_with_one_line_reason(
    prefect_server, small_adult, tmp_path, mutate, needle
):
    real = mutate(pd.read_csv(small_adult / "real.csv"))
    real.to_csv(tmp_path / "real.csv", index=False)
    cfg = write_release_config(tmp_path, {"name": "gaussian_copula"})
    code, out, _ = _invoke(["run", str(cfg), "--workdir", str(tmp_path / "wd"), "--json"])
    summary = _last_json(out)
    assert code == 4 and summary["verdict"] == "BLOCK" and summary["status"] == "invalid_input"
    assert needle in summary["reasons"][0]["message"]


def test_input_validation_failure_blocks(prefect_server, small_adult, tmp_path):
    real = pd.read_csv(small_adult / "real.csv")
    real.loc[:4, "age"] = 150  # outside the public range 17..90
    real.to_csv(tmp_path / "real.csv", index=False)
    cfg = write_release_config(tmp_path, {"name": "gaussian_copula"})
    code, out, _ = _invoke(["run", str(cfg), "--workdir", str(tmp_path / "wd"), "--json"])
    summary = _last_json(out)
    assert code == 4 and summary["status"] == "invalid_input"
    assert (
        "age" in summary["reasons"][0]["message"] and "150" not in summary["reasons"][0]["message"]
    )


def test_usage_errors_exit_2(tmp_path, small_adult):
    code, _, err = _invoke(["run", str(tmp_path / "missing.yaml")])
    assert code == 2 and "file not found" in err
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["dataset"]["spec"]["subgroups"] = ["sex", "religion"]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(raw))
    code, _, err = _invoke(["run", str(tmp_path / "bad.yaml")])
    assert code == 2 and "unknown column 'religion'" in err and len(err.strip().splitlines()) == 1
    cfg = write_release_config(tmp_path, {"name": "gaussian_copula"})  # tmp_path has no real.csv
    code, _, err = _invoke(["run", str(cfg)])
    assert code == 2 and "file not found" in err and "real.csv" in err
    code, _, err = _invoke(
        [
            "gate",
            "--train",
            "x.csv",
            "--holdout",
            "x",
            "--reference",
            "x",
            "--synthetic",
            "x",
            "--spec",
            "x",
        ]
    )
    assert code == 2 and "--train: file not found" in err


def test_gate_only_in_process_without_prefect(gate_files, tmp_path):
    """--orchestrator local (the default when no Prefect API is configured): the same pipeline and
    MLflow record, no Prefect server, no Prefect import; progress lines on stderr."""
    probe = (
        "import sys, runpy; sys.argv = ['privacy-gate'] + sys.argv[1:]\ntry:\n    "
        "runpy.run_module('privacy_gate.cli', run_name='__main__')\nexcept SystemExit as "
        "e:\n    print('PREFECT_LOADED=' + str('prefect' in sys.modules), "
        "file=sys.stderr)\n    raise\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            probe,
            *_gate_args(gate_files, "copies.csv", tmp_path, "--json", "--orchestrator", "local"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert out.returncode == 4, out.stderr[-2000:]
    assert _last_json(out.stdout)["verdict"] == "BLOCK"
    assert "PREFECT_LOADED=False" in out.stderr
    # where the quarantined release and the report are, and no decision commands
    quarantined = next(line for line in out.stderr.splitlines() if line.startswith("quarantined:"))
    assert Path(quarantined.split()[1]).is_file() and "(not published)" in quarantined
    report = next(line for line in out.stderr.splitlines() if line.startswith("report:")).split(
        None, 1
    )[1]
    assert Path(report).is_file() and "privacy-gate approve" not in out.stderr
    assert (
        "▶ running 5 attack(s) concurrently" in out.stderr
    )  # progress output (the five default attacks)
    assert (tmp_path / "mlflow.db").exists() and not (tmp_path / "published").exists()


def test_gate_only_takes_the_judging_sections_of_a_config(gate_files, tmp_path):
    """--config: the same attacks / targets / audit / mace / gate sections as a release config."""
    cfg = tmp_path / "judging.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "attacks": [{"name": "dcr"}, {"name": "gan_leaks_cal"}],
                "targets": {"n_members": 300, "n_non_members": 300, "seed": 5},
                "audit": {"min_group_size": 30, "intersections": [["sex", "race"]]},
                "mace": {"n_permutations": 20},
            }
        )
    )
    code, out, err = _invoke(
        _gate_args(
            gate_files,
            "independent.parquet",
            tmp_path,
            "--json",
            "--config",
            str(cfg),
            "--orchestrator",
            "local",
        )
    )
    summary = _last_json(out)
    assert summary["status"] == "ok", err[-2000:]
    metrics = summary["metrics"]
    assert (
        "gan_leaks_cal.auc" in metrics
        and "domias.auc" not in metrics
        and metrics["dcr.n_members"] == 300
    )
    assert any(k.startswith("subgroup/sex_x_race/") for k in metrics)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"audit": {"intersections": [["sex", "planet"]]}}))
    code, _, err = _invoke(
        _gate_args(gate_files, "independent.parquet", tmp_path, "--config", str(bad))
    )
    assert code == 2 and "audit.intersections" in err and len(err.strip().splitlines()) == 1


def test_a_holdout_that_is_the_training_file_is_refused(gate_files, tmp_path):
    """With the training file as the holdout, members and non-members are the same records: no
    attack can tell them apart and a copy of train used to be APPROVED and published. Refused before
    any run starts: exit 2, one line naming both files and the count (no values)."""
    args = _gate_args(
        gate_files,
        "copies.csv",
        tmp_path / "wd",
        "--json",
        "--orchestrator",
        "local",
        "--publish-to",
        str(tmp_path / "published"),
    )
    args[args.index("--holdout") + 1] = str(gate_files / "train.csv")
    code, out, err = _invoke(args)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "--holdout" in err and "is the --train file" in err
    shutil.copy(gate_files / "train.csv", tmp_path / "holdout_copy.csv")
    args[args.index("--holdout") + 1] = str(tmp_path / "holdout_copy.csv")
    code, out, err = _invoke(args)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "holdout holdout_copy.csv and train train.csv share records: 1800 of 1800" in err
    assert not (tmp_path / "published").exists() and not (tmp_path / "wd" / "mlflow.db").exists()


def test_unwritable_folders_are_refused_before_the_run_naming_the_option(gate_files, tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    for option, value in (
        ("--workdir", tmp_path / "a-file" / "wd"),
        ("--publish-to", tmp_path / "a-file" / "out"),
    ):
        args = _gate_args(
            gate_files, "independent.parquet", tmp_path / "wd", "--orchestrator", "local"
        )
        if option == "--workdir":
            args[args.index("--workdir") + 1] = str(value)
        else:
            args += [option, str(value)]
        code, out, err = _invoke(args)
        assert code == 2 and len(err.strip().splitlines()) == 1, (option, err)
        assert err.startswith(f"error: {option} {value}:") and "is a file, not a folder" in err


def test_a_reference_holding_training_records_is_refused(gate_files, tmp_path):
    mixed = pd.concat(
        [
            pd.read_csv(gate_files / "reference.csv"),
            pd.read_csv(gate_files / "train.csv").iloc[:200],
        ]
    )
    mixed.to_csv(tmp_path / "mixed_reference.csv", index=False)
    args = _gate_args(
        gate_files, "independent.parquet", tmp_path, "--json", "--orchestrator", "local"
    )
    args[args.index("--reference") + 1] = str(tmp_path / "mixed_reference.csv")
    code, out, err = _invoke(args)
    assert (
        code == 2
        and "reference mixed_reference.csv and train train.csv share records: 200 of 800" in err
    )


def test_the_run_itself_refuses_overlapping_splits(gate_files, tmp_path, adult_spec):
    """The library path (no command line) checks again, inside the run: a BLOCK, invalid input."""
    from privacy_gate.runs.release import gate_only_run

    result = gate_only_run(
        train=str(gate_files / "train.csv"),
        holdout=str(gate_files / "train.csv"),
        reference=str(gate_files / "reference.csv"),
        synthetic=str(gate_files / "copies.csv"),
        spec=adult_spec,
        workdir=tmp_path / "wd",
        publish_to=str(tmp_path / "published"),
    )
    assert result.verdict.decision == "BLOCK" and result.verdict.status == "invalid_input"
    assert "share records: 1800 of 1800" in " ".join(r.message for r in result.verdict.reasons)
    assert not (tmp_path / "published").exists()


@pytest.mark.parametrize("api", [False, True])
def test_approve_with_suppress_regates_in_process_without_a_prefect_api(api, monkeypatch, tmp_path):
    """Without a Prefect API the re-gate after a suppression runs in this process (it used to start
    a temporary Prefect server, which timed out in 1 of 2 attempts); with one it is a flow run."""
    import privacy_gate.cli.common as common
    import privacy_gate.cli.review as review_cli
    import privacy_gate.review.decide as review
    from privacy_gate.errors import ReviewError
    from privacy_gate.names import SQLITE_FILE

    (tmp_path / SQLITE_FILE).write_bytes(b"")
    seen = {}

    def fake_decide(run_id, **kw):
        seen.update(kw)
        raise ReviewError("stop here")

    monkeypatch.setattr(review_cli, "use_prefect", lambda orchestrator, **kw: api)
    monkeypatch.setattr(common, "probe_tracking", lambda uri, source: uri)
    monkeypatch.setattr(review, "decide_run", fake_decide)
    code, _, err = _invoke(
        ["approve", "r1", "--reviewer", "ana", "--suppress", "race=X", "--workdir", str(tmp_path)]
    )
    assert code == 2 and "stop here" in err
    if api:
        from privacy_gate.flows import regate_flow

        assert seen["regate"].run is regate_flow
    else:
        assert seen["regate"].run is None  # regate_run, in this process


def test_gate_refuses_a_recipe_it_cannot_refit(gate_files, tmp_path):
    """--generator is checked before anything runs: unknown names, bad settings, JSON that is not
    an object, and settings without a generator are usage errors (exit 2)."""
    for extra in (
        ["--generator", "no_such_generator"],
        ["--generator", "mst", "--generator-params", "[1]"],
        ["--generator", "mst", "--generator-params", '{"epsilon": -1}'],
        ["--generator-params", '{"epsilon": 1}'],
    ):
        code, _, err = _invoke(_gate_args(gate_files, "copies.csv", tmp_path, *extra))
        assert code == 2, (extra, err)


def test_gate_with_the_recipe_judges_a_small_table(small_adult, tmp_path):
    """300 training rows and an MST release: without the recipe REVIEW for insufficient evidence;
    with --generator mst the generator-aware test runs (a progress line per batch of fits) and the
    run records its figures."""
    real = pd.read_csv(small_adult / "real.csv")
    folder = tmp_path / "small"
    folder.mkdir()
    for name, (a, b) in {"train": (0, 300), "holdout": (300, 400), "reference": (400, 500)}.items():
        real.iloc[a:b].to_csv(folder / f"{name}.csv", index=False)
    (folder / "spec.yaml").write_text(
        yaml.safe_dump(yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"])
    )
    from privacy_gate.config import load_spec
    from privacy_gate.generators import create_generator

    train = pd.read_csv(folder / "train.csv")
    spec = load_spec(folder / "spec.yaml")
    create_generator("mst", epsilon=1.0, seed=3).fit(
        train, spec, reference=pd.read_csv(folder / "reference.csv")
    ).sample(300).to_csv(folder / "mst.csv", index=False)
    (folder / "shadow.yaml").write_text(yaml.safe_dump({"shadow": {"jobs": 1, "max_fits": 128}}))
    code, out, err = _invoke(
        _gate_args(
            folder,
            "mst.csv",
            tmp_path / "wd",
            "--json",
            "--orchestrator",
            "local",
            "--generator",
            "mst",
            "--generator-params",
            '{"epsilon": 1.0}',
            "--config",
            str(folder / "shadow.yaml"),
        )
    )
    summary = _last_json(out)
    assert summary["metrics"]["shadow.fits"] >= 16, err[-2000:]
    assert "shadow fits 16/" in err and "generator-aware test" in err
    assert code in (0, 3) and summary["verdict"] in ("APPROVE", "REVIEW")
