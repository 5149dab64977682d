"""The verdict at a glance: on every page a person opens after a run (the MLflow run
list, the MLflow run page, the HTML report, the Prefect flow run), the verdict and the first reason
are on the first screen, without scrolling, clicking or configuring columns.

One REVIEW and one BLOCK go through the real Prefect release flow (small seeded Adult table,
plumbing weight) against a ``prefect server`` that serves its UI (the suite's session server,
tests/stack.py ``prefect_test_harness``, is Prefect's ephemeral one: it never serves the UI), into
one workdir, so one MLflow run list holds both; they log at INFO, as a production run does, so the
flow run page lists its progress first and the verdict line last. Then ``mlflow server`` on that
store and headless Chromium at 1280 x 900, driven over the DevTools protocol
(tests/report/devtools.py). About 2 minutes on 2 busy cores, most of it the two runs.

"Visible" is read from the layout, not from the text: each expected string is found in the page's
text nodes and every line box of it must lie inside the 1280 x 900 viewport, inside every ancestor
that clips (overflow: a name cell cut with an ellipsis, a folded description, a line-clamped card),
be rendered (not hidden, not transparent) and be what the browser hits at its centre (not covered).
The single-page apps render late, so each page is polled until its strings are visible (90 s).

What each page must show (the first reason: the verdict's first reason in words, a BLOCK's first
blocking one; its start: the first words, up to 60 characters):

- the experiment's run list: ``REVIEW ·`` and ``BLOCK ·`` in each run's name cell (the run list cuts
  names at about 20 characters: the verdict leads the name, privacy_gate/names.py);
- each run page: the run's name (verdict first), the description's first line (``REVIEW (status
  ok)``) and the start of the first reason (the description leads with it; MLflow folds the rest);
- each report (the run's ``report/index.html`` artifact as a file): the verdict in its banner and
  the start of the first reason in its verdict card;
- each Prefect flow run page (``/runs/flow-run/<id>``, the link Prefect prints, and the same page in
  the v2 UI, Prefect's default): the state name (``Review pending``, ``Blocked``) and the start of
  the state message (``BLOCK: The attack …``). Prefect shows the message only on the page's Details
  tab, so the flow run is named after it (flows/verdict_states.py ``glance_name``); the page's title
  shows it.

Screenshots of every view go to tests/output/browser/glance/ (gitignored). Every process is
started through tests/reaper.py and stopped (tests/stack.py ``stop_group``); loopback only.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from privacy_gate import names, tracking

from ..conftest import write_release_config
from ..flows.test_once_per_release import (
    ALWAYS_REVIEW,  # a rule every release violates at review level
)
from ..stack import running, start_mlflow, start_prefect, wait_http
from .devtools import MISSING, DevTools, chromium_available

pytestmark = [pytest.mark.skipif(not chromium_available(), reason=MISSING)]

OUT = Path(__file__).resolve().parents[1] / "output" / "browser" / "glance"
WIDTH, HEIGHT = 1280, 900
#: the start of a reason the tests look for: enough words to say what failed
REASON_START = 60
STATE_NAMES = {"REVIEW": "Review pending", "BLOCK": "Blocked"}

#: Where each needle is in the page and whether a person sees it: (needles) -> one result per
#: needle, {visible, box, owner (the text of the element holding it), why (for the matches not
#: visible)}.
GLANCE_JS = r"""(needles) => {
  const W = window.innerWidth, H = window.innerHeight, texts = [];
  let all = '';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) { texts.push([n, all.length]); all += n.data; }
  const escape = s => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const inside = (r, b) => r.left >= b.left - 1 && r.right <= b.right + 1 && r.top >= b.top - 1 && r.bottom <= b.bottom + 1;
  const name = e => e ? (e.tagName + (typeof e.className === 'string' && e.className ? '.' + e.className.split(' ')[0] : '')) : 'nothing';
  const clippers = el => {  // every ancestor (and the element) that cuts what overflows it
    const out = [];
    for (let e = el; e && e !== document.documentElement; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.overflowX !== 'visible' || s.overflowY !== 'visible') out.push(e);
    }
    return out;
  };
  // how opaque an element without text of its own is over the middle of box r (0: see-through, 1: opaque);
  // a fade (MLflow folds a description under a transparent-to-white gradient) counts only where it is
  // more than half opaque
  const alpha = color => { const m = color.match(/rgba?\(([^)]+)\)/); if (!m) return 1; const p = m[1].split(','); return p.length > 3 ? Number(p[3]) : 1; };
  const cover = (e, r) => {
    if (e.textContent.trim()) return 1;
    const s = getComputedStyle(e), image = s.backgroundImage, stops = image.match(/rgba?\([^)]+\)/g) || [];
    if (image === 'none') return alpha(s.backgroundColor) * Number(s.opacity);
    if (image.startsWith('linear-gradient(rgb') && stops.length === 2) {  // top to bottom, two stops
      const b = e.getBoundingClientRect(), t = Math.min(1, Math.max(0, ((r.top + r.bottom) / 2 - b.top) / b.height));
      return (alpha(stops[0]) + (alpha(stops[1]) - alpha(stops[0])) * t) * Number(s.opacity);
    }
    return 1;
  };
  // why one text node's part [from, to) of a match is not seen, or '' when it is
  const unseen = (node, from, to, boxes) => {
    const el = node.parentElement;
    if (!el.checkVisibility({opacityProperty: true, visibilityProperty: true})) return 'hidden: ' + name(el);
    const range = document.createRange();
    range.setStart(node, from); range.setEnd(node, to);
    const rects = Array.from(range.getClientRects()).filter(r => r.width > 0 && r.height > 0);
    if (!rects.length) return 'not rendered: ' + name(el);
    for (const r of rects) {
      boxes.push({left: r.left, top: r.top, right: r.right, bottom: r.bottom});
      if (!inside(r, {left: 0, top: 0, right: W, bottom: H}))
        return `outside the first ${W} x ${H} px (box ${Math.round(r.left)},${Math.round(r.top)} - ${Math.round(r.right)},${Math.round(r.bottom)})`;
      for (const c of clippers(el)) if (!inside(r, c.getBoundingClientRect())) return 'cut by ' + name(c);
      const hit = document.elementFromPoint((r.left + r.right) / 2, (r.top + r.bottom) / 2);
      if (!(hit && (el === hit || el.contains(hit) || hit.contains(el))) && (!hit || cover(hit, r) > 0.5))
        return 'covered by ' + name(hit);
    }
    return '';
  };
  return needles.map(needle => {
    const pattern = new RegExp(needle.trim().split(/\s+/).map(escape).join('\\s*'), 'g');
    const why = [];
    for (const m of all.matchAll(pattern)) {
      const start = m.index, end = m.index + m[0].length, boxes = [];
      let reason = '', owner = null;
      for (const [node, offset] of texts) {
        const from = Math.max(start, offset) - offset, to = Math.min(end, offset + node.data.length) - offset;
        if (to <= from || !node.data.slice(from, to).trim()) continue;
        owner = owner || node.parentElement;
        reason = unseen(node, from, to, boxes);
        if (reason) break;
      }
      if (!reason) {
        const box = {top: Math.min(...boxes.map(b => b.top)), bottom: Math.max(...boxes.map(b => b.bottom)),
                     left: Math.min(...boxes.map(b => b.left)), right: Math.max(...boxes.map(b => b.right))};
        return {needle, visible: true, box, owner: owner.textContent.trim().slice(0, 300), why};
      }
      why.push(reason);
    }
    return {needle, visible: false, box: null, owner: null, why: why.length ? why.slice(0, 5) : ['not in the page']};
  });
}"""


def reason_start(sentence: str, limit: int = REASON_START) -> str:
    """The first words of ``sentence``, at most ``limit`` characters.

    >>> reason_start("The attack domias tells training records from holdout records with AUC 0.856")
    'The attack domias tells training records from holdout records'
    """
    return sentence if len(sentence) <= limit else sentence[: limit + 1].rsplit(" ", 1)[0]


# ------------------------------------------------------------------------------ servers and runs


@pytest.fixture(scope="module")
def prefect_ui(tmp_path_factory):
    """``prefect server start`` with its UI, on its own home and SQLite database, loopback only,
    analytics off; the UI's static files are copied into the home, never into the installed
    package."""
    home = tmp_path_factory.mktemp("glance-prefect")
    server = start_prefect(
        home,
        database_url=f"sqlite+aiosqlite:///{home / 'prefect.db'}",
        home=home,
        env={"PREFECT_UI_ENABLED": "true", "PREFECT_UI_STATIC_DIRECTORY": str(home / "ui")},
    )
    with running(server):
        wait_http(server, f"{server.url}/health", timeout=120)
        yield server.url


#: The two release runs, made in a child process whose only Prefect API is ``prefect_ui``: in the
#: suite's process Prefect keeps clients to the session's test server (tests/conftest.py), so a
#: flow run there could take its dataset slot on one server and renew the lease on the other — the
#: renewal fails, the run is cancelled, and the other server's slot stays taken (its test server
#: frees no expired lease), stalling every later gate of the dataset.
_RUNS_SCRIPT = """
import json, logging, sys
logging.getLogger("prefect").setLevel(logging.INFO)
from mlflow.tracking import MlflowClient
from privacy_gate import names, tracking
from privacy_gate.flows import release_flow
from privacy_gate.flows.verdict_states import outcome_of
from privacy_gate.words.checks import reasons_in_words
configs, workdir, out = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
client = MlflowClient(tracking.default_tracking_uri(workdir))
runs = {}
for decision, config in configs.items():
    state = release_flow(config_path=config, workdir=workdir, return_state=True)
    outcome = outcome_of(state)
    info = client.get_run(outcome.run_id).info
    runs[decision] = {"decision": outcome.verdict.decision, "state": state.name,
                      "first_action": outcome.verdict.reasons[0].action if outcome.verdict.reasons else None,
                      "run_id": outcome.run_id, "flow_run": str(state.state_details.flow_run_id),
                      "reason": reasons_in_words(outcome.verdict)[0].sentence, "message": state.message,
                      "run_name": info.run_name, "experiment_id": info.experiment_id,
                      "artifact_uri": info.artifact_uri, "report": f"{info.artifact_uri}/{names.ART_REPORT}"}
