"""Exposed-record discovery: which training records do the attacks single out (false discovery
rate controlled), is there an excess of members among the most extreme scores, and how large is
the share of exposed records — every figure valid when all members share one calibration set.
One module because every figure here is read off one calibration set under one exchangeability
argument (records, or people in a panel: ``discover_exposed(units=...)``); the label-blind naming
weights are the part that could move out when it grows.

**One statistic per record for the tests.** The attacks are combined before testing: a record's
combined score is the maximum over the attacks of its rank among all scored records (members and
non-members pooled), ties broken at random (seeded) so all scores are distinct. That transform is
a symmetric function of the pool: under "no leakage" (members exchangeable with non-members) the
combined scores are exchangeable too, so a member's conformal p-value against the ``n0``
non-members (the calibration set)

    p_i = (1 + #{j non-member : c_j >= c_i}) / (n0 + 1)

is valid with no factor for the number of attacks; the tail-excess and Simes tests read it.

**Naming per attack, weighted without the labels.** The maximum rank dilutes one strong attack's
tail (a non-member's best rank over ``k`` attacks reaches the top ``k`` times as often), so records
are named from each attack's own conformal p-values: Benjamini–Hochberg at ``q w_a`` for attack
``a`` (conformal p-values sharing a calibration set are PRDS: Bates, Candès, Lei, Romano & Sesia
2023, Thm. 2.4), or Benjamini–Yekutieli under any dependence, and the union of the selections,
whose FDR is at most ``q sum_a w_a = q`` (:func:`_name_per_attack`). Equal weights ``1 / k`` pay
the factor ``k`` of Bonferroni in what one strong attack must show; so the weights are chosen from
the pooled scores alone (:func:`naming_weights`): half the level goes to the attack whose top
scores stand out most — the largest block of records above the biggest drop in its sorted top
scores, relative to the spread of that top — and half is shared equally. Under no leakage the
labels are a uniformly random subset *given* the pooled scores, so weights computed from the pool
are constants for that argument and the bound holds as for fixed weights; the records no attack
has singled out keep that property when some records are exposed. The favourite then needs
``2 / (k + 1)`` of the records an equal share needed at the floor, the others twice as many.
``tests/estimators/test_exposure.py`` checks the FDR by simulation.

**What can be named at all.** A p-value is at least ``1 / (n0 + 1)``, so BH over ``m`` members at
level ``q w`` selects nothing unless at least ``ceil(m / (q w (n0 + 1)))`` members reach that
floor together in one attack (:func:`naming_limit`, reported for the largest weight); the gate
reports this number so "no record named" is read as "fewer exposed records than that, or none".
A second limit is the population's own twins: a non-member whose twin (or near twin) the release
happens to hold scores like a copy in every distance attack, so copies are named only where they
outnumber the twins at the top of one attack's ranking (``docs/gate.md``, "Naming records").

**The tail-excess test** (:func:`privacy_gate.estimators.tail_test.tail_excess_pvalue`): a handful
of members above every non-member is strong evidence even when BH can name none.

**The exposed share**, per attack (each bound at ``delta / k``; the largest is reported: a broad
leak lifts one attack's top scores, which the rank maximum over attacks would dilute). At the
conformal level ``t`` (``j = floor(t (n0 + 1))``: members above the
``j``-th largest calibration score are "singled out"), a non-exposed member exceeds the threshold
with probability ``F0``, which — the threshold being an order statistic of the calibration set —
is ``Beta(j, n0 - j + 1)``-distributed; given the threshold, the members' exceedances are
independent with probability ``F1 <= (1 - pi) F0 + pi`` (``pi``: the exposed share). Hence

    pi >= (F1 - F0) / (1 - F0)

and with a Clopper–Pearson lower bound ``L1`` on ``F1`` and the Beta upper quantile ``U0`` of
``F0``, each at ``delta / 2``, ``share_lower = (L1 - U0) / (1 - U0)`` holds with probability at
least ``1 - delta`` (``share_upper`` symmetrically, from ``U1`` and the Beta lower quantile).
Treating the member count as binomial around a *fixed* ``t`` — the earlier bound — ignores the
calibration set's own randomness, which at ``n1 = n0`` widens the spread by about ``sqrt(2)``:
such a "95%" bound covered about 82% at share 0. ``share_upper`` bounds the share *detectable* at
level ``t``: records whose exposure no attack reveals are not bounded by anything computed from
attack scores.

>>> rng = np.random.default_rng(0)
>>> non = rng.normal(size=1000)
>>> mem = np.r_[np.full(50, 9.0), rng.normal(size=950)]  # the first 50 members are exposed
>>> res = discover_exposed({"a": np.r_[mem, non]}, np.r_[np.ones(1000), np.zeros(1000)],
...                        np.arange(2000), q=0.05, level=0.01, delta=0.05)
>>> res.count >= 50, set(res.discoveries[:50].tolist()) == set(range(50))
(True, True)
>>> 0.0 < res.share_lower <= 0.05 <= res.share_upper, res.tail_pvalue < 0.001
(True, True)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import stats

from privacy_gate.data.split import unit_scores
from privacy_gate.estimators.tail_test import (
    TAIL_MAX_TOP,
    gap_in,
    random_tie_ranks,
    rounded_top,
    tail_excess_pvalue,
)

FdrMethod = Literal["bh", "by"]


def conformal_pvalues(
    member_scores: np.ndarray, calibration_scores: np.ndarray
) -> npt.NDArray[np.floating[Any]]:
    """``(1 + #{calibration >= s}) / (n + 1)`` for each member score ``s`` (higher = more
    member-like).

    >>> conformal_pvalues(np.array([3.0, 0.5, 0.0]), np.array([0.0, 1.0, 2.0])).tolist()
    [0.25, 0.75, 1.0]
    """
    cal = np.sort(np.asarray(calibration_scores, dtype=float))
    s = np.asarray(member_scores, dtype=float)
    at_least = len(cal) - np.searchsorted(cal, s, side="left")  # calibration scores >= s
    return (1.0 + at_least) / (len(cal) + 1.0)


def combined_scores(scores: Mapping[str, np.ndarray], *, seed: int = 0) -> npt.NDArray[np.float64]:
    """Per record, the maximum over the attacks of its rank in the pooled set (ties at random),
    divided by the pool size, plus a random half-step so that no two records tie: a symmetric
    function of the pool, so exchangeable under no leakage.

    >>> c = combined_scores({"a": np.array([3.0, 1.0, 2.0]), "b": np.array([1.0, 2.0, 3.0])})
    >>> bool(c[0] > 0.9 and c[2] > 0.9 and c[1] < 0.9), len(set(c.tolist()))
    (True, 3)
    """
    if not scores:
        raise ValueError("combining attack scores needs at least one attack")
    rng = np.random.default_rng(seed)
    values = [np.asarray(s, dtype=float) for s in scores.values()]
    # numpy types the maximum over a list of arrays as Any: integer ranks, as float
    top = cast(
        "npt.NDArray[np.float64]",
        np.max([random_tie_ranks(v, rng) for v in values], axis=0).astype(float),
    )
    return (top + 0.5 * rng.random(top.size)) / top.size


def simes_pvalue(pvalues: np.ndarray) -> float:
    """Simes' combination ``min_i n p_(i) / i``: at most ``q`` exactly when Benjamini–Hochberg at
    ``q`` names at least one record, so it is the p-value of "some record is exposed" (valid for
    conformal p-values, which are positively dependent). 1 for no p-values.

    >>> simes_pvalue(np.array([0.01, 0.04, 0.5]))
    0.03
    """
    p = np.sort(np.asarray(pvalues, dtype=float))
    if p.size == 0:
        return 1.0
    return float(min(1.0, np.min(p * p.size / np.arange(1, p.size + 1))))


def fdr_select(
    pvalues: np.ndarray, *, q: float, method: FdrMethod = "bh"
) -> tuple[np.ndarray, float]:
    """Step-up selection at FDR level ``q``: Benjamini–Hochberg, or Benjamini–Yekutieli (BH at
    ``q / H_m``, valid under arbitrary dependence). Returns (selected mask, p-value threshold).

    >>> mask, t = fdr_select(np.array([0.001, 0.02, 0.04, 0.5]), q=0.1)
    >>> mask.tolist(), t
    ([True, True, True, False], 0.04)
    """
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return np.zeros(0, dtype=bool), 0.0
    level = _fdr_level(q, m, method)
    order = np.sort(p)
    below = np.flatnonzero(order <= level * np.arange(1, m + 1) / m)
    if below.size == 0:
        return np.zeros(m, dtype=bool), 0.0
    threshold = float(order[below[-1]])
    return p <= threshold, threshold


def _fdr_level(q: float, m: int, method: FdrMethod) -> float:
    return q / float(np.sum(1.0 / np.arange(1, m + 1))) if method == "by" else q


def naming_limit(
    n_tested: int, n_calibration: int, *, q: float, method: FdrMethod = "bh", views: int = 1
) -> tuple[float, int]:
    """(the smallest p-value possible, the fewest records BH must find at that p-value to name
    any): with ``n_calibration`` calibration records no p-value is below ``1 / (n0 + 1)`` (times
    ``views`` when that many views' p-values are combined by Bonferroni), and step-up selection at
    ``q`` over ``n_tested`` records needs ``r`` with ``floor <= q r / m``.

    >>> naming_limit(8000, 4000, q=0.05)
    (0.00024993751562109475, 40)
    >>> naming_limit(8000, 4000, q=0.05, views=2)[1]
    80
    """
    floor = min(1.0, views / (n_calibration + 1.0))
    level = _fdr_level(q, n_tested, method)
    return floor, min(n_tested, math.ceil(floor * n_tested / level - 1e-9))


# --------------------------------------------------------------------------- exposed share


def _clopper_pearson(k: int, n: int, delta: float) -> tuple[float, float]:
    """One-sided (1 - delta) lower and upper bounds for a binomial proportion k / n."""
    lower = 0.0 if k == 0 else float(stats.beta.ppf(delta, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - delta, k + 1, n - k))
    return lower, upper


def _share(f1: float, f0: float) -> float:
    return float(np.clip((f1 - f0) / (1.0 - f0), 0.0, 1.0)) if f0 < 1 else 0.0


def exposed_share_bounds(
    member_scores: np.ndarray, calibration_scores: np.ndarray, *, level: float, delta: float
) -> tuple[float, float, float]:
    """(estimate, lower, upper) of the exposed share at conformal level ``level``, each bound at
    confidence ``1 - delta`` with the calibration set's randomness accounted for (see the module
    docstring). Scores must be tie-free (:func:`combined_scores`)."""
    mem = np.asarray(member_scores, dtype=float)
    cal = np.sort(np.asarray(calibration_scores, dtype=float))[::-1]
    n1, n0 = mem.size, cal.size
    j = int(math.floor(level * (n0 + 1) + 1e-9))
    if j < 1:
        raise ValueError(
            f"exposure.level {level} is below 1/(n0+1) = {1 / (n0 + 1):.2g} for {n0} calibration "
            "records: raise the level or use more holdout records"
        )
    k1 = int(np.sum(mem > cal[j - 1]))
    l1, u1 = _clopper_pearson(k1, n1, delta / 2)
    u0 = float(stats.beta.ppf(1 - delta / 2, j, n0 - j + 1))
    l0 = float(stats.beta.ppf(delta / 2, j, n0 - j + 1))
    return _share(k1 / n1, j / (n0 + 1.0)), _share(l1, u0), _share(u1, l0)


def share_excess_pvalue(
    member_scores: np.ndarray, calibration_scores: np.ndarray, *, level: float
) -> float:
    """Exact p-value that more members than chance score above the calibration's ``level``
    quantile (the ``j``-th largest calibration score, as in :func:`exposed_share_bounds`): with
    exchangeable scores the members ranked above the ``j``-th calibration score follow the negative
    hypergeometric law (members drawn before the ``j``-th calibration record). Tie-free scores.

    >>> rng = np.random.default_rng(0)
    >>> share_excess_pvalue(rng.normal(size=500), rng.normal(size=500), level=0.01) > 0.01
    True
    >>> copied = np.r_[np.full(40, 9.0), rng.normal(size=460)]
    >>> share_excess_pvalue(copied, rng.normal(size=500), level=0.01) < 1e-6
    True
    """
    mem = np.asarray(member_scores, dtype=float)
    cal = np.sort(np.asarray(calibration_scores, dtype=float))[::-1]
    n1, n0 = mem.size, cal.size
    j = max(1, int(math.floor(level * (n0 + 1) + 1e-9)))
    if j > n0 or n1 == 0:
        return 1.0
    k1 = int(np.sum(mem > cal[j - 1]))
    return float(stats.nhypergeom.sf(k1 - 1, n0 + n1, n1, j)) if k1 > 0 else 1.0


def no_signal_share_upper(
    n_members: int, n_calibration: int, *, level: float, delta: float
) -> float:
    """What ``share_upper`` is for a release with no exposure at all (members exceed as often as
    the calibration level says): the bound's width at these sizes (what the gate's power check
    reads)."""
    n0 = int(n_calibration)
    j = max(1, int(math.floor(level * (n0 + 1) + 1e-9)))
    k1 = int(round(n_members * j / (n0 + 1.0)))
    u1 = _clopper_pearson(k1, int(n_members), delta / 2)[1]
    return _share(u1, float(stats.beta.ppf(delta / 2, j, n0 - j + 1)))


# --------------------------------------------------------------------------- the discovery


def _tie_free(
    scores: np.ndarray, labels: np.ndarray, *, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(member, calibration) ranks of one attack's scores, ties broken at random."""
    ranks = random_tie_ranks(np.asarray(scores, dtype=float), np.random.default_rng(seed)).astype(
        float
    )
    return ranks[labels], ranks[~labels]


