"""Generalised membership metrics of the optimal attacker: PPV, AM and weighted accuracy
(MACE §3.2–3.3, §4.2, Algorithm 2 and Appendix D).

With members rare (small prior p), accuracy says little; PPV (precision of "member" guesses),
AM = (TPR + TNR) / 2 and weighted accuracy WA = (2TP + 2TN) / (2TP + 2TN + FP + FN) are better
summaries. Their Bayes-optimal attacker thresholds the posterior eta(z) = P(m=1 | z) under the
prior p at t: t_AM = p and t_WA = 0.5 in closed form (paper Theorem 1); PPV has none.

The split plug-in of Algorithm 2 (targets split into three stratified parts, seeded):

1. part 1 fits the class densities (same ``method`` as the advantage estimate), giving eta-hat
   and its band (Clopper–Pearson or the KDE normal band, delta/2 per class);
2. part 2 picks the PPV threshold: the largest PPV among thresholds that predict at least
   ``min_positives`` part-2 targets positive (without that floor PPV is maximised by guessing
   "member" for the single most member-like target, an estimate with no support);
3. the metric is evaluated on part 3 (PPV) or on parts 2 + 3 (AM, WA: the threshold is known,
   so the second step is skipped as the paper says), with TPR and FPR per class and the prior p
   weighting the classes (targets are usually balanced; the prior need not be).

Bounds: ``<metric>_lower`` / ``<metric>_upper`` follow the paper (Appendix D): the average over
the evaluation targets of each target's individual bound, i.e. the metric computed with eta at
its band's ends (PPV: mean of eta over predicted positives; AM: mean of eta/(2p) over positives
and (1 - eta)/(2(1-p)) over negatives; WA via accuracy, which it increases with). These are
plug-in bounds without a coverage guarantee. ``<metric>_holdout_lower`` / ``_upper`` are exact
(1 - delta) Clopper–Pearson bounds for the learned classifier on the evaluation part (TPR and
FPR at delta/2 each): the holdout lower bound is a valid lower bound of the optimal attacker's
metric, the upper ones are bounds of *this* classifier only. The optimal PPV of any attacker is
the largest posterior, (1 + max f_p) / 2, so per-record ``risk_upper`` bounds it more directly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from privacy_gate.errors import ConfigError
from privacy_gate.estimators.mace._models import (
    MIN_PER_CLASS,
    Settings,
    check_query,
    cp_lower,
    cp_upper,
    fit_model,
    resolve_method,
    stratified_split,
)

__all__ = ["MIN_TARGETS_PER_CLASS", "generalized_metrics"]

#: members and non-members the generalized metrics need: three parts (learn, tune, evaluate) of
#: at least ``MIN_PER_CLASS`` per class each — the smallest target set the gate can measure at all
MIN_TARGETS_PER_CLASS = 3 * MIN_PER_CLASS


def _posterior(d1: np.ndarray, d0: np.ndarray, prior: float) -> np.ndarray:
    den = prior * d1 + (1 - prior) * d0
    # a query value neither class showed carries no evidence: the posterior is the prior
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, prior * d1 / np.where(den > 0, den, 1.0), prior)


def _ppv(tpr: float, fpr: float, prior: float) -> float:
    den = prior * tpr + (1 - prior) * fpr
    return prior * tpr / den if den > 0 else prior


def _wa(acc: float) -> float:
    return 2 * acc / (1 + acc)


def _ppv_threshold(eta: np.ndarray, y: np.ndarray, prior: float, min_positives: int) -> float:
    """Threshold t maximising the prior-weighted PPV of ``eta >= t`` with >= min_positives
    positives."""
    order = np.argsort(-eta, kind="stable")
    e, lab = eta[order], y[order]
    n1, n0 = max(int(lab.sum()), 1), max(int(lab.size - lab.sum()), 1)
    tp = np.cumsum(lab) / n1
    fp = np.cumsum(1 - lab) / n0
    # a threshold sits at the last target of a tie block (ties are never split)
    last = np.r_[e[1:] != e[:-1], True]
    n_pos = np.arange(1, e.size + 1)
    ok = last & (n_pos >= min(min_positives, e.size))
    den = prior * tp + (1 - prior) * fp
    ppv = np.where(den > 0, prior * tp / np.where(den > 0, den, 1.0), 0.0)
    ppv = np.where(ok, ppv, -1.0)
    best = ppv.max()
    # among equally good thresholds take the lowest: more positives, a steadier estimate
    idx = int(np.flatnonzero(ppv >= best - 1e-12)[-1])
    return float(e[idx])


def generalized_metrics(
    scores: object,
    labels: object,
    *,
    prior: float = 0.5,
    delta: float = 0.05,
    method: str = "auto",
    n_bins: int | None = None,
    bandwidth: float | str | None = None,
    seed: int = 0,
    min_positives: int = 20,
    n_mc: int = 4096,
) -> dict[str, float | int | str]:
    """PPV, AM and WA of the plug-in Bayes attacker (Algorithm 2) with bounds; see module doc.

    Keys per metric ``m`` in (``ppv``, ``am``, ``wa``): ``m``, ``m_lower``, ``m_upper``,
    ``m_holdout_lower``, ``m_holdout_upper``, ``m_threshold``; plus ``ppv_n_positive``, the part
    sizes, ``prior``, ``delta`` and ``method``. ``ppv_upper`` is the paper's bound at the prior.

    >>> rng = np.random.default_rng(1)
    >>> z = np.r_[rng.normal(2.0, 1.0, 900), rng.normal(0.0, 1.0, 900)]
    >>> g = generalized_metrics(z, np.r_[np.ones(900), np.zeros(900)], prior=0.2)
    >>> g["am_threshold"], 0.5 < g["am"] < 1.0
    (0.2, True)
    """
    s = Settings(
        prior=prior,
        delta=delta,
        method=method,
        n_bins=n_bins,
        bandwidth=bandwidth,
        seed=seed,
        n_mc=n_mc,
    )
    if (
        isinstance(min_positives, bool)
        or not isinstance(min_positives, (int, np.integer))
        or min_positives < 1
    ):
        raise ConfigError(f"min_positives must be an integer >= 1; got {min_positives!r}")
    x, y = check_query(scores, labels, min_per_class=MIN_TARGETS_PER_CLASS)
    resolved = resolve_method(x, s.method)
    p = s.prior
    learn, tune, evaluate = stratified_split(
        y, (1 / 3, 1 / 3, 1 / 3), np.random.default_rng([s.seed, 0x6E7])
    )
    model = fit_model(
        x[learn],
        y[learn],
        method=resolved,
        prior=p,
        n_bins=s.n_bins,
        bandwidth=s.bandwidth,
        n_mc=s.n_mc,
        seed=s.seed,
    )

    def posterior_band(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        loc = model.local(x[idx], alpha=s.delta / 2)
        eta = _posterior(loc.d1, loc.d0, p)
        return (
            eta,
            np.minimum(_posterior(loc.lo1, loc.hi0, p), eta),
            np.maximum(_posterior(loc.hi1, loc.lo0, p), eta),
        )

    out: dict[str, float | int | str] = {
        "prior": float(p),
        "delta": float(s.delta),
        "method": resolved,
        "n_learn": int(learn.size),
        "n_tune": int(tune.size),
        "n_eval": int(evaluate.size),
    }

    # PPV: threshold on part 2, evaluation on part 3
    eta_tune, _, _ = posterior_band(tune)
    t_ppv = _ppv_threshold(eta_tune, y[tune], p, min_positives)
    out |= _evaluate("ppv", evaluate, t_ppv, posterior_band, y, p, s.delta)
    # AM and WA: closed-form thresholds, evaluation on parts 2 + 3
    both = np.sort(np.r_[tune, evaluate])
    out |= _evaluate("am", both, p, posterior_band, y, p, s.delta)
    out |= _evaluate("wa", both, 0.5, posterior_band, y, p, s.delta)
    return out


def _evaluate(
    metric: str,
    idx: np.ndarray,
    threshold: float,
    posterior_band: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]],
    y: np.ndarray,
    p: float,
    delta: float,
) -> dict[str, float | int]:
    eta, eta_lo, eta_hi = posterior_band(idx)
    pos = eta >= threshold
    lab = y[idx]
    n1, n0 = int(lab.sum()), int(lab.size - lab.sum())
    k1, k0 = int(pos[lab == 1].sum()), int(pos[lab == 0].sum())
    tpr, fpr = k1 / n1, k0 / n0
    # exact two-sided (1 - delta) bounds for this classifier: delta/2 for TPR and for FPR
    tpr_lo, tpr_hi = float(cp_lower(k1, n1, delta / 4)), float(cp_upper(k1, n1, delta / 4))
    fpr_lo, fpr_hi = float(cp_lower(k0, n0, delta / 4)), float(cp_upper(k0, n0, delta / 4))
    # each target's weight in Experiment 2 with prior p (targets need not be drawn with p)
    w = np.where(lab == 1, p / n1, (1 - p) / n0)
    if metric == "ppv":
        est = _ppv(tpr, fpr, p)
        wp = w[pos].sum()
        lo = float((w * eta_lo)[pos].sum() / wp) if wp > 0 else p
        hi = float((w * eta_hi)[pos].sum() / wp) if wp > 0 else p
        h_lo, h_hi = _ppv(tpr_lo, fpr_hi, p), _ppv(tpr_hi, fpr_lo, p)
        floor = p  # guessing "member" for everyone has PPV p
        extra = {"ppv_n_positive": int(pos.sum())}
    elif metric == "am":
        est = (tpr + 1 - fpr) / 2
        lo = float(np.sum(w * np.where(pos, eta_lo / (2 * p), (1 - eta_hi) / (2 * (1 - p)))))
        hi = float(np.sum(w * np.where(pos, eta_hi / (2 * p), (1 - eta_lo) / (2 * (1 - p)))))
        h_lo, h_hi = (tpr_lo + 1 - fpr_hi) / 2, (tpr_hi + 1 - fpr_lo) / 2
        floor = 0.5
        extra = {}
    else:  # wa, increasing in accuracy
        est = _wa(p * tpr + (1 - p) * (1 - fpr))
        lo = _wa(float(np.sum(w * np.where(pos, eta_lo, 1 - eta_hi))))
        hi = _wa(float(np.sum(w * np.where(pos, eta_hi, 1 - eta_lo))))
        h_lo = _wa(p * tpr_lo + (1 - p) * (1 - fpr_hi))
        h_hi = _wa(p * tpr_hi + (1 - p) * (1 - fpr_lo))
        floor = _wa(max(p, 1 - p))  # the better constant guess
        extra = {}
    return {
        metric: float(est),
        f"{metric}_lower": float(min(max(lo, 0.0), 1.0)),
        f"{metric}_upper": float(min(max(hi, 0.0), 1.0)),
        # the optimal attacker is at least as good as a constant guess: floor the valid bound
        f"{metric}_holdout_lower": float(max(h_lo, floor)),
        f"{metric}_holdout_upper": float(min(h_hi, 1.0)),
        f"{metric}_threshold": float(threshold),
        **extra,
    }
