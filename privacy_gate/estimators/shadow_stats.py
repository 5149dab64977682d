"""The generator-aware test's statistics: a record against its own shadow scores.

Inputs are a score matrix: every pool record ``i`` (the records the gate holds and may shuffle:
train and holdout, and the reference when it is exchangeable with them) scored on the real
release (``real[i]``) and on ``K`` shadow releases (``shadow[i, k]``), each made by the same recipe
from a training set drawn from the pool (``member[i, k]``: record ``i`` was in shadow ``k``'s).

**Per record.** Among the shadows that never saw record ``i`` (its *out*-shadows, ``n_out``),

    p_i = rank of real[i] from the top among {real[i]} and its out-shadow scores / (n_out + 1)

(ties broken at random). Under the record's null — the real release treats record ``i`` as if it
were out, so its real score is exchangeable with its out-shadow scores — ``p_i`` is uniform on
``{1, ..., n_out + 1} / (n_out + 1)``: exact, and no other record calibrates it
(:func:`out_pvalues`). An ``epsilon``-DP recipe keeps ``P(p_i <= a) <= e^epsilon a + delta``.

**One test.** The ``p_i`` share the real release, so they are dependent and no combination of
them alone (Simes, Fisher, an average) has a known level below the per-record floor
``1 / (n_out + 1)`` without modelling that dependence. The test therefore uses the randomisation
that made the split: given every score and every shadow's training set, the real training set is
a uniformly random subset of the pool when the release does not depend on which records are in
it. A label-blind per-record statistic — the record's real score standardised by its own
out-shadow scores (``z_i``, :func:`calibrated_scores`: offline LiRA) — is then exchangeable between
members and the other pool records, and two exact permutation tests of the members' ``z`` apply:
the rank test (broad leaks) and the tail-excess test (a few records memorised), Bonferroni over
the two (:func:`release_pvalue`). The shadows buy the test its power: ``z`` removes each record's
own baseline (an outlier is far from every release, a record in a dense region near every one),
so a memorised record stands out against the records whose real score merely sits at the top of
their own out-shadows, and those get rarer as ``1 / (n_out + 1)``.

**Looks.** The test is taken at a few numbers of fits (:func:`look_schedule`); the p-value of look
``l`` is divided by its weight ``w_l`` (:func:`look_weights`, summing to one) and the test's
p-value is the smallest (weighted Bonferroni: exact whatever the dependence between looks), so
stopping at any look keeps the level.

**Power and the fits needed.** :func:`memorised_power` is the chance, at a look's level, of seeing a
release that memorises a share of the training records (their real score above every out-shadow
score) — modelled conservatively as if the memorised records merely tied with the null records
that reach that floor by chance; :func:`fits_needed` inverts it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from privacy_gate.estimators.group_tests import rank_test_pvalue
from privacy_gate.estimators.tail_test import tail_excess_pvalue

#: the first look and the factor between looks
FIRST_LOOK = 16
#: the tail test of the shadow statistic looks at most this share of the pool (a memorised tenth
#: of the training records must fit in it)
TAIL_SHARE = 0.2
#: null draws of the tail-excess test here: its p-value floor (1 / 20,001) far below the test's
#: share of the review budget divided over the looks
TAIL_DRAWS = 20_000
#: draws of the power model
POWER_DRAWS = 2000
#: the largest number of fits :func:`fits_needed` reports before it says "more records"
MAX_FITS_NEEDED = 1 << 16


def out_pvalues(
    real: np.ndarray, shadow: np.ndarray, member: np.ndarray, *, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``(p, n_out)``: each record's rank p-value among its out-shadow scores (module docstring).

    >>> real = np.array([5.0, 0.0]); sh = np.array([[1.0, 2.0, 9.0], [1.0, 2.0, 3.0]])
    >>> m = np.array([[False, False, True], [False, False, False]])
    >>> p, n = out_pvalues(real, sh, m, rng=np.random.default_rng(0))
    >>> p.round(3).tolist(), n.tolist()
    ([0.333, 1.0], [2, 3])
    """
    real = np.asarray(real, dtype=float)
    out = ~np.asarray(member, dtype=bool)
    above = ((shadow > real[:, None]) & out).sum(axis=1)
    ties = ((shadow == real[:, None]) & out).sum(axis=1)
    n_out = out.sum(axis=1)
    # the real score's place among its ties, uniform: the rank is exactly uniform under the null
    rank = 1 + above + np.floor(rng.random(real.size) * (ties + 1)).astype(np.int64)
    return rank / (n_out + 1.0), n_out


def calibrated_scores(
    real: np.ndarray, shadow: np.ndarray, member: np.ndarray
) -> npt.NDArray[np.float64]:
    """``z_i``: the real score minus the mean of the record's out-shadow scores, over their
    standard deviation (floored at a thousandth of the median one, so a record whose out-scores
    never move does not divide by zero). A function of the scores and the shadows' training sets
    only — never of the real split — so exchangeable under the null. A record with fewer than two
    out-shadows gets 0.

    >>> z = calibrated_scores(np.array([3.0, 1.0]), np.array([[0.0, 2.0], [1.0, 1.0]]),
    ...                       np.zeros((2, 2), dtype=bool))
    >>> z.round(2).tolist()
    [1.41, 0.0]
    """
    out = ~np.asarray(member, dtype=bool)
    n_out = out.sum(axis=1)
    values = np.where(out, shadow, 0.0)
    mean = values.sum(axis=1) / np.maximum(n_out, 1)
    var = (np.where(out, (shadow - mean[:, None]) ** 2, 0.0).sum(axis=1)) / np.maximum(n_out - 1, 1)
    sd = np.sqrt(var)
    positive = sd[(n_out >= 2) & (sd > 0)]
    floor = 1e-3 * float(np.median(positive)) if positive.size else 1.0
    z = (np.asarray(real, dtype=float) - mean) / np.maximum(sd, max(floor, 1e-12))
    return np.where(n_out >= 2, z, 0.0)