@dataclass(frozen=True)
class ExposureResult:
    """Exposed-record discovery over the member targets. ``records`` is keyed by row id only."""

    records: (
        pd.DataFrame
    )  # row_id, p_value (combined), exposed (bool), attack (its highest rank), p_<attack>...
    # (a panel: one row per member target row with its person's ``unit`` code and figures)
    count: int  # discoveries (people in a panel)
    tested: int  # member targets tested (people in a panel)
    calibration: int  # non-member targets (people in a panel)
    threshold: float  # the step-up p-value threshold (0 when nothing is selected)
    false_expected: (
        float  # estimated false discoveries: (1 - share) * tested * threshold <= q * count
    )
    share: float  # the largest single-attack share singled out at ``level`` beyond chance
    share_lower: float  # lower confidence bound on the share of exposed records
    share_upper: float  # upper confidence bound on the share detectable at ``level``
    tail_pvalue: float  # the tail-excess test
    tail_top: int  # the level k where the members' excess is most significant
    min_pvalue: float  # the smallest p-value possible (1 / (n0 + 1))
    naming_needs: int  # records BH must find at that floor to name any
    delta: float
    q: float
    level: float
    method: str
    n_attacks: int
    share_pvalue: float = (
        1.0  # the exact test that more members than chance pass the level (share_excess_pvalue)
    )
    weights: Mapping[str, float] = field(
        default_factory=dict
    )  # each attack's share of the naming level
    simes: float | None = (
        None  # Simes over the tested units' p-values (None: over ``records``, one row a unit)
    )

    @property
    def favourite(self) -> str | None:
        """The attack given the largest share of the naming level (None before shares existed)."""
        return max(self.weights, key=self.weights.__getitem__) if self.weights else None

    @property
    def discoveries(self) -> np.ndarray:
        # pandas is untyped here (Any): the exposed records' row ids
        return cast(np.ndarray, self.records.loc[self.records["exposed"], "row_id"].to_numpy())

    def target_mask(self, labels: np.ndarray) -> np.ndarray:
        """The discoveries as a mask over all targets (``labels``: the targets' membership, in the
        order the scan received them)."""
        labels = np.asarray(labels).astype(bool)
        mask = np.zeros(labels.size, dtype=bool)
        mask[np.flatnonzero(labels)[self.records["exposed"].to_numpy()]] = True
        return mask

    def metrics(self) -> dict[str, float]:
        """Flat figures for the gate rules (``names.exposure_metric``), with the settings the
        no-signal reference of ``share_upper`` needs (``level``, ``delta``, ``calibration``)."""
        return {
            "count": float(self.count),
            "tested": float(self.tested),
            "calibration": float(self.calibration),
            "false_expected": self.false_expected,
            "share": self.share,
            "share_lower": self.share_lower,
            "share_upper": self.share_upper,
            "threshold": self.threshold,
            "level": self.level,
            "attacks": float(self.n_attacks),
            "delta": self.delta,
            "tail_pvalue": self.tail_pvalue,
            "tail_top": float(self.tail_top),
            "min_pvalue": self.min_pvalue,
            "naming_needs": float(self.naming_needs),
            "simes_pvalue": (
                simes_pvalue(self.records["p_value"].to_numpy())
                if self.simes is None
                else self.simes
            ),
            "share_pvalue": self.share_pvalue,
        }


