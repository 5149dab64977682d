"""Progress of a generator fit, for the run's periodic progress lines.

A generator reports how far it is with :func:`step` (``step(12, 300, "epoch")``) from inside its
``fit``; a no-op unless the fit runs under :func:`tracking`. The run that waits for the fit reads
the latest step with :func:`latest` under the same key and prints it with the elapsed time
(:class:`FitHeartbeat`). The key is a string, so it travels to whatever runs the fit; across
processes (a Dask worker) the steps stay there and the lines show the elapsed time only.

>>> with tracking("k1"):
...     step(3, 10, "epoch")
>>> latest("k1"), latest("other")
((3, 10, 'epoch'), None)
>>> forget("k1"); latest("k1") is None
True
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

_lock = threading.Lock()
_steps: dict[str, tuple[int, int | None, str]] = {}
_local = threading.local()


@contextlib.contextmanager
def tracking(key: str | None) -> Iterator[None]:
    """Record the steps reported in this thread under ``key`` while the block runs."""
    previous = getattr(_local, "key", None)
    _local.key = key
    try:
        yield
    finally:
        _local.key = previous


def step(done: int, total: int | None = None, unit: str = "step") -> None:
    """How far the running fit is: ``done`` of ``total`` ``unit``\\ s (cheap: call it every
    step)."""
    key = getattr(_local, "key", None)
    if key is not None:
        with _lock:
            _steps[key] = (int(done), None if total is None else int(total), unit)


def latest(key: str) -> tuple[int, int | None, str] | None:
    with _lock:
        return _steps.get(key)


def forget(key: str) -> None:
    with _lock:
        _steps.pop(key, None)


def describe(elapsed: float, progress: tuple[int, int | None, str] | None) -> str:
    """``"42 s"``, ``"2 min 5 s, epoch 12 of 300"``.

    >>> describe(42.4, None), describe(125, (12, 300, "epoch")), describe(3, (7, None, "round"))
    ('42 s elapsed', '2 min 5 s elapsed, epoch 12 of 300', '3 s elapsed, round 7')
    """
    secs = int(round(elapsed))
    text = f"{secs // 60} min {secs % 60} s elapsed" if secs >= 60 else f"{secs} s elapsed"
    if progress is not None:
        done, total, unit = progress
        text += f", {unit} {done:,}" + (f" of {total:,}" if total is not None else "")
    return text


class FitHeartbeat:
    """A daemon thread that calls ``emit(line)`` every ``every`` seconds while a fit runs (the
    elapsed time and the latest step under ``key``); stopped by :meth:`stop` or as a context
    manager."""

    def __init__(self, key: str, emit: Callable[[str], None], *, every: float = 15.0):
        self.key, self.emit, self.every = key, emit, every
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name=f"fit-progress-{key}", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.emit(describe(time.monotonic() - self._start, latest(self.key)))
            except Exception:  # noqa: BLE001 - a progress line never fails the fit
                pass

    def __enter__(self) -> FitHeartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        forget(self.key)
