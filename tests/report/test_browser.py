"""What a privacy officer sees: a real MLflow server and headless Chromium on a finished REVIEW run.

The run: the small seeded Adult table, released as 2,000 disjoint Adult rows plus verbatim copies of
the training records of one rare subgroup (race=Asian-Pac-Islander) -> REVIEW with that group
flagged (and any other flag explained by it). Then ``mlflow server`` on the run's sqlite store (its
experiment has a file:// artifact location, which the server reads directly) and Chromium on

(a) the run page: ``--dump-dom`` must show the verdict tag and the flagged group, its description
    the evidence and the decision commands; the experiment's runs page (the link we print) lists the
    run with its verdict;
(b) the HTML report as the MLflow UI shows it (artifact viewer: the UI fetches
    ``/get-artifact?path=report/index.html&run_uuid=RUN`` and renders it in a sandboxed iframe,
    which ``--dump-dom`` cannot see, so the rendered text is read over the DevTools protocol).

Screenshots go to tests/output/browser/ (gitignored). Loopback only; the server is always stopped
(and Chromium and the server are started through tests/reaper.py: they die with pytest).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from privacy_gate import names, tracking
from privacy_gate.report.commands import REVIEWER

from ..conftest import write_group_copy_release
from ..reaper import popen
from ..stack import free_port, stop_group
from .devtools import CHROMIUM, FLAGS, DevTools

OUT = Path(__file__).resolve().parents[1] / "output" / "browser"
GROUP = "race=Asian-Pac-Islander"

pytestmark = [
    pytest.mark.skipif(
        not os.access(CHROMIUM, os.X_OK),
        reason=f"Chromium not installed ({CHROMIUM}): apt-get install chromium "
        "(.ci/run --all installs it) to run the browser tests",
    ),
]


# ------------------------------------------------------------------------------ processes


def _run_chromium(args: list[str], profile: Path, timeout: float = 90.0) -> str:
    profile.mkdir(parents=True, exist_ok=True)
    proc = popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(proc, 5)
        raise AssertionError(
            f"Chromium did not finish within {timeout:.0f} s: {args[-1]}"
        ) from None
    finally:
        stop_group(proc, 5)
    return out


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def review_run(prefect_server, small_adult, tmp_path_factory):
    """A finished release flow ending in REVIEW with exactly one flagged subgroup (~20 s)."""
    from privacy_gate.flows import release_flow

    # what the pages show, not the statistics: plumbing weight
    config = write_group_copy_release(
        small_adult,
        tmp_path_factory.mktemp("browser-data"),
        name="browser.yaml",
        audit={"intersections": [], "min_group_size": 15},
    )
    workdir = tmp_path_factory.mktemp("browser-wd")
    result = release_flow(config_path=str(config), workdir=str(workdir))
    verdict = result.verdict
    # the leaked group, and any group flagged only through it (its people's rare native countries)
    assert verdict.decision == "REVIEW" and GROUP in verdict.flagged_subgroups, verdict.reasons
    unexplained = [g for g in verdict.flagged_subgroups if g not in verdict.explained]
    assert len(unexplained) == 1 and set(verdict.explained.values()) <= set(unexplained), (
        verdict.explained
    )
    return verdict.run_id, workdir


@pytest.fixture(scope="module")
def mlflow_server(review_run):
    """``mlflow server`` on the run's sqlite store, loopback only; stopped (TERM, wait)
    afterwards."""
    _, workdir = review_run
    port = free_port()
    exe = Path(sys.executable).with_name("mlflow")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mlflow"]
    cmd += [
        "server",
        "--backend-store-uri",
        tracking.default_tracking_uri(workdir),
        "--workers",
        "1",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--artifacts-destination",
        (workdir / names.ARTIFACT_DIR).resolve().as_uri(),
    ]
    # no background job runner (huey consumers): nothing here needs it, and CI has 2 cores
    env = {
        **os.environ,
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
    }
    log = (workdir / "mlflow-server.log").open("w")
    proc = popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise AssertionError(
                    f"mlflow server exited ({proc.returncode}):\n"
                    + (workdir / "mlflow-server.log").read_text()[-3000:]
                )
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            if time.monotonic() > deadline:
                raise AssertionError(
                    "mlflow server did not answer /health within 120 s:\n"
                    + (workdir / "mlflow-server.log").read_text()[-3000:]
                )
            time.sleep(0.5)
        yield url
    finally:
        stop_group(proc)
        log.close()


@pytest.fixture(scope="module")
def out_dir() -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    return OUT


def _experiment(workdir: Path, run_id: str) -> str:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking.default_tracking_uri(workdir)).get_run(run_id).info.experiment_id


#: the banner's evidence: the group, its size, the attack's AUC with its 95% interval
EVIDENCE = re.compile(
    re.escape(GROUP) + r": (\d[\d,]*) members among the targets; an attacker \((\w+)\) tells "
    r"members from non-members with AUC (0\.\d+|1) \[(0\.\d+|0|1), (0\.\d+|1)\]"
)
#: markup shown as text (escaped tags) instead of rendered
RAW_TAG = re.compile(
    r"</?(b|code|i|em|strong|span|div|p|a|ul|li|table|tr|td|th|br|pre|h\d)\b[^>]*>"
)


def _text_of(browser: DevTools, session: str, want: list[str], seconds: float = 90) -> str:
    """The page's rendered text once it holds every string of ``want`` (or when time is up)."""
    text, deadline = "", time.monotonic() + seconds
    while time.monotonic() < deadline:
        browser.pump(0.5)
        with contextlib.suppress(RuntimeError, TimeoutError):
            text = browser.text(session)
        if all(w in text for w in want):
            break
    return text


