"""Is a subgroup's membership exposed? A rank test per group that is valid at any group size, with
the multiplicity across groups controlled.

Within a group, under "no leakage" the member and non-member targets' attack scores are
exchangeable, so the Mann–Whitney rank-sum statistic of the members has its permutation
distribution. Ties are broken at random (seeded): with exchangeable scores that keeps the null
distribution exact, so the exact distribution is used for small groups and the normal
approximation only for large ones. One-sided: members scoring higher is the leak.

Per group, the attacks are combined by Bonferroni (``min(1, k min_a p_a)``); across all groups
(every value of every audited column and intersection, overlapping) Holm's step-down adjustment
controls the family-wise error rate under any dependence: a group flagged at ``alpha`` is, with
probability at least ``1 - alpha`` over the whole audit, a group whose members really are
distinguishable.

>>> rng = np.random.default_rng(0)
>>> s = np.r_[rng.normal(size=20) + 3, rng.normal(size=20)]  # members first, clearly higher
>>> y = np.r_[np.ones(20), np.zeros(20)]
>>> rank_test_pvalue(s, y, seed=0) < 1e-6, rank_test_pvalue(rng.normal(size=40), y, seed=0) > 0.01
(True, True)
>>> holm_adjust(np.array([0.01, 0.04, 0.03])).round(2).tolist()
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import stats

#: Groups with at most this many member x non-member pairs use the exact rank-sum distribution.
EXACT_MAX_PAIRS = 2500


def _random_tie_ranks(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    order = np.lexsort((rng.random(scores.size), scores))
    ranks = np.empty(scores.size, dtype=float)
    ranks[order] = np.arange(1, scores.size + 1)
    return ranks


def rank_test_pvalue(scores: np.ndarray, labels: np.ndarray, *, seed: int = 0) -> float:
    """One-sided p-value that members score higher than non-members (Mann–Whitney, random
    tie-breaking); 1.0 when either class is empty (the group cannot be tested)."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels).astype(bool)
    n1, n0 = int(labels.sum()), int((~labels).sum())
    if n1 == 0 or n0 == 0:
        return 1.0
    ranks = _random_tie_ranks(scores, np.random.default_rng(seed))
    method = "exact" if n1 * n0 <= EXACT_MAX_PAIRS else "asymptotic"
    res = stats.mannwhitneyu(ranks[labels], ranks[~labels], alternative="greater", method=method)
    return float(res.pvalue)


def group_pvalue(scores: Mapping[str, np.ndarray], mask: np.ndarray, labels: np.ndarray, *, seed: int = 0
                 ) -> tuple[float, str | None]:
    """The group's p-value over the attacks (Bonferroni) and the attack with the smallest one."""
    if not scores:
        return 1.0, None
    p = {a: rank_test_pvalue(np.asarray(s)[mask], np.asarray(labels)[mask], seed=seed) for a, s in scores.items()}
    best = min(p, key=p.get)
    return min(1.0, len(p) * p[best]), best


def holm_adjust(pvalues: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (family-wise error control under any dependence)."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(1.0, adjusted)
    return out
