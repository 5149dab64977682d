"""A REVIEW on one group, read at a glance: the group's name, its effect size with its interval and
its share of the records named exposed are on the first screen of the report, the MLflow run page
and the Prefect flow run page; after ``privacy-gate approve``, the MLflow run list, the report and
the Prefect flow run show the decision.

The run: the small seeded Adult table released as 2,000 disjoint Adult rows plus verbatim copies of
the training records of one rare group (race=Asian-Pac-Islander), through the real Prefect release
flow against a ``prefect server`` with its UI (tests/report/test_glance.py's), into a real MLflow
store served by ``mlflow server``; headless Chromium at 1280 x 900, nothing scrolled, clicked or
configured. "Visible" is test_glance's layout probe: inside the viewport, not clipped, not hidden,
not covered. The expected strings come from the run's recorded effect
(``Verdict.group_effects``), never typed in: the interval and the share are what the run measured.
About 2 minutes on 2 busy cores. Screenshots: tests/output/browser/glance/group_*.png.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from privacy_gate import names, tracking

from ..conftest import write_group_copy_release
from . import test_glance
from .devtools import MISSING, chromium_available
from .test_glance import assert_visible, glance, mlflow_serving, run_script

#: test_glance's servers and browser, as fixtures of this module too
prefect_ui, browser = test_glance.prefect_ui, test_glance.browser

pytestmark = [pytest.mark.skipif(not chromium_available(), reason=MISSING)]

GROUP = "race=Asian-Pac-Islander"

#: the release run and, after the pages were read, its approval, in a child process whose only
#: Prefect API is the UI server (see test_glance's _RUNS_SCRIPT for why)
_RUN_SCRIPT = """
import json, logging, sys
logging.getLogger("prefect").setLevel(logging.INFO)
from mlflow.tracking import MlflowClient
from privacy_gate import tracking
from privacy_gate.flows import release_flow
from privacy_gate.flows.verdict_states import outcome_of
from privacy_gate.words.evidence import effect_parts
config, workdir, out = sys.argv[1:4]
state = release_flow(config_path=config, workdir=workdir, return_state=True)
outcome = outcome_of(state)
verdict = outcome.verdict
info = MlflowClient(tracking.default_tracking_uri(workdir)).get_run(outcome.run_id).info
effect = verdict.group_effects.get(verdict.points_at or "", {})
open(out, "w").write(json.dumps({
    "decision": verdict.decision, "points_at": verdict.points_at, "effect": effect,
    "parts": effect_parts(effect), "state": state.name, "message": state.message,
    "run_id": outcome.run_id, "flow_run": str(state.state_details.flow_run_id),
    "run_name": info.run_name,
    "experiment_id": info.experiment_id, "report": f"{info.artifact_uri}/report/index.html"}))
"""


def _release(small_adult, workdir, env) -> dict:
    """The one-group REVIEW through the release flow on the UI's Prefect server."""
    config = write_group_copy_release(
        small_adult, workdir / "data", name="group-glance.yaml", audit={"intersections": []}
    )
    return run_script(_RUN_SCRIPT, [str(config), str(workdir)], out=workdir / "run.json", env=env)


@pytest.fixture(scope="module")
def group_run(prefect_ui, small_adult, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("group-glance-wd")
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_ui,
        "PREFECT_LOGGING_LEVEL": "INFO",
        "PREFECT_HOME": str(tmp_path_factory.mktemp("group-glance-home")),
    }
    run = _release(small_adult, workdir, env)
    assert run["decision"] == "REVIEW" and run["points_at"] == GROUP, run["message"]
    assert run["state"] == "Review pending", run
    # what the pages must show: the AUC with its interval, the group's share of the named records
    # (of the scan's top set where nothing is named: at plumbing weight BH names none)
    auc, share = run["parts"]
    assert auc.startswith("AUC ") and " [" in auc, run["parts"]
    assert share.endswith(" named records") or " of scan's top " in share, run["parts"]
    effect = run["effect"]
    assert effect["named_all"] >= effect["named"] and (
        effect["named"] > 0 or effect["top_members"] >= 0.9 * effect["top_members_all"] > 0
    )
    return run, workdir, env


