"""Processes the tests start die with the test process, however it ends (Linux).

``popen(cmd, **kwargs)`` is ``subprocess.Popen`` with a tiny launcher in between: this file, run as
``python -I -S tests/reaper.py --parent PID --grace S -- cmd ...`` (standard library only). The
launcher

* makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``): whatever its command spawns
  and orphans -- daemons that double-fork, children that call ``setsid`` (Prefect's flow-run
  processes, gunicorn/uvicorn workers, PostgreSQL backends) -- is re-parented to it, not to init,
  so it can always find them by walking the parent links in ``/proc/*/stat``;
* watches its parent (the test process): ``PR_SET_PDEATHSIG`` wakes it at once, and it also polls
  ``getppid()`` (the death signal is tied to the parent *thread*, and the parent may already be gone
  before the signal is armed);
* runs the command in its own process group and, when the parent dies, when it is asked to stop
  (SIGTERM / SIGINT / SIGHUP), or when the command exits: sends SIGTERM to the command's group and
  waits up to ``grace`` seconds for the command to shut down on its own, then SIGTERM to every
  descendant left (and their process groups), two more seconds, then SIGKILL to what remains,
  reaps everything and exits with the command's status (a command killed by signal N makes the
  launcher die of N, so ``Popen.returncode`` reads as before). SIGUSR1 means "kill everything now":
  ``Reaped.kill()`` sends it, because a SIGKILL'd launcher could not clean up.

The launcher never writes to stdout (callers read the command's output through it) and passes
every inherited file descriptor on to the command (Chromium's ``--remote-debugging-pipe``).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
HARD_SIGNAL = signal.SIGUSR1  # kill everything now
WAKE_SIGNAL = signal.SIGUSR2  # the parent thread died (PR_SET_PDEATHSIG): check the parent
DEFAULT_GRACE = 10.0
LEFTOVER_GRACE = 2.0
MARK_ENV = "PRIVACY_GATE_TEST_MARK"


# ------------------------------------------------------------------------------ /proc helpers


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgid) of a process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode(errors="replace")
    except OSError:
        return None
    fields = raw[
        raw.rfind(")") + 2 :
    ].split()  # the command name may contain spaces and parentheses
    return fields[0], int(fields[1]), int(fields[2])


def process_table() -> dict[int, tuple[str, int, int]]:
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                table[int(name)] = st
    return table


def descendants(root: int) -> dict[int, int]:
    """Live (not zombie) descendants of ``root``: pid -> process group."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (_, ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        state, _, pgid = table[pid]
        if state not in ("Z", "X"):
            out[pid] = pgid
        todo += children.get(pid, [])
    return out


def marked(mark: str, name: str = MARK_ENV) -> dict[int, str]:
    """Processes whose environment has ``name=mark``: pid -> command line (for the tests' checks).
    Vanished processes and unreadable ones are skipped; zombies have an empty environment."""
    needle = f"{name}={mark}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                found[int(entry)] = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
    return found


# ------------------------------------------------------------------------------ the launcher


