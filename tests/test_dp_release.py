"""Each DP marginal generator runs through `privacy-gate run` end to end (real flow, small data)."""

import json

import pytest
import yaml
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from privacy_gate import tracking
from privacy_gate.cli import app
from privacy_gate.config import load_release_config

from .conftest import ROOT, write_release_config

FAST = {"private_gsd": {"n_syn": 500, "max_generations": 2000}}


@pytest.mark.parametrize("name", ["mst", "privbayes", "private_gsd"])
def test_example_configs_load(name):
    cfg = load_release_config(ROOT / "examples" / f"adult-{name}.yaml")
    assert cfg.generator.name == name and cfg.generator.params["epsilon"] == 1.0
    assert cfg.dataset.spec.name == "adult"


@pytest.mark.parametrize("name", ["mst", "privbayes", "private_gsd"])
def test_dp_generator_release_runs_end_to_end(prefect_server, small_adult, tmp_path, name):
    gen = {"name": name, "epsilon": 1.0, "seed": 0, **FAST.get(name, {})}
    cfg = write_release_config(small_adult, gen, name=f"dp-{name}.yaml")
    result = CliRunner().invoke(app, ["run", str(cfg), "--workdir", str(tmp_path), "--json"], catch_exceptions=False)
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.exit_code in (0, 3, 4) and summary["status"] == "ok", summary["reasons"]
    assert {"domias.auc", "dcr.auc", "utility.quality"} <= set(summary["metrics"])
    run = MlflowClient(tracking.default_tracking_uri(tmp_path)).get_run(summary["run_id"])
    assert run.data.params["generator"] == name and run.data.params["generator.epsilon"] == "1.0"
