"""The gate on a real Dask cluster: a ``distributed`` scheduler and two worker processes on
loopback, started and stopped by PID. The gate flow's stages (the attacks, the utility score)
run as Prefect tasks on the cluster through ``DaskTaskRunner(address=...)`` — what
``runner: {kind: dask, dask_address: tcp://...}`` does — and give the same verdict and figures as
the in-process thread pool. A served release flow (loaded from its module on the default thread
pool, as ``privacy-gate serve`` in docker/compose.yaml runs it) also sends its attacks to the
cluster its config names, and ends BLOCK when that cluster does not answer."""

from __future__ import annotations

import contextlib
import sys
import time

import numpy as np
import pandas as pd
import pytest
import yaml

from ..conftest import ADULT, EXAMPLE, lighten, write_release_config
from ..stack import free_port, running, start


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A scheduler and two single-threaded worker processes on 127.0.0.1."""
    from distributed import Client

    logdir = tmp_path_factory.mktemp("dask")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler = start(
        "dask-scheduler",
        [*dask, "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        logdir=logdir,
    )
    with running(scheduler), contextlib.ExitStack() as stack:
        for k in range(2):
            stack.enter_context(
                running(
                    start(
                        f"dask-worker-{k}",
                        [
                            sys.executable,
                            "-m",
                            "distributed.cli.dask_worker",
                            address,
                            "--nthreads",
                            "1",
                            "--nworkers",
                            "1",
                            "--no-dashboard",
                            "--host",
                            "127.0.0.1",
                        ],
                        logdir=logdir,
                    )
                )
            )
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
    parts = {
        "train": order[:1500],
        "holdout": order[1500:2500],
        "reference": order[2500:3500],
        "synthetic": order[3500:5000],
    }
    paths = {}
    for name, rows in parts.items():
        paths[name] = str(folder / f"{name}.csv")
        adult.iloc[rows].to_csv(paths[name], index=False)
    return paths


def test_gate_flow_on_a_two_worker_cluster_matches_the_thread_pool(
    prefect_server, dask_cluster, tmp_path
):
    from distributed import Client
    from prefect_dask import DaskTaskRunner

    from privacy_gate.flows import gate_flow

    paths = _files(tmp_path)
    # the example's judging sections at plumbing weight: the two runners must agree on every figure,
    # whatever the weight (FAST_SETTINGS)
    example = yaml.safe_load(EXAMPLE.read_text())
    judging = lighten(
        {k: example[k] for k in ("targets", "attacks", "gate", "audit", "mace") if k in example}
    )
    (tmp_path / "judging.yaml").write_text(yaml.safe_dump(judging))
    kwargs = dict(
        **paths,
        spec_path=str(EXAMPLE),
        config_path=str(tmp_path / "judging.yaml"),
        workdir=str(tmp_path / "wd"),
    )
    local = gate_flow(**kwargs)
    with Client(dask_cluster) as client:
        before = client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.task_prefixes))
        on_dask = gate_flow.with_options(task_runner=DaskTaskRunner(address=dask_cluster))(**kwargs)
        prefixes = client.run_on_scheduler(
            lambda dask_scheduler: sorted(dask_scheduler.task_prefixes)
        )
        workers = client.run(lambda: __import__("os").getpid())
    assert (
        len(workers) == 2 and len(prefixes) > before
    )  # the run's tasks went through the scheduler
    assert any("attack" in p for p in prefixes), prefixes
    a, b = local.verdict.to_dict(), on_dask.verdict.to_dict()
    assert a["status"] == b["status"] == "ok"
    assert a["verdict"] == b["verdict"]
    assert set(a["metrics"]) == set(b["metrics"])
    for key, value in a["metrics"].items():
        assert b["metrics"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_served_release_flow_sends_its_attacks_to_the_configured_cluster(
    prefect_server, dask_cluster, small_adult, tmp_path
):
    """``release_flow`` called as a deployment calls it (no ``with_options``: the module's thread
    pool) with ``runner: {kind: dask, dask_address: ...}``, as in docker/deploy/adult.yaml: the
    attempt runs as a ``release-attempt`` subflow on the DaskTaskRunner, so the attacks, the
    utility score, the shadow runs and the scoring chunks (``score_chunks``) are executed by the
    cluster's workers."""
    from distributed import Client, get_task_stream
    from mlflow.tracking import MlflowClient

    from privacy_gate import names
    from privacy_gate.flows import release_flow
    from privacy_gate.flows.verdict_states import outcome_of

    # MST: a marginal generator, so MAMA-MIA runs its shadow variant (shadow runs to map)
    cfg = write_release_config(
        small_adult,
        {"name": "mst", "epsilon": 1.0, "seed": 0},
        name="served-dask.yaml",
        runner={"kind": "dask", "dask_address": dask_cluster, "score_chunks": 2},
        attacks=[{"name": "dcr"}, {"name": "mama_mia", "n_shadow": 4}],
        fast=True,
    )
    with Client(dask_cluster) as client, get_task_stream(client) as stream:
        state = release_flow(config_path=str(cfg), workdir=str(tmp_path / "wd"), return_state=True)
    result = outcome_of(state)
    # prefect-dask names a task's key after its function: the attacks, the utility score, the shadow
    # runs
    executed = [
        item["key"] if isinstance(item["key"], str) else item["key"][0] for item in stream.data
    ]
    assert result.verdict.status == "ok", result.verdict.reasons
    assert {"dcr.auc", "mama_mia.auc", "utility.quality"} <= set(result.verdict.metrics)
    counts = {
        name: sum(key.startswith(f"{name}-") for key in executed)
        for name in ("run_attack", "marginal_quality", "shadow_run", "_score_part")
    }
    # run_attack: dcr, mama_mia and the reported (not gated) MAMA-MIA oracle; each scores its
    # targets in score_chunks = 2 tasks of their own (the chunks within an attack)
    assert counts == {"run_attack": 3, "marginal_quality": 1, "shadow_run": 4, "_score_part": 6}, (
        sorted({k.rsplit("-", 1)[0] for k in executed})
    )
    # the MLflow run names the release flow run (the one a paused review resumes), not the subflow
    tags = MlflowClient(result.tracking_uri).get_run(result.run_id).data.tags
    assert tags[names.TAG_FLOW_RUN] == str(state.state_details.flow_run_id)


def test_served_release_flow_blocks_when_its_cluster_does_not_answer(
    prefect_server, small_adult, tmp_path
):
    """No scheduler at ``dask_address``: an infrastructure failure, so the run is retried (here: one
    attempt) and ends BLOCK (fail closed), never without a verdict."""
    import dask

    from privacy_gate.flows import release_flow

    cfg = write_release_config(
        small_adult,
        {"name": "copy_train"},
        name="served-no-dask.yaml",
        runner={"kind": "dask", "dask_address": f"tcp://127.0.0.1:{free_port()}"},
        attacks=[{"name": "dcr"}],
        retries={"attempts": 1, "delay_seconds": 0},
    )
    with dask.config.set({"distributed.comm.timeouts.connect": "3s"}):
        result = release_flow(config_path=str(cfg), workdir=str(tmp_path / "wd"))
    assert result.verdict.decision == "BLOCK" and result.verdict.status == "error", result.verdict
    # prefect-dask connects on the first submission: the attack stage fails and the run records why
    assert any("attacks: infrastructure failure" in r.message for r in result.verdict.reasons)
