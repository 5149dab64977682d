"""The production stack as real processes on loopback, for the end-to-end tests: PostgreSQL, an
S3-compatible server (moto in server mode), the MLflow tracking server (Postgres backend, S3
artefacts) and the Prefect server (Postgres). Every process is started here and stopped when its
context ends (TERM, then KILL after a timeout), whatever happened.

Nothing a test starts outlives the test process, however that ends (normal end, exception,
Ctrl-C, SIGTERM, SIGKILL, a CI timeout): ``start`` (and every other process start in tests/, see
``reaper.popen``; the ``prefect_server`` fixture through ``prefect_test_harness`` below) runs the
command under ``tests/reaper.py``, a small launcher that is a child subreaper (so everything the
command spawns, even in new sessions -- Prefect's flow-run processes, MLflow's workers, PostgreSQL
backends -- stays in its tree), watches the test process (parent-death signal plus polling) and,
when that dies or the service is stopped or the command exits, stops the whole tree: TERM to the
command, a grace period for a clean shutdown, TERM to what is left, then KILL, and reaps. On
SIGTERM, pytest itself turns the signal into an interruption so fixtures' finalizers run
(tests/conftest.py). tests/test_cleanup.py checks both on the real stack.

PostgreSQL comes from the machine's server binaries (``initdb`` / ``postgres`` on PATH or under
/usr/lib/postgresql/*/bin), else from the ``pgserver`` wheel when installed. PostgreSQL refuses
to run as root: as root the server runs as the ``postgres`` (or ``nobody``) user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import reaper

BIN = Path(sys.executable).parent
S3_KEY, S3_SECRET, S3_REGION = "testing", "testing", "us-east-1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(proc: subprocess.Popen, timeout: float = 20.0) -> None:
    """Stop a process started in its own session, with everything it spawned (TERM, then KILL).

    For a process started through the launcher (``reaper.Reaped``) the TERM reaches the launcher,
    which stops the whole tree; KILL asks it to kill the tree at once (SIGKILL of the launcher
    itself would orphan the tree)."""
    reaped = isinstance(proc, reaper.Reaped)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill() if reaped else os.killpg(proc.pid, signal.SIGKILL)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:  # a wedged launcher: the last resort
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


@dataclass
class Service:
    name: str
    proc: subprocess.Popen
    log: Path
    url: str = ""

    def tail(self, n: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None


def start(
    name: str,
    cmd: list[str],
    *,
    logdir: Path,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Service:
    log = logdir / f"{name}.log"
    with log.open("w") as fh:
        proc = reaper.popen(
            cmd, env={**os.environ, **(env or {})}, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT
        )
    return Service(name, proc, log)


def wait_http(
    service: Service, url: str, *, timeout: float = 120.0, ok=lambda status: status == 200
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if not service.alive():
            raise AssertionError(
                f"{service.name} exited ({service.proc.returncode}):\n{service.tail()}"
            )
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(url, timeout=2) as r:
                if ok(r.status):
                    return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{service.name} did not answer {url} within {timeout:.0f} s:\n{service.tail()}"
            )
        time.sleep(0.3)


@contextlib.contextmanager
def running(service: Service) -> Iterator[Service]:
    try:
        yield service
    finally:
        stop_group(service.proc)


# ------------------------------------------------------------------------------ PostgreSQL


def postgres_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``: the machine's package, else pgserver's."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(found).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists():
            return Path(folder)
    import importlib.util

    spec = importlib.util.find_spec(
        "pgserver"
    )  # a wheel that ships the server binaries (dev extra)
    for location in (spec.submodule_search_locations or []) if spec else []:
        folder = Path(location) / "pginstall" / "bin"
        if (folder / "initdb").exists() and (folder / "postgres").exists():
            return folder
    return None


def _as_user() -> tuple[list[str], int | None, int | None]:
    """The command prefix that runs PostgreSQL as an unprivileged user when we are root."""
    if os.geteuid() != 0:
        return [], None, None
    for user in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pw = pwd.getpwnam(user)
            return (
                ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--clear-groups"],
                pw.pw_uid,
                pw.pw_gid,
            )
    raise RuntimeError("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")


@contextlib.contextmanager
def postgres(logdir: Path, databases: tuple[str, ...]) -> Iterator[str]:
    """A throwaway PostgreSQL on a loopback port; yields ``user@127.0.0.1:port`` with ``databases``
    created (trust authentication on loopback: nothing else can reach it)."""
    binaries = postgres_binaries()
    if binaries is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb/postgres) and no pgserver wheel")
    prefix, uid, gid = _as_user()
    # a private folder the server's user can enter (pytest's tmp folders are root-only)
    root = Path(tempfile.mkdtemp(prefix="pg-", dir="/tmp"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if uid is not None:
        os.chown(root, uid, gid)
        os.chown(sock, uid, gid)
    user, port = "gate", free_port()
    try:
        subprocess.run(
            [
                *prefix,
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                user,
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        server = start(
            "postgres",
            [
                *prefix,
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-k",
                str(sock),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
            ],
            logdir=logdir,
        )
        with running(server):
            import psycopg2

            deadline = time.monotonic() + 60
            while True:
                try:
                    conn = psycopg2.connect(
                        host="127.0.0.1", port=port, user=user, dbname="postgres", connect_timeout=2
                    )
                    break
                except psycopg2.OperationalError:
                    if not server.alive() or time.monotonic() > deadline:
                        raise AssertionError(
                            f"PostgreSQL did not start:\n{server.tail()}"
                        ) from None
                    time.sleep(0.2)
            conn.autocommit = True
            with conn.cursor() as cur:
                for db in databases:
                    cur.execute(f'CREATE DATABASE "{db}"')
            conn.close()
            yield f"{user}@127.0.0.1:{port}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------------------ S3, MLflow, Prefect


def s3_env(endpoint: str) -> dict[str, str]:
    return {
        "MLFLOW_S3_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": S3_KEY,
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_DEFAULT_REGION": S3_REGION,
    }


@contextlib.contextmanager
def s3_server(logdir: Path, buckets: tuple[str, ...]) -> Iterator[str]:
    """moto in server mode (its own process); yields the endpoint URL with ``buckets`` created."""
    port = free_port()
    server = start(
        "moto", [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], logdir=logdir
    )
    with running(server):
        endpoint = f"http://127.0.0.1:{port}"
        wait_http(server, f"{endpoint}/moto-api/", timeout=60)
        import boto3

        s3 = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=S3_KEY,
            aws_secret_access_key=S3_SECRET,
            region_name=S3_REGION,
        )
        for b in buckets:
            s3.create_bucket(Bucket=b)
        yield endpoint


def s3_keys(endpoint: str, bucket: str) -> list[str]:
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=S3_KEY,
        aws_secret_access_key=S3_SECRET,
        region_name=S3_REGION,
    )
    keys: list[str] = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys


def start_mlflow(
    logdir: Path,
    *,
    backend: str,
    artifacts: str,
    env: dict[str, str] | None = None,
    port: int | None = None,
) -> Service:
    port = port or free_port()
    server = start(
        "mlflow",
        [
            str(BIN / "mlflow"),
            "server",
            "--backend-store-uri",
            backend,
            "--artifacts-destination",
            artifacts,
            "--serve-artifacts",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        logdir=logdir,
        cwd=logdir,
        # no background job runner (huey consumers): nothing here needs it, CI has 2
        # cores
        env={"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **(env or {})},
    )
    server.url = f"http://127.0.0.1:{port}"
    return server


def start_prefect(
    logdir: Path, *, database_url: str, home: Path, env: dict[str, str] | None = None
) -> Service:
    """``prefect server start`` on ``database_url``. Its concurrency leases are kept on disk in
    ``home`` (as docker/ configures it), so a restarted server still frees the slots of runs that
    died; ``env``: more server settings."""
    port = free_port()
    server = start(
        "prefect",
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        logdir=logdir,
        env={
            "PREFECT_API_DATABASE_CONNECTION_URL": database_url,
            "PREFECT_HOME": str(home),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_UI_ENABLED": "false",
            # schedule new deployments' runs promptly (default loop: 60 s)
            "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5",
            "PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE": "prefect.server.concurrency.lease_storage.filesystem",  # noqa: E501
            "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
            **(env or {}),
        },
    )
    server.url = f"http://127.0.0.1:{port}/api"
    return server


# ---------------------------------------------------------------------------- Prefect's test server


class _ReapedSubprocess:
    """The ``subprocess`` module as prefect.server.api.server sees it: ``Popen`` through the
    launcher."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    @staticmethod
    def Popen(args, **kwargs):  # the name of the function it stands in for
        return reaper.popen(args, grace=3.0, **kwargs)


@contextlib.contextmanager
def prefect_test_harness(server_startup_timeout: int = 60) -> Iterator[None]:
    """``prefect.testing.utilities.prefect_test_harness`` (PREFECT_API_URL -> a temporary server on
    a temporary SQLite database) with its uvicorn server process started through the launcher, so
    it cannot outlive the test process. Prefect's harness starts the server with
    ``subprocess.Popen`` in prefect.server.api.server; that module's ``subprocess`` is swapped while
    the harness runs."""
    from prefect.server.api import server as prefect_server_module
    from prefect.testing.utilities import prefect_test_harness as harness

    real = prefect_server_module.subprocess
    prefect_server_module.subprocess = _ReapedSubprocess(real)
    try:
        with harness(server_startup_timeout=server_startup_timeout):
            yield
    finally:
        prefect_server_module.subprocess = real
