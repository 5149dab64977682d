"""A cross-process file lock (``fcntl.flock``): concurrent runs on one workdir take turns where
they must (creating the MLflow sqlite store; deciding one run: ``review/decision_lock.py``).

>>> import tempfile, pathlib
>>> with file_lock(pathlib.Path(tempfile.mkdtemp()) / "x.lock", timeout=1):
...     pass
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from privacy_gate.errors import PrivacyGateError


@contextlib.contextmanager
def file_lock(path: str | Path, *, timeout: float = 60.0, poll: float = 0.05) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing). The lock dies with its process,
    so a killed run never leaves it held."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise PrivacyGateError(
                        f"could not lock {path} within {timeout:g} s: another privacy-gate "
                        "process holds it (wait for it, or check for a hung run)"
                    ) from None
                time.sleep(poll)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
