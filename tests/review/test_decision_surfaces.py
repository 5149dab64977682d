"""A REVIEW's decision reaches every MLflow surface: the run's name (what the run list shows),
its description (the decision on its first line, the decision commands gone), its tags, and the
re-rendered report (its verdict card no longer says "a human decides"); a decision rolled back
(a killed ``approve``) puts them back to pending. Hand-made runs recorded the way the gate records
them, in a real MLflow store; the report really rendered. Seconds each."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from privacy_gate import names, tracking
from privacy_gate.gate import Verdict
from privacy_gate.publication.publish import ReleaseStore
from privacy_gate.report.html import log_report
from privacy_gate.review import decide as review
from privacy_gate.review.decision_recovery import resolve_for_review
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.safe_text import markdown_text
from privacy_gate.tracking.review_records import ReviewDecision

from .test_rerun_decisions import GROUP, _frame, _record


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    monkeypatch.delenv(tracking.SIGNING_KEY_ENV, raising=False)


def _pending(workdir: Path) -> tuple[str, str]:
    """A REVIEW run with its name, description and report, as a gate run leaves them."""
    tracker = tracking.Tracker.for_workdir(workdir=workdir, dataset="toy")
    sink = MlflowSink.start(tracker, name="gate-toy", kind="gate_only", dataset="toy")
    sink.workdir = str(workdir)
    _record(sink, ReleaseStore(workdir=workdir), _frame(40), flagged=(GROUP,))
    verdict = Verdict.from_dict(tracker.read_verified_verdict(sink.run_id)).with_run_id(sink.run_id)
    summary = sink.summary_markdown(verdict)
    sink.record_summary(summary)
    sink.record_run_name(verdict)
    sink.record_description(verdict, summary)
    log_report(tracker, sink.run_id)
    return sink.run_id, tracker.uri


def _views(uri: str, run_id: str, workdir: Path) -> tuple[str, str, str, dict]:
    """(run name, description, report page, tags) as a person opening them sees them."""
    run = MlflowClient(uri).get_run(run_id)
    tags = dict(run.data.tags)
    report = tracking.Tracker(uri=uri, experiment=None).read_text(run_id, names.ART_REPORT)
    return run.info.run_name, tags[tracking.NOTE_TAG], report, tags


def test_a_pending_review_says_so_everywhere(tmp_path):
    run_id, uri = _pending(tmp_path)
    name, note, report, tags = _views(uri, run_id, tmp_path)
    assert name == "REVIEW · gate-toy" and tags[names.TAG_APPROVAL_STATUS] == "pending"
    assert note.startswith("**REVIEW** (status ok) · ") and "Decide (" in note
    assert "a human decides; nothing is published before" in report and 'id="decide"' in report


def _decided(tmp_path: Path, action: str, reviewer: str):
    """A pending run decided with ``decide_run``: (run id, store, decision)."""
    run_id, uri = _pending(tmp_path)
    decision = review.decide_run(
        run_id,
        action=action,
        reviewer=reviewer,
        comment="why",
        tracking_uri=uri,
        workdir=str(tmp_path),
    )
    return run_id, uri, decision


def test_an_approval_reaches_the_name_the_description_and_the_report(tmp_path):
    run_id, uri, decision = _decided(tmp_path, "approve", "ana")
    name, note, report, tags = _views(uri, run_id, tmp_path)
    assert name == "REVIEW approved · gate-toy"  # the run list's name cell
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "approved" and tags[names.TAG_APPROVAL_REVIEWER] == "ana"
    )
    first = note.splitlines()[0]
    stamp = markdown_text(
        f"approved by ana: published to {decision.published}"
    )  # markdown, rendered as written
    assert first.startswith(f"**REVIEW** (status ok) · **{stamp}**")
    assert "Decide (" not in note and "privacy-gate approve" not in note  # no command left to paste
    cards = report.split('id="summary"')[1].split("<nav>")[0]
    assert "approved by ana: published" in cards and "a human decides" not in report
    assert "review approved by ana" in report and 'id="decide"' not in report


def test_a_rejection_reaches_the_name_the_description_and_the_report(tmp_path):
    run_id, uri, _ = _decided(tmp_path, "reject", "bo")
    name, note, report, _ = _views(uri, run_id, tmp_path)
    assert name == "REVIEW rejected · gate-toy"
    assert note.splitlines()[0].startswith(
        "**REVIEW** (status ok) · **rejected by bo: nothing is published**"
    )
    assert (
        "rejected by bo: nothing is published" in report.split("<nav>")[0]
        and "a human decides" not in report
    )


def test_an_approval_rolled_back_puts_every_surface_back_to_pending(tmp_path):
    """A killed ``approve`` left its record and tags but published nothing: resolving it voids the
    approval, and the name, the description and the report say pending again."""
    run_id, uri = _pending(tmp_path)
    tracker = tracking.Tracker(uri=uri, experiment=None)
    verdict = tracker.read_verified_verdict(run_id)
    approval = ReviewDecision.new(
        action="approve",
        reviewer="ana",
        run_id=run_id,
        data_sha256=verdict["data_hashes"]["synthetic_file_sha256"],
    )
    tracker.append_decision(run_id, approval.to_dict())  # the killed approve's first two steps
    tracker.name_with_verdict(run_id, "REVIEW", decided="approved")
    lines = resolve_for_review(tracker, run_id)
    assert any("rolled back" in line for line in lines), lines
    name, note, report, tags = _views(uri, run_id, tmp_path)
    assert tags[names.TAG_APPROVAL_STATUS] == "pending" and name == "REVIEW · gate-toy"
    assert "approved by" not in note.splitlines()[0] and "Decide (" in note
    assert "a human decides; nothing is published before" in report
