"""Statistics of a DP audit: from the scores of a distinguishing game to lower bounds on epsilon
and on the Gaussian-DP mu, and the claimed curves they are read against.

The game (``studies/dp_audit.py``) fits a generator R times on D and R times on D + {target} and
scores each run. A threshold on the score is a test "the target was in"; its false-positive rate
(FPR) and false-negative rate (FNR) obey, for any (epsilon, delta)-DP mechanism,

    FNR >= max(0, 1 - delta - e^eps FPR, e^-eps (1 - delta - FPR))          (Kairouz et al. 2015)

so Clopper-Pearson upper bounds on both rates give a lower bound on epsilon that holds with the
stated confidence (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021). The threshold is chosen on
*separate* runs, so the bound is not a maximum over thresholds of the evaluation runs.

For mu-GDP (Dong, Roth & Su 2022) the trade-off curve is FNR = Phi(Phi^-1(1 - FPR) - mu); one
(FPR, FNR) point gives mu = Phi^-1(1 - FPR) - Phi^-1(FNR). The claim's mu: a zCDP-accounted
generator (MST, Private-GSD) spending rho on Gaussian measurements is at most sqrt(2 rho)-GDP for
its Gaussian part (the composition of Gaussians of sigma_i is sqrt(sum 1/sigma_i^2)-GDP and rho =
sum 1/(2 sigma_i^2)), which is how the dpmm audit states its "implied mu"; for a generator claiming
only (epsilon, delta) we take the largest mu whose GDP curve lies above the (epsilon, delta) curve
(``gdp_mu_for_dp``).

With R runs per side the bound saturates: even a perfect attack (no errors) certifies at most
epsilon ~ log(R / log(1 / alpha)) -- about 5.9 for R = 1000 at 95% -- so a large claim can only be
shown violated with many runs (``max_certifiable_epsilon``).

>>> round(gdp_mu(0.5, 0.5), 6)
0.0
>>> lo, hi = clopper_pearson(0, 10, alpha=0.05)
>>> lo, round(hi, 4)
(0.0, 0.3085)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt
from scipy import special, stats


def cp_upper(k: int, n: int, *, alpha: float) -> float:
    """One-sided (1 - alpha) Clopper-Pearson upper bound on a rate with k events in n trials."""
    _check_counts(k, n, alpha)
    return 1.0 if k >= n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))


def cp_lower(k: int, n: int, *, alpha: float) -> float:
    """One-sided (1 - alpha) Clopper-Pearson lower bound."""
    _check_counts(k, n, alpha)
    return 0.0 if k <= 0 else float(stats.beta.ppf(alpha, k, n - k + 1))


def clopper_pearson(k: int, n: int, *, alpha: float) -> tuple[float, float]:
    """Two-sided (1 - alpha) Clopper-Pearson interval (alpha/2 on each side)."""
    return cp_lower(k, n, alpha=alpha / 2), cp_upper(k, n, alpha=alpha / 2)


def _check_counts(k: int, n: int, alpha: float) -> None:
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def epsilon_lower_bound(fpr: float, fnr: float, *, delta: float) -> float:
    """The smallest epsilon an (epsilon, delta)-DP mechanism needs to reach (fpr, fnr); 0 if any."""
    best = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        num = 1.0 - delta - b
        if num <= 0:
            continue
        best = max(best, math.inf if a <= 0 else math.log(num / a))
    return best


def dp_tradeoff(fpr: npt.ArrayLike, *, epsilon: float, delta: float) -> npt.NDArray[np.float64]:
    """The lowest FNR (epsilon, delta)-DP allows at each FPR."""
    a = np.asarray(fpr, dtype=float)
    # numpy types a ufunc's reduce as Any: the maximum of three float arrays
    return cast(
        "npt.NDArray[np.float64]",
        np.maximum.reduce(
            [
                np.zeros_like(a),
                1 - delta - math.exp(epsilon) * a,
                math.exp(-epsilon) * (1 - delta - a),
            ]
        ),
    )


def dp_auc_bound(epsilon: float, delta: float = 0.0) -> float:
    """The largest ROC AUC any test of one record's membership can reach against an (epsilon,
    delta)-DP mechanism: one minus the area under ``dp_tradeoff``, which is
    ``1 - (1 - delta)^2 / (1 + e^eps)`` (the two branches of the curve meet at
    ``FPR = (1 - delta) / (1 + e^eps)`` and their triangles' areas sum to that).

    The bound is for the neighbouring relation the guarantee is stated for. A members-versus-
    non-members AUC compares a record in the data with one swapped out for it (replace-one); an
    add/remove guarantee gives that comparison (2 eps, (1 + e^eps) delta) by group privacy.

    >>> round(dp_auc_bound(0.0), 6), round(dp_auc_bound(1.0), 4), dp_auc_bound(50.0) > 0.999999
    (0.5, 0.7311, True)
    """
    if epsilon < 0 or not 0 <= delta <= 1:
        raise ValueError(f"need epsilon >= 0 and delta in [0, 1], got ({epsilon}, {delta})")
    return float(1.0 - (1.0 - delta) ** 2 * special.expit(-epsilon))


def gdp_tradeoff(fpr: npt.ArrayLike, *, mu: float) -> npt.NDArray[np.float64]:
    """The lowest FNR mu-GDP allows at each FPR: Phi(Phi^-1(1 - FPR) - mu)."""
    # scipy is untyped (Any); a 0-d ``fpr`` gives a numpy float scalar
    return cast(
        "npt.NDArray[np.float64]",
        stats.norm.cdf(stats.norm.ppf(1 - np.asarray(fpr, dtype=float)) - mu),
    )


def gdp_mu(fpr: float, fnr: float) -> float:
    """The mu of the GDP curve through (fpr, fnr), at least 0 (inf for a perfect test)."""
    if fpr <= 0 and fnr <= 0:
        return math.inf
    if fpr >= 1 or fnr >= 1:
        return 0.0
    return max(0.0, float(stats.norm.ppf(1 - fpr) - stats.norm.ppf(fnr)))


def gdp_delta(epsilon: float, mu: float) -> float:
    """delta(epsilon) of mu-GDP (Dong, Roth & Su 2022, Corollary 2.13)."""
    if mu <= 0:
        return 0.0
    return float(
        stats.norm.cdf(-epsilon / mu + mu / 2)
        - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2)
    )


def gdp_mu_for_dp(epsilon: float, delta: float) -> float:
    """The largest mu such that mu-GDP implies (epsilon, delta)-DP (its curve dominates)."""
    if epsilon <= 0 or not 0 < delta < 1:
        raise ValueError(f"need epsilon > 0 and delta in (0, 1), got ({epsilon}, {delta})")
    lo, hi = 0.0, 1.0
    while gdp_delta(epsilon, hi) <= delta:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gdp_delta(epsilon, mid) <= delta else (lo, mid)
    return lo


def zcdp_mu(rho: float) -> float:
    """mu of a Gaussian mechanism spending all of rho (rho = mu^2 / 2)."""
    return math.sqrt(2 * rho)


def max_certifiable_epsilon(runs: int, *, alpha: float, delta: float = 0.0) -> float:
    """The largest epsilon lower bound R runs per side can give (a test with no errors at all)."""
    top = cp_upper(0, runs, alpha=alpha / 2)
    return epsilon_lower_bound(top, top, delta=delta)


@dataclass(frozen=True)
class AuditBound:
    """What one score's runs prove: the threshold (chosen on the selection runs), the evaluation
    runs' error counts, and the bounds at confidence 1 - alpha (alpha/2 on each rate)."""

    threshold: float
    false_positives: int
    negatives: int
    false_negatives: int
    positives: int
    alpha: float
    delta: float
    epsilon_lower: float
    mu_lower: float
    mu_estimate: float
    mu_upper: float

    def __post_init__(self) -> None:
        if not (
            0 <= self.false_positives <= self.negatives
            and 0 <= self.false_negatives <= self.positives
        ):
            raise ValueError("error counts must lie within the run counts")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must be in (0, 1)")

    @property
    def fpr(self) -> float:
        return self.false_positives / self.negatives

    @property
    def fnr(self) -> float:
        return self.false_negatives / self.positives

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in self.__dict__.items()} | {"fpr": self.fpr, "fnr": self.fnr}


