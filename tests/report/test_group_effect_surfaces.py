"""A flagged group's effect size on every surface built from the verdict (fast: a hand-built
REVIEW on one small group, the case a reviewer could not read before): the report's verdict and
groups cards, its subgroup table and bar chart, the MLflow description's first line and tag, the
``review`` text, the console, the Prefect state message, name and table artifacts; and the plots
of a group separated perfectly (AUC 1) or reversed (AUC 0), whose curves ran along the frame."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgb

from privacy_gate import names
from privacy_gate.flows.verdict_states import glance_name, verdict_line
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.report import html as report_html
from privacy_gate.report.plots import FLAGGED_COLOR, group_roc_figure, roc_figure
from privacy_gate.report.summary import (
    description_markdown,
    group_rows,
    rules_rows,
    verdict_console,
)
from privacy_gate.tracking.review_records import pending_text
from privacy_gate.words.evidence import flagged_evidence

from .golden_reports import golden_verdict, report_inputs

GROUP = "race=Asian-Pac-Islander"
EFFECT = {
    "members": 18,
    "non_members": 18,
    "attack": "dcr",
    "auc": 1.0,
    "auc_lower": 0.8241,
    "auc_upper": 1.0,
    "auc_interval": "wilson",
    "tpr": 1.0,
    "tpr_lower": 0.8241,
    "tpr_upper": 1.0,
    "caught": 18,
    "false_alarms_allowed": 0,
    "p_adjusted": 1.2e-9,
    "groups_audited": 11,
    "training_records": 44,
    "exposed_targets": 0,
    "exposed_targets_all": 0,
    "scan_named": 44,
    "scan_named_all": 46,
    "top_members": 29,
    "top_members_all": 30,
    "named": 44,
    "named_all": 46,
}
HEADLINE = f"{GROUP}: AUC 1 [0.82, 1], 44 of 46 named records"


def _review():
    """A REVIEW on one small group the evidence points at, with its effect and what-if recorded."""
    v = golden_verdict("independent", flagged={GROUP: 1.2e-9}, exposed__scan_tail_pvalue=0.00025)
    own = [c for c in v.reasons if c.group == GROUP]
    return dataclasses.replace(
        v,
        reasons=(*own, *[c for c in v.reasons if c.group != GROUP]),
        points_at=GROUP,
        group_effects={GROUP: EFFECT},
        decision_without={
            GROUP: {"decision": "APPROVE", "targets": 36, "rows": 111, "remeasured": ["scan"]}
        },
    )


def _rows_without_estimates() -> list[dict]:
    """The audit's rows of a group below audit.min_group_size: no point estimates."""
    return [
        {
            "group": GROUP,
            "attack": a,
            "n_members": 18,
            "n_non_members": 18,
            "test_p_adjusted": 1.2e-9,
            "exposed": 0,
            "scan_named": 44,
        }
        for a in ("dcr", "domias")
    ] + [
        {
            "group": "race=White",
            "attack": a,
            "n_members": 500,
            "n_non_members": 500,
            "test_p_adjusted": 1.0,
            "exposed": 0,
            "scan_named": 1,
            "auc": 0.5,
            "tpr_at_fpr_0.01": 0.01,
        }
        for a in ("dcr", "domias")
    ]


ROCS = {
    "groups": [
        {
            "group": GROUP,
            "n_members": 18,
            "n_non_members": 18,
            "curves": [
                {"attack": "dcr", "auc": 1.0, "fpr": [0.0, 0.0, 1.0], "tpr": [0.0, 1.0, 1.0]},
                {"attack": "domias", "auc": 0.91, "fpr": [0.0, 0.1, 1.0], "tpr": [0.0, 0.7, 1.0]},
            ],
        }
    ],
    "flagged": 1,
    "omitted": 0,
}


def test_the_report_shows_the_group_its_effect_and_its_share_in_the_cards():
    page = report_html.render_report(
        report_inputs(_review(), subgroups=_rows_without_estimates(), group_rocs=ROCS)
    )
    cards = page.split('id="summary"')[1].split("<nav>")[0]
    verdict_card = cards.split('<div class="card ')[1]
    assert f'<p class="lead">{HEADLINE}</p>' in verdict_card  # before the first reason
    assert verdict_card.index(HEADLINE) < verdict_card.index("In the group")
    groups_card = cards.split("Flagged subgroups")[1]
    assert GROUP in groups_card and "AUC 1 [0.82, 1] (dcr)" in groups_card
    assert "44 of 46 named records (96%)" in groups_card and "Without it: APPROVE." in groups_card


def test_a_small_flagged_group_has_its_auc_in_the_table_and_the_bar_chart(monkeypatch):
    """Below audit.min_group_size the audit has no AUC for the group; its curves inside the group
    (audit/flagged_roc.json) give it: no '— (small group)', and its bars are drawn (red)."""
    seen = []
    real = report_html.subgroup_bars_figure
    monkeypatch.setattr(
        report_html,
        "subgroup_bars_figure",
        lambda bars, **kw: seen.append(bars) or real(bars, **kw),
    )
    page = report_html.render_report(
        report_inputs(_review(), subgroups=_rows_without_estimates(), group_rocs=ROCS)
    )
    table = page.split('<table class="subgroups">')[1].split("</table>")[0]
    flagged_rows = [r for r in table.split("<tr") if GROUP in r]
    assert len(flagged_rows) == 2 and not any("small group" in r for r in flagged_rows)
    assert "1 [0.824, 1]" in flagged_rows[0] and "0.91 [" in flagged_rows[1]
    assert all(
        "<td>44</td>" in r for r in flagged_rows
    )  # named by the scan, beside the exposed targets (0)
    bars = {(g, a): (auc, flag) for g, a, auc, _, _, flag in seen[0]}
    assert bars[(GROUP, "dcr")] == (1.0, True) and bars[(GROUP, "domias")] == (0.91, True)


