"""The tail-excess test: are there more members among the most extreme scores than chance?

A handful of members above every non-member is strong evidence even when Benjamini–Hochberg can
name none. Under no leakage the members' positions
in the ranking are a uniformly random subset (label exchangeability — exact whatever the shared
calibration), so the number of members among the top ``k`` is hypergeometric. The test takes the
smallest hypergeometric tail p-value over a grid of levels ``k`` (from the single most extreme
record up to ``max_share`` of the pool) and calibrates that minimum by simulating the null label
order: an exact, seeded Monte-Carlo p-value for "several levels at once". Its price is the grid:
ten people copied many times sit above every other record, yet "10 of the top 10 are members"
(p = 2^-10 when half the pool are members) came out near 0.005 after the minimum over a grid of
levels. So one level is singled out before the labels are looked at: the *gap level*, where the
sorted top scores drop the most (the edge of a cluster of copies; a function of the scores alone, so
under no leakage the members among those top records are still a uniformly random subset). The
statistic is ``min(p_gap, GRID_WEIGHT * min_k p_k)`` and the simulation calibrates it exactly, so
the gap level keeps nearly its nominal p-value and the grid remains a safety net for leaks without a
visible edge.

Used by the target-level exposure (``exposed.tail_pvalue``), the member scan
(``exposed.scan_tail_pvalue``) and the agreement scan (``agreement.tail_pvalue``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import cast

import numpy as np
import numpy.typing as npt
from scipy import stats

#: Monte-Carlo draws of the null label order for the tail-excess test (p-value resolution 1 / 4001)
TAIL_SIMULATIONS = 4000
#: the tail-excess test looks at most this many top records (the grid of levels stays small)
TAIL_MAX_TOP = 2000
#: ... and at least this many: 1 % of a panel's 400 people is 4, and "all 4 of the top 4 are
#: members" (p = 1/16 when half the pool are) can never be significant, while 27 people copied
#: and all above every other record are plain to see. The simulation calibrates any level, so the
#: floor costs no validity, only a slightly wider grid on small pools.
TAIL_MIN_TOP = 20
#: the grid's weight against the gap level in the tail-excess statistic (about the grid's
#: effective number of levels: the two parts then share the test's level roughly equally)
GRID_WEIGHT = 10.0
#: scores are rounded to this many significant digits before the gap level is chosen, so that a
#: near-tie between two gaps cannot be decided by float summation order (CPU-independent)
GAP_DIGITS = 9


def random_tie_ranks(scores: np.ndarray, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Ranks 1..n of ``scores`` (higher score, higher rank), ties broken at random.

    >>> random_tie_ranks(np.array([0.5, 2.0, 0.1]), np.random.default_rng(0)).tolist()
    [2, 3, 1]
    """
    scores = np.asarray(scores, dtype=float)
    return _ranks(scores, rng.random(scores.size))


def _ranks(scores: np.ndarray, tie_draws: np.ndarray) -> npt.NDArray[np.int64]:
    order = np.lexsort((tie_draws, scores))
    ranks = np.empty(scores.size, dtype=np.int64)
    ranks[order] = np.arange(1, scores.size + 1)
    return ranks


def _test_stream(seed: int, n_pool: int) -> tuple[np.random.Generator, np.ndarray]:
    """The tail test's random stream at ``seed``: the pool's tie-breaking draws first, then the
    generator the null simulation continues from. One place owns the order, so the calibration read
    alone (:func:`seeded_null_statistics`) is the very one the test at that seed compares with."""
    rng = np.random.default_rng(seed)
    return rng, rng.random(n_pool)


