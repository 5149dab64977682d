"""The self-contained HTML report (fast: hand-built inputs, no Prefect, no MLflow server)."""

from __future__ import annotations

import base64
import html
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from privacy_gate import names, tracking
from privacy_gate.gate.verdict import Check, Verdict
from privacy_gate.report.commands import REVIEWER
from privacy_gate.report.html import (
    ReportInputs,
    hanley_mcneil_interval,
    load_report_inputs,
    render_report,
)
from privacy_gate.report.summary import verdict_markdown

GROUP = "race=Asian-Pac-Islander"
PLANTED_ROW_ID = 987654321
RUN_ID = "0123abcd" * 4


def _verdict() -> dict:
    checks = (
        Check(
            rule="any.auc <= 0.6",
            metric="dcr.auc",
            observed=0.53,
            threshold=0.6,
            bound="max",
            action="block",
            passed=True,
            message="dcr.auc = 0.53 within max 0.6 (<=)",
        ),
        Check(
            rule="utility.quality >= 0.6",
            metric="utility.quality",
            observed=0.81,
            threshold=0.6,
            bound="min",
            action="block",
            passed=True,
            message="utility.quality = 0.81 within min 0.6 (>=)",
        ),
        Check(
            rule="subgroup any.auc <= 0.7",
            metric=f"{GROUP}: dcr.auc",
            observed=0.97,
            threshold=0.7,
            bound="max",
            action="review",
            passed=False,
            message=f"{GROUP}: dcr.auc = 0.97 violates max 0.7 (<=)",
        ),
        Check(
            rule="subgroup any.auc <= 0.7",
            metric="race=White: dcr.auc",
            observed=0.51,
            threshold=0.7,
            bound="max",
            action="review",
            passed=True,
            message="race=White: dcr.auc = 0.51 within max 0.7 (<=)",
        ),
    )
    metrics = {
        "dcr.auc": 0.53,
        "dcr.tpr_at_fpr_0.01": 0.031,
        "dcr.tpr_at_fpr_0.001": 0.012,
        "dcr.advantage": 0.06,
        "domias.auc": 0.51,
        "domias.tpr_at_fpr_0.01": 0.011,
        "domias.tpr_at_fpr_0.001": 0.0,
        "domias.advantage": 0.03,
        "utility.quality": 0.81,
        "dcr.entity.auc": 0.55,
        "dcr.entity.advantage": 0.08,
        "dcr.dependency.auc": 0.61,
        "domias.dependency.auc": 0.52,
        "subgroup/race/Asian-Pac-Islander/dcr.auc": 0.97,
    }
    v = Verdict(
        decision="REVIEW",
        status="ok",
        reasons=tuple(c for c in checks if not c.passed),
        checks=checks,
        metrics=metrics,
        flagged_subgroups=(GROUP,),
        data_hashes={"synthetic_file_sha256": "f" * 64, "train_sha256": "e" * 64},
        rules_hash="d" * 64,
        run_id=RUN_ID,
    )
    return v.to_dict()


