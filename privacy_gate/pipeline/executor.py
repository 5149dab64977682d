"""How the stages of a gate run are executed: the library's own thread pool, or an orchestrator.

An :class:`Executor` runs one stage (``run``), submits independent work concurrently (``submit``:
the attacks and the utility score) and maps independent sub-runs (``map``: MAMA-MIA's shadow
runs). The library ships :class:`LocalExecutor`; the Prefect flows pass one that turns each call
into a Prefect task, so the same pipeline shows up task by task in the Prefect UI.

>>> ex = LocalExecutor(max_workers=2)
>>> ex.run("double", lambda x: 2 * x, 21)
42
>>> ex.submit("add", lambda a, b: a + b, 1, 2).result()
3
>>> ex.map("square", lambda x: x * x, [1, 2, 3])
[1, 4, 9]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


@runtime_checkable
class ResultFuture(Protocol):
    def result(self) -> Any: ...


@runtime_checkable
class Executor(Protocol):
    def run(self, name: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T: ...

    def submit(
        self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> ResultFuture: ...

    def map(self, name: str, fn: Callable[[Any], T], items: Iterable[Any], /) -> list[T]: ...


class LocalExecutor:
    """Stages run in the calling thread; ``submit`` and ``map`` use thread pools (the heavy parts —
    numpy, torch, scikit-learn — release the GIL). ``map`` has a pool of its own, because it is
    called from inside submitted work (an attack mapping its shadow runs): sharing one pool could
    leave every worker waiting for sub-runs that have no worker left."""

    def __init__(self, *, max_workers: int = 4):
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self._pools: dict[str, ThreadPoolExecutor] = {}

    def _pool(self, kind: str) -> ThreadPoolExecutor:
        if kind not in self._pools:
            self._pools[kind] = ThreadPoolExecutor(
                max_workers=self.max_workers, thread_name_prefix=f"privacy-gate-{kind}"
            )
        return self._pools[kind]

    def run(self, name: str, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)

    def submit(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        return self._pool("submit").submit(fn, *args, **kwargs)

    def map(self, name: str, fn: Callable[[Any], T], items: Iterable[Any], /) -> list[T]:
        return list(self._pool("map").map(fn, list(items)))

    def shutdown(self) -> None:
        for pool in self._pools.values():
            pool.shutdown(wait=True)
        self._pools.clear()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()