# ------------------------------------------------------------------------------ tests


@pytest.mark.timeout(600)
def test_report_artifact_is_served_by_mlflow(review_run, mlflow_server):
    run_id, _ = review_run
    with urllib.request.urlopen(
        f"{mlflow_server}/get-artifact?path={names.ART_REPORT}&run_uuid={run_id}", timeout=30
    ) as r:
        assert r.status == 200 and r.headers.get_content_type() == "text/html"
        page = r.read().decode()
    assert 'class="banner REVIEW"' in page and GROUP in page and "data:image/png;base64," in page


@pytest.mark.timeout(600)
def test_run_page_shows_verdict_and_flagged_subgroup(review_run, mlflow_server, out_dir, tmp_path):
    run_id, workdir = review_run
    url = tracking.run_url(mlflow_server, _experiment(workdir, run_id), run_id)
    dom = ""
    for attempt, budget in enumerate(
        (10000, 20000, 40000)
    ):  # the React UI needs time to fetch and render
        dom = _run_chromium(
            [f"--virtual-time-budget={budget}", "--dump-dom", url], tmp_path / f"dom{attempt}"
        )
        if names.TAG_VERDICT in dom and GROUP in dom:
            break
    assert names.TAG_VERDICT in dom and names.TAG_FLAGGED in dom, dom[-2000:]
    assert "REVIEW" in dom and GROUP in dom
    assert run_id in dom
    shot = out_dir / "run_page.png"
    shot.unlink(missing_ok=True)
    _run_chromium(
        [f"--virtual-time-budget={budget}", f"--screenshot={shot}", url], tmp_path / "shot"
    )
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.timeout(600)
def test_report_visible_in_mlflow_artifact_viewer(review_run, mlflow_server, out_dir, tmp_path):
    run_id, workdir = review_run
    exp = _experiment(workdir, run_id)
    browser = DevTools(tmp_path / "profile")
    try:
        page = browser.open_page()
        browser.send(
            "Page.navigate",
            {
                "url": f"{mlflow_server}/#/experiments/{exp}/runs/{run_id}/artifacts/"
                f"{names.ART_REPORT}?{tracking.UI_WORKFLOW}"
            },
            session=page,
        )
        text, deadline = "", time.monotonic() + 90
        while time.monotonic() < deadline:
            browser.pump(0.5)
            texts = []
            for frame in browser.iframe_sessions():
                with contextlib.suppress(RuntimeError, TimeoutError):  # a frame may be gone again
                    texts.append(browser.text(frame))
            text = next((t for t in texts if "flagged subgroups" in t), "")
            if "REVIEW" in text and GROUP in text and "How to decide" in text:
                break
        assert "REVIEW" in text and f"flagged subgroups: {GROUP}" in text, text[:2000]
        assert "How to decide" in text
        assert f"privacy-gate approve {run_id} --reviewer {REVIEWER} --suppress {GROUP}" in text
        assert "pending" in text and "Rules" in text and "Subgroups" in text
        browser.pump(1.0)  # let the figures decode before the screenshot
        browser.screenshot(page, out_dir / "report_in_mlflow.png")
        # the same served bytes as a full page (what "download" + open would show), for a readable
        # screenshot
        browser.send(
            "Runtime.evaluate",
            {
                "expression": (
                    f"fetch('/get-artifact?path={names.ART_REPORT}&run_uuid={run_id}').then(r => "
                    "r.text())"
                    ".then(t => { document.open(); document.write(t); document.close(); })"
                ),
                "awaitPromise": True,
            },
            session=page,
        )
        browser.pump(1.0)
        full = browser.text(page)
        assert full.startswith("REVIEW") and GROUP in full
        # under the summary cards, the reasons lead to the evidence: the group's size and the AUC
        # with its interval
        banner = full.split("dataset ")[0]
        found = EVIDENCE.search(banner)
        assert found, banner[:1500]
        lo, auc, hi = (float(found.group(i)) for i in (4, 3, 5))
        assert int(found.group(1).replace(",", "")) > 0 and lo <= auc <= hi and lo < hi, (
            found.group(0)
        )
        assert not RAW_TAG.search(full), RAW_TAG.findall(full)[
            :5
        ]  # markup renders, never shows as text
        assert "ROC inside each flagged group" in full
        images = browser.send(
            "Runtime.evaluate",
            {
                "expression": (
                    "Array.from(document.images).filter(i => i.complete && i.naturalWidth > "
                    "100).length"
                ),
                "returnByValue": True,
            },
            session=page,
        )["result"]["value"]
        assert (
            images >= 4
        )  # ROC, score histograms, subgroup bars, the flagged group's ROC all decode
        browser.screenshot(page, out_dir / "report_full.png", full_page=True)
    finally:
        browser.close()
    assert (out_dir / "report_in_mlflow.png").stat().st_size > 10_000


