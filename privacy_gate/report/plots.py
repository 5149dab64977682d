"""Matplotlib figures for MLflow artifacts (Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def roc_figure(curves: Sequence[tuple[str, np.ndarray, np.ndarray, float]]):
    """One ROC curve per attack on log-log-friendly axes: ``(name, fpr, tpr, auc)``."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    for ax, log in zip(axes, (False, True)):
        for name, fpr, tpr, auc in curves:
            ax.plot(fpr, tpr, label=f"{name} (AUC {auc:.3f})")
        lim = 1e-3 if log else 0.0
        ax.plot([max(lim, 1e-6), 1], [max(lim, 1e-6), 1], "k--", lw=0.8, label="random guess")
        if log:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(1e-3, 1)
            ax.set_ylim(1e-3, 1)
            ax.set_title("ROC (log scale: the low-FPR regime)")
        else:
            ax.set_title("ROC")
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig
