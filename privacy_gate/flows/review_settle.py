"""A REVIEW decided with ``privacy-gate approve|reject`` while its Prefect flow run still says it
waits: the flow run is ended in the decision's state (``Review approved`` / ``Review rejected``,
``flows/verdict_states.py``), its message the verdict line with the decision, its name starting
with it (``glance_name``), so the Prefect UI says what the MLflow run says.

Which flow runs: the one that made the MLflow run (its ``gate.prefect_flow_run`` tag), when it is

- **suspended** for this review (a deployment's run, ``review.mode: pause``: its process exited
  and its suspension key names this MLflow run, ``review_wait.review_key``); ended here, the
  review form can no longer be answered, so nothing decides the run twice;
- or ended **Review pending** (``review.mode: pending``, or a review that timed out).

A run *paused in its process* (``privacy-gate run`` with ``review.mode: pause``) is left alone: its
process waits on it, and ends it pending at its timeout. Nothing here decides or publishes
anything: the decision is recorded before, by ``review.decide.decide_run``.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from prefect.client.orchestration import get_client

from privacy_gate import names, tracking
from privacy_gate.flows.review_wait import recorded_outcome, review_key
from privacy_gate.flows.verdict_states import STATE_REVIEW, glance_name, verdict_state

#: the Prefect state a suspended run waits in
SUSPENDED = "Suspended"


def flow_run_of(tags: dict[str, str]) -> uuid.UUID | None:
    """The Prefect flow run an MLflow run's ``gate.prefect_flow_run`` tag names (``ID`` or ``ID
    (deployment NAME)``), or None.

    >>> tag = "0f8fad5b-d9cb-469f-a165-70867728950e (deployment d)"
    >>> flow_run_of({"gate.prefect_flow_run": tag})
    UUID('0f8fad5b-d9cb-469f-a165-70867728950e')
    >>> flow_run_of({}), flow_run_of({"gate.prefect_flow_run": "None"})
    (None, None)
    """
    head = (tags.get(names.TAG_FLOW_RUN) or "").split(" ")[0]
    try:
        return uuid.UUID(head)
    except ValueError:
        return None


def _waits_for(flow_run: Any, run_id: str) -> bool:
    """Whether ``flow_run`` still says it waits for the review of MLflow run ``run_id``."""
    state = flow_run.state
    if state is None:
        return False
    if state.name == SUSPENDED:
        return review_key(run_id) in (flow_run.empirical_policy.pause_keys or set())
    return state.name == STATE_REVIEW


def settle_flow_run(run_id: str, *, tracking_uri: str, via: str) -> str | None:
    """End the flow run that made MLflow run ``run_id`` in its decision's state when it still says
    it waits (see the module docstring); ``via`` names the command that decided. Returns a line
    saying what was done, or None when no flow run waits."""
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    flow_run_id = flow_run_of(tracker.run_tags(run_id))
    decisions = tracker.decisions(run_id)
    if flow_run_id is None or not decisions:
        return None
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        if not _waits_for(flow_run, run_id):
            return None
        was = flow_run.state.name
        decision = decisions[0]
        outcome = replace(
            recorded_outcome(run_id, tracking_uri),
            review=decision["action"],
            review_decision=decision,
        )
        state = verdict_state(outcome)
        message = f"{state.message} (decided with {via})"
        client.set_flow_run_state(
            flow_run_id, state.model_copy(update={"data": None, "message": message}), force=True
        )
        client.update_flow_run(flow_run_id, name=glance_name(message, flow_run.name or ""))
    return f"Prefect flow run {flow_run_id}: {was} -> {state.name}"


__all__ = ["SUSPENDED", "flow_run_of", "settle_flow_run"]