open(out, "w").write(json.dumps(runs))
"""


def run_script(script: str, args: list[str], *, out: Path, env: dict[str, str]) -> Any:
    """Run ``python -c script *args out`` (started through tests/reaper.py, at most 15 minutes)
    and return the JSON it wrote to ``out``."""
    import sys

    from ..reaper import popen

    with popen(
        [sys.executable, "-c", script, *args, str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:
        try:
            log, _ = proc.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            proc.kill()
            log, _ = proc.communicate()
    assert proc.returncode == 0 and out.exists(), log[-4000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def glance_runs(prefect_ui, small_adult, tmp_path_factory):
    """A REVIEW and a BLOCK through the release flow on ``prefect_ui``, in one workdir:
    ``{decision: {run_id, flow_run, reason, message, experiment_id, report}}`` and the workdir.

    The runs log at INFO, as a production run does: the session's WARNING level would send Prefect
    the verdict line alone, which would then sit on the flow run page's first screen; a real run's
    page lists its progress lines first, oldest first, and the verdict line last."""
    import os

    configs = {  # the configs only: both read the small table where the fixture wrote it
        "REVIEW": write_release_config(
            small_adult,
            {"name": "file", "path": str(small_adult / "independent.csv")},
            name="glance-review.yaml",
            fast=True,
            gate=ALWAYS_REVIEW,
        ),
        "BLOCK": write_release_config(
            small_adult, {"name": "copy_train"}, name="glance-block.yaml", fast=True
        ),
    }
    workdir = tmp_path_factory.mktemp("glance-wd")
    env = {
        **os.environ,
        "PREFECT_API_URL": prefect_ui,
        "PREFECT_LOGGING_LEVEL": "INFO",
        "PREFECT_HOME": str(tmp_path_factory.mktemp("glance-client-home")),
    }
    runs = run_script(
        _RUNS_SCRIPT,
        [json.dumps({k: str(v) for k, v in configs.items()}), str(workdir)],
        out=workdir / "runs.json",
        env=env,
    )
    for decision, run in runs.items():
        assert run["decision"] == decision, (decision, run["message"])
        assert run["state"] == STATE_NAMES[decision], run
        if decision == "BLOCK":  # the first reason of a BLOCK is a blocking one
            assert run["first_action"] == "block", run
        assert run["artifact_uri"].startswith("file://"), run["artifact_uri"]
    assert (
        runs["REVIEW"]["experiment_id"] == runs["BLOCK"]["experiment_id"]
    )  # one run list shows both
    return runs, workdir


@contextlib.contextmanager
def mlflow_serving(workdir: Path) -> Iterator[str]:
    """``mlflow server`` on a workdir's SQLite store (its artifacts read where the runs wrote
    them), loopback only; its URL."""
    logdir = workdir / "mlflow-server"
    logdir.mkdir()
    server = start_mlflow(
        logdir,
        backend=tracking.default_tracking_uri(workdir),
        artifacts=(workdir / names.ARTIFACT_DIR).resolve().as_uri(),
        env={"MLFLOW_DISABLE_TELEMETRY": "true"},
    )
    with running(server):
        wait_http(server, f"{server.url}/health", timeout=120)
        yield server.url


@pytest.fixture(scope="module")
def mlflow_ui(glance_runs):
    """``mlflow server`` on the runs' store."""
    with mlflow_serving(glance_runs[1]) as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the module, its page at 1280 x 900 (device pixels 1:1)."""
    OUT.mkdir(parents=True, exist_ok=True)
    chromium = DevTools(tmp_path_factory.mktemp("glance-chromium"))
    try:
        page = chromium.open_page()
        chromium.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            session=page,
        )
        yield chromium, page
    finally:
        chromium.close()


def glance(
    browser, url: str, needles: list[str], shot: str, *, seconds: float = 90
) -> dict[str, dict]:
    """Open ``url`` afresh (never scrolled, nothing clicked), wait until every needle is visible
    (or ``seconds`` pass), screenshot the first screen to ``shot`` and return where each needle
    is."""
    chromium, page = browser
    chromium.send(
        "Page.navigate", {"url": "about:blank"}, session=page
    )  # a fresh document, even for a #route
    chromium.pump(0.3)
    chromium.send("Page.navigate", {"url": url}, session=page)
    expression = f"JSON.stringify(({GLANCE_JS})({json.dumps(needles)}))"
    found: list[dict] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        chromium.pump(0.5)
        try:
            answer = chromium.send(
                "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=page
            )
        except (RuntimeError, TimeoutError):  # the document is being replaced
            continue
        value = answer["result"].get("value")
        if "exceptionDetails" in answer and "document.body" not in json.dumps(
            answer["exceptionDetails"]
        ):
            raise AssertionError(f"the layout probe failed on {url}: {answer['exceptionDetails']}")
        found = json.loads(value) if value else []
        if found and all(f["visible"] for f in found):
            chromium.pump(1.0)  # let the last images and fonts settle for the screenshot
            break
    chromium.screenshot(page, OUT / shot)
    layout = chromium.send(
        "Runtime.evaluate",
        {
            "expression": "JSON.stringify([innerWidth, innerHeight, scrollX, scrollY])",
            "returnByValue": True,
        },
        session=page,
    )["result"]["value"]
    assert json.loads(layout) == [WIDTH, HEIGHT, 0, 0], layout  # the first screen, as opened
    return {f["needle"]: f for f in found}


def assert_visible(found: dict[str, dict], needles: list[str], shot: str) -> None:
    for needle in needles:
        where = found.get(needle) or {"why": ["the page never answered"]}
        assert where.get("visible"), (
            f"{needle!r} is not visible at a glance ({OUT / shot}): {where['why']}"
        )
        assert 0 <= where["box"]["top"] and where["box"]["bottom"] <= HEIGHT, where


# ------------------------------------------------------------------------------ tests


@pytest.mark.timeout(600)
def test_the_run_list_shows_each_verdict_in_its_name_cell(glance_runs, mlflow_ui, browser):
    runs, _ = glance_runs
    url = tracking.experiment_url(mlflow_ui, runs["REVIEW"]["experiment_id"])
    needles = [f"{d}{names.RUN_NAME_VERDICT_SEPARATOR}" for d in runs]
    found = glance(browser, url, needles, "run_list.png")
    assert_visible(found, needles, "run_list.png")
    for decision, needle in zip(runs, needles):  # in the run's name cell, not elsewhere on the page
        assert found[needle]["owner"] == runs[decision]["run_name"], found[needle]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("decision", ["REVIEW", "BLOCK"])
def test_the_run_page_shows_the_verdict_and_the_first_reason(
    glance_runs, mlflow_ui, browser, decision
):
    run = glance_runs[0][decision]
    shot = f"run_page_{decision.lower()}.png"
    # the title (the run's name, verdict first), the description's first line and its first reason
    needles = [run["run_name"], f"{decision} (status ok)", reason_start(run["reason"])]
    found = glance(
        browser, tracking.run_url(mlflow_ui, run["experiment_id"], run["run_id"]), needles, shot
    )
    assert_visible(found, needles, shot)
    assert run["run_name"].startswith(f"{decision}{names.RUN_NAME_VERDICT_SEPARATOR}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("decision", ["REVIEW", "BLOCK"])
def test_the_report_shows_the_verdict_and_the_first_reason(glance_runs, browser, decision):
    run = glance_runs[0][decision]
    shot = f"report_{decision.lower()}.png"
    needles = [f"{decision} · adult", reason_start(run["reason"])]  # the banner, the verdict card
    found = glance(browser, run["report"], needles, shot, seconds=30)
    assert_visible(found, needles, shot)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("ui", ["", "/v2"], ids=["prefect-link", "prefect-v2"])
@pytest.mark.parametrize("decision", ["REVIEW", "BLOCK"])
def test_the_prefect_flow_run_shows_the_state_and_the_start_of_its_message(
    glance_runs, prefect_ui, browser, decision, ui
):
    run = glance_runs[0][decision]
    shot = f"prefect{ui.replace('/', '_')}_{decision.lower()}.png"
    message_start = f"{decision}: {reason_start(run['reason'])}"
    assert run["message"].startswith(message_start), run["message"]
    needles = [STATE_NAMES[decision], message_start]
    url = f"{prefect_ui.removesuffix('/api')}{ui}/runs/flow-run/{run['flow_run']}"
    found = glance(browser, url, needles, shot)
    assert_visible(found, needles, shot)
