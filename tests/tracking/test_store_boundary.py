"""The MLflow store's failures are converted once, where MLflow is called: an unreachable store
is an ``InfrastructureError`` and a full disk a ``DiskFullError``, each naming the store with its
password masked; any other failure comes through as MLflow raised it."""

from __future__ import annotations

import sqlite3

import pytest
import requests
from mlflow.exceptions import MlflowException

from privacy_gate.errors import (
    DiskFullError,
    InfrastructureError,
    is_infrastructure_error,
    service_error,
)
from privacy_gate.tracking import BoundaryClient, Tracker

URI = "http://gate:s3cr3t@127.0.0.1:9/"


class FailingClient:
    """Stands in for ``MlflowClient``: each method fails as MLflow's would."""

    tracking_uri = URI

    def get_run(self, run_id):
        raise requests.exceptions.ConnectionError("Max retries exceeded with url: /api/2.0")

    def log_batch(self, run_id, **kwargs):
        raise MlflowException(
            "API request to http://gate:s3cr3t@127.0.0.1:9/api/2.0/mlflow/runs/log-batch failed "
            "with exception HTTPConnectionPool: Max retries exceeded"
        )

    def set_tag(self, run_id, key, value):
        raise MlflowException("(sqlite3.OperationalError) database or disk is full")

    def delete_tag(self, run_id, key):
        raise MlflowException(f"No tag with name: {key} in run with id {run_id}")


def test_an_unreachable_store_is_an_infrastructure_error_naming_it_masked():
    client = BoundaryClient(FailingClient(), uri=URI)
    for call in (lambda: client.get_run("r1"), lambda: client.log_batch("r1", metrics=[])):
        with pytest.raises(InfrastructureError) as info:
            call()
        text = str(info.value)
        assert text.startswith("the MLflow store http://gate:***@127.0.0.1:9/ did not answer")
        assert "s3cr3t" not in text
        assert is_infrastructure_error(info.value)
    assert client.tracking_uri == URI  # attributes pass through unchanged


def test_a_full_disk_is_named_and_not_retried():
    client = BoundaryClient(FailingClient(), uri="sqlite:////srv/gate/mlflow.db")
    with pytest.raises(DiskFullError) as info:
        client.set_tag("r1", "k", "v")
    assert str(info.value).startswith("the disk holding /srv/gate is full")
    assert not is_infrastructure_error(info.value)


def test_other_failures_come_through_as_mlflow_raised_them():
    client = BoundaryClient(FailingClient(), uri=URI)
    with pytest.raises(MlflowException, match="No tag with name"):
        client.delete_tag("r1", "k")


def test_past_the_boundary_only_types_count():
    """An outage's third-party exception is recognised by ``service_error`` at a boundary only;
    ``is_infrastructure_error`` reads types (ours, and Python's own connection errors)."""
    outage = requests.exceptions.ConnectionError("Max retries exceeded")
    assert isinstance(service_error(outage, service="s"), InfrastructureError)
    assert not is_infrastructure_error(outage)
    assert is_infrastructure_error(ConnectionResetError(104, "reset"))
    assert service_error(sqlite3.OperationalError("no such table: runs"), service="s") is None


def test_a_tracker_on_a_store_that_does_not_answer_fails_with_the_masked_store(monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # MLflow's own retries take minutes
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    with pytest.raises(InfrastructureError) as info:
        Tracker(uri="http://gate:s3cr3t@127.0.0.1:9", experiment=None)
    assert "http://gate:***@127.0.0.1:9" in str(info.value)
    assert "s3cr3t" not in str(info.value)
