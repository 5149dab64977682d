"""The membership test's mean-rank ensemble, tested both ways: valid where it is hardest to hold
(no signal at all, attacks that agree, ties, people with several rows) and able to see a release
that avoids its members as well as one that copies them."""

from __future__ import annotations

import math

import numpy as np

from privacy_gate.estimators.group_tests import (
    ensemble_figures,
    mean_rank_scores,
    membership_figures,
)


def _upper_binomial(k_expected: float, n: int, z: float = 3.0) -> float:
    p = k_expected / n
    return k_expected + z * math.sqrt(n * p * (1 - p))


def _attacks(rng: np.random.Generator, n: int, shift: np.ndarray) -> dict[str, np.ndarray]:
    """Three attacks that mostly agree (a shared component), one of them coarse (many ties)."""
    common = rng.normal(size=n) + shift
    return {
        "dcr": common + 0.3 * rng.normal(size=n),
        "dcr_ratio": common + 0.3 * rng.normal(size=n),
        "copy_count": np.floor(common + 0.5 * rng.normal(size=n)),
    }


def test_the_two_sided_ensemble_test_holds_its_level_with_no_signal():
    """1,000 seeds of 150 + 150 targets, no leak: the two-sided p-value falls below 5 % (and below
    1 %) no more often than its level allows (3 sd of the binomial)."""
    n_seeds, hits05, hits01 = 1000, 0, 0
    y = np.r_[np.ones(150, bool), np.zeros(150, bool)]
    for seed in range(n_seeds):
        rng = np.random.default_rng(seed)
        f = ensemble_figures(_attacks(rng, 300, np.zeros(300)), y, None, seed=seed)
        hits05 += f["ensemble_pvalue"] <= 0.05
        hits01 += f["ensemble_pvalue"] <= 0.01
    assert hits05 <= _upper_binomial(0.05 * n_seeds, n_seeds), hits05
    assert hits01 <= _upper_binomial(0.01 * n_seeds, n_seeds), hits01
    assert hits05 >= 0.02 * n_seeds  # not a test that never fires: about its level


def test_the_ensemble_holds_its_level_on_people_with_several_rows():
    """A panel: 60 + 60 people with 1-6 rows each whose rows are alike (a person effect); labels
    are per person, so the test counts people and stays at its level."""
    n_seeds, hits = 600, 0
    for seed in range(n_seeds):
        rng = np.random.default_rng(10_000 + seed)
        rows = rng.integers(1, 7, 120)
        person = np.repeat(np.arange(120), rows)
        labels = np.repeat(np.r_[np.ones(60, bool), np.zeros(60, bool)], rows)
        effect = np.repeat(rng.normal(size=120) * 2, rows)
        f = ensemble_figures(_attacks(rng, person.size, effect), labels, person, seed=seed)
        hits += f["ensemble_pvalue"] <= 0.05
    assert hits <= _upper_binomial(0.05 * n_seeds, n_seeds), hits


def test_the_ensemble_sees_a_release_that_avoids_its_members_and_one_that_copies_them():
    rng = np.random.default_rng(3)
    y = np.r_[np.ones(300, bool), np.zeros(300, bool)]
    avoid = ensemble_figures(
        _attacks(rng, 600, np.r_[np.full(300, -0.6), np.zeros(300)]), y, None, seed=0
    )
    copy = ensemble_figures(
        _attacks(rng, 600, np.r_[np.full(300, 0.6), np.zeros(300)]), y, None, seed=0
    )
    assert (
        avoid["ensemble_pvalue"] < 1e-4
        and avoid["ensemble_auc"] < 0.4
        and avoid["ensemble_upper_pvalue"] > 0.5
    )
    assert (
        copy["ensemble_pvalue"] < 1e-4
        and copy["ensemble_auc"] > 0.6
        and copy["ensemble_lower_pvalue"] > 0.5
    )
    # two-sided: twice the smaller one-sided p-value
    assert avoid["ensemble_pvalue"] == min(1.0, 2 * avoid["ensemble_lower_pvalue"])


def test_mean_ranks_are_label_blind_and_membership_figures_cover_every_attack():
    scores = {"a": np.array([3.0, 1.0, 2.0, 5.0]), "b": np.array([1.0, 2.0, 3.0, 4.0])}
    # the same pool in another order gives the same per-target statistic: a symmetric function
    perm = np.array([2, 0, 3, 1])
    shuffled = {k: v[perm] for k, v in scores.items()}
    assert np.allclose(mean_rank_scores(shuffled), mean_rank_scores(scores)[perm])
    f = membership_figures(scores, np.array([1, 1, 0, 0]), None, gated=["a"], seed=0)
    assert {
        "a.rank_pvalue",
        "b.rank_pvalue",
        "membership.ensemble_pvalue",
        "membership.ensemble_auc",
    } <= set(f)
    # the ensemble is over the gated attacks only: here "a" alone
    assert (
        f["membership.ensemble_auc"]
        == ensemble_figures({"a": scores["a"]}, np.array([1, 1, 0, 0]), None)["ensemble_auc"]
    )
