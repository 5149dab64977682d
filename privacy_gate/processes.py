"""Who is running: this host, a process id and its start time, and whether a recorded process is
gone. Used to decide that a run left RUNNING or a staging folder was abandoned by a killed
process (``review.doctor``, ``publication.work_dirs.clean_stale``).

A process recorded on another host is never judged: its PID means nothing here.

>>> owner_gone(this_host(), os.getpid(), process_start(os.getpid()))
False
>>> owner_gone("some-other-host", 1, None) is None
True
"""

from __future__ import annotations

import os
import re
import socket


def this_host() -> str:
    """The host name recorded with a run or a staging folder (letters, digits, ``.``, ``_``,
    ``-``)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname() or "localhost")[:64] or "localhost"


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


def process_start(pid: int) -> str | None:
    """A token for when ``pid`` started (clock ticks since boot on Linux), or None when unknown:
    a live PID with a different start token is another process that reused the number."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # a tiny read
        return stat.rsplit(")", 1)[1].split()[19]  # field 22 (starttime), after "pid (comm)"
    except (OSError, IndexError):
        pass
    try:
        import psutil

        return f"{psutil.Process(pid).create_time():.2f}"
    except Exception:  # noqa: BLE001 - psutil missing or no such process
        return None


def owner_gone(host: str | None, pid: int | str | None, start: str | None) -> bool | None:
    """True when the recorded process is certainly gone (same host, and its PID is not alive or
    now belongs to a process with another start time); False when it is alive; None when this
    host cannot tell (another host, or no PID recorded)."""
    if not host or host != this_host():
        return None
    try:
        number = int(pid)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not pid_alive(number):
        return True
    now = process_start(number)
    return bool(start and now and start != now)


__all__ = ["owner_gone", "pid_alive", "process_start", "this_host"]
