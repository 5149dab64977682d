"""``approve --suppress`` says what it did: the rows removed per label, the re-gate's
verdict and run, and where the release went — or, when the filtered release still BLOCKs, exit 4
(a BLOCK), nothing published, and the run left undecided with the command that rejects it.

Hand-made runs (no gate), recorded the way the gate records them; the re-gate is a stand-in that
records its own run (the real re-gate's counts are checked on a real gate in test_keyed_labels).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.gate.verdict import Check, Verdict
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.publication.publish import ReleaseStore
from privacy_gate.report.commands import REVIEWER
from privacy_gate.runs import regate
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.runs.regate import rerun_sink
from tests.review.test_rerun_decisions import GROUP, _frame, _parent
from tests.review_stubs import no_key_no_report  # noqa: F401 - autouse: no signing key, no HTML report

runner = CliRunner()
REASON = "dcr: AUC 0.71 is above 0.6"


def _regate_ending(decision: str, made: list[str]):
    """A re-gate that removes the GROUP's 20 rows of 40 and ends ``decision``."""

    def fake(
        *, run_id: str, suppress: list[str], tracking_uri: str, workdir: str, **_
    ) -> RunOutcome:
        tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
        tracker.experiment_id = tracker.experiment_of(run_id)
        sink: MlflowSink = rerun_sink(tracker, parent=run_id, dataset="toy")
        store = ReleaseStore(workdir=Path(workdir))
        q = store.quarantine(_frame(40).iloc[1::2])
        sink.record_quarantine(q, target=store.target_label, workdir=workdir)
        reasons = (
            (
                Check(
                    rule="auc",
                    metric="dcr.auc",
                    observed=0.71,
                    threshold=0.6,
                    bound="none",
                    action="block",
                    passed=False,
                    message=REASON,
                ),
            )
            if decision == "BLOCK"
            else ()
        )
        verdict = Verdict(
            decision=decision,
            status="ok",
            reasons=reasons,
            data_hashes={"synthetic_file_sha256": q.sha256},
        ).with_run_id(sink.run_id)
        sink.record_verdict(verdict, timings={})
        made.append(sink.run_id)
        return RunOutcome(
            verdict=verdict,
            run_id=sink.run_id,
            tracking_uri=tracking_uri,
            dataset="toy",
            quarantined=str(q.path),
            suppression={"rows_before": 40, "removed": 20, "by_label": {s: 20 for s in suppress}},
        )

    return fake


def _approve(tmp_path, monkeypatch, decision: str, *more: str, reviewer: str = "ana"):
    """``approve PARENT --suppress GROUP`` and ``more`` options; its re-gate ends ``decision``."""
    parent, uri = _parent(tmp_path)
    made: list[str] = []
    monkeypatch.setattr(regate, "regate_run", _regate_ending(decision, made))
    monkeypatch.setattr("privacy_gate.cli.review.use_prefect", lambda orchestrator, **kw: False)
    r = runner.invoke(
        app,
        [
            "approve",
            parent,
            "--reviewer",
            reviewer,
            "--suppress",
            GROUP,
            *more,
            "--workdir",
            str(tmp_path),
        ],
    )
    return parent, uri, made, r


def test_approve_suppress_prints_the_rows_dropped_the_new_verdict_and_where_it_went(
    tmp_path, monkeypatch
):
    parent, uri, made, r = _approve(tmp_path, monkeypatch, "REVIEW")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert "suppressed:  20 of 40 synthetic rows (50.0 %); 20 left" in lines
    assert f"  {GROUP}: 20 rows" in lines
    assert f"re-gate:     REVIEW (status ok, run {made[0]})" in lines
    published = next(line for line in lines if line.startswith("published: ")).split(": ", 1)[1]
    assert Path(published).is_file()
    # the summary first, then the decision: the order a reader follows
    assert lines.index(f"re-gate:     REVIEW (status ok, run {made[0]})") < next(
        i for i, line in enumerate(lines) if line.startswith(f"approved run {parent}")
    )
    # progress on stderr while it re-gates (the stage lines come from the re-gate itself)
    assert (
        f"approving run {parent} without the rows of {GROUP}: re-gating the filtered release first"
        in r.stderr
    )


def test_a_regate_that_blocks_exits_4_publishes_nothing_and_leaves_the_run_undecided(
    tmp_path, monkeypatch
):
    parent, uri, made, r = _approve(tmp_path, monkeypatch, "BLOCK")
    assert r.exit_code == 4, r.output
    lines = r.stdout.splitlines()
    assert "suppressed:  20 of 40 synthetic rows (50.0 %); 20 left" in lines
    assert f"re-gate:     BLOCK (status ok, run {made[0]}): {REASON}" in lines
    assert "not published: the gate BLOCKs the filtered release too" in lines
    assert not (tmp_path / "published").exists()
    tracker = tracking.Tracker(uri=uri, experiment=None)
    assert tracker.decisions(parent) == [] and names.TAG_DECISION_CLAIM not in tracker.run_tags(
        parent
    )
    # the printed reject command is complete: pasted, it decides the run
    command = next(line.strip() for line in lines if line.strip().startswith("privacy-gate reject"))
    argv = shlex.split(command.replace(REVIEWER, "bo"))
    r = runner.invoke(app, argv[1:])
    assert r.exit_code == 0 and f"rejected run {parent} as bo" in r.stdout, r.output


