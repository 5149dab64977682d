"""Exposed-record discovery: which training records do the attacks single out, with the false
discovery rate controlled, and how large is the share of exposed records.

For each member target ``i`` and attack ``a`` the conformal p-value against the non-member scores
(the calibration set, ``n0`` records) is

    p_ia = (1 + #{j non-member : s_ja >= s_ia}) / (n0 + 1)

(ties count against the member, so the p-value is conservative). If member ``i`` is not exposed
— its score is exchangeable with the non-members' — ``p_ia`` is a valid p-value:
``P(p_ia <= t) <= t``. The attacks are combined per record by Bonferroni, ``p_i = min(1, k min_a
p_ia)``, valid under any dependence between the attacks. Discoveries are the records selected by
Benjamini–Hochberg at level ``q`` (default), or Benjamini–Yekutieli (valid under any dependence).

Why BH: conformal p-values that share one calibration set are PRDS (Bates, Candès, Lei, Romano &
Sesia 2023, "Testing for outliers with conformal p-values", Thm. 2.4): BH on one attack's p-values
controls the FDR. For the Bonferroni minimum over several attacks that theorem does not apply as
stated; ``tests/estimators/test_exposure.py`` checks the FDR by simulation (correlated attacks, shared
calibration) and ``method="by"`` gives the guarantee under arbitrary dependence at a cost in power.

The share of exposed members. For one attack, ``F(t)`` is the share of members whose p-value is
at most ``t``; non-exposed members contribute at most ``t`` each, so with ``pi`` the exposed
share, ``F(t) <= (1 - pi) t + pi`` and ``pi >= (F(t) - t) / (1 - t) =: pi_t`` — the share of
members the attack singles out at false-alarm rate ``t`` beyond chance (Storey's estimator with
lambda = t). With Clopper–Pearson bounds on ``F(t)`` at confidence ``1 - delta / k`` per attack:

- ``share_lower`` = max over attacks of the lower bounds: a lower confidence bound (1 - delta) on
  the share of exposed records under *any* notion of exposure;
- ``share_upper`` = max over attacks of the upper bounds: an upper confidence bound (1 - delta)
  on the largest share any one attack singles out at level ``t`` — the share *detectable* at
  that level. Records whose exposure no attack reveals are not bounded by anything computed
  from attack scores.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> non = rng.normal(size=1000)
>>> mem = np.r_[np.full(50, 9.0), rng.normal(size=950)]  # the first 50 members are exposed
>>> res = discover_exposed({"a": np.r_[mem, non]}, np.r_[np.ones(1000), np.zeros(1000)],
...                        np.arange(2000), q=0.05, level=0.01, delta=0.05)
>>> res.count >= 50, set(res.discoveries[:50].tolist()) == set(range(50))
(True, True)
>>> 0.0 < res.share_lower <= 0.05 <= res.share_upper
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

FdrMethod = Literal["bh", "by"]


def conformal_pvalues(member_scores: np.ndarray, calibration_scores: np.ndarray) -> np.ndarray:
    """``(1 + #{calibration >= s}) / (n + 1)`` for each member score ``s`` (higher = more member-like).

    >>> conformal_pvalues(np.array([3.0, 0.5, 0.0]), np.array([0.0, 1.0, 2.0])).tolist()
    [0.25, 0.75, 1.0]
    """
    cal = np.sort(np.asarray(calibration_scores, dtype=float))
    s = np.asarray(member_scores, dtype=float)
    at_least = len(cal) - np.searchsorted(cal, s, side="left")  # calibration scores >= s
    return (1.0 + at_least) / (len(cal) + 1.0)


def combine_bonferroni(pvalues: Mapping[str, np.ndarray]) -> np.ndarray:
    """Per record: ``min(1, k * min over the k attacks)`` — valid under any dependence."""
    stacked = np.column_stack([np.asarray(p, dtype=float) for p in pvalues.values()])
    return np.minimum(1.0, stacked.shape[1] * stacked.min(axis=1))


def fdr_select(pvalues: np.ndarray, *, q: float, method: FdrMethod = "bh") -> tuple[np.ndarray, float]:
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
    level = q / np.sum(1.0 / np.arange(1, m + 1)) if method == "by" else q
    order = np.sort(p)
    below = np.flatnonzero(order <= level * np.arange(1, m + 1) / m)
    if below.size == 0:
        return np.zeros(m, dtype=bool), 0.0
    threshold = float(order[below[-1]])
    return p <= threshold, threshold


def _clopper_pearson(k: int, n: int, delta: float) -> tuple[float, float]:
    """One-sided (1 - delta) lower and upper bounds for a binomial proportion k / n."""
    lower = 0.0 if k == 0 else float(stats.beta.ppf(delta, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - delta, k + 1, n - k))
    return lower, upper


def exposed_share_bounds(pvalues: np.ndarray, *, level: float, delta: float) -> tuple[float, float, float]:
    """(estimate, lower, upper) of ``pi_t = (F(t) - t) / (1 - t)`` at ``t = level``, each bound at
    confidence 1 - delta, clipped to [0, 1] (see the module docstring for what they bound)."""
    p = np.asarray(pvalues, dtype=float)
    n, k = p.size, int(np.sum(p <= level))
    lo, hi = _clopper_pearson(k, n, delta)

    def share(f: float) -> float:
        return float(np.clip((f - level) / (1 - level), 0.0, 1.0))

    return share(k / n), share(lo), share(hi)


def no_signal_share_upper(n_members: int, *, level: float, delta: float) -> float:
    """What ``share_upper`` is for a release with no exposure at all (``F(t) = t`` exactly): the
    bound's width at this many members (what the gate's power check reads)."""
    k = int(round(level * n_members))
    return float(np.clip((_clopper_pearson(k, n_members, delta)[1] - level) / (1 - level), 0.0, 1.0))


@dataclass(frozen=True)
class ExposureResult:
    """Exposed-record discovery over the member targets. ``records`` is keyed by row id only."""

    records: pd.DataFrame  # row_id, p_value, p_<attack>..., exposed (bool), attack (the smallest p)
    count: int  # discoveries
    tested: int  # member targets tested
    threshold: float  # the step-up p-value threshold (0 when nothing is selected)
    false_expected: float  # estimated false discoveries: (1 - share) * tested * threshold <= q * count
    share: float  # the largest single-attack share singled out at ``level`` beyond chance
    share_lower: float  # lower confidence bound on the share of exposed records
    share_upper: float  # upper confidence bound on the share detectable at ``level``
    delta: float
    q: float
    level: float
    method: str
    n_attacks: int

    @property
    def discoveries(self) -> np.ndarray:
        return self.records.loc[self.records["exposed"], "row_id"].to_numpy()

    def target_mask(self, labels: np.ndarray) -> np.ndarray:
        """The discoveries as a mask over all targets (``labels``: the targets' membership, in the
        order the scan received them)."""
        labels = np.asarray(labels).astype(bool)
        mask = np.zeros(labels.size, dtype=bool)
        mask[np.flatnonzero(labels)[self.records["exposed"].to_numpy()]] = True
        return mask

    def metrics(self) -> dict[str, float]:
        """Flat figures for the gate rules (``names.exposure_metric``), with the settings the
        no-signal reference of ``share_upper`` needs (``level``, ``delta``, ``attacks``)."""
        return {"count": float(self.count), "tested": float(self.tested), "false_expected": self.false_expected,
                "share": self.share, "share_lower": self.share_lower, "share_upper": self.share_upper,
                "threshold": self.threshold, "level": self.level, "attacks": float(self.n_attacks),
                "delta": self.delta}


def discover_exposed(scores: Mapping[str, np.ndarray], labels: np.ndarray, row_ids: np.ndarray, *, q: float,
                     level: float, delta: float, method: FdrMethod = "bh") -> ExposureResult:
    """Conformal p-values per attack for every member target, Bonferroni across attacks, FDR
    selection over the members, and the exposed-share bounds."""
    labels = np.asarray(labels).astype(bool)
    if not scores:
        raise ValueError("exposed-record discovery needs at least one attack's scores")
    if labels.all() or not labels.any():
        raise ValueError("exposed-record discovery needs member and non-member targets")
    per_attack = {a: conformal_pvalues(np.asarray(s, float)[labels], np.asarray(s, float)[~labels])
                  for a, s in scores.items()}
    combined = combine_bonferroni(per_attack)
    selected, threshold = fdr_select(combined, q=q, method=method)
    bounds = [exposed_share_bounds(p, level=level, delta=delta / len(per_attack)) for p in per_attack.values()]
    share, lower, upper = (max(b[i] for b in bounds) for i in range(3))
    names = list(per_attack)
    best = np.argmin(np.column_stack([per_attack[a] for a in names]), axis=1)
    records = pd.DataFrame({"row_id": np.asarray(row_ids)[labels], "p_value": combined, "exposed": selected,
                            "attack": np.asarray(names, dtype=object)[best],
                            **{f"p_{a}": p for a, p in per_attack.items()}})
    count = int(selected.sum())
    return ExposureResult(records=records, count=count, tested=int(labels.sum()), threshold=threshold,
                          false_expected=float((1 - share) * labels.sum() * threshold), share=share,
                          share_lower=lower, share_upper=upper, delta=delta, q=q, level=level, method=method,
                          n_attacks=len(per_attack))
