"""Nothing a test starts outlives the test process (tests/reaper.py, tests/stack.py's docstring).

Processes are found by a unique environment marker (``PRIVACY_GATE_TEST_MARK=<uuid4>``) that every
descendant inherits, plus the (pid, start time) of every process seen in the tree before the kill
(PostgreSQL's backends overwrite their environment block with their process title). Whatever a
check finds left is printed and then killed, so these tests leave nothing behind themselves.

* the launcher alone: a process tree that double-forks, calls ``setsid`` and ignores SIGTERM, under
  a throwaway Python parent that is SIGKILLed; the command exiting with daemons left; ``kill()``;
* the production stack: pytest on tests/flows/test_production_stack.py as a subprocess, stopped by
  SIGTERM and, in a second run, by SIGKILL as soon as ``privacy-gate serve`` (and so PostgreSQL, S3,
  MLflow and the Prefect server) is up.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from . import reaper, stack

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists() or not sys.platform.startswith("linux"),
    reason="the launcher relies on Linux's /proc and prctl",
)

# A process tree that tries to escape: a daemon (double fork + setsid), a child in its own session
# with its own daemon, and a daemon that ignores SIGTERM. Prints READY once all are running.
TREE = textwrap.dedent("""
    import os, signal, sys, time
    r, w = os.pipe()

    def daemon(ignore_term=False):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                if ignore_term:
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                os.write(w, b"x")
                time.sleep(600)
                os._exit(0)
            os._exit(0)

    daemon()
    daemon(ignore_term=True)
    if os.fork() == 0:
        os.setsid()
        daemon()
        os.write(w, b"x")
        time.sleep(600)
        os._exit(0)
    got = b""
    while len(got) < 4:
        got += os.read(r, 4)
    print("READY", flush=True)
    if sys.argv[1:] == ["exit"]:
        sys.exit(5)
    time.sleep(600)