#: the share of the naming level split over the attacks by how much their top scores stand out
#: (the rest is shared equally over all attacks)
FAVOURITE_SHARE = 0.5
#: the top share of the pool in which an attack's block of stand-out records is looked for (wider
#: than the tail test's 1 %: a copied share of the release can fill more of the top than that)
STANDOUT_WINDOW = 0.05
#: a stand-out figure up to this is what smooth or heavy tails give (one outlier, a ragged top):
#: only the excess over it moves the weights, so without a block of stand-out records they stay
#: equal
STANDOUT_FLOOR = 2.0
#: significant digits kept of each attack's stand-out figure before the favourite is chosen, so
#: that float summation order cannot decide it (CPU-independent)
STANDOUT_DIGITS = 6


def standout(scores: np.ndarray, *, window: float = STANDOUT_WINDOW) -> float:
    """How much one attack's top scores stand out, from the scores alone (no labels): among the
    top ``window`` of the pool (at least 2 records, at most ``TAIL_MAX_TOP``), the size ``g`` of the
    block above the largest drop (:func:`~privacy_gate.estimators.tail_test.gap_level`) times that
    drop relative to the top's spread, ``g (s_(g) - s_(g+1)) / (s_(1) - s_(n_top+1))``: a block of
    copies far above the rest scores high, a single outlier or a smooth tail low. Rounded to
    :data:`STANDOUT_DIGITS` significant digits.

    >>> rng = np.random.default_rng(0)
    >>> smooth, block = rng.normal(size=2000), np.r_[np.full(40, 9.0), rng.normal(size=1960)]
    >>> standout(smooth), standout(block)
    (0.130481, 32.4556)
    """
    s = np.asarray(scores, dtype=float)
    n_top = int(min(max(2, math.ceil(window * s.size)), TAIL_MAX_TOP, s.size - 1))
    if n_top < 1:
        return 0.0
    top = rounded_top(s, n_top)  # the tail test's own reading of a top, sorted once
    spread = top[0] - top[-1]
    if not spread > 0:
        return 0.0
    g = gap_in(top)
    return float(f"{g * (top[g - 1] - top[g]) / spread:.{STANDOUT_DIGITS}g}")