class _Launcher:
    def __init__(self, parent: int, grace: float, cmd: list[str]):
        self.parent, self.grace, self.cmd = parent, grace, cmd
        self.me = os.getpid()
        self.first_parent = os.getppid()
        self.child: subprocess.Popen | None = None
        self.status: int | None = None  # the command's wait status once reaped
        self.stop_requested = False
        self.hard = False
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        os.set_inheritable(r, False)
        os.set_inheritable(w, False)
        self.wake_r = r
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    # signal handlers only set flags; the wakeup fd interrupts the select in the loop
    def _on_stop(self, signum, frame):
        self.stop_requested = True

    def _on_hard(self, signum, frame):
        self.hard = True

    def _on_wake(self, signum, frame):
        pass

    def setup(self) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_stop)
        signal.signal(HARD_SIGNAL, self._on_hard)
        signal.signal(WAKE_SIGNAL, self._on_wake)
        signal.signal(signal.SIGCHLD, self._on_wake)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            libc.prctl(PR_SET_PDEATHSIG, int(WAKE_SIGNAL), 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: the getppid() poll still works
            pass

    def parent_gone(self) -> bool:
        if self.parent == self.first_parent:  # the usual case: re-parenting means it died
            return os.getppid() != self.parent
        return _stat(self.parent) is None

    def start(self) -> None:
        if self.parent_gone():  # died before the death signal was armed
            self.stop_requested = True
            return
        # SIG_IGN'd SIGPIPE would be inherited: restore_signals resets it for the command
        self.child = subprocess.Popen(
            self.cmd, process_group=0, close_fds=False, restore_signals=True
        )

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.child is not None and pid == self.child.pid:
                self.status = status
                self.child.returncode = os.waitstatus_to_exitcode(status)  # keeps Popen quiet

    def child_alive(self) -> bool:
        return self.child is not None and self.status is None

    def sleep(self, seconds: float) -> None:
        with _suppress(InterruptedError, OSError):
            select.select([self.wake_r], [], [], max(0.0, seconds))
        with _suppress(OSError):
            while os.read(self.wake_r, 512):
                pass
        self.reap()

    def signal_tree(self, sig: int) -> int:
        """``sig`` to every live descendant and their process groups (not ours); how many there
        were."""
        procs = descendants(self.me)
        for pgid in set(procs.values()) - {os.getpgrp(), 0}:
            with _suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        for pid in procs:
            with _suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        return len(procs)

    def run(self) -> int:
        self.setup()
        try:
            self.start()
        except OSError as exc:
            print(f"reaper: cannot start {self.cmd[0]!r}: {exc}", file=sys.stderr)
            return 127
        # 1. wait for the command to exit, a stop request, or the parent's death
        while self.child_alive() and not (self.stop_requested or self.hard or self.parent_gone()):
            self.sleep(0.25)
        # 2. the command: TERM its group, let it shut down on its own for up to `grace` seconds
        if self.child_alive() and not self.hard:
            with _suppress(ProcessLookupError, PermissionError):
                if os.getpgid(self.child.pid) == self.child.pid:
                    os.killpg(self.child.pid, signal.SIGTERM)
                else:  # the command left the group it was started in
                    os.kill(self.child.pid, signal.SIGTERM)
            deadline = time.monotonic() + self.grace
            while self.child_alive() and not self.hard and time.monotonic() < deadline:
                self.sleep(min(0.25, deadline - time.monotonic()))
        # 3. whatever is left of the tree: TERM, a short grace, then KILL until nothing is left
        if not self.hard and self.signal_tree(signal.SIGTERM):
            deadline = time.monotonic() + LEFTOVER_GRACE
            while not self.hard and descendants(self.me) and time.monotonic() < deadline:
                self.sleep(0.1)
        while self.signal_tree(signal.SIGKILL):
            self.sleep(0.05)
        self.reap()
        return self.exit_code()

    def exit_code(self) -> int:
        if self.status is None:
            return (
                0 if self.child is None else 1
            )  # not started (parent already gone), or not reaped
        if os.WIFSIGNALED(self.status):
            return -os.WTERMSIG(self.status)
        return os.waitstatus_to_exitcode(self.status)


class _suppress:
    def __init__(self, *exc):
        self.exc = exc

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return kind is not None and issubclass(kind, self.exc)


def main(argv: list[str]) -> None:
    parent, grace = os.getppid(), DEFAULT_GRACE
    while argv and argv[0] != "--":
        opt, value, argv = argv[0], argv[1], argv[2:]
        if opt == "--parent":
            parent = int(value)
        elif opt == "--grace":
            grace = float(value)
        else:
            sys.exit(f"reaper: unknown option {opt}")
    if len(argv) < 2:
        sys.exit("usage: reaper.py [--parent PID] [--grace SECONDS] -- command [args...]")
    code = _Launcher(parent, grace, argv[1:]).run()
    sys.stdout.flush()
    if code < 0:  # die of the command's signal, so the caller sees the same returncode
        sig = -code
        for s in (*STOP_SIGNALS, HARD_SIGNAL, WAKE_SIGNAL, signal.SIGCHLD, sig):
            with _suppress(OSError, ValueError):
                signal.signal(s, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        time.sleep(1)
        code = 128 + sig
    os._exit(code)


# ------------------------------------------------------------------------------ in the test process


class Reaped(subprocess.Popen):
    """``subprocess.Popen`` of ``cmd`` through the launcher (in its own session, like
    ``start_new_session=True``). ``pid`` is the launcher's; ``terminate()`` stops the whole tree
    gracefully, ``kill()`` kills it at once (SIGUSR1 to the launcher, which then SIGKILLs the
    tree)."""

    def __init__(self, args, *, grace: float = DEFAULT_GRACE, **kwargs):
        if isinstance(args, (str, bytes)) or kwargs.get("shell"):
            raise TypeError("reaper.popen takes an argument list (no shell)")
        args = [os.fspath(a) for a in args]
        kwargs.pop("start_new_session", None)
        kwargs.pop("process_group", None)
        exe = args[0]
        path = (kwargs.get("env") or os.environ).get("PATH", os.defpath)
        cwd = kwargs.get("cwd")
        import shutil

        if os.sep in exe:
            resolved = (
                exe if os.path.isabs(exe) or cwd is None else os.path.join(os.fspath(cwd), exe)
            )
            if not os.access(resolved, os.X_OK):
                raise FileNotFoundError(2, "No such file or directory", exe)
        elif shutil.which(exe, path=path) is None:
            raise FileNotFoundError(2, "No such file or directory", exe)
        launcher = [
            sys.executable,
            "-I",
            "-S",
            os.path.abspath(__file__),
            "--parent",
            str(os.getpid()),
            "--grace",
            str(grace),
            "--",
        ]
        super().__init__(launcher + args, start_new_session=True, **kwargs)
        self.command = args

    def send_signal(self, sig):
        super().send_signal(HARD_SIGNAL if sig == signal.SIGKILL else sig)


def popen(args, **kwargs) -> Reaped:
    return Reaped(args, **kwargs)


if __name__ == "__main__":
    main(sys.argv[1:])