@pytest.fixture(scope="module")
def mlflow_ui(group_run):
    with mlflow_serving(group_run[1]) as url:
        yield url


def _needles(run: dict) -> list[str]:
    return [GROUP, *run["parts"]]  # the group, its AUC with the interval, its share of the named


@pytest.mark.timeout(600)
def test_the_report_shows_the_group_its_effect_and_its_share(group_run, browser):
    run, _, _ = group_run
    needles = _needles(run)
    found = glance(browser, run["report"], needles, "group_report.png", seconds=30)
    assert_visible(found, needles, "group_report.png")


@pytest.mark.timeout(600)
def test_the_mlflow_run_page_shows_the_group_its_effect_and_its_share(
    group_run, mlflow_ui, browser
):
    run, _, _ = group_run
    needles = _needles(run)
    url = tracking.run_url(mlflow_ui, run["experiment_id"], run["run_id"])
    found = glance(browser, url, needles, "group_run_page.png")
    assert_visible(found, needles, "group_run_page.png")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("ui", ["", "/v2"], ids=["prefect-link", "prefect-v2"])
def test_the_prefect_flow_run_shows_the_group_its_effect_and_its_share(
    group_run, prefect_ui, browser, ui
):
    run, _, _ = group_run
    assert run["message"].startswith(f"REVIEW: {GROUP}: {', '.join(run['parts'])} — "), run[
        "message"
    ]
    needles = ["Review pending", *_needles(run)]
    url = f"{prefect_ui.removesuffix('/api')}{ui}/runs/flow-run/{run['flow_run']}"
    shot = f"group_prefect{ui.replace('/', '_')}.png"
    found = glance(browser, url, needles, shot)
    assert_visible(found, needles, shot)


@pytest.fixture(scope="module")
def approved(group_run, mlflow_ui):
    """``privacy-gate approve`` as a reviewer pastes it (the real CLI, in its own process, with the
    Prefect API the flow ran on); after the pages above were read."""
    run, workdir, env = group_run
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "privacy_gate.cli",
            "approve",
            run["run_id"],
            "--reviewer",
            "ana",
            "--comment",
            "the group is public knowledge",
            "--workdir",
            str(workdir),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Prefect flow run {run['flow_run']}: Review pending -> Review approved" in r.stdout, (
        r.stdout
    )
    return run


@pytest.mark.timeout(600)
def test_after_approve_the_run_list_shows_the_decision(approved, mlflow_ui, browser):
    run = approved
    needle = f"REVIEW approved{names.RUN_NAME_VERDICT_SEPARATOR}"
    found = glance(
        browser,
        tracking.experiment_url(mlflow_ui, run["experiment_id"]),
        [needle],
        "group_run_list_approved.png",
    )
    assert_visible(found, [needle], "group_run_list_approved.png")
    assert found[needle]["owner"].startswith(needle)  # in the run's name cell


@pytest.mark.timeout(600)
def test_after_approve_the_report_shows_the_decision(approved, browser):
    run = approved
    needles = ["REVIEW · adult", "approved by ana: published", "review approved by ana"]
    found = glance(browser, run["report"], needles, "group_report_approved.png", seconds=30)
    assert_visible(found, needles, "group_report_approved.png")
    chromium, page = browser
    text = chromium.text(page)
    assert "a human decides" not in text and "How to decide" not in text


@pytest.mark.timeout(600)
def test_after_approve_the_prefect_flow_run_shows_the_decision(approved, prefect_ui, browser):
    run = approved
    needles = ["Review approved"]
    url = f"{prefect_ui.removesuffix('/api')}/v2/runs/flow-run/{run['flow_run']}"
    found = glance(browser, url, needles, "group_prefect_approved.png")
    assert_visible(found, needles, "group_prefect_approved.png")