@pytest.mark.parametrize("flag", ["--suppress"])
def test_a_refusal_before_the_regate_prints_no_summary(tmp_path, monkeypatch, flag):
    parent, uri = _parent(tmp_path)
    monkeypatch.setattr("privacy_gate.cli.review.use_prefect", lambda orchestrator, **kw: False)
    r = runner.invoke(
        app, ["approve", parent, "--reviewer", "ana", flag, "race=Nope", "--workdir", str(tmp_path)]
    )
    assert (
        r.exit_code == 2 and "not flagged subgroups" in r.stderr and "suppressed:" not in r.stdout
    )


def _dry_run(tmp_path, monkeypatch, decision: str, *, reviewer: str = "ana"):
    return _approve(tmp_path, monkeypatch, decision, "--dry-run", reviewer=reviewer)


def _undecided(uri: str, parent: str, tmp_path) -> None:
    tracker = tracking.Tracker(uri=uri, experiment=None)
    tags = tracker.run_tags(parent)
    assert tracker.decisions(parent) == [] and tags[names.TAG_APPROVAL_STATUS] == "pending"
    assert names.TAG_DECISION_CLAIM not in tags
    assert not (tmp_path / "published").exists()


def test_approve_suppress_dry_run_shows_what_it_would_remove_and_decide_and_decides_nothing(
    tmp_path, monkeypatch
):
    parent, uri, made, r = _dry_run(tmp_path, monkeypatch, "REVIEW")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert {
        "suppressed:  20 of 40 synthetic rows (50.0 %); 20 left",
        f"  {GROUP}: 20 rows",
        f"re-gate:     REVIEW (status ok, run {made[0]})",
        f"dry run: no decision was recorded on run {parent} and nothing was published",
    } <= set(lines)
    would = next(
        line for line in lines if line.startswith("approve with these options would publish")
    )
    command = would.split(": ", 1)[1]
    assert command == (
        f"privacy-gate approve {parent} --reviewer ana --suppress {GROUP} "
        f"--workdir {shlex.quote(str(tmp_path.resolve()))}"
    )
    _undecided(uri, parent, tmp_path)
    # pasted without --dry-run, the printed command decides it
    monkeypatch.setattr(regate, "regate_run", _regate_ending("REVIEW", made))
    r = runner.invoke(app, shlex.split(command)[1:])
    assert r.exit_code == 0 and f"approved run {parent} as ana" in r.stdout, r.output


def test_a_dry_run_whose_regate_blocks_exits_4_and_decides_nothing(tmp_path, monkeypatch):
    parent, uri, made, r = _dry_run(tmp_path, monkeypatch, "BLOCK")
    assert r.exit_code == 4, r.output
    assert (
        "approve with these options would be refused: the gate BLOCKs the filtered release too"
        in r.stdout
    )
    _undecided(uri, parent, tmp_path)


def test_a_dry_run_checks_before_it_regates(tmp_path, monkeypatch):
    """An empty reviewer, or a run decided already: refused (exit 2) before any re-gate."""
    parent, uri, made, r = _dry_run(tmp_path, monkeypatch, "REVIEW", reviewer=" ")
    assert r.exit_code == 2 and "needs a reviewer name" in r.stderr and made == []
    r = runner.invoke(app, ["reject", parent, "--reviewer", "bo", "--workdir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app,
        [
            "approve",
            parent,
            "--reviewer",
            "ana",
            "--suppress",
            GROUP,
            "--dry-run",
            "--workdir",
            str(tmp_path),
        ],
    )
    assert r.exit_code == 2 and "already rejected" in r.stderr and made == [], r.output


def test_the_dry_runs_regate_is_named_and_tagged_as_one(tmp_path):
    parent, uri = _parent(tmp_path)
    tracker = tracking.Tracker(uri=uri, experiment=None)
    tracker.experiment_id = tracker.experiment_of(parent)
    sink = rerun_sink(tracker, parent=parent, dataset="toy", dry_run=True)
    run = tracker.client.get_run(sink.run_id)
    assert run.info.run_name == "review-dry-run-toy" and run.data.tags[names.TAG_DRY_RUN] == "true"
    assert run.data.tags[names.TAG_RERUN_OF] == parent