def test_the_mlflow_description_names_the_group_and_its_effect_on_its_first_line():
    v = _review()
    text = description_markdown(
        v, evidence=flagged_evidence([], v.to_dict()), summary="", tracking_uri=None
    )
    first = text.splitlines()[0]
    assert first.startswith("**REVIEW** (status ok) · ") and f"{HEADLINE} · " in first
    assert "44 of 46 named records" in first
    assert f"{GROUP}: 18 members among the targets" in text  # the whole sentence below


def test_the_flagged_effect_tag(tmp_path):
    from privacy_gate import tracking

    tracker = tracking.Tracker.for_workdir(workdir=tmp_path, dataset="adult")
    run_id = tracker.start_run(name="t", kind="release", tags={names.TAG_DATASET: "adult"})
    tracker.log_verdict(run_id, _review().with_run_id(run_id).to_dict())
    assert tracker.run_tags(run_id)[names.TAG_FLAGGED_EFFECT] == HEADLINE


def test_review_text_and_console_lead_with_the_groups_evidence():
    v = _review()
    d = v.to_dict()
    text = pending_text(
        v.run_id, d, [], evidence=flagged_evidence([], d), commands=["privacy-gate approve x"]
    )
    lines = text.splitlines()
    assert lines[1] == "evidence:" and lines[2].startswith(
        f"  - {GROUP}: 18 members among the targets; an attacker "
        "(dcr) tells members from non-members with AUC 1 [0.82, 1]"
    )
    assert "44 of the 46 records named exposed are its (96%)" in lines[2]
    assert (
        f"Suppress {GROUP}: without its 36 targets, and the member scan measured again without "
        "its 111 synthetic rows, the release-wide figures give APPROVE."
    ) in text
    console = verdict_console(v).splitlines()
    assert console[1] == f"  the evidence points at {HEADLINE}"


def test_the_prefect_message_and_name_start_with_the_group_and_its_effect():
    v = _review()
    line = verdict_line(
        RunOutcome(v, run_id=v.run_id, tracking_uri="sqlite:////w/mlflow.db", dataset="adult")
    )
    assert line.startswith(f"REVIEW: {HEADLINE} — In the group {GROUP}")
    assert glance_name(line, "calm-otter") == f"REVIEW: {HEADLINE} · calm-otter"


def test_the_prefect_tables_hold_every_rule_and_the_groups_effect():
    v = _review()
    rules = rules_rows(v)
    assert len(rules) == len(v.checks) and rules[0]["result"].startswith("FAIL")
    assert {"result", "check", "in words", "observed", "bar", "action"} == set(rules[0])
    (row,) = group_rows(v)
    assert (
        row["group"] == GROUP
        and row["AUC [95%]"] == "1 [0.82, 1]"
        and row["named exposed"] == "44 of 46"
    )
    assert (
        row["members caught [95%]"] == "100% [82%, 100%]"
        and row["suppressing it"] == "Without it: APPROVE."
    )


def _interior_pixels(fig, ax, color: str) -> int:
    """Pixels of ``color`` strictly inside ``ax``'s frame (2 px in from every edge)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    image = np.asarray(canvas.buffer_rgba())[..., :3].astype(int)
    box = ax.get_window_extent()
    height = image.shape[0]
    x0, x1 = int(box.x0) + 3, int(box.x1) - 3
    y0, y1 = height - int(box.y1) + 3, height - int(box.y0) - 3  # display y counts from the bottom
    target = np.array([round(255 * c) for c in to_rgb(color)])
    return int((np.abs(image[y0:y1, x0:x1] - target).sum(axis=-1) < 60).sum())


@pytest.mark.parametrize("auc", [1.0, 0.0])
def test_a_curve_at_auc_0_or_1_is_drawn_inside_the_frame(auc):
    """A perfect separation runs up the left edge and along the top of the unit square (AUC 0:
    along the bottom and up the right): the axes reach beyond it, so the curve is not under the
    frame, and the legend sits below the axes."""
    fpr, tpr = (
        (np.array([0, 0, 1.0]), np.array([0, 1.0, 1.0]))
        if auc == 1
        else (np.array([0, 1.0, 1.0]), np.array([0, 0, 1.0]))
    )
    fig = group_roc_figure([(GROUP, [("dcr", fpr, tpr, auc)], 18, 18)])
    ax = fig.axes[0]
    assert (
        _interior_pixels(fig, ax, FLAGGED_COLOR) > 300
    )  # the length of the curve, not a legend swatch
    assert not ax.get_legend().get_window_extent().overlaps(ax.get_window_extent())
    fig = roc_figure([("dcr", fpr, tpr, auc)])
    for ax in fig.axes:
        line = ax.get_lines()[0]
        assert _interior_pixels(fig, ax, line.get_color()) > 300
