"""Verdicts as Prefect states: BLOCK ends ``Blocked`` (Failed type), REVIEW ``Review``
(Completed type), APPROVE Completed, no verdict Failed; the run's last log lines say the verdict
and why; callers of the flows still get the RunOutcome; the verdict event links the MLflow run."""

from __future__ import annotations

import time

import pytest

from privacy_gate.flows import coordination
from privacy_gate.flows.verdict_states import (
    VerdictFlow,
    glance_name,
    outcome_of,
    skipped_state,
    verdict_flow,
    verdict_line,
    verdict_state,
)
from privacy_gate.gate import Check, Verdict
from privacy_gate.pipeline.result import RunOutcome

from ..conftest import write_release_config


def _outcome(decision: str, *, status: str = "ok", **kw) -> RunOutcome:
    if status != "ok":
        verdict = Verdict.error("gate did not complete: the store did not answer")
    else:
        reasons = (
            ()
            if decision == "APPROVE"
            else (
                Check(
                    rule="any.auc <= 0.6",
                    metric="auc",
                    observed=0.93,
                    threshold=0.6,
                    bound="max",
                    action="block" if decision == "BLOCK" else "review",
                    passed=False,
                    message="dcr.auc = 0.93 violates max 0.6",
                ),
            )
        )
        verdict = Verdict(
            decision=decision,
            status="ok",
            reasons=reasons,
            flagged_subgroups=("race=Other",) if decision == "REVIEW" else (),
        )
    return RunOutcome(
        verdict=verdict, run_id="r1", tracking_uri="http://mlflow:5000", dataset="adult", **kw
    )


#: the test check in words (words/checks.py), its key after it: what a state message leads with
AUC_WORDS = (
    "The strongest attack tells training records from holdout records with AUC 0.93 (0.5 "
    "is guessing; bar 0.6): an attacker can tell who was in the training data. (auc)"
)


@pytest.mark.parametrize(
    "decision, status, kind, name, head",
    [
        ("APPROVE", "ok", "COMPLETED", "Approved", "APPROVE: every rule passed"),
        (
            "REVIEW",
            "ok",
            "COMPLETED",
            "Review pending",
            f"REVIEW: {AUC_WORDS} — flagged: race=Other",
        ),
        ("BLOCK", "ok", "FAILED", "Blocked", f"BLOCK: {AUC_WORDS}"),
        (
            "BLOCK",
            "error",
            "FAILED",
            "Failed",
            "BLOCK (gate did not complete): The gate did not finish: gate did not complete: the "
            "store",
        ),
    ],
)
def test_each_verdict_has_its_state(decision, status, kind, name, head):
    outcome = _outcome(decision, status=status)
    state = verdict_state(outcome)
    assert (state.type.value, state.name) == (kind, name)
    assert state.message.startswith(head) and state.message.endswith("MLflow run r1"), state.message
    assert "\n" not in state.message


def test_a_decided_review_is_named_apart_from_a_pending_one():
    approved = verdict_state(
        _outcome("REVIEW", review="approve", review_decision={"reviewer": "officer"})
    )
    rejected = verdict_state(
        _outcome("REVIEW", review="reject", review_decision={"reviewer": "officer"})
    )
    timed_out = verdict_state(_outcome("REVIEW", review="timeout"))
    assert (approved.type.value, approved.name) == ("COMPLETED", "Review approved")
    assert (rejected.type.value, rejected.name) == ("FAILED", "Review rejected")  # not released
    assert outcome_of(rejected).review == "reject"
    assert (timed_out.type.value, timed_out.name) == ("COMPLETED", "Review pending")


def test_a_block_message_starts_with_its_blocking_reason_in_words():
    review_level = [
        Check(
            rule=f"r{i}",
            metric="m",
            observed=1.0,
            threshold=0.5,
            bound="max",
            action="review",
            passed=False,
            message=f"review-level reason {i}",
        )
        for i in range(3)
    ]
    blocking = Check(
        rule="any.auc <= 0.6",
        metric="auc",
        observed=0.93,
        threshold=0.6,
        bound="max",
        action="block",
        passed=False,
        message="auc = 0.93 violates max 0.6",
    )
    outcome = RunOutcome(
        verdict=Verdict(decision="BLOCK", status="ok", reasons=(*review_level, blocking)),
        run_id="r1",
        tracking_uri=None,
        dataset="adult",
    )
    message = verdict_state(outcome).message
    assert message.startswith(f"BLOCK: {AUC_WORDS} (+3 more)"), message
    assert "violates" not in message


def test_review_line_says_who_decided_or_how_to():
    assert "awaiting review: privacy-gate review r1" in verdict_line(_outcome("REVIEW"))
    decided = _outcome(
        "REVIEW", review="approve", review_decision={"reviewer": "officer"}, published="s3://r/x"
    )
    assert "approved by officer — published s3://r/x" in verdict_line(decided)


