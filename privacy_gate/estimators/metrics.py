"""ROC metrics of an attack: AUC, TPR at low FPR, and membership advantage.

TPR at a fixed FPR is read conservatively from the ROC curve: the largest TPR among the curve's
points whose FPR does not exceed the target. Tied scores form a single point of the curve (one
threshold), so a tie block is never split to reach an FPR exactly — that would need a randomised
threshold and would overstate what the attacker can do deterministically.

NaN scores are a :class:`DataError`: the gate fails closed and never silently drops targets.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

from privacy_gate.errors import DataError, InsufficientDataError

#: The low false-positive rates reported as ``tpr_at_fpr_<x>``.
FPR_LEVELS: tuple[tuple[str, float], ...] = (("0.01", 0.01), ("0.001", 0.001))


def as_membership_labels(y: np.ndarray) -> npt.NDArray[np.int8]:
    """0/1 (or boolean) membership labels as int8; anything else is a DataError."""
    if y.dtype == bool:
        return y.astype(np.int8)
    try:
        yf = y.astype(np.float64)
    except (TypeError, ValueError):
        raise DataError("labels must be 0/1 or boolean (1 = member)") from None
    if not np.isin(yf, (0.0, 1.0)).all():
        raise DataError("labels must be 0/1 or boolean (1 = member)")
    return yf.astype(np.int8)


def _checked(scores: object, labels: object) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    if s.ndim != 1 or y.ndim != 1:
        raise DataError(
            f"scores and labels must be 1-D, got {s.ndim}-D scores and {y.ndim}-D labels"
        )
    if s.shape != y.shape:
        raise DataError(f"got {s.size} scores but {y.size} labels")
    n_nan = int(np.isnan(s).sum())
    if n_nan:
        raise DataError(f"scores contain {n_nan} NaN value(s); an attack must score every target")
    y = as_membership_labels(y)
    n_members = int(y.sum())
    if n_members == 0 or n_members == y.size:
        raise InsufficientDataError(
            f"ROC metrics need both members and non-members; got {n_members} member(s) and "
            f"{y.size - n_members} non-member(s)"
        )
    if np.isinf(s).any():
        # ranks preserve the ordering and ties (so every ROC metric), and sklearn rejects inf
        s = rankdata(s)
    return s, y


def roc_metrics(scores: object, labels: object) -> dict[str, float | int]:
    """AUC, TPR at FPR 1% and 0.1%, advantage = max(TPR - FPR), and the class sizes.

    ``scores``: higher = more likely a member; ``labels``: 1/True = member.
    """
    s, y = _checked(scores, labels)
    from sklearn.metrics import (  # here: reading a verdict (review) loads no sklearn
        roc_auc_score,
        roc_curve,
    )

    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    out: dict[str, float | int] = {"auc": float(roc_auc_score(y, s))}
    for key, level in FPR_LEVELS:
        # roc_curve starts at (0, 0), so the set is never empty; the tolerance keeps e.g.
        # 3/300 from missing 0.01 by a rounding error
        out[f"tpr_at_fpr_{key}"] = float(tpr[fpr <= level + 1e-12].max())
    out["advantage"] = float(np.max(tpr - fpr))
    out["n_members"] = int(y.sum())
    out["n_non_members"] = int(y.size - y.sum())
    return out


def roc_curve_points(scores: object, labels: object) -> tuple[np.ndarray, np.ndarray]:
    """``(fpr, tpr)`` arrays of the ROC curve for plotting (collinear points dropped)."""
    s, y = _checked(scores, labels)
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=True)
    return fpr, tpr