def naming_weights(
    scores: Mapping[str, np.ndarray], *, window: float = STANDOUT_WINDOW
) -> dict[str, float]:
    """Each attack's share of the naming level, from the pooled scores alone:
    :data:`FAVOURITE_SHARE` split over the attacks in proportion to how much their top scores stand
    out beyond :data:`STANDOUT_FLOOR` (:func:`standout`; equally when none does), the rest equally
    to all. They sum to 1; one attack gets 1; two attacks that each see half of the copies keep
    about equal shares.

    >>> rng = np.random.default_rng(0)
    >>> w = naming_weights({"a": rng.normal(size=2000),
    ...                     "b": np.r_[np.full(40, 9.0), rng.normal(size=1960)]})
    >>> {a: round(v, 3) for a, v in w.items()}
    {'a': 0.25, 'b': 0.75}
    """
    names = list(scores)
    if not names:
        raise ValueError("naming weights need at least one attack's scores")
    figures = [max(0.0, standout(scores[a], window=window) - STANDOUT_FLOOR) for a in names]
    total = math.fsum(figures)  # exactly rounded: the same shares on every CPU
    split = [f / total for f in figures] if total > 0 else [1.0 / len(names)] * len(names)
    rest = (1.0 - FAVOURITE_SHARE) / len(names)
    return {a: rest + FAVOURITE_SHARE * f for a, f in zip(names, split)}


