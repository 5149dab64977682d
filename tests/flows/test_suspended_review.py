"""A deployment's REVIEW is suspended, not paused in its process
(privacy_gate/flows/review_wait.py).

A real deployment of the release flow (as ``serve`` builds it: concurrency limit 1, ``CANCEL_NEW``)
on the session's Prefect test server; each of its runs is executed the way a runner does it: the
run is moved to Pending (which takes the deployment's slot), then ``python -m prefect.engine`` runs
it in a process of its own. So these tests see what a served run does: the process exits when the
run suspends, and the resumed run executes the flow again from the top.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.flows.review_wait import LIMIT_REACHED, review_key

from .. import stack
from ..conftest import write_release_config

ROOT = Path(__file__).resolve().parents[2]
#: a rule every release violates (utility.quality is at most 1): a REVIEW without a leak, at a small
#: gate's cost
ALWAYS_REVIEW = {"rules": [{"metric": "utility.quality", "min": 0.9999, "action": "review"}]}
ANSWER = {"reviewer": "officer", "decision": "approve", "comment": "suspended and resumed"}


def _deployment(small_adult: Path, workdir: Path, name: str, **review) -> str:
    """A deployment of the release flow as ``serve`` builds it (its schedule days away: nothing
    comes due by itself), on a config whose every release is a REVIEW."""
    from privacy_gate.flows.deployments import build_deployment

    config = write_release_config(
        small_adult,
        {"name": "file", "path": str(small_adult / "independent.csv")},
        name=name,
        fast=True,
        gate=ALWAYS_REVIEW,
        review={"mode": "pause", "timeout_seconds": 3600, "once_per_release": False, **review},
    )
    return str(build_deployment(config, workdir=workdir, interval=10 * 86400).apply())


def _new_run(deployment_id: str):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.create_flow_run_from_deployment(deployment_id).id


def _state(flow_run_id):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_flow_run(flow_run_id).state


def _take_slot(flow_run_id):
    """What a runner does before it starts a run's process: Pending, which takes the deployment's
    concurrency slot (or is cancelled by the server when the slot is taken)."""
    from prefect.client.orchestration import get_client
    from prefect.states import Pending

    with get_client(sync_client=True) as client:
        return client.set_flow_run_state(flow_run_id, Pending()).state


def _execute(flow_run_id, logdir: Path):
    """Run a deployment's flow run as a runner does (Pending, then ``python -m prefect.engine`` in a
    process of its own, which must exit by itself); returns its state afterwards."""
    from prefect.settings import PREFECT_API_URL

    if _take_slot(flow_run_id).type.value != "PENDING":
        return _state(flow_run_id)
    env = {
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT__FLOW_RUN_ID": str(flow_run_id),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "PREFECT_HOME": str(logdir / "engine-home"),
        "PREFECT_LOGGING_LEVEL": "INFO",
    }
    engine = stack.start(
        f"engine-{flow_run_id}-{time.monotonic_ns()}",
        [sys.executable, "-m", "prefect.engine"],
        logdir=logdir,
        env=env,
        cwd=ROOT,
    )
    with stack.running(engine):
        assert engine.proc.wait(300) == 0, engine.tail()
    return _state(flow_run_id)


def _mlflow_run_of(state) -> str:
    """The MLflow run a suspended run waits for (its suspension key names it)."""
    key = state.state_details.pause_key
    assert key and key.startswith("privacy-gate-review-"), key
    return key.removeprefix("privacy-gate-review-")


def _release_runs(workdir: Path) -> list:
    tracker = tracking.Tracker.for_workdir(workdir=workdir, dataset="adult")
    return [
        r
        for r in tracker.find_runs(experiment_ids=[tracker.experiment_id])
        if r.data.tags.get(names.TAG_KIND) == "release"
    ]


def _tags(workdir: Path, run_id: str) -> dict[str, str]:
    return MlflowClient(tracking.default_tracking_uri(workdir)).get_run(run_id).data.tags


def _suspended(deployment_id: str, logdir: Path) -> tuple[object, str]:
    """A new run of the deployment, gated to REVIEW and suspended: (flow run id, MLflow run id)."""
    flow_run_id = _new_run(deployment_id)
    state = _execute(flow_run_id, logdir)  # the engine process exited: nothing waits in it
    assert (state.type.value, state.name) == ("PAUSED", "Suspended"), (state.name, state.message)
    return flow_run_id, _mlflow_run_of(state)


@pytest.fixture(scope="module")
def served(prefect_server, small_adult, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("suspend-work")
    return workdir, _deployment(small_adult, workdir, "suspend.yaml")


def test_a_suspended_review_resumed_with_the_typed_form_decides_and_publishes(served, tmp_path):
    from prefect.flow_runs import resume_flow_run
    from prefect.input import keyset_from_paused_state, read_flow_run_input

    workdir, deployment_id = served
    flow_run_id, run_id = _suspended(deployment_id, tmp_path)
    state = _state(flow_run_id)
    assert state.state_details.pause_reschedule and state.state_details.pause_timeout is not None
    keyset = keyset_from_paused_state(state)  # the typed form is saved with the run, as for a pause
    assert "decision" in read_flow_run_input(keyset["schema"], flow_run_id=flow_run_id)["required"]
    assert f"REVIEW** of MLflow run `{run_id}`" in read_flow_run_input(
        keyset["description"], flow_run_id=flow_run_id
    )
    assert _tags(workdir, run_id)[names.TAG_APPROVAL_STATUS] == "pending"

    # while it waits, the deployment's next run is skipped naming it (its slot is free: no lease, no
    # process)
    other = _execute(_new_run(deployment_id), tmp_path)
    assert (
        other.name == "Skipped"
        and f"flow run {flow_run_id} of this deployment waits for its review" in other.message
    )

    resume_flow_run(flow_run_id, run_input=ANSWER)
    assert (
        _state(flow_run_id).name == "Resuming"
    )  # scheduled again: a runner executes the flow from the top
    final = _execute(flow_run_id, tmp_path)
    assert (final.type.value, final.name) == ("COMPLETED", "Review approved"), final.message
    assert "approved by officer" in final.message and run_id in final.message
    tags = _tags(workdir, run_id)
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "approved"
        and tags[names.TAG_APPROVAL_REVIEWER] == "officer"
    )
    assert Path(tags[names.TAG_APPROVAL_PUBLISHED]).exists()
    assert [r.info.run_id for r in _release_runs(workdir)] == [
        run_id
    ]  # the resumed run did not gate again


def test_a_suspended_review_decided_with_the_cli_ends_in_the_decisions_state(served, tmp_path):
    """``privacy-gate approve`` on a suspended review: the flow run no longer says it waits (it
    ends ``Review approved``, the decision in its message), and its stale form cannot be
    answered."""
    from prefect.exceptions import NotPausedError
    from prefect.flow_runs import resume_flow_run

    workdir, deployment_id = served
    flow_run_id, run_id = _suspended(deployment_id, tmp_path)
    r = CliRunner().invoke(
        app,
        ["approve", run_id, "--reviewer", "cli-officer", "--workdir", str(workdir)],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert f"Prefect flow run {flow_run_id}: Suspended -> Review approved" in r.output
    state = _state(flow_run_id)
    assert (state.type.value, state.name) == ("COMPLETED", "Review approved"), (
        state.name,
        state.message,
    )
    assert (
        "approved by cli-officer" in state.message
        and "(decided with privacy-gate approve)" in state.message
    )
    assert run_id in state.message and "published" in state.message
    with pytest.raises(
        NotPausedError
    ):  # the form is gone with the suspension: nothing decides it twice
        resume_flow_run(flow_run_id, run_input=ANSWER)
    tags = _tags(workdir, run_id)
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "approved"
        and Path(tags[names.TAG_APPROVAL_PUBLISHED]).exists()
    )
    decisions = tracking.Tracker(
        uri=tracking.default_tracking_uri(workdir), experiment=None
    ).decisions(run_id)
    assert [(d["action"], d["reviewer"], d["via"]) for d in decisions] == [
        ("approve", "cli-officer", "cli")
    ]


def test_a_review_answered_in_the_form_and_decided_with_the_cli_meanwhile_is_not_decided_twice(
    served, tmp_path
):
    from prefect.flow_runs import resume_flow_run

    workdir, deployment_id = served
    flow_run_id, run_id = _suspended(deployment_id, tmp_path)
    resume_flow_run(flow_run_id, run_input=ANSWER)  # answered "approve": the run is scheduled again
    r = CliRunner().invoke(
        app,
        [
            "reject",
            run_id,
            "--reviewer",
            "cli-officer",
            "--comment",
            "no",
            "--workdir",
            str(workdir),
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert "Prefect flow run" not in r.output  # it no longer waits: the resumed run tells
    final = _execute(flow_run_id, tmp_path)
    assert (final.type.value, final.name) == ("FAILED", "Review rejected"), final.message
    assert "rejected by cli-officer" in final.message
    assert (
        "answer (approve by officer) was not applied" in final.message
        and "privacy-gate reject" in final.message
    )
    tags = _tags(workdir, run_id)
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "rejected"
        and tags[names.TAG_APPROVAL_PUBLISHED] == "none"
    )
    assert " published " not in final.message
    decisions = tracking.Tracker(
        uri=tracking.default_tracking_uri(workdir), experiment=None
    ).decisions(run_id)
    assert [(d["action"], d["reviewer"], d["via"]) for d in decisions] == [
        ("reject", "cli-officer", "cli")
    ]


def test_a_resumption_cancelled_by_the_deployment_limit_is_decided_by_the_next_run(
    served, tmp_path
):
    """The server cancels a resumed run whose deployment slot is taken at that moment (CANCEL_NEW);
    the answer stays with it, and the deployment's next run decides it and ends it in its state."""
    from prefect.client.orchestration import get_client
    from prefect.flow_runs import resume_flow_run
    from prefect.states import Cancelled

    workdir, deployment_id = served
    flow_run_id, run_id = _suspended(deployment_id, tmp_path)
    resume_flow_run(flow_run_id, run_input=ANSWER)
    busy = _new_run(deployment_id)
    assert _take_slot(busy).type.value == "PENDING"  # another run of the deployment holds its slot
    cancelled = _execute(flow_run_id, tmp_path)
    assert (cancelled.type.value, cancelled.message) == ("CANCELLED", LIMIT_REACHED)
    with get_client(sync_client=True) as client:
        client.set_flow_run_state(busy, Cancelled())  # gives the slot back
    assert _tags(workdir, run_id)[names.TAG_APPROVAL_STATUS] == "pending"

    nxt = _execute(_new_run(deployment_id), tmp_path)
    assert (
        nxt.name == "Skipped" and f"finished the review of flow run {flow_run_id}" in nxt.message
    ), nxt.message
    final = _state(flow_run_id)
    assert (final.type.value, final.name) == ("COMPLETED", "Review approved"), final.message
    assert "the server had cancelled this run's resumption" in final.message
    tags = _tags(workdir, run_id)
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "approved"
        and tags[names.TAG_APPROVAL_REVIEWER] == "officer"
    )
    assert Path(tags[names.TAG_APPROVAL_PUBLISHED]).exists()


