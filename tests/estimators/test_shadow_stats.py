"""The generator-aware test's statistics where the truth is known: simulated score matrices.

No signal: every release (the real one and the shadows) is drawn from one distribution that does
not depend on which records trained it, with a release-level effect shared by all records (the
dependence that makes a combination of per-record p-values invalid). Memorising: the real
release's members score above their own out-shadows."""

from __future__ import annotations

import numpy as np
from scipy import stats

from privacy_gate.estimators.shadow_stats import (
    calibrated_scores,
    fits_needed,
    look_schedule,
    look_weights,
    memorised_power,
    out_pvalues,
    release_pvalue,
)

N_POOL, N_TRAIN, FITS = 240, 150, 32


def _draw(rng: np.random.Generator, *, copied: int = 0, shift: float = 0.0):
    """(real, shadow, member, labels): per-record baselines, a release effect per release."""
    base = rng.normal(0, 2, size=N_POOL)  # each record's own level (outliers, dense regions)
    releases = rng.normal(0, 1, size=FITS + 1)  # a release close to everyone, or far
    noise = rng.normal(0, 1, size=(N_POOL, FITS + 1))
    scores = base[:, None] + releases[None, :] + noise
    member = np.zeros((N_POOL, FITS), dtype=bool)
    for k in range(FITS):
        member[rng.choice(N_POOL, N_TRAIN, replace=False), k] = True
        scores[member[:, k], k + 1] += shift  # the recipe's own effect on its members
    labels = np.zeros(N_POOL, dtype=bool)
    labels[rng.choice(N_POOL, N_TRAIN, replace=False)] = True
    real = scores[:, 0].copy()
    real[labels] += shift
    real[np.flatnonzero(labels)[:copied]] += 10.0  # memorised: far above their own shadows
    return real, scores[:, 1:], member, labels


def test_per_record_pvalues_are_uniform_under_no_signal():
    """Discrete uniform on {1 .. n_out + 1} / (n_out + 1): the top rank as often as 1 / (n_out + 1)
    says, and the mean where a uniform rank puts it (40 releases of 240 records)."""
    rng = np.random.default_rng(0)
    p, floor = [], []
    for _ in range(40):
        real, shadow, member, _ = _draw(rng)
        pi, n_out = out_pvalues(real, shadow, member, rng=rng)
        p.append(pi)
        floor.append(1.0 / (n_out + 1.0))
    p, floor = np.concatenate(p), np.concatenate(floor)
    assert abs(np.mean(np.isclose(p, floor)) - floor.mean()) < 0.015
    assert abs(p.mean() - np.mean(0.5 + floor / 2)) < 0.015


def test_the_release_test_keeps_its_level_with_a_shared_release_effect():
    """The per-record p-values are strongly dependent (one release effect); the permutation test
    over the pool still rejects at most at its level (Wilson upper bound of 300 draws)."""
    rng = np.random.default_rng(1)
    p = []
    for i in range(300):
        real, shadow, member, labels = _draw(rng)
        p.append(
            release_pvalue(
                calibrated_scores(real, shadow, member), labels, seed=i, tail_draws=1000
            )[0]
        )
    p = np.array(p)
    for level in (0.05, 0.2):
        k = int(np.sum(p <= level))
        assert stats.binomtest(k, p.size, level, alternative="greater").pvalue > 0.001, (level, k)
    # a naive combination of the same per-record p-values (Fisher, as if independent) does not
    rng = np.random.default_rng(1)
    fisher = []
    for _ in range(100):
        real, shadow, member, labels = _draw(rng)
        pr, _ = out_pvalues(real, shadow, member, rng=rng)
        fisher.append(stats.combine_pvalues(pr[labels], method="fisher").pvalue)
    assert np.mean(np.array(fisher) <= 0.05) > 0.15


def test_a_recipe_that_fits_its_members_is_seen():
    """Every member a little closer (its own shadows have the same effect on their members): the
    real release's members are compared with shadows *without* them, so the shift is the signal."""
    rng = np.random.default_rng(2)
    real, shadow, member, labels = _draw(rng, shift=1.0)
    assert (
        release_pvalue(calibrated_scores(real, shadow, member), labels, seed=0, tail_draws=1000)[0]
        < 1e-3
    )


def test_memorised_records_are_found_and_stand_out():
    rng = np.random.default_rng(3)
    real, shadow, member, labels = _draw(rng, copied=20)
    p, parts = release_pvalue(calibrated_scores(real, shadow, member), labels, seed=0)
    assert p < 1e-3 and parts["tail"] < 1e-3
    pv, n_out = out_pvalues(real, shadow, member, rng=rng)
    copied = np.flatnonzero(labels)[:20]
    assert np.allclose(pv[copied], 1.0 / (n_out[copied] + 1))  # above every out-shadow score


def test_looks_and_weights():
    assert look_schedule(256) == [16, 32, 64, 128, 256]
    assert look_schedule(40) == [16, 32, 40]
    w = look_weights(5)
    assert abs(w.sum() - 1.0) < 1e-12 and w[-1] == 0.5


def test_power_grows_with_fits_and_fits_needed_says_how_many():
    level = 0.02 * 2 / 12 / 4
    powers = [
        memorised_power(n_train=500, n_pool=834, fits=k, level=level, share=0.1)
        for k in (16, 32, 64)
    ]
    assert powers == sorted(powers) and powers[-1] >= 0.9
    assert (
        fits_needed(n_train=500, n_pool=834, level_at=lambda k: level, share=0.1, power=0.9) == 64
    )
    # 150 training rows in a pool of 250: thousands of fits, but a finite number
    need = fits_needed(n_train=150, n_pool=250, level_at=lambda k: level, share=0.1, power=0.9)
    assert need is not None and need >= 1024
    # a pool with almost no records outside training: no number of fits will do
    assert (
        fits_needed(n_train=150, n_pool=155, level_at=lambda k: level, share=0.02, power=0.9)
        is None
    )