""")


def _start_time(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()
    return None if fields[0] in ("Z", "X") else fields[19]


class Tracked:
    """The processes of one marked run: by marker, and every (pid, start time) seen in the tree."""

    def __init__(self, mark: str, root: int | None = None):
        self.mark, self.root, self.seen = mark, root, {}

    def snapshot(self) -> dict[int, str]:
        found = reaper.marked(self.mark)
        if self.root is not None:
            for pid in reaper.descendants(self.root):
                found.setdefault(pid, "")
        for pid in found:
            start = _start_time(pid)
            if start is not None:
                self.seen.setdefault(pid, start)
        return found

    def left(self) -> dict[int, str]:
        out = reaper.marked(self.mark)
        for pid, start in self.seen.items():
            if pid not in out and _start_time(pid) == start:
                with contextlib.suppress(OSError):
                    out[pid] = (
                        Path(f"/proc/{pid}/cmdline")
                        .read_bytes()
                        .replace(b"\0", b" ")
                        .decode()
                        .strip()
                    )
        return out

    def wait_gone(self, timeout: float) -> dict[int, str]:
        deadline = time.monotonic() + timeout
        while (left := self.left()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def kill_all(self) -> None:
        for pid in self.left():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _survivors(left: dict[int, str]) -> str:
    return "processes left behind:\n" + "\n".join(
        f"  {pid}: {cmd[:300]}" for pid, cmd in sorted(left.items())
    )


_PRCTL = ctypes.CDLL(None).prctl if sys.platform.startswith("linux") else None


def _die_with_parent():  # in the child: SIGKILL when the test process dies (no orphaned pytest)
    _PRCTL(reaper.PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


@contextlib.contextmanager
def _marked_env(**extra):
    mark = str(uuid.uuid4())
    yield mark, {**os.environ, reaper.MARK_ENV: mark, "PYTHONPATH": str(ROOT), **extra}


# ------------------------------------------------------------------------------ the launcher alone


LAUNCH = textwrap.dedent("""
    import subprocess, sys, time
    from tests import reaper
    proc = reaper.popen([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, text=True)
    print(proc.stdout.readline().strip(), flush=True)
    time.sleep(600)
""")


@pytest.mark.timeout(60)
def test_sigkill_of_the_parent_kills_the_whole_tree():
    with _marked_env() as (mark, env):
        parent = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, TREE],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=_die_with_parent,
        )
        tracked = Tracked(mark, parent.pid)
        try:
            assert parent.stdout.readline().strip() == "READY"
            procs = tracked.snapshot()
            assert len(procs) >= 6, procs  # the launcher, the command, its child and three daemons
            parent.kill()
            parent.wait(10)
            left = tracked.wait_gone(
                30
            )  # the daemon that ignores SIGTERM takes the short grace (2 s)
            assert not left, _survivors(left)
        finally:
            tracked.kill_all()
            parent.kill()
            parent.wait(10)


@pytest.mark.timeout(60)
def test_command_exit_takes_its_daemons_along_and_kill_is_immediate(tmp_path):
    with _marked_env() as (mark, env):
        proc = reaper.popen(
            [sys.executable, "-c", TREE, "exit"], stdout=subprocess.PIPE, text=True, env=env
        )
        tracked = Tracked(mark, proc.pid)
        try:
            assert proc.stdout.readline().strip() == "READY"
            tracked.snapshot()
            assert proc.wait(30) == 5  # the command's status, once its daemons are gone
            assert not tracked.left(), _survivors(tracked.left())

            proc = reaper.popen(
                [sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True, env=env
            )
            tracked.root = proc.pid
            assert proc.stdout.readline().strip() == "READY"
            tracked.snapshot()
            started = time.monotonic()
            proc.kill()  # no grace: SIGKILL to the whole tree at once
            assert proc.wait(10) == -signal.SIGKILL
            assert time.monotonic() - started < 5
            assert not tracked.wait_gone(5), _survivors(tracked.left())
        finally:
            tracked.kill_all()


@pytest.mark.timeout(60)
def test_stop_group_is_graceful_first(tmp_path):
    """TERM reaches the command, which may clean up and choose its exit status."""
    script = (
        "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: "
        "(open(sys.argv[1], 'w').write('clean'), sys.exit(0)))\nprint('READY', "
        "flush=True)\ntime.sleep(600)\n"
    )
    proc = reaper.popen(
        [sys.executable, "-c", script, str(tmp_path / "done")], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "READY"
    stack.stop_group(proc, 10)
    assert proc.returncode == 0 and (tmp_path / "done").read_text() == "clean"


# ----------------------------------------------------------------------------- the production stack


def _serve_is_up(tracked: Tracked) -> bool:
    return any(
        "privacy-gate serve" in cmd and "reaper.py" not in cmd
        for cmd in tracked.snapshot().values()
    )


@pytest.mark.stack
@pytest.mark.skipif(
    stack.postgres_binaries() is None,
    reason="no PostgreSQL server binaries (initdb/postgres) and no pgserver wheel",
)
@pytest.mark.timeout(600)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_interrupted_stack_test_leaves_no_process(tmp_path, sig):
    """pytest on the production-stack test, stopped as soon as ``privacy-gate serve`` runs."""
    log = tmp_path / "pytest.log"
    with (
        _marked_env(PREFECT_HOME=str(tmp_path / "prefect-home")) as (mark, env),
        log.open("w") as out,
    ):
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-x",
                "tests/flows/test_production_stack.py::test_scheduled_runs_complete_with_their_verdicts",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
        tracked = Tracked(mark, child.pid)
        try:
            deadline = time.monotonic() + 300
            while not _serve_is_up(tracked):
                if child.poll() is not None:
                    pytest.fail(
                        f"the stack test ended ({child.returncode}) before serve ran:\n"
                        f"{log.read_text()[-4000:]}"
                    )
                if time.monotonic() > deadline:
                    pytest.fail(
                        f"privacy-gate serve did not start within 300 s:\n{log.read_text()[-4000:]}"
                    )
                time.sleep(0.5)
            procs = tracked.snapshot()
            print(f"\n{len(procs)} marked processes when {sig.name} was sent")
            assert any("postgres" in cmd for cmd in procs.values()), procs
            started = time.monotonic()
            child.send_signal(sig)
            code = child.wait(120)
            exited = time.monotonic() - started
            at_exit = tracked.left()
            left = tracked.wait_gone(30)
            print(
                f"pytest exited {code} {exited:.1f} s after {sig.name} ({len(at_exit)} processes "
                "left then); "
                f"all gone after {time.monotonic() - started:.1f} s"
            )
            assert not left, _survivors(left) + "\n" + log.read_text()[-3000:]
            if sig == signal.SIGTERM:
                # an interruption like Ctrl-C (pytest's status 2; Python may also re-raise SIGINT on
                # its way out): the fixtures' finalizers stopped every service before pytest exited.
                # pytest can itself fail while rendering the interrupt's traceback (a frame whose
                # ``tb_lineno`` is None) and exit 1; that is its report, not our cleanup, which is
                # checked by ``at_exit`` below all the same
                text = log.read_text()
                report_failed = "pytest_keyboard_interrupt" in text and "tb_lineno" in text
                assert code in (pytest.ExitCode.INTERRUPTED, -signal.SIGINT) or (
                    code == pytest.ExitCode.TESTS_FAILED and report_failed
                ), text[-3000:]
                assert "KeyboardInterrupt" in text or report_failed
                assert not at_exit, "finalizers did not run: " + _survivors(at_exit)
        finally:
            with contextlib.suppress(OSError):
                child.kill()
            child.wait(30)
            tracked.kill_all()
