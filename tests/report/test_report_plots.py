"""The report's plots: flagged groups red in every per-group plot, a ROC inside each flagged group,
the global ROC on a log false-positive axis (fast: hand-built inputs)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from matplotlib.colors import to_hex

from privacy_gate import names
from privacy_gate.report import html as report_html
from privacy_gate.report.plots import (
    FLAGGED_COLOR,
    group_roc_figure,
    roc_figure,
    subgroup_bars_figure,
)
from privacy_gate.runs.mlflow_sink import flagged_group_rocs

from .test_report import GROUP, _inputs, _verdict


def _bar_colors(fig) -> list[str]:
    return [to_hex(p.get_facecolor(), keep_alpha=False) for p in fig.axes[0].patches]


def test_every_bar_of_a_flagged_group_is_red_whichever_attack_failed():
    bars = [
        (GROUP, "dcr", 0.9, 0.8, 1.0, True),
        (GROUP, "domias", 0.5, 0.4, 0.6, False),
        ("race=White", "dcr", 0.5, 0.45, 0.55, False),
        ("race=White", "domias", 0.5, 0.45, 0.55, False),
    ]
    colors = _bar_colors(subgroup_bars_figure(bars, metric="AUC"))
    assert colors[:2] == [FLAGGED_COLOR, FLAGGED_COLOR] or colors.count(FLAGGED_COLOR) == 2
    assert colors.count(FLAGGED_COLOR) == 2  # both bars of the flagged group, none of the other


def test_report_marks_a_group_flagged_by_the_rank_test_red(monkeypatch):
    """The rank test's check names no attack: the group's bars were drawn in attack colours."""
    seen = []
    real = report_html.subgroup_bars_figure
    monkeypatch.setattr(
        report_html,
        "subgroup_bars_figure",
        lambda bars, **kw: seen.append(bars) or real(bars, **kw),
    )
    v = _verdict()
    v["checks"] = [
        {
            "rule": "subgroup membership_test.p_adjusted >= 0.01",
            "group": GROUP,
            "attack": None,
            "metric": "membership_test.p_adjusted",
            "observed": 0.0008,
            "threshold": 0.01,
            "bound": "min",
            "action": "review",
            "passed": False,
            "message": "m",
        }
    ]
    report_html.render_report(_inputs(verdict=v))
    flags = {(g, a): f for g, a, *_, f in seen[0]}
    assert flags[(GROUP, "dcr")] and flags[(GROUP, "domias")] and not flags[("race=White", "dcr")]


def test_global_roc_has_a_log_false_positive_axis():
    fpr = np.linspace(0, 1, 101)
    fig = roc_figure([("dcr", fpr, np.sqrt(fpr), 0.66)])
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_yscale() == "linear"
    assert fig.axes[0].get_xlim()[0] <= 0.01  # the 1% false-alarm region is on the plot


def _rocs(n_groups: int) -> dict:
    curve = {
        "attack": "dcr",
        "auc": 0.71,
        "fpr": [0.0, 0.01, 0.1, 1.0],
        "tpr": [0.0, 0.3, 0.5, 1.0],
    }
    groups = [
        {"group": f"race=G{i}", "n_members": 64, "n_non_members": 60, "curves": [curve]}
        for i in range(min(n_groups, names.MAX_GROUP_ROCS))
    ]
    return {
        "groups": groups,
        "flagged": n_groups,
        "omitted": max(n_groups - names.MAX_GROUP_ROCS, 0),
    }


def test_group_roc_figure_draws_one_log_fpr_panel_per_flagged_group_titled_in_red():
    fig = group_roc_figure(
        [(GROUP, [("dcr", np.array([0, 0.01, 1.0]), np.array([0, 0.4, 1.0]), 0.7)], 64, 60)]
    )
    ax = [a for a in fig.axes if a.get_visible()]
    assert len(ax) == 1 and ax[0].get_xscale() == "log"
    assert GROUP in ax[0].get_title() and "64 members" in ax[0].get_title()
    assert to_hex(ax[0].title.get_color()) == FLAGGED_COLOR


def test_report_shows_flagged_group_rocs_and_says_when_it_caps_them():
    page = report_html.render_report(_inputs(group_rocs=_rocs(2)))
    section = page.split('id="flagged"')[1].split("</section>")[0]
    assert "ROC inside each flagged group" in section and "more flagged group" not in section
    # right under the reasons, where the evidence is read: above the run, the budget and every table
    assert (
        page.index('id="reasons"')
        < page.index('id="flagged"')
        < page.index('id="run"')
        < page.index('id="subgroups"')
    )
    capped = report_html.render_report(_inputs(group_rocs=_rocs(names.MAX_GROUP_ROCS + 3)))
    assert "3 more flagged group(s) are not drawn" in capped
    assert "ROC inside each flagged group" not in report_html.render_report(
        _inputs(group_rocs=None)
    )


def test_flagged_group_rocs_are_members_vs_non_members_of_the_group_capped():
    rng = np.random.default_rng(0)
    labels = np.r_[np.ones(200, bool), np.zeros(200, bool)]
    in_group = rng.random(400) < 0.3
    leaky = rng.normal(size=400) + 3.0 * (labels & in_group)  # members of the group stand out
    flagged = tuple(f"g{i}" for i in range(names.MAX_GROUP_ROCS + 2))
    result = SimpleNamespace(
        verdict=SimpleNamespace(flagged_subgroups=flagged),
        targets=SimpleNamespace(labels=labels.astype(int)),
        outcomes=[SimpleNamespace(name="dcr", scores=leaky)],
        audit=SimpleNamespace(masks={g: in_group for g in flagged}),
    )
    record = flagged_group_rocs(result)
    assert (
        record["flagged"] == len(flagged)
        and record["omitted"] == 2
        and len(record["groups"]) == names.MAX_GROUP_ROCS
    )
    g = record["groups"][0]
    assert g["n_members"] == int((labels & in_group).sum()) and g["n_non_members"] == int(
        (~labels & in_group).sum()
    )
    assert (
        g["curves"][0]["auc"] > 0.9
        and g["curves"][0]["fpr"][0] == 0.0
        and g["curves"][0]["tpr"][-1] == 1.0
    )