def _tail_levels(n_top: int) -> npt.NDArray[np.int64]:
    """Levels about 30 % apart from 1 up to ``n_top`` (1, 2, 3, 4, 5, 7, 9, 11, 15, 19, ...): the
    grid's effective number of levels (~5 over 240 records, by simulation of the null label order)
    is what the statistic's :data:`GRID_WEIGHT` pays for it; a finer grid bought little power, as
    the gap level already sits where a cluster of copies ends.

    >>> _tail_levels(20).tolist()
    [1, 2, 3, 4, 5, 7, 9, 11, 15, 19, 20]
    """
    grid, k = {1}, 1.0
    while k < n_top:
        k = max(k + 1.0, k * 1.3)
        grid.add(min(n_top, int(round(k))))
    return np.array(sorted(grid), dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _tail_table(n_pool: int, n_members: int, levels: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """Per level ``k``, ``P(X >= x)`` for x = 0..k with X ~ Hypergeom(pool, members, k)."""
    return tuple(stats.hypergeom.sf(np.arange(k + 1) - 1, n_pool, n_members, k) for k in levels)


def _tail_ps(counts: np.ndarray, table: tuple[np.ndarray, ...]) -> np.ndarray:
    """The tail p-value per level; ``counts``: (..., levels) members among the top k."""
    return np.stack([t[c] for t, c in zip(table, np.moveaxis(counts, -1, 0))], axis=-1)


def _top_count(n_pool: int, max_share: float) -> int:
    """How many of the highest scores the tail test and the top set look at: ``max_share`` of the
    pool, at least :data:`TAIL_MIN_TOP`, at most :data:`TAIL_MAX_TOP` (and the pool).

    >>> _top_count(400, 0.01), _top_count(20_000, 0.01), _top_count(10, 0.01)
    (20, 200, 10)
    """
    return int(min(max(TAIL_MIN_TOP, math.ceil(max_share * n_pool)), TAIL_MAX_TOP, n_pool))


def gap_level(scores: np.ndarray, n_top: int) -> int:
    """The label-blind level of the tail test: the position (1-based) among the ``n_top`` highest
    scores after which the sorted scores drop the most (the first such position on a tie). The
    scores are rounded to :data:`GAP_DIGITS` significant digits first.

    >>> gap_level(np.array([9.0, 1.0, 9.5, 8.8, 0.5, 1.2]), 4)
    3
    """
    s = np.asarray(scores, dtype=float)
    n_top = int(min(max(1, n_top), s.size))
    if n_top >= s.size:
        return n_top
    return gap_in(rounded_top(s, n_top))


def rounded_top(scores: np.ndarray, n_top: int) -> npt.NDArray[np.float64]:
    """The ``n_top + 1`` highest scores, descending, rounded to :data:`GAP_DIGITS` significant
    digits (infinite and missing scores as the largest / smallest float): what a gap is read on.

    >>> rounded_top(np.array([1.0, np.inf, 0.1234567891234, np.nan]), 2).tolist()
    [1.79769313e+308, 1.0, 0.123456789]
    """
    s = np.nan_to_num(np.asarray(scores, dtype=float), nan=-np.inf, posinf=np.finfo(float).max)
    top = -np.sort(-s)[: n_top + 1]
    top = np.where(np.isfinite(top), top, np.finfo(float).min)
    return np.array([float(f"{v:.{GAP_DIGITS}g}") for v in top])


def gap_in(top: np.ndarray) -> int:
    """The position (1-based) in descending ``top`` after which it drops the most (the first on a
    tie)."""
    return int(np.argmax(top[:-1] - top[1:])) + 1


def _statistic(
    n_pool: int, n_members: int, n_top: int, gap: int
) -> tuple[npt.NDArray[np.int64], Callable[[np.ndarray], npt.NDArray[np.float64]]]:
    """(the levels read, the statistic ``min(p_gap, GRID_WEIGHT * min_k p_k)`` of the members
    counted among the top ``k`` at each level) for a pool and a label-blind ``gap`` level."""
    grid = _tail_levels(n_top)
    levels = np.unique(np.r_[grid, gap])
    gap_index = int(np.searchsorted(levels, gap))
    table = _tail_table(n_pool, n_members, tuple(int(k) for k in levels))
    grid_mask = np.isin(levels, grid)

    def statistic(counts: np.ndarray) -> npt.NDArray[np.float64]:
        per_level = _tail_ps(counts, table)
        # numpy types an ``[..., i]`` index as Any: the minimum of two float p-value arrays
        return cast(
            "npt.NDArray[np.float64]",
            np.minimum(
                per_level[..., gap_index], GRID_WEIGHT * per_level[..., grid_mask].min(axis=-1)
            ),
        )

    return levels, statistic


def _null_counts(
    n_pool: int, n_members: int, n_top: int, simulations: int, rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """Members among the top 1..``n_top`` positions in ``simulations`` draws of the null label
    order: draws without replacement from the pool, one position at a time."""
    members_left = np.full(simulations, n_members, dtype=np.int64)
    sequence = np.empty((simulations, n_top), dtype=bool)
    for i in range(n_top):
        sequence[:, i] = rng.random(simulations) * (n_pool - i) < members_left
        members_left -= sequence[:, i]
    return np.cumsum(sequence, axis=1)


def null_tail_statistics(
    n_pool: int,
    n_members: int,
    gap: int,
    *,
    rng: np.random.Generator,
    max_share: float = 0.01,
    simulations: int = TAIL_SIMULATIONS,
) -> npt.NDArray[np.float64]:
    """The tail-excess statistic in ``simulations`` draws of the null label order, for a pool of
    ``n_pool`` records of which ``n_members`` are members and the label-blind ``gap`` level: what
    :func:`tail_excess_pvalue` calibrates with, exposed so that its Monte-Carlo calibration can
    be checked against many more draws (``benchmarks/bench_tail_floor.py``).

    >>> s = null_tail_statistics(400, 200, 3, rng=np.random.default_rng(0), simulations=1000)
    >>> s.shape, bool(0 < s.min() <= s.max() <= GRID_WEIGHT)
    ((1000,), True)
    """
    n_top = _top_count(n_pool, max_share)
    levels, statistic = _statistic(n_pool, n_members, n_top, gap)
    return statistic(_null_counts(n_pool, n_members, n_top, simulations, rng)[:, levels - 1])


def seeded_null_statistics(
    n_pool: int,
    n_members: int,
    gap: int,
    *,
    seed: int = 0,
    max_share: float = 0.01,
    simulations: int = TAIL_SIMULATIONS,
) -> npt.NDArray[np.float64]:
    """The null draws :func:`tail_excess_pvalue` at ``seed`` calibrates with, for a pool of
    ``n_pool`` records, ``n_members`` of them members, at the label-blind ``gap`` level: every gate
    on one pool size and seed reads these same draws (``benchmarks/bench_tail_floor.py`` measures
    what that does to the p-value's floor).

    >>> seeded_null_statistics(400, 100, 2, seed=3, simulations=500).shape
    (500,)
    """
    rng, _ = _test_stream(seed, n_pool)
    return null_tail_statistics(
        n_pool, n_members, gap, rng=rng, max_share=max_share, simulations=simulations
    )


def tail_excess_pvalue(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    max_share: float = 0.01,
    simulations: int = TAIL_SIMULATIONS,
    seed: int = 0,
) -> tuple[float, int]:
    """Exact (Monte-Carlo) p-value of "more members among the highest scores than chance": the
    statistic is ``min(p_gap, GRID_WEIGHT * min_k p_k)`` where ``p_k`` is the hypergeometric tail
    p-value of the members among the top ``k``, over the levels ``k`` (1 .. ``max_share`` of the
    pool, at most :data:`TAIL_MAX_TOP`), and ``p_gap`` is that p-value at the label-blind
    :func:`gap_level`; the statistic is calibrated by ``simulations`` draws of the null label
    order. Returns (p-value, the level ``k`` where the excess is most significant). Ties are
    broken at random (seeded).

    >>> y = np.r_[np.ones(1000), np.zeros(1000)]
    >>> noise = np.random.default_rng(1).normal(size=2000)
    >>> s = np.r_[np.full(8, 10.0), np.zeros(992), np.zeros(1000)] + noise
    >>> p, k = tail_excess_pvalue(s, y, seed=0)
    >>> p < 0.05, 8 <= k <= 12
    (True, True)
    """
    labels = np.asarray(labels).astype(bool)
    n_pool, n_members = labels.size, int(labels.sum())
    if n_members == 0 or n_members == n_pool:
        raise ValueError("the tail-excess test needs member and non-member records")
    rng, tie_draws = _test_stream(seed, n_pool)
    n_top = _top_count(n_pool, max_share)
    levels, statistic = _statistic(n_pool, n_members, n_top, gap_level(scores, n_top))
    table = _tail_table(n_pool, n_members, tuple(int(k) for k in levels))
    top = np.argsort(-_ranks(np.asarray(scores, dtype=float), tie_draws), kind="stable")[:n_top]
    observed_counts = np.cumsum(labels[top])[levels - 1]
    observed = float(statistic(observed_counts))
    null = statistic(_null_counts(n_pool, n_members, n_top, simulations, rng)[:, levels - 1])
    pvalue = (1.0 + np.sum(null <= observed * (1 + 1e-12))) / (simulations + 1.0)
    best = int(levels[int(np.argmin([t[c] for t, c in zip(table, observed_counts)]))])
    return float(pvalue), best


def top_set(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    max_share: float = 0.01,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[np.ndarray, int]:
    """The label-blind top set and a lower confidence bound on the exposed members in it.

    A candidate set is the ``k`` highest scores (ties broken at random, seeded) for ``k`` on the
    tail test's grid and at its :func:`gap_level`: chosen from the scores alone, so the labels of
    the records in it that are *not* exposed are still a uniformly random draw from the pool's
    unexposed records. With ``e`` exposed members in the set,
    the members it holds are ``e + V``, ``V`` hypergeometric over fewer members and ``k - e``
    draws, so stochastically below ``Hypergeom(pool, members, k - e)``; and ``e + V`` grows with
    ``e``. So "at most ``e0`` exposed" is rejected when ``P(e0 + Hypergeom(pool, members, k - e0)
    >= t) <= 1 - confidence`` for the ``t`` members seen, and the bound is one more than the largest
    ``e0`` rejected (the tests are nested): at least that many of the members in the set are
    exposed with probability at least ``confidence`` — "of these 11 training records at least 4
    were copied (95 %)", where Benjamini–Hochberg over thousands of records can name none.
    Every candidate's bound is taken at ``(1 - confidence) / levels`` (Bonferroni), so they hold
    together and the set with the largest bound may be reported. Returns (the set's positions,
    the lower bound; the smallest set when no bound is positive).

    >>> y = np.r_[np.ones(1000), np.zeros(1000)].astype(bool)
    >>> noise = np.random.default_rng(1).normal(size=2000)
    >>> s = np.r_[np.full(10, 10.0), np.zeros(990), np.zeros(1000)] + noise
    >>> top, lower = top_set(s, y)
    >>> len(top), int(y[top].sum()), lower
    (11, 11, 4)
    >>> top_set(np.random.default_rng(5).normal(size=2000), y)[1]  # no signal: nothing certain
    0
    """
    labels = np.asarray(labels).astype(bool)
    n_pool, n_members = labels.size, int(labels.sum())
    n_top = _top_count(n_pool, max_share)
    levels = np.unique(np.r_[_tail_levels(n_top), gap_level(scores, n_top)])
    alpha = (1.0 - confidence) / levels.size  # every level's bound at once (Bonferroni)
    order = np.argsort(-random_tie_ranks(scores, np.random.default_rng(seed)), kind="stable")[
        :n_top
    ]
    counts = np.cumsum(labels[order])
    best_k, best = int(levels[0]), 0
    for k in levels:
        t, lower = int(counts[k - 1]), 0
        while (
            lower < t and stats.hypergeom.sf(t - lower - 1, n_pool, n_members, k - lower) <= alpha
        ):
            lower += 1
        if lower > best:
            best_k, best = int(k), lower
    return order[:best_k], best


__all__ = [
    "GAP_DIGITS",
    "GRID_WEIGHT",
    "TAIL_MAX_TOP",
    "TAIL_SIMULATIONS",
    "gap_in",
    "gap_level",
    "null_tail_statistics",
    "random_tie_ranks",
    "seeded_null_statistics",
    "rounded_top",
    "tail_excess_pvalue",
    "top_set",
]
