"""Subgroup audit and human review, end to end (real Prefect flows, MLflow store, GE, files).

The canary: an otherwise independent synthetic sample that also contains verbatim copies of the
training records of one rare subgroup (race=Asian-Pac-Islander, ~3% of Adult). The gate must flag
exactly that subgroup (REVIEW), and approving with --suppress must publish a release without
those rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.config import load_release_config
from privacy_gate.data import conform, split_by_entity
from privacy_gate.flows import release_flow

from ..conftest import write_release_config

GROUP = "race=Asian-Pac-Islander"
runner = CliRunner()


@pytest.fixture(scope="module")
def canary(adult_full, tmp_path_factory):
    """10,000 real rows; synthetic = 20,000 other Adult rows + copies of the rare group's train
    rows."""
    folder = tmp_path_factory.mktemp("subgroup-canary")
    shuffled = adult_full.sample(frac=1.0, random_state=11).reset_index(drop=True)
    shuffled.iloc[:10000].to_csv(folder / "real.csv", index=False)
    cfg = load_release_config(
        write_release_config(folder, {"name": "copy_train"}, name="probe.yaml")
    )
    real = conform(pd.read_csv(folder / "real.csv"), cfg.dataset.spec, source="real")
    train = split_by_entity(real, cfg.dataset.spec, cfg.split).train
    copies = pd.read_csv(folder / "real.csv").loc[
        train.index[train["race"] == "Asian-Pac-Islander"]
    ]
    synthetic = pd.concat([shuffled.iloc[10000:30000], copies]).sample(frac=1.0, random_state=1)
    synthetic.to_csv(folder / "synthetic.csv", index=False)
    return folder


def _config(folder: Path, name: str, *, generator=None, **over) -> Path:
    gen = generator or {"name": "file", "path": str(folder / "synthetic.csv")}
    # one audited column per group: with the sex x race intersection, its merged "other" group
    # (which holds the small race=Asian-Pac-Islander x sex cells) is rightly flagged too
    over.setdefault("audit", {"intersections": []})
    # the review mechanics on a REVIEW run: without the global exposed-share block rule
    from ..conftest import review_rules

    rules = review_rules()
    over.setdefault("gate", {"max_verbatim_copy_share": 0.01, "rules": rules})
    return write_release_config(
        folder, gen, name=name, fast=True, **over
    )  # review mechanics: plumbing weight


def _invoke(args):
    r = runner.invoke(app, args, catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def review_run(prefect_server, canary, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("review-wd")
    result = release_flow(config_path=str(_config(canary, "r1.yaml")), workdir=str(workdir))
    return result, workdir


def test_rare_subgroup_copies_are_flagged_exactly(review_run):
    result, workdir = review_run
    v = result.verdict
    assert v.decision == "REVIEW" and v.status == "ok", v.reasons
    # the leaked group is flagged; any other flag (the rare-country pool holds some of the group's
    # members) is explained by it, never the other way round
    assert GROUP in v.flagged_subgroups, v.flagged_subgroups
    assert v.explained == {g: GROUP for g in v.flagged_subgroups if g != GROUP}, v.explained
    assert result.published is None
    assert v.metrics["subgroup/race/Asian-Pac-Islander/dcr.auc"] > 0.9
    assert abs(v.metrics["subgroup/race/White/dcr.auc"] - 0.5) < 0.1
    run = MlflowClient(tracking.default_tracking_uri(workdir)).get_run(v.run_id)
    assert run.data.tags[names.TAG_APPROVAL_STATUS] == "pending"
    assert run.data.tags[names.TAG_FLAGGED] == ",".join(v.flagged_subgroups)


def test_cli_review_then_approve_with_suppress_publishes_without_the_group(review_run):
    result, workdir = review_run
    run_id = result.verdict.run_id
    code, out, _ = _invoke(["review", run_id, "--workdir", str(workdir)])
    assert code == 0 and "PENDING REVIEW" in out and GROUP in out
    code, out, err = _invoke(
        [
            "approve",
            run_id,
            "--reviewer",
            "ana",
            "--comment",
            "rare group suppressed",
            "--suppress",
            GROUP,
            "--workdir",
            str(workdir),
        ]
    )
    assert code == 0, err
    published = Path(out.split("published: ")[1].strip())
    df = pd.read_parquet(published)
    assert len(df) > 0 and not (df["race"] == "Asian-Pac-Islander").any()
    manifest = json.loads((published.parent / "manifest.json").read_text())
    assert manifest["approval"]["reviewer"] == "ana" and manifest["approval"]["suppress"] == [GROUP]
    assert manifest["run_id"] == run_id
    client = MlflowClient(tracking.default_tracking_uri(workdir))
    tags = client.get_run(run_id).data.tags
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "approved" and tags[names.TAG_APPROVAL_REVIEWER] == "ana"
    )
    decisions = [f.path for f in client.list_artifacts(run_id, "review")]
    assert decisions == ["review/decision-001-approve.json"]
    rerun = client.get_run(manifest["approval"]["rerun_id"])
    assert (
        rerun.data.tags[names.TAG_RERUN_OF] == run_id
        and rerun.data.tags[names.TAG_VERDICT] == "APPROVE"
    )
    # approving twice is refused
    code, _, err = _invoke(["approve", run_id, "--reviewer", "bo", "--workdir", str(workdir)])
    assert code == 2 and "already approved by ana" in err


def test_refusals_and_approval_in_a_later_process(prefect_server, canary, tmp_path):
    result = release_flow(config_path=str(_config(canary, "r2.yaml")), workdir=str(tmp_path))
    run_id = result.verdict.run_id
    assert result.verdict.decision == "REVIEW"
    quarantined = Path(result.quarantined)
    original = quarantined.read_bytes()
    quarantined.write_bytes(original + b"tampered")
    code, _, err = _invoke(["approve", run_id, "--reviewer", "ana", "--workdir", str(tmp_path)])
    assert code == 2 and "changed since the gate judged it" in err
    quarantined.write_bytes(original)
    code, _, err = _invoke(
        [
            "approve",
            run_id,
            "--reviewer",
            "ana",
            "--suppress",
            "race=Nope",
            "--workdir",
            str(tmp_path),
        ]
    )
    assert code == 2 and "not flagged subgroups" in err
    # a later, separate process approves (no suppression: no Prefect needed)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "privacy_gate.cli",
            "approve",
            run_id,
            "--reviewer",
            "cy",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    published = list((tmp_path / "published").glob("adult-*/adult-*.parquet"))
    assert len(published) == 1 and published[0].name.startswith(
        "adult-" + result.verdict.data_hashes["synthetic_file_sha256"][:12]
    )
    code, out, _ = _invoke(["review", run_id, "--workdir", str(tmp_path)])
    assert "decided: approve by cy" in out
    # a BLOCKed run cannot be approved
    blocked = release_flow(
        config_path=str(_config(canary, "r3.yaml", generator={"name": "copy_train"})),
        workdir=str(tmp_path),
    )
    assert blocked.verdict.decision == "BLOCK"
    code, _, err = _invoke(
        ["approve", blocked.verdict.run_id, "--reviewer", "ana", "--workdir", str(tmp_path)]
    )
    assert code == 2 and "BLOCKed" in err
    code, _, err = _invoke(
        ["reject", "nonexistent-run", "--reviewer", "ana", "--workdir", str(tmp_path)]
    )
    assert code == 2 and "no run nonexistent-run" in err


def _paused_flow_run_id(timeout: float = 180.0) -> str:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    deadline = time.time() + timeout
    flt = FlowRunFilter(
        state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PAUSED]))
    )
    while time.time() < deadline:
        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs(flow_run_filter=flt)
        if runs:
            return str(runs[0].id)
        time.sleep(1)
    raise AssertionError("the release flow never paused for review")


def _saved_review_form(flow_run_id: str) -> tuple[dict, str]:
    """The JSON schema and description of the review form the paused run saved (what the UI
    shows)."""
    from prefect.client.orchestration import get_client
    from prefect.input import keyset_from_paused_state, read_flow_run_input

    with get_client(sync_client=True) as client:
        keyset = keyset_from_paused_state(client.read_flow_run(flow_run_id).state)
    return (
        read_flow_run_input(keyset["schema"], flow_run_id=flow_run_id),
        read_flow_run_input(keyset["description"], flow_run_id=flow_run_id),
    )


def test_paused_flow_resumed_with_typed_input_publishes(prefect_server, canary, tmp_path):
    from prefect.flow_runs import resume_flow_run

    cfg = _config(
        canary, "r4.yaml", review={"mode": "pause", "timeout_seconds": 300, "poll_seconds": 1}
    )
    box = {}
    thread = threading.Thread(
        target=lambda: box.setdefault(
            "result", release_flow(config_path=str(cfg), workdir=str(tmp_path))
        )
    )
    thread.start()
    flow_run_id = _paused_flow_run_id()
    schema, description = _saved_review_form(flow_run_id)
    assert "decision" in schema["required"] and "default" not in schema["properties"]["decision"]
    assert (
        GROUP in schema["properties"]["suppress"]["items"]["enum"] and f"- `{GROUP}`" in description
    )
    with pytest.raises(Exception, match="decision"):  # the form has no default decision
        resume_flow_run(flow_run_id, run_input={"reviewer": "dee"})
    resume_flow_run(
        flow_run_id,
        run_input={
            "reviewer": "dee",
            "decision": "approve",
            "subgroups": {GROUP: "reject"},
            "comment": "drop the rare group",
        },
    )
    thread.join(timeout=300)
    result = box["result"]
    assert result.verdict.decision == "REVIEW" and result.review == "approve"
    from privacy_gate.tracking.review_records import suppressed_with

    gone = suppressed_with(
        list(result.verdict.flagged_subgroups), [GROUP]
    )  # GROUP and the groups inside it
    assert result.review_decision["via"] == "flow" and result.review_decision["suppress"] == sorted(
        gone
    )
    assert {
        g: a for g, a in result.review_decision["subgroups"].items() if a == "reject"
    } == dict.fromkeys(gone, "reject")
    df = pd.read_parquet(result.published)
    assert not (df["race"] == "Asian-Pac-Islander").any()
    tags = (
        MlflowClient(tracking.default_tracking_uri(tmp_path))
        .get_run(result.verdict.run_id)
        .data.tags
    )
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "approved" and tags[names.TAG_APPROVAL_REVIEWER] == "dee"
    )
