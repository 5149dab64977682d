"""Matplotlib figures for MLflow artifacts (Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


def _log_fpr_floor(curves) -> float:
    """The smallest false-positive rate the curves can show (one non-member), at most 1e-3."""
    positive = [float(np.min(f[f > 0])) for _, f, *_ in curves if np.any(np.asarray(f) > 0)]
    return min([1e-3, *positive])


#: the room left around [0, 1] on a ROC plot's axes: a curve at AUC 0 or 1 runs along the edges
#: of the unit square, and would be hidden under the axes' frame without it
ROC_MARGIN = 0.03


def _roc_axes(ax, curves, *, log: bool, title: str) -> None:
    """ROC curves on ``ax``: ``(name, fpr, tpr, auc[, color])``; ``log``: log false-positive axis
    (the low-FPR region, where an attacker is confident and leaks show), 1% and 0.1% FPR marked.
    The axes reach a little beyond [0, 1] and the curves are drawn above the frame, so a perfect
    separation (AUC 1: up the left edge, along the top) or its reverse (AUC 0) stays visible; the
    legend sits below the axes, where it covers no curve."""
    floor = _log_fpr_floor(curves) if log else 0.0
    for name, fpr, tpr, auc, *color in curves:
        fpr, tpr = np.asarray(fpr, float), np.asarray(tpr, float)
        ax.plot(
            np.maximum(fpr, floor) if log else fpr,
            tpr,
            label=f"{name} (AUC {auc:.3f})",
            lw=1.8,
            zorder=3,
            **({"color": color[0]} if color else {}),
        )
    grid = np.logspace(np.log10(floor), 0, 50) if log else np.array([0.0, 1.0])
    ax.plot(grid, grid, "k--", lw=0.8, label="random guess")
    if log:
        ax.set_xscale("log")
        ax.set_xlim(floor * 10 ** (-ROC_MARGIN * np.log10(1 / floor)), 10**ROC_MARGIN)
        for level in (0.01, 0.001):
            if level >= floor:
                ax.axvline(level, color="#999999", ls=":", lw=0.8)
    else:
        ax.set_xlim(-ROC_MARGIN, 1 + ROC_MARGIN)
    ax.set_ylim(-ROC_MARGIN, 1 + ROC_MARGIN)
    ax.set_title(title)
    ax.set_xlabel("false positive rate" + (" (log)" if log else ""))
    ax.set_ylabel("true positive rate")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8, frameon=False)


def roc_figure(curves: Sequence[tuple[str, np.ndarray, np.ndarray, float]]):
    """One ROC curve per attack ``(name, fpr, tpr, auc)``: left on a log false-positive axis (the
    low-FPR region, where leaks show), right on linear axes."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 5.4))
    _roc_axes(axes[0], curves, log=True, title="ROC, log false-positive axis (where leaks show)")
    _roc_axes(axes[1], curves, log=False, title="ROC, linear axes")
    fig.tight_layout()
    return fig


#: flagged groups, as every per-group plot draws them
FLAGGED_COLOR = "#c44e52"


