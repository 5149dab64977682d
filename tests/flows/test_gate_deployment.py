"""Deployments on a Prefect server (the session's test server): ``deploy`` over an existing
deployment refuses without ``--replace``, naming it and what it runs, and registers nothing; with
``--replace`` it replaces it. A gate-mode config (its own files) is a deployment of the ``gate``
flow whose stored parameters judge those files: the flow run with the parameters read back from the
server ends in the leak's REVIEW. About 30 s (one gate of the small table)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.errors import ConfigError

from .test_deployments import gate_mode_config

runner = CliRunner()
GROUP = "race=Asian-Pac-Islander"


def _deployment(name: str):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_deployment_by_name(name)


@pytest.fixture(scope="module")
def deployed(prefect_server, small_adult, tmp_path_factory):
    from privacy_gate.flows.deployments import deploy_configs

    folder = tmp_path_factory.mktemp("gate-deploy")
    config = gate_mode_config(folder, small_adult, schedule={"cron": "0 3 * * *"})
    workdir = folder / "wd"
    registered = deploy_configs([config], work_pool="gates", workdir=workdir, allow_unsigned=True)
    assert [name for name, _ in registered] == ["gate/nightly-gate"]
    return config, workdir, registered[0][1]


def test_deploy_over_an_existing_deployment_asks_for_replace(deployed, monkeypatch):
    from privacy_gate.flows.deployments import deploy_configs

    config, workdir, first = deployed
    with pytest.raises(ConfigError) as refused:
        deploy_configs(
            [config], work_pool="other", workdir=workdir, interval=60, allow_unsigned=True
        )
    message = str(refused.value)
    assert (
        "deployment gate/nightly-gate exists already" in message
        and str(config.resolve()) in message
    )
    assert "work pool gates" in message and "0 3 * * *" in message and "--replace" in message
    assert "nothing was registered" in message
    dep = _deployment("gate/nightly-gate")
    assert dep.work_pool_name == "gates" and [s.schedule.cron for s in dep.schedules] == [
        "0 3 * * *"
    ]
    monkeypatch.setenv("PRIVACY_GATE_SIGNING_KEY", "k")
    r = runner.invoke(app, ["deploy", str(config), "--pool", "other", "--workdir", str(workdir)])
    assert r.exit_code == 2 and "exists already" in r.stderr and "--replace" in r.stderr, r.output
    r = runner.invoke(
        app,
        [
            "deploy",
            str(config),
            "--pool",
            "other",
            "--workdir",
            str(workdir),
            "--interval",
            "600",
            "--replace",
        ],
    )
    assert r.exit_code == 0 and "deployed gate/nightly-gate" in r.stdout, r.output
    assert "its schedule section is not used: --interval 600.0 overrides it" in r.stderr
    dep = _deployment("gate/nightly-gate")
    assert (
        dep.work_pool_name == "other" and dep.schedules[0].schedule.interval.total_seconds() == 600
    )
    assert str(dep.id) == first  # replaced in place: the same deployment


def test_the_gate_mode_deployment_judges_its_own_files(deployed):
    from privacy_gate.flows import gate_flow

    _, workdir, _ = deployed
    parameters = _deployment("gate/nightly-gate").parameters
    assert parameters["synthetic"].endswith("synthetic.csv") and parameters["workdir"] == str(
        workdir.resolve()
    )
    outcome = gate_flow(**parameters)
    verdict = outcome.verdict
    assert verdict.decision == "REVIEW" and verdict.points_at == GROUP, verdict.reasons
    # the group's copies are what the scan points at: named, or (where BH names none at this
    # weight) filling its top set
    effect = verdict.group_effects[GROUP]
    assert effect["named"] > 0 or effect["top_members"] >= 0.9 * effect["top_members_all"] > 0
