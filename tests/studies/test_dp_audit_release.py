"""A release with ``audit_dp``: the audit runs as its own stage, is recorded (nested MLflow run,
report section), cached for the next release, and fails closed."""

import json

from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app

from ..conftest import write_release_config

AUDIT = {"runs": 4, "targets": ["worst_case"], "scores": ["whitebox"]}


def _run(cfg, tmp_path):
    result = CliRunner().invoke(
        app,
        ["run", str(cfg), "--workdir", str(tmp_path), "--json", "--orchestrator", "local"],
        catch_exceptions=False,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_release_with_dp_audit_records_and_caches(small_adult, tmp_path):
    cfg = write_release_config(
        small_adult,
        {"name": "mst", "epsilon": 1.0, "seed": 0},
        name="dp-audit.yaml",
        fast=True,
        audit_dp=AUDIT,
    )
    first = _run(cfg, tmp_path)
    assert first["status"] == "ok" and first["metrics"]["dp_audit.cached"] == 0.0
    assert first["metrics"]["dp_audit.epsilon_claimed"] == 1.0
    client = MlflowClient(tracking.default_tracking_uri(tmp_path))
    run = client.get_run(first["run_id"])
    child = client.get_run(run.data.tags[names.TAG_DP_AUDIT])
    assert (
        child.data.tags["mlflow.parentRunId"] == first["run_id"]
        and "dp_audit.epsilon_lower" in child.data.metrics
    )
    report = open(
        client.download_artifacts(first["run_id"], names.ART_REPORT, str(tmp_path))
    ).read()
    assert 'id="dp_audit"' in report
    assert _run(cfg, tmp_path)["metrics"]["dp_audit.cached"] == 1.0  # the next release re-uses it


def test_dp_audit_of_a_generator_without_a_dp_claim_fails_the_stage(small_adult, tmp_path):
    """Fail closed: the stage raises (the release BLOCKs with the stage's name, as every stage)."""
    import pytest

    from privacy_gate.config import load_release_config
    from privacy_gate.errors import ConfigError
    from privacy_gate.studies.dp_audit_gate import audit_for_release

    cfg = load_release_config(
        write_release_config(
            small_adult,
            {"name": "gaussian_copula", "seed": 0},
            name="dp-audit-bad.yaml",
            fast=True,
            audit_dp=AUDIT,
        )
    )
    with pytest.raises(
        ConfigError, match="audit_dp: generator 'gaussian_copula' claims no DP guarantee"
    ):
        audit_for_release(cfg, None, workdir=tmp_path)
