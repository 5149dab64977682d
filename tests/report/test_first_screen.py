"""The report's first 900 px hold the summary cards. The report file is loaded directly
(file://, no MLflow server) in headless Chromium at 1280 x 900 and its layout read over the
DevTools protocol: the cards' bounding box ends within the first screen, for a REVIEW and for a
BLOCK with a dozen flagged groups (long pooled labels among them). A few seconds; skipped
without Chromium. Screenshots go to tests/output/browser/ (gitignored)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from privacy_gate.report.html import render_report

from .devtools import MISSING, DevTools, chromium_available
from .golden_reports import blamed_verdict, block_verdict, report_inputs, review_verdict

pytestmark = pytest.mark.skipif(not chromium_available(), reason=MISSING)

OUT = Path(__file__).resolve().parents[1] / "output" / "browser"
WIDTH, HEIGHT = 1280, 900


def _layout(browser: DevTools, session: str, url: str) -> dict:
    browser.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    browser.send("Page.navigate", {"url": url}, session=session)
    expression = """(() => {
        if (document.readyState !== 'complete' || !document.getElementById('summary')) return null;
        const box = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
        const details = document.querySelector('details.all-checks');
        return JSON.stringify({cards: box(document.getElementById('summary')),
                               count: document.querySelectorAll('#summary .card').length,
                               rules_shown: document.querySelector('table.rules').checkVisibility(),
                               details: details.open ? null : box(details), scroll: window.scrollY,
                               inner: [window.innerWidth, window.innerHeight]});
    })()"""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        value = browser.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session
        )["result"].get("value")
        if value:
            return json.loads(value)
        browser.pump(0.2)
    raise AssertionError(f"the report did not load within 30 s: {url}")


@pytest.mark.timeout(120)
def test_the_first_900_px_hold_the_summary_cards(tmp_path):
    OUT.mkdir(parents=True, exist_ok=True)
    browser = DevTools(tmp_path / "profile")
    try:
        session = browser.open_page()
        for name, verdict in (
            ("review", review_verdict()),
            ("blamed", blamed_verdict()),
            ("block", block_verdict()),
        ):
            page = tmp_path / f"{name}.html"
            page.write_text(render_report(report_inputs(verdict)))
            layout = _layout(browser, session, page.as_uri())
            assert layout["inner"] == [WIDTH, HEIGHT], layout
            assert layout["count"] == 7 and layout["scroll"] == 0, layout
            assert 0 < layout["cards"]["top"] < layout["cards"]["bottom"] <= HEIGHT, (name, layout)
            # the full rules table is collapsed: hidden, one summary line until opened
            assert layout["rules_shown"] is False and layout["details"] is not None, (name, layout)
            assert layout["details"]["bottom"] - layout["details"]["top"] < 40, (name, layout)
            browser.screenshot(session, OUT / f"first_screen_{name}.png")
    finally:
        browser.close()
