"""The Prefect review form of a paused REVIEW run: no default decision, the run's flagged groups
listed (description, and the only choices of ``suppress``), and a decision that records exactly
what was removed (a group inside a suppressed one is recorded suppressed, never approved).
The paused run's real form, saved on the Prefect server, is checked in
tests/review/test_review.py::test_paused_flow_resumed_with_typed_input_publishes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from privacy_gate.errors import ReviewError
from privacy_gate.flows.review_form import ReviewInput, review_form
from privacy_gate.gate import Verdict
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.review.decide import _with_contained_groups
from privacy_gate.tracking.review_records import suppressed_with

FLAGGED = ("race=Black", "sex=Female&race=Black", "sex=Female")


def _review(flagged=FLAGGED) -> RunOutcome:
    verdict = Verdict(decision="REVIEW", status="ok", reasons=(), flagged_subgroups=tuple(flagged))
    return RunOutcome(verdict=verdict, run_id="r9", tracking_uri="sqlite:///x.db", dataset="adult")


def test_the_form_has_no_default_decision_and_offers_exactly_the_flagged_groups():
    form = review_form(_review(), evidence="race=Black: 64 members; AUC 0.68 [0.59, 0.78]")
    schema = form.model_json_schema()
    assert {"decision", "reviewer"} <= set(schema["required"]) and "default" not in schema[
        "properties"
    ]["decision"]
    with pytest.raises(ValidationError, match="decision"):
        form(reviewer="ana")
    items = schema["properties"]["suppress"]["items"]
    assert items.get("enum") == list(FLAGGED), items
    with pytest.raises(ValidationError):
        form(reviewer="ana", decision="approve", suppress=["race=White"])  # not flagged in this run
    description = form._description
    assert (
        all(f"- `{g}`" in description for g in FLAGGED) and "AUC 0.68 [0.59, 0.78]" in description
    )
    assert "*reject* publishes nothing" in description
    assert issubclass(form, ReviewInput)


def test_a_run_without_flagged_groups_offers_nothing_to_suppress():
    form = review_form(_review(flagged=()))
    assert form(reviewer="ana", decision="approve").suppressed() == []
    with pytest.raises(ValidationError):
        form(reviewer="ana", decision="approve", suppress=["race=Black"])


def test_the_answer_names_every_group_to_remove_and_none_on_reject():
    form = review_form(_review())
    answer = form(
        reviewer="ana",
        decision="approve",
        suppress=["race=Black"],
        subgroups={"sex=Female": "reject"},
        suppress_exposed=True,
    )
    assert answer.suppressed() == ["exposed", "race=Black", "sex=Female"]
    assert form(reviewer="ana", decision="reject", suppress=["race=Black"]).suppressed() == []


def test_groups_inside_a_suppressed_group_are_recorded_suppressed_not_approved():
    verdict = {"flagged_subgroups": list(FLAGGED)}
    assert _with_contained_groups(verdict, {}, ["race=Black"]) == [
        "race=Black",
        "sex=Female&race=Black",
    ]
    assert _with_contained_groups(verdict, {}, ["sex=Female&race=Black"]) == [
        "sex=Female&race=Black"
    ]
    assert suppressed_with(list(FLAGGED), ["exposed"]) == []
    with pytest.raises(
        ReviewError, match=r"\['sex=Female&race=Black'\] approved, but their rows are removed"
    ):
        _with_contained_groups(verdict, {"sex=Female&race=Black": "approve"}, ["race=Black"])


def test_a_deployment_pauses_at_most_one_run_for_review(prefect_server, monkeypatch):
    """A paused run gives its deployment's slot back; the next run of a fast schedule must not
    pause too (its REVIEW stays pending for the CLI)."""
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.states import Paused

    from privacy_gate.flows.review_wait import paused_sibling as _paused_sibling

    @flow(name="review-sibling-probe")
    def probe():
        return None

    with get_client(sync_client=True) as client:
        deployment_id = client.create_deployment(flow_id=client.create_flow(probe), name="sibling")
        paused = client.create_flow_run_from_deployment(deployment_id)
        other = client.create_flow_run_from_deployment(deployment_id)
        assert _sibling(monkeypatch, deployment_id, other.id) is None  # nothing paused yet
        client.set_flow_run_state(paused.id, Paused(), force=True)
    assert _sibling(monkeypatch, deployment_id, other.id) == str(paused.id)
    assert _sibling(monkeypatch, deployment_id, paused.id) is None  # itself does not count
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID")
    assert _paused_sibling() is None  # not a deployment's run: nothing to compare with


def _sibling(monkeypatch, deployment_id, flow_run_id):
    from privacy_gate.flows.review_wait import paused_sibling as _paused_sibling

    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", str(deployment_id))
    monkeypatch.setenv("PREFECT__RUNTIME__FLOW_RUN__ID", str(flow_run_id))
    return _paused_sibling()
