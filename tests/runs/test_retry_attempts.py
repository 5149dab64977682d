"""Retries of one release as attempts under one parent MLflow run (fast: a sqlite store and
attempts that record a run each, no gate; the killed-server retries are in test_infra_retries)."""

from __future__ import annotations

from privacy_gate import names, tracking
from privacy_gate.config import RetryConfig
from privacy_gate.runs.retrying import run_with_retries


def _attempts_run(tmp_path, outcomes):
    """``run_with_retries`` over attempts that each record a release run (as ``release_run`` starts
    it) and end as ``outcomes`` say: "infra" (retryable BLOCK), "down" (the store refused before
    any run), else the verdict; returns the tracker, the result and the attempts' run ids."""
    from privacy_gate.gate import Verdict
    from privacy_gate.pipeline.result import RunOutcome

    tracker = tracking.Tracker.for_workdir(workdir=tmp_path / "wd", dataset="adult")
    made: list[str] = []
    steps = iter(outcomes)

    def attempt() -> RunOutcome:
        what = next(steps)
        if what == "down":
            raise ConnectionRefusedError(111, "Connection refused")
        run_id = tracker.start_run(
            name="release-adult", kind="release", tags={names.TAG_DATASET: "adult"}
        )
        made.append(run_id)
        verdict = (
            Verdict.error("logging: infrastructure failure")
            if what == "infra"
            else Verdict(decision=what, status="ok", reasons=())
        )
        tracker.end_run(run_id)
        return RunOutcome(
            verdict=verdict.with_run_id(run_id),
            run_id=run_id,
            tracking_uri=tracker.uri,
            dataset="adult",
            retryable=what == "infra",
        )

    result = run_with_retries(
        attempt, retries=RetryConfig(attempts=4, delay_seconds=0), sleep=lambda s: None
    )
    return tracker, result, made


def test_retried_attempts_nest_under_one_parent_carrying_the_final_verdict(tmp_path):
    tracker, result, made = _attempts_run(tmp_path, ["infra", "down", "APPROVE"])
    assert (
        result.verdict.decision == "APPROVE" and result.attempts == 3 and result.run_id == made[-1]
    )
    runs = {r.info.run_id: r for r in tracker.find_runs()}
    parents = [r for r in runs.values() if r.data.tags.get(names.TAG_KIND) == names.KIND_ATTEMPTS]
    assert len(parents) == 1, [r.data.tags for r in runs.values()]
    parent = parents[0]
    assert (
        parent.data.tags[names.TAG_VERDICT] == "APPROVE"
        and parent.data.tags[names.TAG_ATTEMPTS] == "3"
    )
    assert parent.data.tags[names.TAG_FINAL_RUN] == made[-1] and parent.info.status == "FINISHED"
    assert parent.info.run_name.startswith("APPROVE · ")
    # both recorded attempts (the first, made before any retry, moved under the parent) are its
    # children
    assert [
        (runs[r].data.tags.get("mlflow.parentRunId"), runs[r].data.tags.get(names.TAG_ATTEMPT))
        for r in made
    ] == [(parent.info.run_id, "1"), (parent.info.run_id, "3")]
    assert len(runs) == 3  # the parent and the two recorded attempts: nothing unrelated


def test_a_release_without_retries_has_no_parent_run(tmp_path):
    tracker, result, made = _attempts_run(tmp_path, ["REVIEW"])
    runs = tracker.find_runs()
    assert [r.info.run_id for r in runs] == made and result.attempts == 1
    assert (
        "mlflow.parentRunId" not in runs[0].data.tags and names.TAG_ATTEMPT not in runs[0].data.tags
    )


def test_attempts_that_run_out_leave_a_blocked_parent(tmp_path):
    tracker, result, made = _attempts_run(tmp_path, ["infra"] * 4)
    assert result.verdict.decision == "BLOCK" and len(made) == 4
    parent = next(
        r for r in tracker.find_runs() if r.data.tags.get(names.TAG_KIND) == names.KIND_ATTEMPTS
    )
    assert parent.data.tags[names.TAG_VERDICT] == "BLOCK" and parent.info.status == "FAILED"
    assert {tracker.client.get_run(r).data.tags["mlflow.parentRunId"] for r in made} == {
        parent.info.run_id
    }
