"""Infrastructure retries: the MLflow tracking server is killed in the middle of a run.

A real ``mlflow server`` (sqlite store, loopback) is stopped by PID at the moment the run starts
sampling. With the server restarted the run is attempted again and ends with a complete,
verified record; with the server gone for good every attempt fails and the result is BLOCK,
naming the failure and the number of attempts, with nothing published. Never an APPROVE without a
complete record.
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
from mlflow.tracking import MlflowClient

from privacy_gate import names, tracking
from privacy_gate.config import RetryConfig, load_release_config
from privacy_gate.errors import is_infrastructure_error
from privacy_gate.pipeline import LocalExecutor
from privacy_gate.publication.publish import list_published
from privacy_gate.runs.release import release_run
from privacy_gate.runs.retrying import run_with_retries

from .. import stack
from ..conftest import write_release_config

#: the sample stage's progress line for the ``file`` generator (whole file, or a sample of it)
SAMPLE_STAGE = ("releasing all", "sampling")


class KillAt(logging.Handler):
    """Stops the tracking server when the run logs the start of ``stage`` (once)."""

    def __init__(self, server: stack.Service, stage_text: tuple[str, ...]):
        super().__init__()
        self.server, self.stage_text, self.fired = server, stage_text, threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if not self.fired.is_set() and any(t in record.getMessage() for t in self.stage_text):
            self.fired.set()
            stack.stop_group(self.server.proc, 10)


@pytest.fixture
def tracking_server(tmp_path, monkeypatch):
    """An MLflow server on a sqlite store, restartable on the same port."""
    # fail fast instead of MLflow's minutes of client retries: the pipeline's retries are under test
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    port = stack.free_port()
    backend = f"sqlite:///{tmp_path / 'mlflow.db'}"
    servers: list[stack.Service] = []

    def launch() -> stack.Service:
        server = stack.start_mlflow(
            tmp_path, backend=backend, artifacts=(tmp_path / "artefacts").as_uri(), port=port
        )
        servers.append(server)
        stack.wait_http(server, f"{server.url}/health", timeout=120)
        return server

    yield launch
    for s in servers:
        stack.stop_group(s.proc)


def _config(small_adult, tmp_path, url):
    path = write_release_config(
        small_adult,
        {"name": "file", "path": str(small_adult / "independent.csv")},
        name="retry.yaml",
        tracking={"uri": url, "experiment": "retries"},
        publish={"target": str(tmp_path / "published")},
        fast=True,
    )
    return load_release_config(path)


def _logger(handler: logging.Handler) -> logging.Logger:
    logger = logging.getLogger(f"privacy_gate.test.{id(handler)}")
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    return logger


@pytest.mark.timeout(600)
def test_killed_tracking_server_is_retried_and_the_record_is_complete(
    small_adult, tmp_path, tracking_server
):
    server = tracking_server()
    config = _config(small_adult, tmp_path, server.url)
    killer = KillAt(server, SAMPLE_STAGE)
    restarted: list[stack.Service] = []

    def restart_after_kill() -> (
        None
    ):  # 6 attempts 8 s apart: a restart slowed by a loaded machine still lands
        killer.fired.wait(300)
        time.sleep(1)
        restarted.append(tracking_server())

    threading.Thread(target=restart_after_kill, daemon=True).start()
    with LocalExecutor() as executor:
        result = run_with_retries(
            lambda: release_run(
                config, workdir=tmp_path / "wd", executor=executor, logger=_logger(killer)
            ),
            retries=RetryConfig(attempts=6, delay_seconds=8),
            logger=_logger(logging.NullHandler()),
        )
    assert killer.fired.is_set() and restarted
    assert result.attempts >= 2
    verdict = result.verdict
    assert verdict.decision == "APPROVE", verdict.reasons
    # the approval stands on a complete record: the verdict read back and verified from the server
    tracker = tracking.Tracker(uri=server.url, experiment=None)
    assert tracker.read_verified_verdict(result.run_id)["verdict"] == "APPROVE"
    assert result.published and len(list_published(tmp_path / "published")) == 1
    # the interrupted attempt's run carries no APPROVE
    client = MlflowClient(server.url)
    runs = client.search_runs(
        [client.get_experiment_by_name("retries").experiment_id],
        filter_string=f"tags.`{names.TAG_KIND}` = 'release'",
    )
    # the interrupted attempt left a run; an attempt made while the server was still down left none
    assert 2 <= len(runs) <= result.attempts
    others = [r for r in runs if r.info.run_id != result.run_id]
    assert all(r.data.tags.get(names.TAG_VERDICT) != "APPROVE" for r in others)
    # the attempts are nested under one parent run, which carries the final verdict
    parents = {r.data.tags.get("mlflow.parentRunId") for r in runs}
    assert len(parents) == 1 and None not in parents, [r.data.tags for r in runs]
    parent = client.get_run(parents.pop())
    assert (
        parent.data.tags[names.TAG_KIND] == names.KIND_ATTEMPTS
        and parent.data.tags[names.TAG_VERDICT] == "APPROVE"
    )
    assert parent.data.tags[names.TAG_FINAL_RUN] == result.run_id


@pytest.mark.timeout(600)
def test_tracking_server_gone_for_good_ends_block_after_the_attempts(
    small_adult, tmp_path, tracking_server
):
    server = tracking_server()
    config = _config(small_adult, tmp_path, server.url)
    killer = KillAt(server, SAMPLE_STAGE)
    with LocalExecutor() as executor:
        result = run_with_retries(
            lambda: release_run(
                config, workdir=tmp_path / "wd", executor=executor, logger=_logger(killer)
            ),
            retries=RetryConfig(attempts=2, delay_seconds=0),
            logger=_logger(logging.NullHandler()),
        )
    assert result.verdict.decision == "BLOCK" and result.attempts == 2
    message = result.verdict.reasons[0].message
    assert "infrastructure failure in all 2 attempts" in message
    assert result.published is None and list_published(tmp_path / "published") == []


def test_only_infrastructure_failures_are_retried():
    from privacy_gate.errors import ConfigError

    calls = []

    def bad_config():
        calls.append(1)
        raise ConfigError("gate.rules: unknown metric")

    with pytest.raises(ConfigError):
        run_with_retries(bad_config, retries=RetryConfig(attempts=3, delay_seconds=0))
    assert len(calls) == 1

    def refused():
        calls.append(2)
        raise ConnectionRefusedError(111, "Connection refused")

    slept = []
    result = run_with_retries(
        refused, retries=RetryConfig(attempts=3, delay_seconds=7), sleep=slept.append
    )
    assert calls.count(2) == 3 and slept == [7, 7]
    assert (
        result.verdict.decision == "BLOCK"
        and result.run_id is None
        and result.attempts == 3
        and result.retryable
    )
    assert is_infrastructure_error(ConnectionRefusedError())