def _name_per_attack(
    per_attack: Mapping[str, np.ndarray],
    *,
    q: float,
    method: FdrMethod,
    weights: Mapping[str, float] | None = None,
) -> tuple[np.ndarray, list[float]]:
    """The records named: Benjamini–Hochberg (or –Yekutieli) over each attack's own conformal
    p-values at ``q w_a`` (``weights``: summing to at most 1; default ``1 / k`` each), and the union
    of the selections. The union's false discovery proportion is at most the sum of the
    proportions (its discoveries are at least each one's), so its FDR is at most ``q sum w_a``. The
    max-rank combination names nothing where one attack alone would: a non-member's best rank over
    ``k`` attacks crowds the top ``k`` times as often.

    >>> noise = lambda seed: np.random.default_rng(seed).normal(size=12000)
    >>> scores = {"copy": np.r_[np.full(120, 9.0), np.zeros(11880)] + noise(0),
    ...           **{f"noise{i}": noise(i + 1) for i in range(3)}}
    >>> members = np.r_[np.ones(6000, bool), np.zeros(6000, bool)]
    >>> ps = {a: conformal_pvalues(x[members], x[~members]) for a, x in scores.items()}
    >>> named, _ = _name_per_attack(ps, q=0.05, method="bh")
    >>> int(named[:120].sum()) >= 110, int(named[120:].sum()) <= 5
    (True, True)
    >>> c = combined_scores(scores)  # the max-rank combination: nothing named
    >>> int(fdr_select(conformal_pvalues(c[members], c[~members]), q=0.05)[0].sum())
    0
    """
    if weights is None:
        weights = {a: 1.0 / len(per_attack) for a in per_attack}
    if sum(weights.values()) > 1.0 + 1e-9:
        raise ValueError(
            f"naming weights sum to {sum(weights.values())}, more than 1: the FDR would exceed q"
        )
    named = np.zeros(next(iter(per_attack.values())).size, dtype=bool)
    thresholds = []
    for a, p in per_attack.items():
        chosen, t = fdr_select(p, q=q * weights[a], method=method)
        named |= chosen
        thresholds.append(t)
    return named, thresholds


