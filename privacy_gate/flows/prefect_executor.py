"""The pipeline's :class:`~privacy_gate.pipeline.Executor` on Prefect: every stage a task, the
attacks submitted concurrently to the flow's task runner, shadow runs mapped as tasks."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from typing import Any, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from privacy_gate.config import RunnerConfig
from privacy_gate.errors import ConfigError

T = TypeVar("T")


def _task(fn: Callable[..., Any], name: str):
    # tasks take DataFrames: never hash them for caching, never persist them as results
    return task(fn, name=name, cache_policy=NO_CACHE, persist_result=False)


class PrefectExecutor:
    """Only valid inside a running flow (tasks need its task runner)."""

    def run(self, name: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return _task(fn, name)(*args, **kwargs)

    def submit(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return _task(fn, name).submit(*args, **kwargs)

    def map(self, name: str, fn: Callable[[Any], T], items: Iterable[Any], /) -> list[T]:
        futures = _task(fn, name).map(list(items))
        with _seceded():
            return [f.result() for f in futures]


@contextmanager
def _seceded():
    """On a Dask worker, a task waiting for the tasks it mapped gives up its worker slot while it
    waits (``distributed.secede`` / ``rejoin``, what ``worker_client`` does). Without it, tasks that
    map sub-tasks (an attack's shadow runs or scoring chunks) can hold every slot of the cluster
    while their sub-tasks wait for one: with two single-threaded workers, two such attacks
    deadlock. Elsewhere (the thread pool) it does nothing, and does not import ``distributed``:
    a process that never loaded it is not a Dask worker."""
    if "distributed" not in sys.modules:
        yield
        return
    from distributed import get_worker, rejoin, secede

    try:
        get_worker()
    except ValueError:  # not on a Dask worker
        yield
        return
    secede()
    try:
        yield
    finally:
        rejoin()


def task_runner_for(runner: RunnerConfig):
    """The Prefect task runner the config asks for (the flows are the same either way)."""
    if runner.kind == "dask":
        try:
            from prefect_dask import DaskTaskRunner  # optional: only for runner.kind 'dask'
        except ImportError:
            raise ConfigError(
                "runner.kind 'dask' needs prefect-dask (pip install prefect-dask)"
            ) from None
        if runner.dask_address:
            return DaskTaskRunner(address=runner.dask_address)
        return DaskTaskRunner(
            cluster_kwargs={
                "n_workers": runner.workers,
                "threads_per_worker": 1,
                "processes": True,
                "dashboard_address": None,
            }
        )
    return ThreadPoolTaskRunner(max_workers=runner.workers)
