"""The differential-privacy ceiling of membership risk (MACE, Liu et al., Theorem 4).

If the generator is epsilon-DP and the records are independent, every query of its output
satisfies |log P(q|m=1) / P(q|m=0)| <= epsilon, hence for every record

    |f_p(z)| <= max(|tanh((eps + lambda)/2)|, |tanh((-eps + lambda)/2)|),  lambda = log(p/(1-p)),

and so does the optimal advantage E|f_p(Z)| (Lemma 9). At p = 0.5 this is tanh(eps/2).

An empirical *lower* bound above this ceiling cannot be sampling noise (at the bound's
confidence): either the DP implementation is broken or the records are not independent (the
same person or household in train and holdout, Humphries et al.). It must be reported, never
silenced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

from privacy_gate.errors import ConfigError

__all__ = ["DPComparison", "compare_to_dp", "dp_advantage_bound", "dp_risk_bound"]


def _check(epsilon: float, p: float) -> None:
    if (
        isinstance(epsilon, bool)
        or not isinstance(epsilon, Real)
        or math.isnan(epsilon)
        or epsilon < 0
    ):
        raise ConfigError(
            f"epsilon must be a non-negative number (the generator's DP budget); got {epsilon!r}"
        )
    if isinstance(p, bool) or not isinstance(p, Real) or not 0.0 < p < 1.0:
        raise ConfigError(f"the prior p must be strictly between 0 and 1; got {p!r}")


def dp_risk_bound(epsilon: float, p: float = 0.5) -> float:
    """Largest individual risk |f_p| an epsilon-DP generator allows at prior ``p``.

    >>> round(dp_risk_bound(1.0), 3)  # tanh(1/2)
    0.462
    >>> round(dp_risk_bound(0.0, 0.2), 3)  # no leakage: the constant guess, |2p - 1|
    0.6
    """
    _check(epsilon, p)
    if math.isinf(epsilon):
        return 1.0
    lam = math.log(p / (1 - p))
    return max(abs(math.tanh((epsilon + lam) / 2)), abs(math.tanh((-epsilon + lam) / 2)))


def dp_advantage_bound(epsilon: float, p: float = 0.5) -> float:
    """Largest optimal membership advantage an epsilon-DP generator allows (tanh(eps/2) at p = 0.5).

    >>> round(dp_advantage_bound(2.0), 4)
    0.7616
    """
    return dp_risk_bound(epsilon, p)


@dataclass(frozen=True)
class DPComparison:
    """An empirical advantage lower bound against the DP ceiling; ``exceeds`` is True when
    ``lower > bound`` (broken DP implementation or dependent records)."""

    bound: float
    lower: float
    exceeds: bool
    message: str
    epsilon: float
    prior: float

    def __post_init__(self) -> None:
        _check(self.epsilon, self.prior)
        if not (0.0 <= self.bound <= 1.0 and 0.0 <= self.lower <= 1.0 + 1e-9):
            raise ConfigError("DPComparison.bound and .lower must lie in [0, 1]")
        if self.exceeds != (self.lower > self.bound):
            raise ConfigError("DPComparison.exceeds must equal lower > bound")


def compare_to_dp(estimate: object, *, epsilon: float, p: float | None = None) -> DPComparison:
    """Compare an empirical lower bound with the DP ceiling at prior ``p``.

    ``estimate``: an :class:`~privacy_gate.estimators.mace.advantage.AdvantageEstimate` (its
    ``lower`` and, when ``p`` is omitted, its prior) or a number taken as the lower bound (``p``
    defaults to 0.5). Per-record risks are deliberately not accepted: the largest of N pointwise
    lower bounds is not a (1 - delta) bound (multiple comparisons), so it would cry wolf.

    >>> compare_to_dp(0.62, epsilon=1.0).exceeds
    True
    """
    lower, est_prior = _lower_of(estimate)
    if p is None:
        p = 0.5 if est_prior is None else est_prior
    elif est_prior is not None and abs(p - est_prior) > 1e-12:
        raise ConfigError(
            f"the estimate was made at prior {est_prior:g} but p={p:g} was given; "
            "compare at the prior the estimate used"
        )
    bound = dp_risk_bound(epsilon, p)
    exceeds = lower > bound
    if exceeds:
        message = (
            f"the empirical advantage lower bound {lower:.4f} exceeds the DP bound {bound:.4f} "
            f"(epsilon={epsilon:g}, p={p:g}): the DP implementation or the independence "
            "assumption (dependent records) is broken"
        )
    else:
        message = (
            f"the empirical advantage lower bound {lower:.4f} is within the DP bound {bound:.4f} "
            f"(epsilon={epsilon:g}, p={p:g})"
        )
    return DPComparison(
        bound=bound,
        lower=lower,
        exceeds=exceeds,
        message=message,
        epsilon=float(epsilon),
        prior=float(p),
    )


def _lower_of(estimate: object) -> tuple[float, float | None]:
    # an AdvantageEstimate (mace.advantage, which imports this module), recognised by its fields
    if hasattr(estimate, "lower") and hasattr(estimate, "prior") and not isinstance(estimate, Real):
        return float(estimate.lower), estimate.prior
    if (
        isinstance(estimate, Real)
        and not isinstance(estimate, bool)
        and 0.0 <= float(estimate) <= 1.0
    ):
        return float(estimate), None
    raise ConfigError(
        "compare_to_dp needs an AdvantageEstimate or an advantage lower bound in [0, 1]"
    )
