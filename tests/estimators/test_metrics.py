"""ROC metrics: known cases, conservative TPR at low FPR with ties, and fail-closed input checks."""

from __future__ import annotations

import numpy as np
import pytest

from privacy_gate.errors import DataError, InsufficientDataError
from privacy_gate.estimators import roc_curve_points, roc_metrics

KEYS = {"auc", "tpr_at_fpr_0.01", "tpr_at_fpr_0.001", "advantage", "n_members", "n_non_members"}


def test_perfect_separation():
    scores = np.r_[np.linspace(1, 2, 50), np.linspace(-2, -1, 150)]
    labels = np.r_[np.ones(50), np.zeros(150)]
    m = roc_metrics(scores, labels)
    assert set(m) == KEYS
    assert m["auc"] == 1.0 and m["advantage"] == 1.0
    assert m["tpr_at_fpr_0.01"] == 1.0 and m["tpr_at_fpr_0.001"] == 1.0
    assert (m["n_members"], m["n_non_members"]) == (50, 150)


def test_inverted_scores_give_auc_zero_and_no_advantage():
    m = roc_metrics([0.0, 0.1, 0.9, 1.0], [1, 1, 0, 0])
    assert m["auc"] == 0.0 and m["advantage"] == 0.0 and m["tpr_at_fpr_0.01"] == 0.0


def test_identical_distributions_are_at_chance():
    rng = np.random.default_rng(0)
    n = 20_000
    m = roc_metrics(rng.normal(size=2 * n), np.r_[np.ones(n), np.zeros(n)])
    assert m["auc"] == pytest.approx(0.5, abs=0.01)
    assert m["advantage"] < 0.02  # Kolmogorov-Smirnov scale: ~1.36 * sqrt(2 / n) = 0.014
    assert m["tpr_at_fpr_0.01"] == pytest.approx(0.01, abs=0.005)
    assert m["tpr_at_fpr_0.001"] < 0.005


def test_hand_computed_example():
    # ranked: M M N M N N -> member-over-non-member pairs: 3 + 3 + 2 = 8 of 9
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    labels = [1, 1, 0, 1, 0, 0]
    m = roc_metrics(scores, labels)
    assert m["auc"] == pytest.approx(8 / 9)
    # ROC points: (0,0) (0,1/3) (0,2/3) (1/3,2/3) (1/3,1) (2/3,1) (1,1)
    assert m["tpr_at_fpr_0.01"] == pytest.approx(2 / 3)
    assert m["tpr_at_fpr_0.001"] == pytest.approx(2 / 3)
    assert m["advantage"] == pytest.approx(2 / 3)
    fpr, tpr = roc_curve_points(scores, labels)
    assert fpr[0] == 0 and tpr[0] == 0 and fpr[-1] == 1 and tpr[-1] == 1
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)


def test_ties_are_never_split_to_reach_a_low_fpr():
    # the top score is shared by one member and one non-member: reaching the member costs
    # FPR 1/2, so at FPR <= 1% the attacker identifies nobody
    m = roc_metrics([5.0, 5.0, 1.0, 0.0], [1, 0, 1, 0])
    assert m["tpr_at_fpr_0.01"] == 0.0
    assert m["auc"] == pytest.approx(0.625)  # the tie counts half
    assert m["advantage"] == pytest.approx(0.5)  # threshold between 1 and 0: TPR 1, FPR 1/2


def test_fpr_exactly_at_the_level_counts():
    # 100 non-members, one of them above all members: FPR 1/100 reaches TPR 1
    scores = np.r_[np.full(10, 5.0), 10.0, np.zeros(99)]
    labels = np.r_[np.ones(10), 0, np.zeros(99)]
    m = roc_metrics(scores, labels)
    assert m["tpr_at_fpr_0.01"] == 1.0 and m["tpr_at_fpr_0.001"] == 0.0


def test_boolean_labels_and_infinite_scores():
    finite = roc_metrics([3.0, 2.0, 1.0, 0.0, -1.0], [True, False, True, False, False])
    infinite = roc_metrics([np.inf, 2.0, 1.0, 0.0, -np.inf], [True, False, True, False, False])
    assert finite == infinite  # infinite scores are ordered, not dropped


def test_nan_scores_fail_closed():
    with pytest.raises(DataError, match="1 NaN"):
        roc_metrics([0.1, np.nan, 0.3], [1, 0, 1])
    with pytest.raises(DataError, match="NaN"):
        roc_curve_points([np.nan, 1.0], [1, 0])


def test_empty_class_and_bad_inputs():
    with pytest.raises(InsufficientDataError, match="0 non-member"):
        roc_metrics([0.1, 0.2], [1, 1])
    with pytest.raises(InsufficientDataError, match="0 member"):
        roc_metrics([0.1, 0.2], [0, 0])
    with pytest.raises(InsufficientDataError):
        roc_metrics([], [])
    with pytest.raises(DataError, match="3 scores but 2 labels"):
        roc_metrics([0.1, 0.2, 0.3], [1, 0])
    with pytest.raises(DataError, match="0/1"):
        roc_metrics([0.1, 0.2], [1, 2])
    with pytest.raises(DataError, match="0/1"):
        roc_metrics([0.1, 0.2], ["member", "non-member"])
    with pytest.raises(DataError, match="1-D"):
        roc_metrics([[0.1, 0.2]], [[1, 0]])
