"""The gate on a real Dask cluster: a ``distributed`` scheduler and two worker processes on
loopback, started and stopped by PID. The gate flow's stages (the attacks, the utility score)
run as Prefect tasks on the cluster through ``DaskTaskRunner(address=...)`` — what
``runner: {kind: dask, dask_address: tcp://...}`` does — and give the same verdict and figures as
the in-process thread pool."""

from __future__ import annotations

import contextlib
import sys
import time

import numpy as np
import pandas as pd
import pytest

from .conftest import ADULT, EXAMPLE
from .stack import free_port, running, start


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A scheduler and two single-threaded worker processes on 127.0.0.1."""
    from distributed import Client

    logdir = tmp_path_factory.mktemp("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler = start("dask-scheduler", [*dask, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                      logdir=logdir)
    with running(scheduler), contextlib.ExitStack() as stack:
        for k in range(2):
            stack.enter_context(running(start(
                f"dask-worker-{k}", [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                                     "--nworkers", "1", "--no-dashboard", "--host", "127.0.0.1"], logdir=logdir)))
        deadline = time.monotonic() + 90
        while True:
            with contextlib.suppress(OSError, TimeoutError):
                with Client(address, timeout=5) as client:
                    client.wait_for_workers(2, timeout=60)
                    break
            if time.monotonic() > deadline or not scheduler.alive():
                raise AssertionError(f"the Dask cluster did not start:\n{scheduler.tail()}")
            time.sleep(0.5)
        yield address


def _files(folder):
    adult = pd.read_csv(ADULT)
    order = np.random.default_rng(3).permutation(len(adult))
    parts = {"train": order[:1500], "holdout": order[1500:2500], "reference": order[2500:3500],
             "synthetic": order[3500:5000]}
    paths = {}
    for name, rows in parts.items():
        paths[name] = str(folder / f"{name}.csv")
        adult.iloc[rows].to_csv(paths[name], index=False)
    return paths


def test_gate_flow_on_a_two_worker_cluster_matches_the_thread_pool(prefect_server, dask_cluster, tmp_path):
    from distributed import Client
    from prefect_dask import DaskTaskRunner

    from privacy_gate.flows import gate_flow

    paths = _files(tmp_path)
    kwargs = dict(**paths, spec_path=str(EXAMPLE), workdir=str(tmp_path / "wd"))
    local = gate_flow(**kwargs)
    with Client(dask_cluster) as client:
        before = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.task_prefixes))
        on_dask = gate_flow.with_options(task_runner=DaskTaskRunner(address=dask_cluster))(**kwargs)
        prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
        workers = client.run(lambda: __import__("os").getpid())
    assert len(workers) == 2 and len(prefixes) > before  # the run's tasks went through the scheduler
    assert any("attack" in p for p in prefixes), prefixes
    a, b = local["verdict"], on_dask["verdict"]
    assert a["status"] == b["status"] == "ok"
    assert a["verdict"] == b["verdict"]
    assert set(a["metrics"]) == set(b["metrics"])
    for key, value in a["metrics"].items():
        assert b["metrics"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