def group_roc_figure(
    panels: Sequence[tuple[str, Sequence[tuple[str, np.ndarray, np.ndarray, float]], int, int]],
):
    """One panel per flagged group ``(group, curves, n_members, n_non_members)``: its members vs its
    non-members, one curve per attack (the strongest in the flagged colour), log false-positive
    axis."""
    n = max(len(panels), 1)
    ncols = min(n, 3)
    nrows = (n + ncols - 1) // ncols
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.6 * ncols, 4.8 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    palette = ["#4c72b0", "#55a868", "#8172b2", "#937860", "#64b5cd", "#ccb974"]
    for ax, (group, curves, n_m, n_n) in zip(axes, panels):
        best = max(range(len(curves)), key=lambda i: curves[i][3]) if curves else -1
        coloured = [
            (*c, FLAGGED_COLOR if i == best else palette[i % len(palette)])
            for i, c in enumerate(curves)
        ]
        if coloured:  # the strongest drawn last: on top of the curves it ties with
            coloured.append(coloured.pop(best))
        title = group if len(group) <= 48 else group[:45] + "..."
        _roc_axes(ax, coloured, log=True, title=f"{title}\n{n_m:,} members vs {n_n:,} non-members")
        ax.title.set_color(FLAGGED_COLOR)
        ax.title.set_fontsize(9)
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def _figure(width: float, height: float, ncols: int = 1):
    """A pyplot-free figure (no global figure registry: safe from worker threads, nothing to
    close)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def score_histograms_figure(scores: Sequence[tuple[str, np.ndarray, np.ndarray]]):
    """Attack score distributions, members vs non-members, one panel per attack:
    ``(name, member_scores, non_member_scores)``. Only the distributions, never a record."""
    fig, axes = _figure(min(5.0 * max(len(scores), 1), 15.0), 3.6, max(len(scores), 1))
    for ax, (name, members, non_members) in zip(axes, scores):
        both = np.concatenate([members, non_members])
        both = both[np.isfinite(both)]
        lo, hi = (float(both.min()), float(both.max())) if both.size else (0.0, 1.0)
        bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 31)
        ax.hist(
            non_members[np.isfinite(non_members)],
            bins=bins,
            alpha=0.55,
            density=True,
            color="#4c72b0",
            label=f"non-members (n={len(non_members)})",
        )
        ax.hist(
            members[np.isfinite(members)],
            bins=bins,
            alpha=0.55,
            density=True,
            color="#dd8452",
            label=f"members (n={len(members)})",
        )
        ax.set_title(f"{name}: attack score")
        ax.set_xlabel("score (higher = more likely a member)")
        ax.set_ylabel("density")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def risk_profile_figure(
    risk: np.ndarray, lower: np.ndarray | None = None, upper: np.ndarray | None = None
):
    """Per-record (MACE) risk: its histogram and the sorted risk profile with its interval band."""
    fig, (hist, profile) = _figure(10, 3.6, 2)
    risk = np.asarray(risk, dtype=float)
    ok = np.isfinite(risk)
    hist.hist(risk[ok], bins=30, color="#c44e52", alpha=0.8)
    hist.set_title(f"per-record risk (n={int(ok.sum())})")
    hist.set_xlabel("risk")
    hist.set_ylabel("records")
    order = np.argsort(-np.where(ok, risk, -np.inf))
    x = np.arange(1, len(risk) + 1)
    if lower is not None and upper is not None:
        profile.fill_between(
            x,
            np.asarray(lower, float)[order],
            np.asarray(upper, float)[order],
            color="#c44e52",
            alpha=0.25,
            label="interval",
            step="mid",
        )
    profile.plot(x, risk[order], color="#c44e52", lw=1.2, label="risk")
    profile.set_xscale("log")
    profile.set_title("records ranked by risk")
    profile.set_xlabel("rank (log)")
    profile.set_ylabel("risk")
    profile.legend(fontsize=8)
    fig.tight_layout()
    return fig


def disclosure_figure(rows: Sequence[dict]):
    """Each disclosure risk (rows of ``DisclosureResult.summary``) with its interval, the
    training, control and naive success rates beside it. Attack names and numbers only."""
    fig, (risks, rates) = _figure(11, 0.35 * max(len(rows), 3) + 1.2, 2)
    y = np.arange(len(rows))[::-1]
    names = [r["attack"].split(" (")[0] for r in rows]
    risk = np.array([r["risk"] for r in rows], float)
    lo, hi = (
        np.array([r["risk_lower"] for r in rows], float),
        np.array([r["risk_upper"] for r in rows], float),
    )
    risks.errorbar(risk, y, xerr=[risk - lo, hi - risk], fmt="o", color="#c44e52", capsize=3)
    risks.axvline(0, color="grey", lw=0.8, ls=":")
    risks.set_yticks(y, names, fontsize=7)
    risks.set_xlim(-1.02, 1.02)
    risks.set_title("risk (training vs control) with its interval")
    for key, mark, label in (
        ("train_rate", "o", "training"),
        ("control_rate", "s", "control"),
        ("baseline_rate", "x", "naive"),
    ):
        rates.scatter([r.get(key, np.nan) for r in rows], y, marker=mark, label=label, s=18)
    rates.set_yticks(y, [""] * len(y))
    rates.set_xlim(-0.02, 1.02)
    rates.set_title("attack success rates")
    rates.legend(fontsize=7)
    fig.tight_layout()
    return fig


def shadow_figure(evidence: Sequence[dict], labels: Sequence[str] | None = None):
    """Per record (labelled by row id, or by ``labels``): its real score (a red bar) against its own
    scores in the shadow releases that never saw it (grey dots) and that did (blue crosses).
    Scores only, no values."""
    fig, (ax,) = _figure(7, 0.45 * max(len(evidence), 3) + 1.2, 1)
    for y, item in enumerate(evidence[::-1]):
        jitter = np.linspace(-0.15, 0.15, max(len(item["out"]), 1))[: len(item["out"])]
        ax.scatter(
            item["out"],
            y + jitter,
            s=10,
            color="grey",
            label="shadows without it" if y == 0 else None,
        )
        ax.scatter(
            item["in"],
            [y + 0.25] * len(item["in"]),
            s=10,
            marker="x",
            color="#4c72b0",
            label="shadows with it" if y == 0 else None,
        )
        ax.plot(
            [item["real"]] * 2,
            [y - 0.35, y + 0.35],
            color="#c44e52",
            lw=2.5,
            label="the release" if y == 0 else None,
        )
    labels = list(labels) if labels is not None else [f"record {e['row_id']}" for e in evidence]
    ax.set_yticks(range(len(evidence)), labels[::-1], fontsize=7)
    ax.set_xlabel("copy-multiplicity score")
    ax.set_title("each record's score on the release against its own shadow scores")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def subgroup_bars_figure(
    bars: Sequence[tuple[str, str, float, float, float, bool]],
    *,
    metric: str,
    thresholds: Sequence[float] = (),
    reference: float | None = None,
):
    """Horizontal bars per subgroup and attack with their interval:
    ``(group, attack, value, lower, upper, flagged)``. Every bar of a flagged group is drawn red
    (``FLAGGED_COLOR``, as the legend says) with a bold red label; rule thresholds as dashed
    vertical lines, ``reference`` (e.g. AUC 0.5 = guessing) dotted."""
    groups = list(dict.fromkeys(b[0] for b in bars))
    attacks = list(dict.fromkeys(b[1] for b in bars))
    height = 0.8 / max(len(attacks), 1)
    fig, (ax,) = _figure(10, max(2.5, 0.45 * len(groups) * max(len(attacks), 1) ** 0.5 + 1.4))
    palette = ["#4c72b0", "#55a868", "#8172b2", "#937860", "#64b5cd", "#ccb974"]
    flagged_groups = {b[0] for b in bars if b[5]}
    for j, attack in enumerate(attacks):
        rows = [(groups.index(b[0]), b) for b in bars if b[1] == attack]
        y = np.array([i for i, _ in rows], float) - 0.4 + height * (j + 0.5)
        vals = np.array([b[2] for _, b in rows], float)
        err = np.array(
            [[max(b[2] - b[3], 0.0) for _, b in rows], [max(b[4] - b[2], 0.0) for _, b in rows]]
        )
        colors = [
            FLAGGED_COLOR if b[0] in flagged_groups else palette[j % len(palette)] for _, b in rows
        ]
        ax.barh(
            y,
            vals,
            height=height * 0.9,
            color=colors,
            alpha=0.85,
            xerr=err,
            capsize=3,
            error_kw={"ecolor": "#333333", "lw": 1},
        )
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [
        Patch(color=palette[j % len(palette)], alpha=0.85, label=a) for j, a in enumerate(attacks)
    ]
    if flagged_groups:
        handles.append(Patch(color=FLAGGED_COLOR, alpha=0.85, label="flagged group"))
    for t in dict.fromkeys(thresholds):
        ax.axvline(t, color="#c44e52", ls="--", lw=1.2)
        handles.append(
            Line2D([], [], color="#c44e52", ls="--", lw=1.2, label=f"rule threshold {t:g}")
        )
    if reference is not None:
        ax.axvline(reference, color="#777777", ls=":", lw=1)
        handles.append(
            Line2D([], [], color="#777777", ls=":", lw=1, label=f"random guess {reference:g}")
        )
    ax.set_yticks(range(len(groups)))
    # a pooled rare-values group lists its values: shorten the tick, the report's table has it whole
    ax.set_yticklabels([g if len(g) <= 40 else g[:37] + "..." for g in groups], fontsize=8)
    for tick, group in zip(ax.get_yticklabels(), groups):
        if group in flagged_groups:
            tick.set_color(FLAGGED_COLOR)
            tick.set_fontweight("bold")
    ax.invert_yaxis()
    ax.set_xlabel(metric + " (bars: estimate, whiskers: 95% interval; red: flagged)")
    ax.legend(
        handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0
    )
    fig.tight_layout()
    return fig


def comparison_bars_figure(
    rows: Sequence[tuple[str, float, float]],
    *,
    labels: tuple[str, str],
    metric: str,
    reference: float | None = None,
):
    """Two bars per item, e.g. the IID vs dependency AUC per attack: ``(name, a, b)``."""
    fig, (ax,) = _figure(6, 3.2)
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r[1] for r in rows], width=0.4, label=labels[0], color="#4c72b0")
    ax.bar(x + 0.2, [r[2] for r in rows], width=0.4, label=labels[1], color="#dd8452")
    if reference is not None:
        ax.axhline(reference, color="#777777", ls=":", lw=1)
    ax.set_xticks(x)
    ax.set_xticklabels([r[0] for r in rows])
    ax.set_ylabel(metric)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def dp_audit_figure(
    points: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    epsilon: float,
    delta: float,
    claimed_mu: float,
    marked: Sequence[tuple[str, float, float]] = (),
):
    """The DP audit's trade-off plot: each score's empirical (FPR, FNR) points on the evaluation
    runs against the lowest FNR the claimed (epsilon, delta)-DP allows and the claimed mu's GDP
    curve. A point *below* the DP curve (with its confidence) is a violation; ``marked`` are the
    chosen thresholds' Clopper-Pearson corners (FPR upper, FNR upper)."""
    from scipy import stats

    fig, (ax,) = _figure(5.2, 4.4)
    a = np.linspace(0, 1, 401)
    dp = np.maximum.reduce(
        [np.zeros_like(a), 1 - delta - np.exp(epsilon) * a, np.exp(-epsilon) * (1 - delta - a)]
    )
    ax.plot(
        a,
        dp,
        color="#b3261e",
        lw=2,
        label=f"claimed ({epsilon:g}, {delta:g})-DP: lowest FNR allowed",
    )
    ax.plot(
        a,
        stats.norm.cdf(stats.norm.ppf(1 - a) - claimed_mu),
        color="#b86e00",
        ls="--",
        label=f"claimed mu = {claimed_mu:.3g} (GDP)",
    )
    ax.plot(a, 1 - a, color="#8a93a3", ls=":", lw=1, label="random guess")
    for label, pts in points:
        if pts:
            x, y = zip(*pts)
            ax.plot(x, y, marker=".", ms=3, lw=0.8, label=f"empirical: {label}")
    for label, fpr_hi, fnr_hi in marked:
        ax.plot([fpr_hi], [fnr_hi], marker="x", ms=8, color="black")
        ax.annotate(label, (fpr_hi, fnr_hi), textcoords="offset points", xytext=(6, 4), fontsize=7)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("false-positive rate (target claimed in, was out)")
    ax.set_ylabel("false-negative rate")
    ax.set_title("DP audit: attack trade-off vs the claim")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def dp_audit_figure_inputs(record: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments of :func:`dp_audit_figure` from a DP audit's JSON record
    (``dp_audit/audit.json``)."""
    from privacy_gate.estimators.dp_audit import cp_upper

    audits = record["audits"]
    points = [(f"{a['score']} / {a['target']}", [tuple(p) for p in a["curve"]]) for a in audits]
    marked = []
    for a in audits:
        b = a["bound"]
        marked.append(
            (
                f"{a['score']}: eps >= {b['epsilon_lower']:.2g}",
                cp_upper(int(b["false_positives"]), int(b["negatives"]), alpha=b["alpha"] / 2),
                cp_upper(int(b["false_negatives"]), int(b["positives"]), alpha=b["alpha"] / 2),
            )
        )
    return {
        "points": points,
        "epsilon": record["epsilon"],
        "delta": record["delta"],
        "claimed_mu": record["claimed_mu"],
        "marked": marked,
    }
