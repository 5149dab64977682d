"""Turning attack scores into privacy (and utility) estimates: ROC metrics, marginal TVD."""

from privacy_gate.estimators.metrics import roc_curve_points, roc_metrics
from privacy_gate.estimators.utility import marginal_quality

__all__ = ["marginal_quality", "roc_curve_points", "roc_metrics"]
