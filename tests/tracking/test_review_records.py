"""What the records say after a review, on small hand-made REVIEW runs (no gate, no Prefect).

The manifest counts the rows it publishes, the report says where an approved release went, the
run's name carries its verdict, and ``review --pending`` lists what awaits a decision.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.gate import Verdict
from privacy_gate.gate.verdict import Check
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.pipeline.stages import StageClock
from privacy_gate.publication.publish import ReleaseStore
from privacy_gate.review import decide as review
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.runs.release import RunContext, finish

from ..conftest import LogLines

GROUP = "race=Amer-Indian-Eskimo"
runner = CliRunner()

SUBGROUP_ROWS = [  # audit/subgroups.json as the audit writes it: one row per group and attack
    {
        "group": GROUP,
        "attack": "dcr",
        "n_members": 64,
        "n_non_members": 60,
        "test_p_value": 2e-5,
        "test_p_adjusted": 0.0008,
        "test_attack": "dcr",
        "exposed": 3.0,
        "auc": 0.62,
        "tpr_at_fpr_0.01": 0.12,
    },
    {
        "group": GROUP,
        "attack": "domias",
        "n_members": 64,
        "n_non_members": 60,
        "test_p_value": 2e-5,
        "test_p_adjusted": 0.0008,
        "test_attack": "dcr",
        "exposed": 3.0,
        "auc": 0.68,
        "tpr_at_fpr_0.01": 0.31,
    },
    *(
        {
            "group": f"race=G{i}",
            "attack": "dcr",
            "n_members": 1200,
            "n_non_members": 1100,
            "test_p_adjusted": 1.0,
            "auc": 0.5,
            "tpr_at_fpr_0.01": 0.01,
        }
        for i in range(37)
    ),
]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv(tracking.SIGNING_KEY_ENV, raising=False)


def flagged_group_verdict(release_sha256: str) -> Verdict:
    """A REVIEW verdict whose one reason is GROUP's significant rank test (the evidence a reviewer
    reads), for the quarantined release with this hash."""
    reason = Check(
        rule="membership_test.p_adjusted >= 0.01",
        metric="membership_test.p_adjusted",
        observed=0.0008,
        threshold=0.01,
        bound="min",
        action="review",
        passed=False,
        group=GROUP,
        message=f"{GROUP}: membership_test.p_adjusted = 0.0008 violates min 0.01 (>=)",
    )
    return Verdict(
        decision="REVIEW",
        status="ok",
        reasons=(reason,),
        checks=(reason,),
        flagged_subgroups=(GROUP,),
        data_hashes={"synthetic_file_sha256": release_sha256},
    )


def make_review_run(workdir: Path, *, rows: int = 20, logger=None) -> tuple[str, str]:
    """A finished REVIEW run with one flagged group, recorded by ``release.finish`` as a gate run
    is."""
    tracker = tracking.Tracker.for_workdir(workdir=workdir, dataset="toy")
    sink = MlflowSink.start(tracker, name="gate-toy", kind="gate_only", dataset="toy")
    ctx = RunContext(
        sink=sink,
        store=ReleaseStore(workdir=workdir),
        dataset="toy",
        clock=StageClock(logger or logging.getLogger("test-records")),
    )
    ctx.quarantine(pd.DataFrame({"a": range(rows), "b": list("xy") * (rows // 2)}), "parquet")
    sink.record_json({"mode": "gate_only"}, names.ART_CONFIG)
    sink.record_json({"spec": "toy"}, names.ART_SETTINGS)
    sink.record_json(SUBGROUP_ROWS, names.ART_SUBGROUPS)
    verdict = flagged_group_verdict(ctx.quarantined.sha256)
    finish(ctx, verdict)
    return sink.run_id, tracker.uri


def _fake_regate(workdir: Path, kept: int):
    """A re-gate that keeps ``kept`` rows and approves them (the gate itself is not under test)."""

    def regate(*, run_id, suppress, tracking_uri, workdir=str(workdir)):
        q = ReleaseStore(workdir=Path(workdir)).quarantine(
            pd.DataFrame({"a": range(kept), "b": ["x"] * kept})
        )
        verdict = Verdict(
            decision="APPROVE",
            status="ok",
            reasons=(),
            data_hashes={"synthetic_file_sha256": q.sha256},
        ).with_run_id("rerun-1")
        return RunOutcome(
            verdict=verdict,
            run_id="rerun-1",
            tracking_uri=tracking_uri,
            dataset="toy",
            quarantined=str(q.path),
        )

    return regate


def test_suppressed_publication_manifest_counts_its_rows(tmp_path):
    run_id, uri = make_review_run(tmp_path)
    decision = review.decide_run(
        run_id,
        action="approve",
        reviewer="ana",
        suppress=[GROUP],
        tracking_uri=uri,
        workdir=str(tmp_path),
        regate=_fake_regate(tmp_path, kept=13),
    )
    manifest = json.loads((Path(decision.published).parent / "manifest.json").read_text())
    assert manifest["rows"] == 13 == len(pd.read_parquet(decision.published))


def test_plain_approval_manifest_counts_its_rows(tmp_path):
    run_id, uri = make_review_run(tmp_path, rows=20)
    decision = review.decide_run(
        run_id, action="approve", reviewer="ana", tracking_uri=uri, workdir=str(tmp_path)
    )
    assert json.loads((Path(decision.published).parent / "manifest.json").read_text())["rows"] == 20


def test_report_after_approval_says_published_and_where(tmp_path):
    run_id, uri = make_review_run(tmp_path)
    decision = review.decide_run(
        run_id, action="approve", reviewer="ana", tracking_uri=uri, workdir=str(tmp_path)
    )
    tracker = tracking.Tracker(uri=uri, experiment=None)
    page = tracker.read_text(run_id, names.ART_REPORT)
    history = page.split('id="review"')[1].split("</section>")[0]
    assert "not published" not in history and decision.published in history
    first_screen = page.split('id="reasons"')[0]  # the banner and the summary cards
    assert f"published to <code>{decision.published}</code>" in first_screen


def test_run_name_and_tag_carry_the_verdict_and_the_last_line_says_why(tmp_path):
    handler = LogLines()
    logger = logging.getLogger("test-records-lines")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        run_id, uri = make_review_run(tmp_path, logger=logger)
    finally:
        logger.removeHandler(handler)
    run = tracking.Tracker(uri=uri, experiment=None).client.get_run(run_id)
    assert run.info.run_name == "REVIEW · gate-toy"
    assert run.data.tags[names.TAG_VERDICT] == "REVIEW"
    last = handler.lines[-1]
    # the main reason in words with its key (words/checks.py), not the technical message
    assert last.startswith("verdict REVIEW — ") and "violates" not in last, handler.lines[-3:]
    assert "membership_test.p_adjusted)" in last and "p = 0.0008" in last, last
    assert GROUP in last and run_id in last


def test_review_leads_with_the_evidence_in_words(tmp_path):
    run_id, _ = make_review_run(tmp_path)
    r = runner.invoke(app, ["review", run_id, "--workdir", str(tmp_path)], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1] == "evidence:", lines[:4]
    assert lines[2] == (
        f"  - {GROUP}: 64 members among the targets; an attacker (domias) tells members from "
        "non-members with AUC 0.68 [0.59, 0.77]; 31% of its members caught at 1% false alarms; "
        "3 of its member targets singled out as exposed records; p = 0.0008 after Holm correction "
        "for 38 groups"
    )
    # then the reasons in words (the key after each), and what suppressing the group would do
    reasons = lines[lines.index("flagged subgroups (rule checks):") + 1]
    assert reasons == (
        f"  - In the group {GROUP}, the attacks rank its member targets above its non-members more "
        "than chance allows (p = 0.0008 after Holm correction over every audited group; level "
        "0.01): "
        f"the release may expose people of this group. ({GROUP}: membership_test.p_adjusted)"
    )
    assert "violates" not in r.stdout
    assert f"  - Suppress {GROUP}: not worked out by the gate" in r.stdout


def test_a_suppressing_approval_the_regate_still_blocks_says_why_in_words(tmp_path):
    run_id, uri = make_review_run(tmp_path)
    leak = Check(
        rule="copies.excess_share <= 0.01",
        metric="copies.excess_share",
        observed=0.04,
        threshold=0.01,
        bound="max",
        action="block",
        passed=False,
        message="copies.excess_share = 0.04 violates max 0.01 (<=)",
    )

    def regate(*, run_id, suppress, tracking_uri, workdir):
        verdict = Verdict(decision="BLOCK", status="ok", reasons=(leak,)).with_run_id("rerun-2")
        return RunOutcome(
            verdict=verdict, run_id="rerun-2", tracking_uri=tracking_uri, dataset="toy"
        )

    with pytest.raises(review.ReviewError) as refused:
        review.decide_run(
            run_id,
            action="approve",
            reviewer="ana",
            suppress=[GROUP],
            tracking_uri=uri,
            workdir=str(tmp_path),
            regate=regate,
        )
    assert (
        "the gate still BLOCKs (re-run rerun-2): 4% of the synthetic rows copy a training "
        "record verbatim, beyond the rate natural twins explain (bar 1%): training records are "
        "copied into the release. (copies.excess_share)"
    ) in str(refused.value)


def test_review_pending_lists_the_runs_awaiting_a_decision(tmp_path):
    waiting, uri = make_review_run(tmp_path)
    decided, _ = make_review_run(tmp_path, rows=10)
    review.decide_run(
        decided, action="reject", reviewer="ana", tracking_uri=uri, workdir=str(tmp_path)
    )
    r = runner.invoke(
        app, ["review", "--pending", "--workdir", str(tmp_path)], catch_exceptions=False
    )
    assert r.exit_code == 0, r.stderr
    listed = [
        line
        for line in r.stdout.splitlines()
        if line.startswith(waiting) or line.startswith(decided)
    ]
    assert len(listed) == 1 and listed[0].startswith(waiting)
    assert "toy" in listed[0] and f"flagged: {GROUP}" in listed[0]
    review.decide_run(
        waiting, action="reject", reviewer="ana", tracking_uri=uri, workdir=str(tmp_path)
    )
    r = runner.invoke(
        app, ["review", "--pending", "--workdir", str(tmp_path)], catch_exceptions=False
    )
    assert r.exit_code == 0 and r.stdout.strip() == "no runs awaiting review"