def release_pvalue(
    z: np.ndarray, labels: np.ndarray, *, seed: int, tail_draws: int = TAIL_DRAWS
) -> tuple[float, dict[str, float]]:
    """Exact permutation p-value that the members' calibrated scores are higher than the other
    pool records': Bonferroni of the rank test and the tail-excess test (module docstring).
    Returns ``(p, {"rank": p_rank, "tail": p_tail})``."""
    labels = np.asarray(labels, dtype=bool)
    rank = rank_test_pvalue(z, labels, seed=seed)
    tail, _ = tail_excess_pvalue(
        z, labels, max_share=TAIL_SHARE, simulations=tail_draws, seed=seed + 1
    )
    return min(1.0, 2.0 * min(rank, tail)), {"rank": rank, "tail": tail}


def look_schedule(max_fits: int, *, first: int = FIRST_LOOK) -> list[int]:
    """The numbers of fits at which the test is taken: ``first``, doubling, and ``max_fits``.

    >>> look_schedule(100), look_schedule(8)
    ([16, 32, 64, 100], [8])
    """
    looks, k = [], min(first, max_fits)
    while k < max_fits:
        looks.append(k)
        k *= 2
    return looks + [max_fits]


def look_weights(n_looks: int) -> npt.NDArray[np.float64]:
    """Each look's share of the test's level: the last half, each earlier one half of the next,
    the first what is left (they sum to one).

    >>> look_weights(4).tolist(), look_weights(1).tolist()
    ([0.125, 0.125, 0.25, 0.5], [1.0])
    """
    w = np.array([0.5 ** (n_looks - i) for i in range(n_looks)])
    w[0] += 1.0 - w.sum()
    return w


def expected_out(fits: int, n_train: int, n_pool: int) -> float:
    """How many of ``fits`` shadows miss a given record on average (training sets of ``n_train``
    out of ``n_pool``)."""
    return fits * (1.0 - n_train / n_pool)


def memorised_power(
    *,
    n_train: int,
    n_pool: int,
    fits: int,
    level: float,
    share: float,
    draws: int = POWER_DRAWS,
    seed: int = 0,
    n_draw: int | None = None,
) -> float:
    """The chance that the tail part of the test rejects at ``level`` when the release memorises
    ``share`` of the training records. Conservative model: the memorised records only reach the
    per-record floor (their real score above every out-shadow score), where null records land with
    chance ``1 / (n_out + 1)``; the tail test then reads members among all records at the floor
    (hypergeometric, times two for its level grid). A pure function of the design, not of the data.
    ``n_pool``: the records the test permutes; ``n_draw``: those the shadows draw from (default
    the same; more records there give each record more out-shadows).

    >>> memorised_power(n_train=500, n_pool=834, fits=64, level=0.0008, share=0.1) > 0.9
    True
    >>> memorised_power(n_train=150, n_pool=250, fits=64, level=0.0008, share=0.1) < 0.5
    True
    """
    c = int(math.ceil(share * n_train))
    if c <= 0 or n_pool <= n_train:
        return 0.0
    floor = 1.0 / (expected_out(fits, n_train, n_draw or n_pool) + 1.0)
    rng = np.random.default_rng(seed)
    x = c + rng.binomial(n_train - c, floor, size=draws)
    y = rng.binomial(n_pool - n_train, floor, size=draws)
    p = 2.0 * stats.hypergeom.sf(x - 1, n_pool, n_train, x + y)
    return float(np.mean(p <= level))


def fits_needed(
    *,
    n_train: int,
    n_pool: int,
    level_at: Callable[[int], float],
    share: float,
    power: float,
    n_draw: int | None = None,
) -> int | None:
    """The fewest fits (a power of two from :data:`FIRST_LOOK`) whose final look reaches ``power``
    against a release memorising ``share``; ``level_at(fits)`` is the final look's level with that
    many fits. None when no number of fits up to :data:`MAX_FITS_NEEDED` does (the pool is too
    small: more records are needed, not more compute)."""
    k = FIRST_LOOK
    while k <= MAX_FITS_NEEDED:
        reached = memorised_power(
            n_train=n_train, n_pool=n_pool, fits=k, level=level_at(k), share=share, n_draw=n_draw
        )
        if reached >= power:
            return k
        k *= 2
    return None


@dataclass(frozen=True)
class Naming:
    """Training records named: Benjamini–Hochberg over their exact out-shadow p-values."""

    named: np.ndarray  # bool per training record
    threshold: float


def name_records(pvalues: np.ndarray, *, q: float) -> Naming:
    """BH at ``q`` over the training records' exact p-values.

    >>> name_records(np.array([0.01, 0.02, 0.9]), q=0.05).named.tolist()
    [True, True, False]
    """
    from privacy_gate.estimators.exposure import fdr_select

    named, threshold = fdr_select(np.asarray(pvalues, dtype=float), q=q)
    return Naming(named=named, threshold=threshold)


__all__ = [
    "FIRST_LOOK",
    "MAX_FITS_NEEDED",
    "Naming",
    "TAIL_SHARE",
    "calibrated_scores",
    "expected_out",
    "fits_needed",
    "look_schedule",
    "look_weights",
    "memorised_power",
    "name_records",
    "out_pvalues",
    "release_pvalue",
]
