"""Every command that talks to MLflow probes the tracking store first: an unreachable server is
one line naming the URI and where it came from, exit 2, within seconds (never minutes of MLflow
retries, a BLOCK or a traceback)."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from privacy_gate.cli import app
from tests import stack
from tests.conftest import EXAMPLE, write_release_config

pytestmark = pytest.mark.timeout(45)  # the old behaviour took minutes per command


@pytest.fixture
def dead_uri(monkeypatch):
    """An http URI on a loopback port nothing listens on."""
    uri = f"http://127.0.0.1:{stack.free_port()}"
    for key in (
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
        "MLFLOW_HTTP_REQUEST_TIMEOUT",
        "PREFECT_API_URL",
    ):
        monkeypatch.delenv(key, raising=False)
    return uri


def _invoke(args: list[str]) -> tuple[int, str, float]:
    start = time.monotonic()
    result = CliRunner().invoke(app, args)
    elapsed = time.monotonic() - start
    return (
        result.exit_code,
        result.stderr
        + result.stdout
        + (
            repr(result.exception)
            if result.exception and not isinstance(result.exception, SystemExit)
            else ""
        ),
        elapsed,
    )


def _gate_files(tmp_path):
    # the spec's columns: the header is checked against the spec before the store is probed
    from privacy_gate.config import load_spec

    header = ",".join(load_spec(EXAMPLE).columns)
    for i, name in enumerate(("train", "holdout", "reference", "synthetic")):
        (tmp_path / f"{name}.csv").write_text(
            f"{header}\n" + ",".join([str(i)] * (header.count(",") + 1)) + "\n"
        )
    return [
        "gate",
        *(f"--{n}={tmp_path / f'{n}.csv'}" for n in ("train", "holdout", "reference", "synthetic")),
        f"--spec={EXAMPLE}",
        f"--workdir={tmp_path / 'wd'}",
        "--orchestrator=local",
    ]


def _assert_probe_failure(code: int, out: str, elapsed: float, uri: str, source: str) -> None:
    assert code == 2, out
    assert elapsed < 15, f"took {elapsed:.0f} s"
    assert uri in out and source in out and "not reachable" in out, out
    assert (
        "Traceback" not in out and len([line for line in out.splitlines() if line.strip()]) == 1
    ), out


@pytest.mark.parametrize("command", ["gate", "approve", "reject", "review"])
def test_an_unreachable_tracking_uri_from_the_environment_exits_2_naming_it(
    command, dead_uri, tmp_path, monkeypatch
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", dead_uri)
    run_id = "0" * 32
    args = {
        "gate": _gate_files(tmp_path),
        "approve": ["approve", run_id, "--reviewer", "r", "--workdir", str(tmp_path)],
        "reject": ["reject", run_id, "--reviewer", "r", "--workdir", str(tmp_path)],
        "review": ["review", run_id, "--workdir", str(tmp_path)],
    }[command]
    code, out, elapsed = _invoke(args)
    _assert_probe_failure(code, out, elapsed, dead_uri, "MLFLOW_TRACKING_URI environment variable")
    assert "overrides the store in --workdir" in out


def test_run_probes_the_environment_uri_before_anything_runs(
    dead_uri, small_adult, tmp_path, monkeypatch
):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", dead_uri)
    config = write_release_config(
        small_adult,
        {"name": "file", "path": str(small_adult / "independent.csv")},
        name="probe.yaml",
        publish={"target": str(tmp_path / "published")},
        fast=True,
    )
    code, out, elapsed = _invoke(
        ["run", str(config), "--workdir", str(tmp_path / "wd"), "--orchestrator", "local"]
    )
    _assert_probe_failure(code, out, elapsed, dead_uri, "MLFLOW_TRACKING_URI environment variable")
    assert not (tmp_path / "wd" / "mlflow.db").exists()


def test_the_config_and_the_option_are_named_as_the_source(dead_uri, small_adult, tmp_path):
    config = write_release_config(
        small_adult,
        {"name": "file", "path": str(small_adult / "independent.csv")},
        name="probe-config.yaml",
        tracking={"uri": dead_uri},
        fast=True,
    )
    code, out, elapsed = _invoke(
        ["run", str(config), "--workdir", str(tmp_path / "wd"), "--orchestrator", "local"]
    )
    _assert_probe_failure(code, out, elapsed, dead_uri, f"tracking.uri in the config {config}")
    code, out, elapsed = _invoke(["review", "0" * 32, "--tracking-uri", dead_uri])
    _assert_probe_failure(code, out, elapsed, dead_uri, "--tracking-uri")
