"""Each DP marginal generator runs through `privacy-gate run` end to end (real flow, small data)."""

import json

import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.config import load_release_config

from ..conftest import ROOT, write_release_config

FAST = {"private_gsd": {"n_syn": 500, "max_generations": 2000}}


@pytest.mark.parametrize("name", ["mst", "privbayes", "private_gsd"])
def test_example_configs_load(name):
    cfg = load_release_config(ROOT / "examples" / f"adult-{name}.yaml")
    assert cfg.generator.name == name and cfg.generator.params["epsilon"] == 1.0
    assert cfg.dataset.spec.name == "adult"


@pytest.mark.parametrize("name", ["mst", "privbayes", "private_gsd"])
def test_dp_generator_release_runs_end_to_end(prefect_server, small_adult, tmp_path, name):
    gen = {"name": name, "epsilon": 1.0, "seed": 0, **FAST.get(name, {})}
    cfg = write_release_config(
        small_adult, gen, name=f"dp-{name}.yaml", fast=True
    )  # plumbing: 4 shadow runs
    result = CliRunner().invoke(
        app, ["run", str(cfg), "--workdir", str(tmp_path), "--json"], catch_exceptions=False
    )
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.exit_code in (0, 3, 4) and summary["status"] == "ok", summary["reasons"]
    assert {"domias.auc", "dcr.auc", "utility.quality"} <= set(summary["metrics"])
    run = MlflowClient(tracking.default_tracking_uri(tmp_path)).get_run(summary["run_id"])
    assert run.data.params["generator"] == name and run.data.params["generator.epsilon"] == "1.0"
    # MAMA-MIA runs automatically (shadow variant) and its oracle is reported but not gated
    assert {"mama_mia.auc", "mama_mia_oracle.auc"} <= set(summary["metrics"])
    verdict = json.loads(
        open(
            MlflowClient(tracking.default_tracking_uri(tmp_path)).download_artifacts(
                summary["run_id"], names.ART_VERDICT, str(tmp_path)
            )
        ).read()
    )
    checked = {c["key"] for c in verdict["checks"]}
    assert "mama_mia.auc" in checked and "mama_mia_oracle.auc" not in checked


def test_shadow_runs_are_mapped_as_prefect_tasks(prefect_server, small_adult, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    cfg = write_release_config(
        small_adult,
        {"name": "mst", "epsilon": 1.0, "seed": 0},
        name="dp-shadow.yaml",
        attacks=[{"name": "mama_mia", "n_shadow": 12}],
    )
    result = CliRunner().invoke(
        app, ["run", str(cfg), "--workdir", str(tmp_path), "--json"], catch_exceptions=False
    )
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "ok" and "mama_mia.auc" in summary["metrics"]
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_="shadow-run")), limit=200
        )
    assert len(runs) >= 12


def test_same_flow_runs_on_dask(prefect_server, small_adult, tmp_path):
    """runner.kind dask: the release flow (attacks and MAMA-MIA shadow runs) on prefect-dask's
    DaskTaskRunner with a local 2-worker cluster — the same code as the thread pool."""
    cfg = write_release_config(
        small_adult,
        {"name": "mst", "epsilon": 1.0, "seed": 0},
        name="dp-dask.yaml",
        runner={"kind": "dask", "workers": 2},
        attacks=[{"name": "mama_mia", "n_shadow": 10}, {"name": "dcr"}],
        fast=True,
    )
    result = CliRunner().invoke(
        app, ["run", str(cfg), "--workdir", str(tmp_path), "--json"], catch_exceptions=False
    )
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["status"] == "ok", summary["reasons"]
    assert {"mama_mia.auc", "dcr.auc"} <= set(summary["metrics"])