def test_a_verdict_flow_called_as_a_function_returns_the_outcome_for_every_verdict(prefect_server):
    @verdict_flow(name="verdict-probe", persist_result=False)
    def probe(decision: str, status: str = "ok"):
        return verdict_state(_outcome(decision, status=status))

    assert isinstance(probe, VerdictFlow) and isinstance(
        probe.with_options(name="other"), VerdictFlow
    )
    for decision, status in (
        ("APPROVE", "ok"),
        ("REVIEW", "ok"),
        ("BLOCK", "ok"),
        ("BLOCK", "error"),
    ):
        assert probe(decision, status).verdict.decision == decision
    state = probe.with_options(name="verdict-probe-2")("BLOCK", return_state=True)
    assert state.is_failed() and state.name == "Blocked" and outcome_of(state).run_id == "r1"

    @verdict_flow(name="broken-probe", persist_result=False)
    def broken():
        raise RuntimeError("no verdict")

    with pytest.raises(
        RuntimeError, match="no verdict"
    ):  # a failure that is no verdict is not swallowed
        broken()

    @verdict_flow(name="skip-probe", persist_result=False)
    def skipped():
        return skipped_state(_outcome("BLOCK", status="error"), "the slot is busy")

    state = skipped(return_state=True)
    assert (state.type.value, state.name, state.message) == (
        "CANCELLED",
        "Skipped",
        "skipped: the slot is busy",
    )
    assert skipped().verdict.decision == "BLOCK"  # fail closed for a caller reading the outcome


def _logs(flow_run_id, *, until: str, timeout: float = 60.0) -> list[str]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    deadline = time.monotonic() + timeout
    while True:
        with get_client(sync_client=True) as client:
            logs = client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
        lines = [log.message for log in sorted(logs, key=lambda log: log.timestamp)]
        if any(until in line for line in lines) or time.monotonic() > deadline:
            return lines
        time.sleep(1)


def test_a_blocked_release_ends_blocked_and_its_last_lines_say_why(
    prefect_server, small_adult, tmp_path
):
    from privacy_gate.flows import release_flow

    cfg = write_release_config(
        small_adult, {"name": "copy_train"}, name="blocked-state.yaml", fast=True
    )
    state = release_flow(config_path=str(cfg), workdir=str(tmp_path), return_state=True)
    assert state.is_failed() and state.name == "Blocked", state
    outcome = outcome_of(state)
    assert outcome.verdict.decision == "BLOCK" and outcome.verdict.status == "ok"
    assert (
        state.message.startswith("BLOCK: ")
        and outcome.run_id in state.message
        and "more)" in state.message
    )
    assert len(state.message) < 1000
    # the flow's last line (Prefect's own "Finished in state Blocked('<the same message>')" follows
    # at INFO, which this test session does not send: PREFECT_LOGGING_LEVEL=WARNING)
    lines = _logs(state.state_details.flow_run_id, until="verdict: ")
    assert lines[-1] == f"verdict: {state.message}", lines[-3:]
    # the run's name starts with its message (Prefect's flow run page shows the name, not the
    # message)
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        name = client.read_flow_run(state.state_details.flow_run_id).name
    assert name == glance_name(state.message, name) and name.startswith("BLOCK: The attack "), name


def test_a_run_is_named_after_the_start_of_its_state_message():
    message = verdict_state(_outcome("BLOCK")).message
    name = glance_name(message, "calm-otter")
    assert (
        name
        == "BLOCK: The strongest attack tells training records from holdout records … · calm-otter"
    )
    assert message.startswith(name.split(" …")[0]) and len(name.split(" · ")[0]) <= 74
    # named again (a retried flow run, a review decided in the paused run): the generated name stays
    assert (
        glance_name(verdict_state(_outcome("APPROVE")).message, name)
        == "APPROVE: every rule passed · calm-otter"
    )
    assert glance_name("skipped: busy", "") == "skipped: busy"


def test_the_verdict_event_links_the_mlflow_run(monkeypatch):
    sent = []
    monkeypatch.setattr(coordination, "emit_event", lambda **kw: sent.append(kw))
    coordination.emit_verdict_event(_outcome("REVIEW"))
    event = sent[0]
    assert event["event"] == "privacy-gate.verdict.review"
    assert event["payload"]["mlflow_run_url"] == "http://mlflow:5000/#/runs/r1"
    assert event["related"][0]["mlflow.run.url"] == "http://mlflow:5000/#/runs/r1"
    sent.clear()
    coordination.emit_verdict_event(
        RunOutcome(
            verdict=Verdict.error("x"), run_id="r2", tracking_uri="sqlite:///w.db", dataset="adult"
        )
    )
    assert (
        sent[0]["payload"]["mlflow_run_url"] is None
        and "mlflow.run.url" not in sent[0]["related"][0]
    )