def test_an_unanswered_suspension_times_out_and_the_run_stays_pending(
    prefect_server, small_adult, tmp_path
):
    """Nobody answers within review.timeout_seconds: the suspended run can no longer be resumed and
    ends Failed ("... never resumed"), the MLflow run stays pending for the CLI. (A ``prefect
    server`` fails it by itself within seconds of the timeout, its pause-expiration service; the
    test server runs no services, so here the late answer is what fails it.)"""
    from prefect.exceptions import FlowPauseTimeout
    from prefect.flow_runs import resume_flow_run

    workdir = tmp_path / "work"
    deployment_id = _deployment(small_adult, workdir, "suspend-timeout.yaml", timeout_seconds=20)
    flow_run_id, run_id = _suspended(deployment_id, tmp_path)
    expires = _state(flow_run_id).state_details.pause_timeout
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 1)
    with pytest.raises(FlowPauseTimeout):
        resume_flow_run(flow_run_id, run_input=ANSWER)
    state = _state(flow_run_id)
    assert state.type.value == "FAILED" and "never resumed" in state.message, (
        state.name,
        state.message,
    )
    assert _tags(workdir, run_id)[names.TAG_APPROVAL_STATUS] == "pending"


def test_the_suspension_key_names_the_mlflow_run():
    assert review_key("0123abcd") == "privacy-gate-review-0123abcd"
    assert review_key("../x") is None  # Prefect keys inputs by letters, digits and dashes only
