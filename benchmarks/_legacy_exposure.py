"""The exposure figures and rules as they were before the sparse-exposure work (commit bc3f293),
frozen so ``bench_exposure.py`` can decide every release both ways in one run.

Then: per attack a conformal p-value, Bonferroni across the four attacks of the time (domias, dcr,
dcr_ratio, mama_mia), BH over the member targets, and the exposed share with Clopper–Pearson bounds
at a *fixed* level (the bound that covered about 82% at share 0); no member scan, no tail test.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import stats

from privacy_gate.config import DEFAULT_RULES
from privacy_gate.estimators.exposure import conformal_pvalues, fdr_select

LEGACY_ATTACKS = ("domias", "dcr", "dcr_ratio", "mama_mia")
#: the rules this work added; every other default rule is unchanged since bc3f293
NEW_RULE_METRICS = ("exposed.tail_pvalue", "exposed.scan_tail_pvalue", "exposed.scan_count")
LEGACY_RULES = [r for r in DEFAULT_RULES if r.metric not in NEW_RULE_METRICS]


def _clopper_pearson(k: int, n: int, delta: float) -> tuple[float, float]:
    lower = 0.0 if k == 0 else float(stats.beta.ppf(delta, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - delta, k + 1, n - k))
    return lower, upper


def legacy_exposure(
    scores: Mapping[str, np.ndarray],
    labels: np.ndarray,
    *,
    q: float = 0.05,
    level: float = 0.01,
    delta: float = 0.05,
) -> dict[str, float]:
    """The ``exposed.*`` figures the old rules read, computed the old way."""
    labels = np.asarray(labels).astype(bool)
    per_attack = {
        a: conformal_pvalues(np.asarray(s, float)[labels], np.asarray(s, float)[~labels])
        for a, s in scores.items()
    }
    stacked = np.column_stack(list(per_attack.values()))
    combined = np.minimum(1.0, stacked.shape[1] * stacked.min(axis=1))
    selected, _ = fdr_select(combined, q=q)

    def share(f: float) -> float:
        return float(np.clip((f - level) / (1 - level), 0.0, 1.0))

    bounds = []
    for p in per_attack.values():
        k, n = int(np.sum(p <= level)), p.size
        lo, hi = _clopper_pearson(k, n, delta / len(per_attack))
        bounds.append((share(k / n), share(lo), share(hi)))
    return {
        "exposed.count": float(selected.sum()),
        "exposed.share": max(b[0] for b in bounds),
        "exposed.share_lower": max(b[1] for b in bounds),
        "exposed.share_upper": max(b[2] for b in bounds),
        "_discoveries": np.flatnonzero(labels)[selected],
    }
