"""The temporary folders of the release store: quarantine work (``.tmp-``) and publication staging
(``.staging-``), named ``<prefix><host>-<pid>-<token>`` so that their owner is known, and the
leftovers of killed runs found and removed (only this host's: another host's PID means nothing
here).
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from privacy_gate.private_files import private_dir
from privacy_gate.processes import pid_alive, this_host

STALE_SECONDS = 3600.0  # a staging dir of a live process older than this is abandoned too


@dataclass(frozen=True)
class TempDir:
    """A temporary directory ``<prefix><host>-<pid>-<token>`` (staging or quarantine work), its
    owner and whether it is abandoned. Names without a host (older versions) count as this
    host's."""

    path: Path
    host: str | None
    pid: int | None
    age: float
    foreign: bool  # made on another host: never removed here (its PID means nothing on this host)
    stale: bool  # this host's, and its process is gone (or it is older than STALE_SECONDS)


def temp_dir_owner(name: str, prefix: str) -> tuple[str | None, int | None]:
    """``(host, pid)`` from a temporary directory's name (host None for the older
    ``<pid>-<token>``).

    >>> temp_dir_owner(".staging-gate-host.lan-123-ab12", ".staging-")
    ('gate-host.lan', 123)
    >>> temp_dir_owner(".staging-123-ab", ".staging-")
    (None, 123)
    """
    rest = name[len(prefix) :]
    parts = rest.rsplit("-", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[0]:
        return parts[0], int(parts[1])
    head = rest.split("-", 1)[0]
    return None, int(head) if head.isdigit() else None


def temp_dirs(folder: Path, *, prefix: str) -> list[TempDir]:
    """The temporary directories named ``prefix...`` in ``folder``, with their owners."""
    out: list[TempDir] = []
    if not Path(folder).is_dir():
        return out
    here = this_host()
    for entry in sorted(Path(folder).iterdir()):
        if not (entry.name.startswith(prefix) and entry.is_dir()):
            continue
        host, pid = temp_dir_owner(entry.name, prefix)
        try:
            age = time.time() - entry.stat().st_mtime
        except FileNotFoundError:
            continue
        foreign = host is not None and host != here
        gone = pid is None or not pid_alive(pid)
        out.append(
            TempDir(
                path=entry,
                host=host,
                pid=pid,
                age=age,
                foreign=foreign,
                stale=not foreign and (gone or age > STALE_SECONDS),
            )
        )
    return out


def clean_stale(folder: Path, *, prefix: str) -> list[Path]:
    """Remove leftovers of killed runs (this host's temporary directories of dead processes) in
    ``folder``; another host's are left alone (``privacy-gate doctor`` reports them)."""
    removed = []
    for entry in temp_dirs(folder, prefix=prefix):
        if entry.stale:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def make_temp_dir(parent: Path, prefix: str, *, root: Path | None = None) -> Path:
    """A new private (0700) folder in ``parent``: quarantine work, publication staging."""
    parent.mkdir(parents=True, exist_ok=True)
    return private_dir(
        parent / f"{prefix}{this_host()}-{os.getpid()}-{secrets.token_hex(6)}", root=root
    )


__all__ = [
    "STALE_SECONDS",
    "TempDir",
    "clean_stale",
    "make_temp_dir",
    "temp_dir_owner",
    "temp_dirs",
]
