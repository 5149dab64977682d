"""Turning attack scores into privacy (and utility) estimates: ROC metrics, marginal TVD.

Loaded when first used (scikit-learn and SciPy are behind them), so importing one estimator
module does not load the others.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privacy_gate.estimators.metrics import roc_curve_points, roc_metrics
    from privacy_gate.estimators.utility import marginal_quality

__all__ = ["marginal_quality", "roc_curve_points", "roc_metrics"]

_LAZY = {"roc_curve_points": "metrics", "roc_metrics": "metrics", "marginal_quality": "utility"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