def discover_exposed(
    scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    row_ids: np.ndarray,
    *,
    q: float,
    level: float,
    delta: float,
    method: FdrMethod = "bh",
    tail_max_share: float = 0.01,
    seed: int = 0,
    units: np.ndarray | None = None,
) -> ExposureResult:
    """Combined per-record scores, their conformal p-values for every member target, FDR
    selection over the members, the tail-excess test and the exposed-share bounds.

    ``units`` (a panel: each target's person,
    :attr:`~privacy_gate.experiment.targets.Targets.units`): every figure is over people — a
    person's score per attack is the maximum over their target rows
    (:func:`~privacy_gate.data.split.unit_max`, as the member scan), then all of the above runs on
    those scores, and each member row carries its person's p-values and selection. Valid when the
    people, not their rows, are exchangeable (whole people drawn as targets: ``choose_targets``)."""
    if units is not None:
        unit_best, unit_labels, codes = unit_scores(scores, labels, units)
        res = discover_exposed(
            unit_best,
            unit_labels,
            np.arange(unit_labels.size),
            q=q,
            level=level,
            delta=delta,
            method=method,
            tail_max_share=tail_max_share,
            seed=seed,
        )
        member_rows = np.asarray(labels).astype(bool)
        # per member row: its person's record (``row_id`` there is the person's code)
        by_unit = res.records.set_index("row_id").loc[codes[member_rows]].reset_index(drop=True)
        records = pd.concat(
            [
                pd.DataFrame(
                    {"row_id": np.asarray(row_ids)[member_rows], "unit": codes[member_rows]}
                ),
                by_unit,
            ],
            axis=1,
        )
        return dataclasses.replace(res, records=records, simes=res.simes)
    labels = np.asarray(labels).astype(bool)
    if not scores:
        raise ValueError("exposed-record discovery needs at least one attack's scores")
    if labels.all() or not labels.any():
        raise ValueError("exposed-record discovery needs member and non-member targets")
    combined = combined_scores(scores, seed=seed)
    pvalues = conformal_pvalues(combined[labels], combined[~labels])
    # the share per attack (each bound at delta / k, so the largest is valid for the strongest):
    # a broad leak lifts one attack's top scores, which the rank maximum over k attacks dilutes
    ranked = [_tie_free(s, labels, seed=seed + 2 + i) for i, s in enumerate(scores.values())]
    bounds = [exposed_share_bounds(*r, level=level, delta=delta / len(scores)) for r in ranked]
    # the share's own test (what the budget reads with the share bars): Bonferroni over the attacks
    share_p = min(1.0, len(ranked) * min(share_excess_pvalue(*r, level=level) for r in ranked))
    share, lower, upper = (max(b[i] for b in bounds) for i in range(3))
    tail_p, tail_top = tail_excess_pvalue(combined, labels, max_share=tail_max_share, seed=seed + 1)
    names = list(scores)
    # per attack: its own conformal p-value and which attack ranks each member highest (for the
    # report)
    per_attack = {
        a: conformal_pvalues(np.asarray(s, float)[labels], np.asarray(s, float)[~labels])
        for a, s in scores.items()
    }
    best = np.argmin(np.column_stack([per_attack[a] for a in names]), axis=1)
    weights = naming_weights(scores)
    selected, thresholds = _name_per_attack(per_attack, q=q, method=method, weights=weights)
    threshold = max(thresholds)
    records = pd.DataFrame(
        {
            "row_id": np.asarray(row_ids)[labels],
            "p_value": pvalues,
            "exposed": selected,
            "attack": np.asarray(names, dtype=object)[best],
            **{f"p_{a}": p for a, p in per_attack.items()},
        }
    )
    n1, n0 = int(labels.sum()), int((~labels).sum())
    floor, needs = naming_limit(n1, n0, q=q * max(weights.values()), method=method)
    return ExposureResult(
        records=records,
        count=int(selected.sum()),
        tested=n1,
        calibration=n0,
        threshold=threshold,
        false_expected=float((1 - share) * n1 * sum(thresholds)),
        share=share,
        share_lower=lower,
        share_upper=upper,
        tail_pvalue=tail_p,
        tail_top=tail_top,
        min_pvalue=floor,
        naming_needs=needs,
        delta=delta,
        q=q,
        level=level,
        method=method,
        n_attacks=len(names),
        share_pvalue=share_p,
        weights=weights,
        simes=simes_pvalue(pvalues),
    )
