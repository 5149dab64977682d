"""The dependency study's figure: membership advantage vs epsilon, non-IID (solid) vs its IID
counterpart (dashed), one panel per scenario setting, with the IID DP bound drawn and labelled as
valid only under independence. Non-DP generators sit at the right edge ("no DP")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from privacy_gate.estimators.mace.dp import dp_advantage_bound

MAX_PANELS = 24


def dependency_figure(summary: Sequence[dict[str, Any]], *, prior: float = 0.5):
    """A matplotlib Figure of a study's summary (see
    :func:`privacy_gate.studies.dependency_summary.summarise`)."""
    settings = list(dict.fromkeys(c["setting"] for c in summary))[:MAX_PANELS]
    eps_all = sorted({c["epsilon"] for c in summary if c["epsilon"] is not None})
    lo, hi = (min(eps_all), max(eps_all)) if eps_all else (1.0, 1.0)
    no_dp_x = hi * 3 if eps_all else 1.0  # where the non-DP generators are drawn
    ncols = min(3, len(settings))
    nrows = math.ceil(len(settings) / ncols)
    from matplotlib.figure import Figure  # pyplot-free: no global registry, safe in worker threads

    fig = Figure(figsize=(4.6 * ncols, 3.2 * nrows + 0.8))
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    generators = list(dict.fromkeys(c["generator"] for c in summary))
    colours = {g: f"C{i % 10}" for i, g in enumerate(generators)}
    for ax, setting in zip(axes, settings):
        for g in generators:
            for iid in (False, True):
                cells = sorted(
                    (
                        c
                        for c in summary
                        if c["setting"] == setting and c["generator"] == g and c["iid"] == iid
                    ),
                    key=lambda c: (c["epsilon"] is None, c["epsilon"] or 0),
                )
                if not cells:
                    continue
                x = [no_dp_x if c["epsilon"] is None else c["epsilon"] for c in cells]
                y = [c["advantage_mean"] for c in cells]
                err = [0 if np.isnan(c["advantage_ci"]) else c["advantage_ci"] for c in cells]
                ax.errorbar(
                    x,
                    y,
                    yerr=err,
                    color=colours[g],
                    linestyle="--" if iid else "-",
                    marker="o" if not iid else "s",
                    markersize=4,
                    capsize=3,
                    label=f"{g} {'IID counterpart' if iid else 'non-IID'}",
                )
        if eps_all:
            grid = np.geomspace(lo, hi, 50) if hi > lo else np.array([lo])
            ax.plot(
                grid,
                [dp_advantage_bound(float(e), prior) for e in grid],
                color="black",
                linewidth=1,
                label="IID DP bound (valid only under independence)",
            )
            ax.set_xscale("log")
            if any(c["epsilon"] is None for c in summary):
                ticks = [*eps_all, no_dp_x]
                ax.set_xticks(ticks, [f"{t:g}" for t in eps_all] + ["no DP"])
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(setting, fontsize=9)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("membership advantage (MACE)")
        ax.grid(alpha=0.3)
    for ax in axes[len(settings) :]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False
    )
    legend_inches = 0.25 + 0.2 * math.ceil(
        len(labels) / 4
    )  # reserve the legend's rows, whatever the height
    fig.tight_layout(rect=(0, legend_inches / fig.get_figheight(), 1, 1))
    return fig
