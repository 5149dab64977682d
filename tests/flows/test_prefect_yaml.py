"""``prefect deploy --all`` works beside ``privacy-gate deploy``: prefect.yaml at the repository
root, thin entry points in flows/ (they import the package's flows), every deployment with the
release flow's concurrency settings and a release config that loads."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from privacy_gate import flows as package_flows
from privacy_gate.config import load_release_config

from .. import stack

ROOT = Path(__file__).resolve().parents[2]


def _deployments() -> list[dict]:
    return yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]


def test_the_entry_points_are_the_package_flows():
    for file, name in (("release.py", "release_flow"), ("gate.py", "gate_flow")):
        spec = importlib.util.spec_from_file_location(f"entry_{name}", ROOT / "flows" / file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert getattr(module, name) is getattr(package_flows, name)


def test_every_deployment_is_a_release_of_a_valid_config_that_cannot_pile_up():
    deployments = _deployments()
    assert deployments and len({d["name"] for d in deployments}) == len(deployments)
    for d in deployments:
        assert d["entrypoint"] == "flows/release.py:release_flow", d["name"]
        assert d["concurrency_limit"] == {"limit": 1, "collision_strategy": "CANCEL_NEW"}, d["name"]
        config = load_release_config(ROOT / d["parameters"]["config_path"])
        assert f"dataset:{config.dataset.spec.name}" in d["tags"] and "privacy-gate" in d["tags"]
        assert d["schedules"], d["name"]


@pytest.mark.timeout(300)
def test_prefect_deploy_all_registers_the_deployments(prefect_server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.settings import PREFECT_API_URL

    checkout = tmp_path / "checkout"  # a copy: `prefect deploy` may write beside prefect.yaml
    checkout.mkdir()
    for name in ("prefect.yaml", "flows", "examples"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, checkout / name)
    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name="privacy-gate", type="process"), overwrite=True)
    env = {
        **os.environ,
        "PREFECT_API_URL": PREFECT_API_URL.value(),
        "PREFECT_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(ROOT),
    }
    r = subprocess.run(
        [str(stack.BIN / "prefect"), "--no-prompt", "deploy", "--all"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    with get_client(sync_client=True) as client:
        for want in _deployments():
            dep = client.read_deployment_by_name(f"release/{want['name']}")
            assert (
                dep.work_pool_name == "privacy-gate"
                and dep.entrypoint == "flows/release.py:release_flow"
            )
            assert dep.parameters == want["parameters"]
            assert dep.global_concurrency_limit.limit == 1
            assert dep.concurrency_options.collision_strategy.value == "CANCEL_NEW"
            assert [s.schedule.cron for s in dep.schedules] == [
                s["cron"] for s in want["schedules"]
            ]
            assert set(want["tags"]) <= set(dep.tags)
            # the parameters are the release flow's
            assert set(dep.parameter_openapi_schema["properties"]) == {"config_path", "workdir"}
