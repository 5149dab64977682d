"""A re-gate's run is decided with its parent, never alone.

``approve RUN --suppress GROUP`` re-runs the gate on the filtered release in a run of its own
(kind ``review_rerun``, tag ``gate.rerun_of``): the approval of RUN publishes that run's release.
The re-run is hidden from ``review --pending``, but ``reject RERUN`` (or ``approve RERUN``) used to
be accepted, even after its release was published: a second, contradictory decision, and an
approval that could publish without the parent's. Deciding it alone is refused (exit 2, naming the
parent), by its tags and by its sealed verdict (an edited kind tag does not get around it).

Hand-made runs (no gate), recorded the way the gate records them: seconds each.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.errors import ReviewError
from privacy_gate.gate import Verdict
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.publication.publish import ReleaseStore
from privacy_gate.review import decide as review
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.runs.regate import rerun_sink
from tests.review_stubs import no_key_no_report  # noqa: F401 - autouse: no signing key, no HTML report

GROUP = "race=Black"
runner = CliRunner()


def _frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"a": range(n), "race": ["Black", "White"] * (n // 2)})


def _record(
    sink: MlflowSink, store: ReleaseStore, df: pd.DataFrame, *, flagged: tuple[str, ...]
) -> str:
    q = store.quarantine(df)
    sink.record_quarantine(q, target=store.target_label)
    sink.record_json({"mode": "gate_only"}, names.ART_CONFIG)
    sink.record_json({"spec": "toy"}, names.ART_SETTINGS)
    verdict = Verdict(
        decision="REVIEW",
        status="ok",
        reasons=(),
        flagged_subgroups=flagged,
        data_hashes={"synthetic_file_sha256": q.sha256},
    ).with_run_id(sink.run_id)
    sink.record_verdict(verdict, timings={})
    return str(q.path)


def _parent(workdir: Path) -> tuple[str, str]:
    tracker = tracking.Tracker.for_workdir(workdir=workdir, dataset="toy")
    sink = MlflowSink.start(tracker, name="gate-toy", kind="gate_only", dataset="toy")
    _record(sink, ReleaseStore(workdir=workdir), _frame(40), flagged=(GROUP,))
    return sink.run_id, tracker.uri


def _regate(workdir: Path):
    """The re-gate ``approve --suppress`` runs, recorded through the pipeline's own re-run sink
    (what ``regate_run`` records), ending REVIEW: the approval of its parent publishes it."""
    made: list[str] = []

    def regate(*, run_id: str, suppress: list[str], tracking_uri: str, workdir: str) -> RunOutcome:
        tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
        tracker.experiment_id = tracker.experiment_of(run_id)
        sink = rerun_sink(tracker, parent=run_id, dataset="toy")
        quarantined = _record(
            sink, ReleaseStore(workdir=Path(workdir)), _frame(40).iloc[1::2], flagged=()
        )
        made.append(sink.run_id)
        verdict = Verdict.from_dict(tracker.read_verified_verdict(sink.run_id))
        return RunOutcome(
            verdict=verdict,
            run_id=sink.run_id,
            tracking_uri=tracking_uri,
            dataset="toy",
            quarantined=quarantined,
        )

    return regate, made


@pytest.fixture
def approved_with_suppression(tmp_path):
    parent, uri = _parent(tmp_path)
    regate, made = _regate(tmp_path)
    decision = review.decide_run(
        parent,
        action="approve",
        reviewer="ana",
        suppress=[GROUP],
        tracking_uri=uri,
        workdir=str(tmp_path),
        regate=regate,
    )
    assert decision.published and decision.rerun_id == made[0]
    return parent, made[0], uri, Path(decision.published)


@pytest.mark.parametrize("action", ["reject", "approve"])
def test_a_regates_run_cannot_be_decided_alone_after_publication(
    tmp_path, approved_with_suppression, action
):
    parent, rerun, uri, published = approved_with_suppression
    before = sorted(p.name for p in (tmp_path / "published").iterdir())
    r = runner.invoke(app, [action, rerun, "--reviewer", "bo", "--workdir", str(tmp_path)])
    assert r.exit_code == 2, (r.exit_code, r.stdout, r.stderr)
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1, r.stderr
    assert (
        f"run {rerun} is the re-gate of run {parent}" in line and "decided with its parent" in line
    ), line
    tracker = tracking.Tracker(uri=uri, experiment=None)
    assert tracker.decisions(rerun) == []  # nothing recorded on the re-run
    assert [d["action"] for d in tracker.decisions(parent)] == ["approve"]
    assert names.TAG_DECISION_CLAIM not in tracker.run_tags(rerun)  # no claim left behind
    assert (
        sorted(p.name for p in (tmp_path / "published").iterdir()) == before and published.is_file()
    )


def test_an_edited_kind_tag_does_not_make_a_regate_decidable(tmp_path, approved_with_suppression):
    """The re-run's parent is sealed in its verdict: rewriting its tags (kind, rerun_of) does not
    turn it into a run of its own."""
    parent, rerun, uri, _ = approved_with_suppression
    tracker = tracking.Tracker(uri=uri, experiment=None)
    tracker.set_tags(rerun, {names.TAG_KIND: "gate_only", names.TAG_RERUN_OF: ""})
    with pytest.raises(ReviewError, match=f"run {rerun} is the re-gate of run {parent}"):
        review.decide_run(
            rerun, action="reject", reviewer="bo", tracking_uri=uri, workdir=str(tmp_path)
        )
    assert tracker.decisions(rerun) == []


def test_a_regate_left_by_a_killed_approval_points_at_its_undecided_parent(tmp_path):
    """An approval killed after its re-gate (nothing recorded on the parent): the re-run is still
    refused, and the parent is the run to decide."""
    parent, uri = _parent(tmp_path)
    regate, made = _regate(tmp_path)
    regate(run_id=parent, suppress=[GROUP], tracking_uri=uri, workdir=str(tmp_path))
    with pytest.raises(ReviewError, match=f"decide run {parent}") as err:
        review.decide_run(
            made[0], action="approve", reviewer="bo", tracking_uri=uri, workdir=str(tmp_path)
        )
    assert "re-gate" in str(err.value)
    assert not (tmp_path / "published").exists()
    decision = review.decide_run(
        parent, action="reject", reviewer="bo", tracking_uri=uri, workdir=str(tmp_path)
    )
    assert decision.action == "reject"


def test_a_ladder_filter_rung_is_still_decided_on_its_own(tmp_path):
    """A remediation ladder's filter rung is also a re-gate (``gate.rerun_of``), but its REVIEW
    waits for a reviewer like any run (docs/generators.md): it stays decidable."""
    parent, uri = _parent(tmp_path)
    tracker = tracking.Tracker(uri=uri, experiment=None)
    tracker.experiment_id = tracker.experiment_of(parent)
    sink = MlflowSink.start(
        tracker,
        name="ladder-filter-toy",
        kind=names.KIND_LADDER_FILTER,
        dataset="toy",
        tags={names.TAG_RERUN_OF: parent},
    )
    _record(sink, ReleaseStore(workdir=tmp_path), _frame(40).iloc[::2], flagged=())
    decision = review.decide_run(
        sink.run_id, action="reject", reviewer="ana", tracking_uri=uri, workdir=str(tmp_path)
    )
    assert decision.action == "reject"
