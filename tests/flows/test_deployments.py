"""Deployment plumbing without a server: schedules, config folders, the verdict event, the
automation in docker/, and the CLI's messages for bad deployment input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.config import ScheduleConfig
from privacy_gate.errors import ConfigError
from privacy_gate.flows.coordination import dataset_limit_name
from privacy_gate.flows.deployments import build_deployment, release_configs

from ..conftest import write_release_config

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_schedule_section_takes_exactly_one_valid_schedule():
    assert ScheduleConfig(cron="0 2 * * *").cron == "0 2 * * *"
    assert ScheduleConfig(interval_seconds=60).interval_seconds == 60
    for bad in (
        {},
        {"cron": "0 2 * * *", "interval_seconds": 5},
        {"cron": "0 2 *"},
        {"interval_seconds": 0},
    ):
        with pytest.raises(ValueError):
            ScheduleConfig(**bad)


def test_deployment_from_config_schedule_and_overrides(small_adult, tmp_path):
    cfg = write_release_config(
        small_adult,
        {"name": "copy_train"},
        name="nightly.yaml",
        schedule={"cron": "0 2 * * *", "timezone": "Europe/Berlin"},
    )
    dep = build_deployment(cfg, workdir=tmp_path)
    assert dep.name == "nightly" and dep.entrypoint == "privacy_gate.flows.gate_flows.release_flow"
    assert dep.parameters == {"config_path": str(cfg.resolve()), "workdir": str(tmp_path.resolve())}
    assert (
        dep.schedules[0].schedule.cron == "0 2 * * *"
        and dep.schedules[0].schedule.timezone == "Europe/Berlin"
    )
    assert "dataset:adult" in dep.tags
    dep = build_deployment(cfg, workdir=tmp_path, interval=90)
    assert dep.schedules[0].schedule.interval.total_seconds() == 90
    with pytest.raises(ConfigError, match="--cron"):
        build_deployment(cfg, workdir=tmp_path, cron="99 * * * *")
    bare = write_release_config(small_adult, {"name": "copy_train"}, name="bare.yaml")
    with pytest.raises(ConfigError, match="no schedule"):
        build_deployment(bare, workdir=tmp_path)


def test_release_configs_of_a_folder(small_adult, tmp_path):
    with pytest.raises(ConfigError, match="no release configs"):
        release_configs(tmp_path)
    write_release_config(tmp_path, {"name": "copy_train"}, name="a.yaml")
    (tmp_path / "notes.txt").write_text("not a config")
    assert [p.name for p in release_configs(tmp_path)] == ["a.yaml"]
    (tmp_path / "b.yml").write_text("dataset: {path: x.csv}\n")
    with pytest.raises(ConfigError, match="b.yml"):
        release_configs(tmp_path)


def test_dataset_limit_is_keyed_by_dataset_slug():
    assert (
        dataset_limit_name("Adult") == dataset_limit_name("adult") == "privacy-gate-dataset-adult"
    )
    assert dataset_limit_name("../x") == "privacy-gate-dataset-x"


def test_notify_automation_validates_against_prefect_schema():
    from prefect.automations import AutomationCore

    automation = AutomationCore.model_validate(
        json.loads((ROOT / "docker" / "notify-automation.json").read_text())
    )
    assert automation.trigger.expect == {
        "privacy-gate.verdict.block",
        "privacy-gate.verdict.review",
    }
    assert automation.actions[0].type == "send-notification"


def test_cli_deploy_and_serve_bad_input_are_usage_errors(tmp_path, small_adult):
    r = runner.invoke(app, ["deploy", str(tmp_path / "missing.yaml"), "--pool", "p"])
    assert r.exit_code == 2 and "file not found" in r.stderr
    r = runner.invoke(app, ["serve", str(tmp_path / "nowhere")])
    assert r.exit_code == 2 and "not a folder of release configs" in r.stderr
    cfg = write_release_config(tmp_path, {"name": "copy_train"}, name="x.yaml")
    r = runner.invoke(
        app, ["deploy", str(cfg), "--pool", "p", "--cron", "1 2 3", "--interval", "5"]
    )
    assert r.exit_code == 2 and "one schedule" in r.stderr and "Traceback" not in r.stderr


def _mixed_folder(folder: Path) -> Path:
    """good.yaml (scheduled) next to a corrupt, an invalid and an unscheduled config."""
    folder.mkdir()
    write_release_config(
        folder, {"name": "copy_train"}, name="good.yaml", schedule={"cron": "0 2 * * *"}
    )
    (folder / "corrupt.yaml").write_text("dataset: [unclosed\n")
    (folder / "invalid.yml").write_text("dataset: {path: x.csv}\n")
    write_release_config(folder, {"name": "copy_train"}, name="unscheduled.yaml")
    return folder


def test_serve_folder_serves_the_valid_configs_and_reports_each_invalid_one(small_adult, tmp_path):
    from privacy_gate.flows.deployments import folder_deployments

    folder = _mixed_folder(tmp_path / "configs")
    found = folder_deployments(folder, workdir=tmp_path)
    assert [d.name for d, _ in found.deployments] == ["good"] and [
        ds for _, ds in found.deployments
    ] == ["adult"]
    assert len(found.problems) == 3 and all("\n" not in p for p in found.problems)
    by_file = {Path(p.split(":", 1)[0]).name: p for p in found.problems}
    assert set(by_file) == {"corrupt.yaml", "invalid.yml", "unscheduled.yaml"}
    assert "not valid YAML: line 2" in by_file["corrupt.yaml"]
    assert "generator" in by_file["invalid.yml"]
    assert "no schedule" in by_file["unscheduled.yaml"]
    # --interval schedules the unscheduled one too
    assert len(folder_deployments(folder, workdir=tmp_path, interval=60).deployments) == 2


def test_serve_refuses_to_start_only_when_no_config_is_valid(small_adult, tmp_path, monkeypatch):
    import privacy_gate.flows.deployments as deployments

    folder = _mixed_folder(tmp_path / "configs")
    limits, lines = [], []
    monkeypatch.setattr(
        deployments, "ensure_dataset_limit", limits.append
    )  # no Prefect server needed
    monkeypatch.setattr(deployments, "require_prefect_api", lambda command: "stand-in")
    found = deployments.prepare_folder(
        folder, workdir=tmp_path, report=lines.append, allow_unsigned=True
    )
    assert [d.name for d, _ in found.deployments] == ["good"] and limits == ["adult"]
    assert len(lines) == 3 and all(
        ln.startswith(f"not served: {folder.resolve()}/") for ln in lines
    )
    (folder / "good.yaml").unlink()
    lines.clear()
    with pytest.raises(ConfigError, match="none of its 3 release config"):
        deployments.prepare_folder(
            folder, workdir=tmp_path, report=lines.append, allow_unsigned=True
        )
    assert len(lines) == 3
    r = runner.invoke(app, ["serve", str(folder)])
    assert r.exit_code == 2 and "Traceback" not in r.stderr
    assert (
        r.stderr.count("warning: not served: ") == 3
        and "corrupt.yaml" in r.stderr
        and "nothing to serve" in r.stderr
    )


def _no_prefect(monkeypatch, *, api: bool = True) -> list[str]:
    """Stand-ins for what serve / deploy would do on a Prefect server; records what was reached.
    ``api=False``: the real check of the Prefect API (no stand-in)."""
    import prefect

    from privacy_gate.flows import deployments

    reached: list[str] = []
    if api:
        monkeypatch.setattr(
            deployments, "require_prefect_api", lambda command: reached.append("api")
        )
    monkeypatch.setattr(
        deployments, "ensure_dataset_limit", lambda dataset: reached.append("limit")
    )
    monkeypatch.setattr(prefect, "serve", lambda *deps, **kw: reached.append("serve"))

    def no_client(**kw):
        reached.append("client")
        raise ConfigError("stand-in: no Prefect API in this test")

    monkeypatch.setattr(deployments, "get_client", no_client)
    return reached


def test_serve_and_deploy_refuse_to_start_without_a_signing_key(tmp_path, small_adult, monkeypatch):
    monkeypatch.delenv("PRIVACY_GATE_SIGNING_KEY", raising=False)
    reached = _no_prefect(monkeypatch)
    cfg = write_release_config(tmp_path, {"name": "copy_train"}, name="x.yaml")
    for args in (
        ["serve", str(tmp_path), "--cron", "0 2 * * *"],
        ["deploy", str(cfg), "--pool", "p", "--cron", "0 2 * * *"],
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert "PRIVACY_GATE_SIGNING_KEY is not set" in r.stderr and "--allow-unsigned" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    assert reached == []
    # told otherwise, or with a key, they start
    r = runner.invoke(app, ["serve", str(tmp_path), "--cron", "0 2 * * *", "--allow-unsigned"])
    assert r.exit_code == 0 and reached == ["api", "limit", "serve"], r.output
    monkeypatch.setenv("PRIVACY_GATE_SIGNING_KEY", "k")
    r = runner.invoke(app, ["deploy", str(cfg), "--pool", "p", "--cron", "0 2 * * *"])
    assert reached[-1] == "client" and "stand-in" in r.stderr


def test_deployments_cancel_a_run_due_while_one_is_active(small_adult, tmp_path):
    """A schedule faster than the gate: the late run is cancelled by the server, never queued."""
    cfg = write_release_config(
        small_adult, {"name": "copy_train"}, name="often.yaml", schedule={"cron": "* * * * *"}
    )
    dep = build_deployment(cfg, workdir=tmp_path)
    assert dep.concurrency_limit == 1
    assert dep.concurrency_options.collision_strategy.value == "CANCEL_NEW"


def test_serve_and_deploy_refuse_to_start_without_a_reachable_prefect_api(
    tmp_path, small_adult, monkeypatch
):
    """No PREFECT_API_URL: one line saying so and how to set it; set but nothing there: one line
    naming the URL. Within seconds, and nothing started (no temporary server, no serve)."""
    import time

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from ..stack import free_port

    monkeypatch.setenv("PRIVACY_GATE_SIGNING_KEY", "k")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    reached = _no_prefect(monkeypatch, api=False)
    cfg = write_release_config(tmp_path, {"name": "copy_train"}, name="x.yaml")
    commands = (
        ["serve", str(tmp_path), "--cron", "0 2 * * *"],
        ["deploy", str(cfg), "--pool", "p", "--cron", "0 2 * * *"],
    )
    down = f"http://127.0.0.1:{free_port()}/api"
    for settings, needles in (
        ({}, ("PREFECT_API_URL is not set", "export PREFECT_API_URL=")),
        ({PREFECT_API_URL: down}, (f"the Prefect API at {down} (PREFECT_API_URL) did not answer",)),
    ):
        with temporary_settings(
            updates=settings, restore_defaults=set() if settings else {PREFECT_API_URL}
        ):
            for args in commands:
                started = time.monotonic()
                r = runner.invoke(app, args)
                took = time.monotonic() - started
                assert r.exit_code == 2, (args, r.output)
                assert all(n in r.stderr for n in needles), r.stderr
                assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
                assert took < 15, f"{args[0]} took {took:.0f} s to refuse"
    assert reached == []


def gate_mode_config(
    folder: Path, small_adult: Path, name: str = "nightly-gate.yaml", *, data: str = ".", **extra
) -> Path:
    """A gate-mode deployment's config in ``folder``: the judging sections and its own files (the
    one-group leak, written to ``folder / data``, named relative to the config)."""
    import yaml

    from ..conftest import EXAMPLE, lighten, review_rules, write_group_leak

    (folder / data).mkdir(parents=True, exist_ok=True)
    write_group_leak(small_adult, folder / data)
    spec = yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"]
    (folder / data / "spec.yaml").write_text(yaml.safe_dump(spec))
    files = {k: f"{data}/{k}.csv" for k in ("train", "holdout", "reference", "synthetic")}
    raw = lighten(
        {
            "files": {**files, "spec": f"{data}/spec.yaml"},
            "audit": {"intersections": []},
            "gate": {"rules": review_rules(), "max_verbatim_copy_share": 0.05},
            **extra,
        }
    )
    path = folder / name
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_gate_mode_config_is_a_deployment_of_the_gate_flow_with_its_own_files(
    small_adult, tmp_path
):
    cfg = gate_mode_config(
        tmp_path, small_adult, schedule={"cron": "0 3 * * *"}, publish={"target": "out"}
    )
    dep = build_deployment(cfg, workdir=tmp_path / "wd")
    assert dep.name == "nightly-gate" and dep.flow_name == "gate"
    assert dep.entrypoint == "privacy_gate.flows.gate_flows.gate_flow"
    assert dep.parameters == {
        "train": str(tmp_path / "train.csv"),
        "holdout": str(tmp_path / "holdout.csv"),
        "reference": str(tmp_path / "reference.csv"),
        "synthetic": str(tmp_path / "synthetic.csv"),
        "spec_path": str(tmp_path / "spec.yaml"),
        "config_path": str(cfg.resolve()),
        "workdir": str((tmp_path / "wd").resolve()),
        "publish_to": str(tmp_path / "out"),
    }
    assert (
        dep.schedules[0].schedule.cron == "0 3 * * *"
        and "dataset:adult" in dep.tags
        and "mode:gate" in dep.tags
    )
    assert (
        dep.concurrency_limit == 1
        and dep.concurrency_options.collision_strategy.value == "CANCEL_NEW"
    )
    # a setting the gate flow would not read is refused, naming it
    bad = gate_mode_config(
        tmp_path,
        small_adult,
        name="csv.yaml",
        schedule={"cron": "0 3 * * *"},
        publish={"format": "csv"},
    )
    with pytest.raises(ConfigError, match="publish.format"):
        build_deployment(bad, workdir=tmp_path)


def test_a_folder_serves_release_and_gate_mode_configs_side_by_side(small_adult, tmp_path):
    from privacy_gate.flows.deployments import folder_deployments

    folder = tmp_path / "configs"
    folder.mkdir()
    write_release_config(
        folder, {"name": "copy_train"}, name="release.yaml", schedule={"cron": "0 2 * * *"}
    )
    gate_mode_config(
        folder, small_adult, name="gate.yaml", data="../data", schedule={"cron": "0 3 * * *"}
    )
    found = folder_deployments(folder, workdir=tmp_path)
    assert found.problems == []
    assert sorted((d.flow_name, d.name, ds) for d, ds in found.deployments) == [
        ("gate", "gate", "adult"),
        ("release", "release", "adult"),
    ]


def test_a_cron_given_on_the_command_line_names_the_schedule_sections_it_overrides(
    small_adult, tmp_path, monkeypatch
):
    monkeypatch.setenv("PRIVACY_GATE_SIGNING_KEY", "k")
    _no_prefect(monkeypatch)
    cfg = write_release_config(
        tmp_path, {"name": "copy_train"}, name="x.yaml", schedule={"cron": "0 2 * * *"}
    )
    r = runner.invoke(app, ["deploy", str(cfg), "--pool", "p", "--cron", "0 5 * * *"])
    note = f"note: {cfg}: its schedule section is not used: --cron '0 5 * * *' overrides it"
    assert note in r.stderr
