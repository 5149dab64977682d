"""Is a subgroup's membership exposed? A rank test per group that is valid at any group size, with
the multiplicity across groups controlled.

Within a group, under "no leakage" the member and non-member targets' attack scores are
exchangeable, so the Mann–Whitney rank-sum statistic of the members has its permutation
distribution. Ties are broken at random (seeded): with exchangeable scores that keeps the null
distribution exact, so the exact distribution is used for small groups and the normal
approximation only for large ones. One-sided: members scoring higher is the leak.

The attacks are combined *before* testing, into one score per target: the maximum over the
attacks of the target's rank among all targets (``combined_rank_scores``). That transform is a
symmetric function of the whole target pool, so permuting labels inside a group leaves it
unchanged and the group's permutation test stays exact; and unlike a Bonferroni correction over
the attacks it costs nothing when the attacks agree (DCR and its calibrated ratio mostly do),
which matters for groups of a few dozen records. Across all groups
(every value of every audited column and intersection, overlapping) Holm's step-down adjustment
controls the family-wise error rate under any dependence: a group flagged at ``alpha`` is, with
probability at least ``1 - alpha`` over the whole audit, a group whose members really are
distinguishable.

>>> rng = np.random.default_rng(0)
>>> s = np.r_[rng.normal(size=20) + 3, rng.normal(size=20)]  # members first, clearly higher
>>> y = np.r_[np.ones(20), np.zeros(20)]
>>> rank_test_pvalue(s, y, seed=0) < 1e-6, rank_test_pvalue(rng.normal(size=40), y, seed=0) > 0.01
(True, True)
>>> two = {"a": np.array([3.0, 1.0, 2.0]), "b": np.array([1.0, 2.0, 3.0])}
>>> combined_rank_scores(two).round(2).tolist()
[1.0, 0.67, 1.0]
>>> holm_adjust(np.array([0.01, 0.04, 0.03])).round(2).tolist()
[0.03, 0.06, 0.06]
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from privacy_gate.names import MEMBERSHIP, RANK_PVALUE, metric_name

#: Groups with at most this many member x non-member pairs use the exact rank-sum distribution.
EXACT_MAX_PAIRS = 2500


def _random_tie_ranks(scores: np.ndarray, rng: np.random.Generator) -> npt.NDArray[np.float64]:
    order = np.lexsort((rng.random(scores.size), scores))
    ranks = np.empty(scores.size, dtype=float)
    ranks[order] = np.arange(1, scores.size + 1)
    return ranks


def rank_test_pvalue(
    scores: np.ndarray,
    labels: np.ndarray,
    *,
    seed: int = 0,
    alternative: Literal["greater", "less"] = "greater",
) -> float:
    """One-sided p-value that members score higher than non-members (``alternative="less"``:
    lower) (Mann–Whitney, random tie-breaking); 1.0 when either class is empty (the group cannot
    be tested)."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels).astype(bool)
    n1, n0 = int(labels.sum()), int((~labels).sum())
    if n1 == 0 or n0 == 0:
        return 1.0
    ranks = _random_tie_ranks(scores, np.random.default_rng(seed))
    method = "exact" if n1 * n0 <= EXACT_MAX_PAIRS else "asymptotic"
    res = stats.mannwhitneyu(ranks[labels], ranks[~labels], alternative=alternative, method=method)
    return float(res.pvalue)