def _scores() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 200
    member = np.r_[np.ones(n // 2, int), np.zeros(n // 2, int)]
    row_id = np.arange(PLANTED_ROW_ID, PLANTED_ROW_ID + n)
    return pd.DataFrame(
        {
            "row_id": row_id,
            "member": member,
            "domias_score": rng.normal(size=n) + 0.1 * member,
            "dcr_score": rng.normal(size=n) + 0.3 * member,
        }
    )


def _subgroup_rows() -> list[dict]:
    rows = []
    for group, auc, n in ((GROUP, 0.97, 18), ("race=White", 0.51, 500), ("sex=other", 0.5, 40)):
        for attack in ("dcr", "domias"):
            rows.append(
                {
                    "group": group,
                    "attack": attack,
                    "n_members": n,
                    "n_non_members": n,
                    "auc": auc if attack == "dcr" else 0.5,
                    "tpr_at_fpr_0.01": 0.02,
                    "tpr_at_fpr_0.001": 0.0,
                    "advantage": 0.04,
                }
            )
    return rows


def _inputs(**over) -> ReportInputs:
    kw = dict(
        verdict=_verdict(),
        scores=_scores(),
        subgroups=_subgroup_rows(),
        utility={
            "quality": 0.81,
            "tvd_1way": 0.12,
            "tvd_2way": 0.26,
            "worst_1way_column": "capital_gain",
            "worst_1way_tvd": 0.31,
            "worst_2way_pair": ["age", "capital_gain"],
            "worst_2way_tvd": 0.44,
        },
        decisions=[
            {
                "action": "approve",
                "reviewer": "ana <script>",
                "at": "2026-01-02T03:04:05+00:00",
                "data_sha256": "ab" * 32,
                "comment": "rare group suppressed & checked",
                "subgroups": {GROUP: "reject"},
                "suppress": [GROUP],
                "via": "cli",
                "rerun_id": "r" * 32,
                "published": "/pub/adult-abc.parquet",
            }
        ],
        timings={"fit": 1.25, "attacks": 3.5},
        run_id=RUN_ID,
        dataset="adult",
        tracking_uri="sqlite:////tmp/wd/mlflow.db",
        experiment_id="1",
    )
    kw.update(over)
    return ReportInputs(**kw)


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self.rows = 0

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "img", "br", "link", "input", "hr"):
            self.stack.append(tag)
        self.rows += tag == "tr"
        self.links += [v for k, v in attrs if k in ("src", "href") and v]

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, (
            f"unbalanced </{tag}> (open: {self.stack[-3:]})"
        )
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _parse(page: str) -> _Collect:
    p = _Collect()
    p.feed(page)
    p.close()
    assert p.stack == [], f"unclosed tags: {p.stack}"
    return p


@pytest.fixture(scope="module")
def page() -> str:
    return render_report(_inputs())


def test_report_is_valid_self_contained_html(page):
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    p = _parse(page)
    assert not re.search(r"<script|<link|@import|url\(", page, re.I)
    images = [u for u in p.links if u.startswith("data:image/png;base64,")]
    assert len(images) >= 3  # ROC, score histograms, subgroup bars
    for u in images:
        assert base64.b64decode(u.split(",", 1)[1].replace("\n", ""))[:8] == b"\x89PNG\r\n\x1a\n"
    external = [u for u in p.links if not u.startswith(("data:", "#"))]
    assert external == []  # a sqlite store: no run link, only the ui command
    assert "http" not in " ".join(p.links)


def test_report_shows_verdict_rules_subgroups_and_history(page):
    text = " ".join(_parse(page).text)
    assert 'class="banner REVIEW"' in page and "REVIEW" in text
    assert GROUP in text and "flagged subgroups" in text
    # every check is a row of the rules table, the failing one highlighted
    rules = page.split('<table class="rules">')[1].split("</table>")[0]
    assert rules.count("<tr") == 1 + 4 and rules.count('<tr class="fail">') == 1
    for metric in ("dcr.auc", "utility.quality", f"{GROUP}: dcr.auc", "race=White: dcr.auc"):
        assert f"<code>{metric}</code>" in rules
    assert ">min<" in rules and ">max<" in rules and ">review<" in rules
    # subgroup table: the flagged group highlighted, with a Hanley-McNeil interval
    sub = page.split('<table class="subgroups">')[1].split("</table>")[0]
    assert sub.count('<tr class="flagged">') == 2 and "0.97 [" in sub
    # entity, dependency, utility sections
    assert 'id="entity"' in page and 'id="dependency"' in page and "capital_gain" in text
    # review history, escaped
    assert "ana &lt;script&gt;" in page and "<script>" not in page
    assert "rare group suppressed &amp; checked" in page and "/pub/adult-abc.parquet" in text
    # decided: no "how to decide" box
    assert 'id="decide"' not in page


def test_no_row_ids_or_record_level_values(page):
    digits = re.sub(r"\s", "", page)
    for rid in range(PLANTED_ROW_ID, PLANTED_ROW_ID + 200, 37):
        assert str(rid) not in digits
    assert "row_id" not in page
    scores = _scores()
    assert f"{scores['dcr_score'].iloc[3]:.4g}" not in page  # no individual score


def test_pending_review_shows_how_to_decide_and_http_store_links_the_run():
    page = render_report(
        _inputs(decisions=[], tracking_uri="http://127.0.0.1:5000", experiment_id="7")
    )
    assert 'id="decide"' in page and "pending" in page
    assert (
        f"privacy-gate approve {RUN_ID} --reviewer {html.escape(REVIEWER)} --suppress {GROUP}"
        in page
    )
    assert f"privacy-gate reject {RUN_ID} --reviewer {html.escape(REVIEWER)}" in page
    links = [u for u in _parse(page).links if "http" in u]
    assert links == [
        f"http://127.0.0.1:5000/#/experiments/7/runs/{RUN_ID}?workflowType=machine_learning",
        "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning",
    ]
    # a sqlite store: the commands name its workdir
    page = render_report(_inputs(decisions=[]))
    reviewer = html.escape(REVIEWER)
    assert f"privacy-gate reject {RUN_ID} --reviewer {reviewer} --workdir /tmp/wd" in page


def test_missing_optional_parts_and_mace_sections():
    v = Verdict.error("load: boom <b>", data_hashes={}).with_run_id(RUN_ID).to_dict()
    page = render_report(ReportInputs(verdict=v, run_id=RUN_ID))
    _parse(page)
    assert 'class="banner BLOCK"' in page and "boom &lt;b&gt;" in page and "not required" in page
    rng = np.random.default_rng(1)
    risk = rng.uniform(size=50)
    mace = pd.DataFrame(
        {
            "row_id": np.arange(PLANTED_ROW_ID, PLANTED_ROW_ID + 50),
            "risk": risk,
            "risk_lower": risk * 0.8,
            "risk_upper": np.minimum(risk * 1.2, 1),
        }
    )
    rows = [
        {**r, "mace.advantage": 0.1, "mace.advantage_lower": 0.02, "mace.advantage_upper": 0.2}
        for r in _subgroup_rows()
    ]
    page = render_report(_inputs(mace=mace, subgroups=rows))
    assert 'id="mace"' in page and "MACE advantage [bounds]" in page and "0.1 [0.02, 0.2]" in page
    assert str(PLANTED_ROW_ID) not in re.sub(r"\s", "", page)


def test_hanley_mcneil_interval_narrows_with_more_targets():
    lo1, hi1 = hanley_mcneil_interval(0.7, 20, 20)
    lo2, hi2 = hanley_mcneil_interval(0.7, 2000, 2000)
    assert lo1 < lo2 < 0.7 < hi2 < hi1 and 0 <= lo1 and hi1 <= 1


def test_verdict_markdown_links_run_or_names_ui_command():
    v = Verdict.from_dict(_verdict())
    md = verdict_markdown(
        v, ui_hint="open http://mlflow:5000", tracking_uri="http://mlflow:5000", experiment_id="3"
    )
    assert (
        f"(http://mlflow:5000/#/experiments/3/runs/{RUN_ID}?workflowType=machine_learning)" in md
        and names.ART_REPORT in md
    )
    md = verdict_markdown(
        v, ui_hint="mlflow ui --backend-store-uri x", tracking_uri="sqlite:///x", experiment_id="3"
    )
    assert "mlflow ui --backend-store-uri x" in md and RUN_ID in md and names.ART_REPORT in md


def test_load_and_log_report_round_trip(tmp_path):
    from privacy_gate.report.html import log_report

    tracker = tracking.Tracker.for_workdir(workdir=tmp_path, dataset="adult")
    run_id = tracker.start_run(name="t", kind="release", tags={names.TAG_DATASET: "adult"})
    verdict = {**_verdict(), "run_id": run_id}
    tracker.log_verdict(run_id, verdict)
    tracker.log_frame(run_id, _scores(), names.ART_SCORES)
    tracker.log_json(run_id, _subgroup_rows(), names.ART_SUBGROUPS)
    inputs = load_report_inputs(tracker, run_id)
    assert inputs.dataset == "adult" and inputs.scores is not None and inputs.mace is None
    assert (
        inputs.utility == {}
        and inputs.decisions == []
        and inputs.experiment_id == tracker.experiment_id
    )
    log_report(tracker, run_id)
    log_report(tracker, run_id)  # re-logging overwrites
    assert tracker.artifact_exists(run_id, names.ART_REPORT)
    html_text = tracker.client.download_artifacts(run_id, names.ART_REPORT, str(tmp_path / "dl"))
    page = open(html_text).read()
    assert "pending" in page and GROUP in page


def test_the_report_links_to_the_artifacts_that_hold_every_figure(tmp_path):
    """The MLflow metrics are the headline; the report links to metrics/all.json and the tables."""
    files = [names.ART_METRICS_ALL, names.ART_METRICS_SUBGROUPS, names.ART_METRICS_ATTACKS]
    page = render_report(
        _inputs(metric_files=files, tracking_uri="http://127.0.0.1:5000", experiment_id="7")
    )
    _parse(page)
    base = f"http://127.0.0.1:5000/#/experiments/7/runs/{RUN_ID}/artifacts"
    links = [u for u in _parse(page).links if "/artifacts/" in u]
    assert links == [
        f"{base}/{p}?workflowType=machine_learning"
        for p in (names.ART_METRICS_ALL, names.ART_METRICS_ATTACKS, names.ART_METRICS_SUBGROUPS)
    ]
    assert '<a href="#figures">All figures</a>' in page
    assert 'id="figures"' not in render_report(
        _inputs()
    )  # no such artifacts (a run recorded before): no section
    # read back from a run: the files of its metrics folder
    tracker = tracking.Tracker.for_workdir(workdir=tmp_path, dataset="adult")
    run_id = tracker.start_run(name="t", kind="release", tags={names.TAG_DATASET: "adult"})
    tracker.log_verdict(run_id, {**_verdict(), "run_id": run_id})
    tracker.log_json(run_id, {"dcr.auc": 0.53}, names.ART_METRICS_ALL)
    inputs = load_report_inputs(tracker, run_id)
    assert list(inputs.metric_files) == [names.ART_METRICS_ALL]
    page = render_report(
        inputs
    )  # a local store: the link opens the run in the UI `ui_command` serves
    assert (
        f'href="{tracking.LOCAL_UI}/#/experiments/{tracker.experiment_id}/runs/{run_id}/artifacts/'
        f'{names.ART_METRICS_ALL}?workflowType=machine_learning"'
    ) in page
