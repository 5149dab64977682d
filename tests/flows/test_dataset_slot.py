"""The dataset's gate slot cannot hang a release or pile runs up: the wait has a timeout whose
message names the command that frees the slot (and that command works), and at most one run waits
per dataset (the next is skipped). The slot of a run whose process was killed is free again once
its lease runs out: measured on the production stack (tests/flows/test_production_stack.py), with
``HOLDER`` below."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from privacy_gate.flows.coordination import (
    ENV_SLOT_TIMEOUT,
    GateSlotTimeout,
    dataset_slot,
    ensure_dataset_limit,
    reset_command,
)

from .. import stack

ROOT = Path(__file__).resolve().parents[2]


def _gate_flow():
    from prefect import flow

    @flow(name="slot-probe", persist_result=False)
    def gate(dataset: str, timeout: float) -> str:
        with dataset_slot(dataset, timeout=timeout):
            return "gated"

    return gate


def test_a_taken_slot_times_out_naming_the_reset_command_which_frees_it(prefect_server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate
    from prefect.settings import PREFECT_API_URL

    dataset = f"slot-{uuid.uuid4().hex[:8]}"
    name = ensure_dataset_limit(dataset)
    with get_client(
        sync_client=True
    ) as client:  # what a server restart left: taken, no holder to free it
        client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(active_slots=1))
    gate = _gate_flow()
    started = time.monotonic()
    state = gate(dataset, 2.0, return_state=True)
    assert state.is_failed() and time.monotonic() - started < 30
    with pytest.raises(GateSlotTimeout) as caught:
        state.result()
    message = str(caught.value)
    assert (
        f"stayed taken for 2 s ({ENV_SLOT_TIMEOUT})" in message
        and reset_command(dataset) in message
    )
    assert "timed out" not in message  # not mistaken for an outage (those are retried)
    # the command the message names frees the slot
    env = {
        **os.environ,
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_HOME": str(tmp_path / "home"),
    }
    r = subprocess.run(
        [str(stack.BIN / "prefect"), *reset_command(dataset).split()[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert gate(dataset, 10.0) == "gated"


def _active_slots(name: str) -> int:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_global_concurrency_limit_by_name(name).active_slots


WAITER = """
import sys
from prefect import flow
from privacy_gate.flows.coordination import dataset_slot

@flow(name="slot-waiter", persist_result=False)
def wait(dataset: str):
    with dataset_slot(dataset, timeout=float(sys.argv[2])):
        print("GATED", flush=True)

wait(sys.argv[1])
"""


@pytest.mark.timeout(400)
def test_one_run_waits_per_dataset_and_the_next_is_skipped(prefect_server, tmp_path):
    """The slot taken: the first run to come waits (holding the dataset's waiting room), a second
    one is skipped at once with GateSlotBusy (a fast schedule cannot queue runs without bound);
    once the slot is free the waiting run gates and the waiting room is free again."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate
    from prefect.settings import PREFECT_API_URL

    from privacy_gate.flows.coordination import GateSlotBusy, queue_limit_name

    dataset = f"queue-{uuid.uuid4().hex[:8]}"
    name = ensure_dataset_limit(dataset)
    with get_client(sync_client=True) as client:
        client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(active_slots=1))
    env = {
        **os.environ,
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(ROOT),
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    waiter = stack.start(
        "waiter", [sys.executable, "-c", WAITER, dataset, "240"], logdir=tmp_path, env=env
    )
    with stack.running(waiter):
        deadline = time.monotonic() + 180
        while True:  # the first run is in the waiting room
            with contextlib.suppress(
                Exception
            ):  # the waiting room's limit is made by the first run
                if _active_slots(queue_limit_name(dataset)) == 1:
                    break
            assert time.monotonic() < deadline and waiter.alive() is not False, waiter.tail()
            time.sleep(1)
        started = time.monotonic()
        second = _gate_flow()(dataset, 240.0, return_state=True)
        assert second.is_failed() and time.monotonic() - started < 60
        with pytest.raises(GateSlotBusy, match="another run already waits"):
            second.result()
        with get_client(sync_client=True) as client:  # the holder ends
            client.update_global_concurrency_limit(
                name, GlobalConcurrencyLimitUpdate(active_slots=0)
            )
        deadline = time.monotonic() + 180
        while "GATED" not in waiter.tail():
            assert time.monotonic() < deadline and waiter.alive() is not False, waiter.tail()
            time.sleep(1)
    assert _active_slots(queue_limit_name(dataset)) == 0


HOLDER = """
import sys, time
from prefect import flow
from privacy_gate.flows.coordination import dataset_slot

@flow(name="slot-holder", persist_result=False)
def hold(dataset: str):
    with dataset_slot(dataset, timeout=60):
        print("HELD", flush=True)
        time.sleep(3600)

hold(sys.argv[1])
"""
