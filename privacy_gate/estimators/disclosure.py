"""Disclosure risk from two success rates (Giomi et al., "A Unified Framework for Quantifying
Privacy Risk in Synthetic Data", PETS 2023): an attack that uses the synthetic data succeeds on
``n_train`` training records ``k_train`` times and on ``n_control`` control records (real records
the generator never saw) ``k_control`` times; the risk is the share of the attacker's remaining
uncertainty that the training records lose over the control records,

    risk = (s_train - s_control) / (1 - s_control).

Intervals: each rate gets a Wilson score interval at level ``1 - alpha/2`` (valid at small n,
never outside [0, 1]); the risk is increasing in ``s_train`` and (for ``s_train <= 1``) not
increasing in ``s_control``, so the image of the rectangle of the two intervals is
``[f(train_lo, control_hi), f(train_hi, control_lo)]``, which holds the true risk whenever both
rate intervals hold theirs: coverage at least ``1 - alpha`` by Bonferroni. A control rate of 1
(nothing left to learn; e.g. a constant secret) is handled without dividing by zero: the risk is
0 if the training rate is 1 too, else -1; every figure is clipped to [-1, 1], so a full copy or a
constant column never fails (anonymeter's "math domain error").

>>> r = disclosure_risk(k_train=90, n_train=100, k_control=10, n_control=100)
>>> round(r.risk, 3), round(r.risk_lower, 3), round(r.risk_upper, 3)
(0.889, 0.769, 0.946)
>>> disclosure_risk(k_train=100, n_train=100, k_control=100, n_control=100).risk
0.0
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

#: the intervals' level: the risk interval covers with probability at least 1 - ALPHA
ALPHA = 0.05
INTERVAL_METHOD = (
    "Wilson score interval per success rate at 97.5%; risk interval = the risk at the corners of "
    "the two rate intervals (coverage >= 95% by Bonferroni)"
)


@functools.lru_cache(maxsize=64)
def _z(alpha: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2))


def wilson_interval(k: float, n: int, *, alpha: float = ALPHA / 2) -> tuple[float, float]:
    """Two-sided Wilson score interval of a binomial rate at level ``1 - alpha``.

    >>> [round(x, 4) for x in wilson_interval(0, 20, alpha=0.05)]
    [0.0, 0.1611]
    """
    if n <= 0:
        return 0.0, 1.0
    z = _z(alpha)
    p = min(max(k / n, 0.0), 1.0)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _risk(train: float, control: float) -> float:
    if control >= 1.0:
        return 0.0 if train >= 1.0 else -1.0
    return min(1.0, max(-1.0, (train - control) / (1.0 - control)))


@dataclass(frozen=True)
class DisclosureRisk:
    """One attack's success counts and the risk with its interval (see the module docstring)."""

    k_train: float
    n_train: int
    k_control: float
    n_control: int
    alpha: float = ALPHA
    k_baseline: float | None = None  # the naive attacker's successes on the training records

    def __post_init__(self) -> None:
        if self.n_train < 0 or self.n_control < 0:
            raise ValueError("counts of attacks must be non-negative")
        if not (
            0 <= self.k_train <= max(self.n_train, 0)
            and 0 <= self.k_control <= max(self.n_control, 0)
        ):
            raise ValueError("successes must lie between 0 and the number of attacks")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must lie in (0, 1)")

    @property
    def train_rate(self) -> float:
        return self.k_train / self.n_train if self.n_train else 0.0

    @property
    def control_rate(self) -> float:
        return self.k_control / self.n_control if self.n_control else 0.0

    @property
    def baseline_rate(self) -> float | None:
        return (
            None if self.k_baseline is None or not self.n_train else self.k_baseline / self.n_train
        )

    @property
    def risk(self) -> float:
        return _risk(self.train_rate, self.control_rate)

    @property
    def risk_lower(self) -> float:
        lo_t, _ = wilson_interval(self.k_train, self.n_train, alpha=self.alpha / 2)
        _, hi_c = wilson_interval(self.k_control, self.n_control, alpha=self.alpha / 2)
        return min(self.risk, _risk(lo_t, hi_c))

    @property
    def risk_upper(self) -> float:
        _, hi_t = wilson_interval(self.k_train, self.n_train, alpha=self.alpha / 2)
        lo_c, _ = wilson_interval(self.k_control, self.n_control, alpha=self.alpha / 2)
        return max(self.risk, _risk(hi_t, lo_c))

    def figures(self) -> dict[str, float]:
        """Flat figures: ``risk``, ``risk_lower``, ``risk_upper``, the rates and the counts."""
        out = {
            "risk": self.risk,
            "risk_lower": self.risk_lower,
            "risk_upper": self.risk_upper,
            "train_rate": self.train_rate,
            "control_rate": self.control_rate,
            "n_train": float(self.n_train),
            "n_control": float(self.n_control),
        }
        if self.baseline_rate is not None:
            out["baseline_rate"] = self.baseline_rate
        return out


def disclosure_risk(
    *,
    k_train: float,
    n_train: int,
    k_control: float,
    n_control: int,
    alpha: float = ALPHA,
    k_baseline: float | None = None,
) -> DisclosureRisk:
    """The :class:`DisclosureRisk` of the given success counts (control counts may be fractional
    after a size correction; they are capped at ``n_control``)."""
    return DisclosureRisk(
        k_train=float(k_train),
        n_train=int(n_train),
        k_control=float(min(max(k_control, 0.0), n_control)),
        n_control=int(n_control),
        alpha=alpha,
        k_baseline=None if k_baseline is None else float(k_baseline),
    )


def holm_alpha(alpha: float, m: int) -> float:
    """Bonferroni level per group of a family of ``m`` (the simple, always-valid form of the
    audit's Holm correction for intervals: an interval per group at ``alpha / m``)."""
    return alpha / max(int(m), 1)


__all__ = [
    "ALPHA",
    "INTERVAL_METHOD",
    "DisclosureRisk",
    "disclosure_risk",
    "holm_alpha",
    "wilson_interval",
]