def combined_rank_scores(scores: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per target, the maximum over the attacks of its rank among all targets, scaled to (0, 1]."""
    return RankedScores.of(scores).combined


@dataclass(frozen=True)
class RankedScores:
    """The attacks' scores ranked once for a whole audit: ``combined`` (the test statistic) and
    each attack's average ranks (which attack drives a group's result)."""

    names: tuple[str, ...]
    ranks: np.ndarray  # (targets, attacks) average ranks
    combined: np.ndarray  # max over attacks of the "max"-method rank, / number of targets

    @classmethod
    def of(cls, scores: Mapping[str, np.ndarray]) -> RankedScores:
        values = [np.asarray(s, dtype=float) for s in scores.values()]
        top = np.max([stats.rankdata(v, method="max") for v in values], axis=0) / len(values[0])
        return cls(
            names=tuple(scores),
            ranks=np.column_stack([stats.rankdata(v) for v in values]),
            combined=top,
        )


def by_entity(
    scores: np.ndarray, labels: np.ndarray, entities: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """One score (the mean of its records') and one label per entity; the records themselves when
    ``entities`` is None. A person's rows in a panel are not independent targets: the tests count
    people, which are exchangeable between training and holdout when nothing leaks.

    >>> by_entity(np.array([1.0, 3.0, 5.0]), np.array([1, 1, 0]), np.array(["a", "a", "b"]))
    (array([2., 5.]), array([ True, False]))
    """
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels).astype(bool)
    if entities is None:
        return scores, labels
    codes, _ = pd.factorize(pd.Series(np.asarray(entities, dtype=object)), sort=True)
    counts = np.bincount(codes)
    return np.bincount(codes, weights=scores) / counts, np.bincount(
        codes, weights=labels
    ) / counts > 0.5


def entity_rank_pvalue(
    scores: np.ndarray,
    labels: np.ndarray,
    entities: np.ndarray | None,
    *,
    seed: int = 0,
    alternative: Literal["greater", "less"] = "greater",
) -> float:
    """The membership rank test over entities (records when ``entities`` is None)."""
    s, y = by_entity(scores, labels, entities)
    return rank_test_pvalue(s, y, seed=seed, alternative=alternative)


def mean_rank_scores(scores: Mapping[str, np.ndarray]) -> npt.NDArray[np.float64]:
    """Per target, the mean over the attacks of its rank among all targets, scaled to (0, 1]: the
    unsupervised ensemble that Ensemble-MIA (Ward et al. 2025) found to lose least against the
    best single attack over thousands of settings. A symmetric, label-blind function of the
    target pool, so its rank test is exact like each attack's.

    >>> two = {"a": np.array([3.0, 1.0, 2.0]), "b": np.array([1.0, 2.0, 3.0])}
    >>> mean_rank_scores(two).round(2).tolist()
    [0.67, 0.5, 0.83]
    """
    values = [np.asarray(s, dtype=float) for s in scores.values()]
    # scipy is untyped (rankdata: Any): float ranks, their mean float
    return cast(
        "npt.NDArray[np.float64]",
        np.mean([stats.rankdata(v) for v in values], axis=0) / len(values[0]),
    )


def ensemble_figures(
    scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    entities: np.ndarray | None,
    *,
    seed: int = 0,
) -> dict[str, float]:
    """The mean-rank ensemble's two-sided membership test (``membership.*``, see
    :data:`privacy_gate.names.ENSEMBLE_FIGURES`).

    Both tails, because membership shows both ways: members scoring *higher* (copies, memorised
    records) and members scoring *lower* than non-members — a release that avoids its training
    records (a near-copy filter that removes too much, or real rows that are not the members, given
    as the release) tells an attacker who was in training by their absence. The two one-sided
    p-values come from one tie-broken ranking; the two-sided p-value is twice the smaller (a test
    that can fire both ways pays for both tails). The AUC is the ensemble's: below 0.5 means the
    release avoids its members.

    >>> y = np.r_[np.ones(200), np.zeros(200)]
    >>> rng = np.random.default_rng(0)
    >>> # members far from the release
    >>> avoid = {"dcr": np.r_[rng.normal(size=200) - 2, rng.normal(size=200)]}
    >>> f = ensemble_figures(avoid, y, None, seed=0)
    >>> f["ensemble_pvalue"] < 1e-6, f["ensemble_auc"] < 0.2, f["ensemble_upper_pvalue"] > 0.99
    (True, True, True)
    """
    if not scores:
        return {}
    combined = mean_rank_scores(scores)
    s, y = by_entity(combined, labels, entities)
    upper = rank_test_pvalue(s, y, seed=seed, alternative="greater")
    lower = rank_test_pvalue(s, y, seed=seed, alternative="less")
    n1, n0 = int(y.sum()), int((~y).sum())
    auc = (
        float(stats.mannwhitneyu(s[y], s[~y]).statistic / (n1 * n0)) if n1 and n0 else float("nan")
    )
    return {
        "ensemble_pvalue": min(1.0, 2.0 * min(upper, lower)),
        "ensemble_upper_pvalue": upper,
        "ensemble_lower_pvalue": lower,
        "ensemble_auc": auc,
    }


def membership_figures(
    scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    entities: np.ndarray | None,
    *,
    gated: Collection[str] | None = None,
    seed: int = 0,
) -> dict[str, float]:
    """Every figure the budget's membership test reads, in one place (the gate run and the
    what-if without a group compute them alike): each attack's one-sided rank test
    (``<attack>.rank_pvalue``) and the two-sided test of the ``gated`` attacks' mean-rank ensemble
    (``membership.*``; all of ``scores`` when None)."""
    out = {
        metric_name(a, RANK_PVALUE): entity_rank_pvalue(s, labels, entities, seed=seed)
        for a, s in scores.items()
    }
    ensemble = {a: s for a, s in scores.items() if gated is None or a in gated}
    out.update(
        {
            f"{MEMBERSHIP}.{k}": v
            for k, v in ensemble_figures(ensemble, labels, entities, seed=seed).items()
        }
    )
    return out


def group_pvalue(
    scores: Mapping[str, np.ndarray],
    mask: np.ndarray,
    labels: np.ndarray,
    *,
    seed: int = 0,
    ranked: RankedScores | None = None,
    entities: np.ndarray | None = None,
) -> tuple[float, str | None]:
    """The group's one-sided p-value on the combined rank score, and the attack that gives the
    group's members their highest rank most often (what drives the result). ``ranked``: the
    scores ranked once for all groups (``RankedScores.of(scores)``); ``entities``: the targets'
    entity ids (a panel), so the group's test counts entities, not rows."""
    if not scores:
        return 1.0, None
    ranked = RankedScores.of(scores) if ranked is None else ranked
    ent = None if entities is None else np.asarray(entities)[mask]
    p = entity_rank_pvalue(ranked.combined[mask], np.asarray(labels)[mask], ent, seed=seed)
    members = mask & np.asarray(labels).astype(bool)
    if not members.any():
        return p, None
    best = np.bincount(ranked.ranks[members].argmax(axis=1), minlength=len(ranked.names)).argmax()
    return p, ranked.names[int(best)]


def holm_adjust(pvalues: np.ndarray) -> npt.NDArray[np.float64]:
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
