"""The top set's lower bound on exposed members: its 95 % holds with no signal at all, with a
member-heavy pool, and where exposed records mix with the top of the unexposed ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privacy_gate.estimators.tail_test import top_set


def _upper(expected_rate: float, n: int, z: float = 3.0) -> float:
    return n * expected_rate + z * math.sqrt(n * expected_rate * (1 - expected_rate))


@pytest.mark.parametrize(
    "members, exposed, lift, powered",
    [(1000, 0, 0.0, False), (2000, 0, 0.0, False), (1000, 30, 2.5, False), (1000, 12, 6.0, True)],
)
def test_the_bound_undercounts_the_exposed_members_of_the_set_at_its_confidence(
    members, exposed, lift, powered
):
    """Pool: ``members`` members (the first ``exposed`` of them with scores lifted: mixed into the
    top of the others at 2.5, a cluster of copies at 6) and 1,000 non-members. Over 600 seeds the
    bound exceeds the true number of exposed members in the set no more often than 5 % allows; for
    a cluster of copies it is positive nearly always (not vacuous)."""
    n_seeds, over, positive = 600, 0, 0
    labels = np.r_[np.ones(members, bool), np.zeros(1000, bool)]
    for seed in range(n_seeds):
        rng = np.random.default_rng(seed)
        scores = rng.normal(size=labels.size)
        scores[:exposed] += lift + rng.normal(size=exposed) * 0.5
        top, lower = top_set(scores, labels, seed=seed)
        truth = int(np.sum(top < exposed))
        over += lower > truth
        positive += lower > 0
    assert over <= _upper(0.05, n_seeds), over
    if powered:
        assert positive >= 0.95 * n_seeds, positive