@pytest.mark.timeout(600)
def test_run_page_description_leads_with_evidence_and_commands(
    review_run, mlflow_server, out_dir, tmp_path
):
    run_id, workdir = review_run
    browser = DevTools(tmp_path / "profile")
    try:
        page = browser.open_page()
        browser.send(
            "Page.navigate",
            {"url": tracking.run_url(mlflow_server, _experiment(workdir, run_id), run_id)},
            session=page,
        )
        text = _text_of(browser, page, ["members among the targets", names.TAG_VERDICT])
        browser.screenshot(page, out_dir / "run_page_description.png")
    finally:
        browser.close()
    assert EVIDENCE.search(text), text[:3000]
    assert not RAW_TAG.search(text), RAW_TAG.findall(text)[:5]


@pytest.mark.timeout(600)
def test_experiment_link_lists_the_run_with_its_verdict(
    review_run, mlflow_server, out_dir, tmp_path
):
    """The experiment link we print opens its runs page (model-training view); the run list shows
    the verdict (in the run's name)."""
    run_id, workdir = review_run
    url = tracking.experiment_url(mlflow_server, _experiment(workdir, run_id))
    assert url.endswith("/runs?workflowType=machine_learning")
    browser = DevTools(tmp_path / "profile")
    try:
        page = browser.open_page()
        browser.send("Page.navigate", {"url": url}, session=page)
        text = _text_of(browser, page, ["REVIEW ·"])
        browser.pump(1.0)
        browser.screenshot(page, out_dir / "run_list.png")
        location = browser.send(
            "Runtime.evaluate", {"expression": "location.href", "returnByValue": True}, session=page
        )["result"]["value"]
    finally:
        browser.close()
    assert "REVIEW ·" in text, text[:3000]
    assert "/runs" in location and "workflowType=machine_learning" in location, location
    assert not RAW_TAG.search(text)


@pytest.mark.timeout(600)
def test_decision_rerenders_the_served_report(review_run, mlflow_server):
    """Runs last: rejecting the run re-renders its report; the server serves the new one."""
    from privacy_gate.review.decide import decide_run

    run_id, workdir = review_run
    decide_run(
        run_id,
        action="reject",
        reviewer="ana",
        comment="rare group copied verbatim",
        tracking_uri=tracking.default_tracking_uri(workdir),
        workdir=str(workdir),
    )
    with urllib.request.urlopen(
        f"{mlflow_server}/get-artifact?path={names.ART_REPORT}&run_uuid={run_id}", timeout=30
    ) as r:
        page = r.read().decode()
    assert "rejected by ana" in page and "rare group copied verbatim" in page
    assert 'id="decide"' not in page  # decided: no "how to decide" box any more