def _cp_upper_many(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    k = np.asarray(k)
    return np.where(k >= n, 1.0, stats.beta.ppf(1 - alpha, k + 1, np.maximum(n - k, 1)))


def _errors(
    score_in: np.ndarray, score_out: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(false positives, false negatives) of "in iff score >= t" for every threshold in ``t``."""
    fp = score_out.size - np.searchsorted(np.sort(score_out), t, side="left")
    fn = np.searchsorted(np.sort(score_in), t, side="left")
    return fp, fn


def _eps_many(fpr: np.ndarray, fnr: np.ndarray, delta: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(1 - delta - fnr > 0, np.log(np.maximum(1 - delta - fnr, 1e-300) / fpr), 0.0)
        b = np.where(1 - delta - fpr > 0, np.log(np.maximum(1 - delta - fpr, 1e-300) / fnr), 0.0)
    return np.maximum(0.0, np.maximum(a, b))


def audit_bound(
    *,
    select_in: np.ndarray,
    select_out: np.ndarray,
    eval_in: np.ndarray,
    eval_out: np.ndarray,
    delta: float,
    alpha: float = 0.05,
) -> AuditBound:
    """Threshold "in iff score >= t" chosen on the selection runs (the best CP epsilon bound, ties
    -- e.g. all 0 with few runs -- to the best point estimate of mu), then counted on the
    evaluation runs only."""
    sel_in, sel_out = np.asarray(select_in, float), np.asarray(select_out, float)
    ev_in, ev_out = np.asarray(eval_in, float), np.asarray(eval_out, float)
    if min(sel_in.size, sel_out.size, ev_in.size, ev_out.size) < 1:
        raise ValueError(
            "every split of the runs needs at least one run with and one without the target"
        )
    t = np.unique(np.concatenate([sel_in, sel_out, [np.inf]]))
    fp, fn = _errors(sel_in, sel_out, t)
    eps = _eps_many(
        _cp_upper_many(fp, sel_out.size, alpha / 2),
        _cp_upper_many(fn, sel_in.size, alpha / 2),
        delta,
    )
    mu = stats.norm.ppf(1 - (fp + 0.5) / (sel_out.size + 1)) - stats.norm.ppf(
        (fn + 0.5) / (sel_in.size + 1)
    )
    best = float(t[np.lexsort((mu, eps))[-1]])
    fp_e, fn_e = (int(v[0]) for v in _errors(ev_in, ev_out, np.array([best])))
    n_out, n_in = ev_out.size, ev_in.size
    fpr_hi, fnr_hi = cp_upper(fp_e, n_out, alpha=alpha / 2), cp_upper(fn_e, n_in, alpha=alpha / 2)
    mu_lo = gdp_mu(fpr_hi, fnr_hi)
    mu_hi = gdp_mu(cp_lower(fp_e, n_out, alpha=alpha / 2), cp_lower(fn_e, n_in, alpha=alpha / 2))
    mu_hat = gdp_mu(
        (fp_e + 0.5) / (n_out + 1), (fn_e + 0.5) / (n_in + 1)
    )  # continuity-corrected point
    return AuditBound(
        threshold=best,
        false_positives=fp_e,
        negatives=n_out,
        false_negatives=fn_e,
        positives=n_in,
        alpha=alpha,
        delta=delta,
        epsilon_lower=epsilon_lower_bound(fpr_hi, fnr_hi, delta=delta),
        mu_lower=mu_lo,
        mu_estimate=mu_hat,
        mu_upper=mu_hi,
    )


def mean_shift_mu(
    score_in: np.ndarray, score_out: np.ndarray, *, alpha: float = 0.05
) -> tuple[float, float, float]:
    """(estimate, low, high) of mu for a score that is Gaussian with equal variance on both sides
    (the white-box log-likelihood ratio of Gaussian measurements): the standardised mean shift,
    with a normal-approximation interval. Not a bound when the score is not Gaussian."""
    a, b = np.asarray(score_in, float), np.asarray(score_out, float)
    if a.size < 2 or b.size < 2:
        raise ValueError("need at least two runs on each side")
    pooled = math.sqrt(
        ((a.size - 1) * a.var(ddof=1) + (b.size - 1) * b.var(ddof=1)) / (a.size + b.size - 2)
    )
    if pooled == 0:
        return (math.inf, math.inf, math.inf) if a.mean() > b.mean() else (0.0, 0.0, 0.0)
    d = (a.mean() - b.mean()) / pooled
    se = math.sqrt((a.size + b.size) / (a.size * b.size) + d * d / (2 * (a.size + b.size)))
    z = float(stats.norm.ppf(1 - alpha / 2))
    return float(d), float(d - z * se), float(d + z * se)


def one_run_p_value(
    *, correct: int, guesses: int, epsilon: float, delta: float = 0.0, canaries: int = 0
) -> float:
    """P[>= ``correct`` of ``guesses`` right] under the null hypothesis "(epsilon, delta)-DP"
    (Steinke, Nasr & Jagielski, NeurIPS 2023, Theorem 5.2): with f(v) = P[Binomial(r, q) >= v],
    q = e^eps / (1 + e^eps), the bound is f(v) + 2 m delta max_{1 <= i <= v} (f(v - i) - f(v)) / i,
    m the number of canaries (each included independently with probability 1/2)."""
    if guesses < 1 or not 0 <= correct <= guesses:
        raise ValueError(f"need 0 <= correct <= guesses and guesses >= 1, got {correct}/{guesses}")
    if delta > 0 and canaries < guesses:
        raise ValueError(
            f"the delta term needs the number of canaries (>= guesses), got {canaries}"
        )
    q = 1 / (1 + math.exp(-epsilon))
    tail = float(stats.binom.sf(correct - 1, guesses, q))
    if delta <= 0 or correct == 0:
        return min(1.0, tail)
    i = np.arange(1, correct + 1)
    below = np.cumsum(stats.binom.pmf(correct - i, guesses, q))  # P[v - i <= W < v]
    return min(1.0, tail + 2 * canaries * delta * float(np.max(below / i)))


def one_run_epsilon_lower_bound(
    *, correct: int, guesses: int, alpha: float = 0.05, delta: float = 0.0, canaries: int = 0
) -> float:
    """Steinke, Nasr & Jagielski (NeurIPS 2023): the largest epsilon whose null hypothesis
    "(epsilon, delta)-DP" the count of correct guesses rejects at level alpha (0 when none is).
    Pure DP (delta 0): correct guesses are dominated by Binomial(guesses, e^eps / (1 + e^eps));
    delta > 0 adds the paper's delta term (``one_run_p_value``), which needs ``canaries``."""

    def p_value(eps: float) -> float:
        return one_run_p_value(
            correct=correct, guesses=guesses, epsilon=eps, delta=delta, canaries=canaries
        )

    if p_value(0.0) >= alpha:
        return 0.0
    lo, hi = 0.0, 1.0
    while p_value(hi) < alpha and hi < 100:
        lo, hi = hi, hi * 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p_value(mid) < alpha else (lo, mid)
    return lo
