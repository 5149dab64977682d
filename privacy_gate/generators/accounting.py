"""Privacy accounting for the DP generators: the one module that knows the conversions.

- (epsilon, delta)-DP <-> rho-zCDP via the tight conversion of Canonne, Kamath & Steinke (2020,
  Prop. 12), as used by MST's reference implementation.
- Mechanism costs: Gaussian (rho = sensitivity^2 / (2 sigma^2)), Laplace (epsilon = sensitivity /
  scale, pure DP), exponential mechanism (epsilon-DP; as zCDP it costs epsilon^2 / 8 by the
  bounded-range analysis of Cesar & Rogers 2021).
- Accountants record every data-dependent step in a ledger and refuse to overspend, so a test can
  check that what a fit spent equals what it was given.

>>> rho = cdp_rho(1.0, 1e-9)
>>> round(rho, 5)
0.01497
>>> abs(cdp_eps(rho, 1e-9) - 1.0) < 1e-6
True
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from privacy_gate.errors import ConfigError, PrivacyGateError

_TOL = 1e-9  # relative slack for floating-point sums of budget shares


def cdp_delta(rho: float, eps: float) -> float:
    """Smallest delta such that rho-zCDP implies (eps, delta)-DP (CKS 2020, Prop. 12)."""
    if rho < 0 or eps < 0:
        raise ValueError("rho and eps must be >= 0")
    if rho == 0:
        return 0.0
    # minimise over alpha > 1: exp((a-1)(a*rho - eps) + a*log1p(-1/a)) / (a-1); convex in a
    amin, amax = 1.01, (eps + 1) / (2 * rho) + 2
    for _ in range(200):  # bisection: 200 halvings are far below float resolution
        alpha = (amin + amax) / 2
        derivative = (2 * alpha - 1) * rho - eps + math.log1p(-1.0 / alpha)
        if derivative < 0:
            amin = alpha
        else:
            amax = alpha
    delta = math.exp((alpha - 1) * (alpha * rho - eps) + alpha * math.log1p(-1 / alpha)) / (
        alpha - 1.0
    )
    return min(delta, 1.0)


def cdp_eps(rho: float, delta: float) -> float:
    """Smallest eps such that rho-zCDP implies (eps, delta)-DP."""
    _check_delta(delta)
    if rho < 0:
        raise ValueError("rho must be >= 0")
    lo, hi = (
        0.0,
        rho + 2 * math.sqrt(rho * math.log(1 / delta)),
    )  # the classical bound is an upper end
    for _ in range(200):
        mid = (lo + hi) / 2
        if cdp_delta(rho, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=256)  # MAMA-MIA shadow runs ask for the same conversion many times
def cdp_rho(eps: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (eps, delta)-DP."""
    _check_delta(delta)
    if eps <= 0:
        raise ConfigError(f"epsilon must be > 0, got {eps}")
    lo, hi = 0.0, eps + 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if cdp_delta(mid, eps) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


def _check_delta(delta: float) -> None:
    if not 0 < delta < 1:
        raise ConfigError(f"delta must be in (0, 1), got {delta}")


def gaussian_sigma(rho: float, sensitivity: float = 1.0) -> float:
    """Noise scale of the Gaussian mechanism that costs exactly ``rho`` (zCDP)."""
    if rho <= 0:
        raise ValueError("rho must be > 0")
    return sensitivity / math.sqrt(2 * rho)


def exponential_epsilon_for_rho(rho: float) -> float:
    """epsilon of an exponential mechanism that costs exactly ``rho`` under zCDP (rho = eps^2/8)."""
    return math.sqrt(8 * rho)


@dataclass(frozen=True)
class Charge:
    step: str
    mechanism: str
    cost: float  # rho for zCDP accountants, epsilon for pure-DP ones


@dataclass
class _Accountant:
    total: float
    unit: str = ""
    ledger: list[Charge] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.total > 0 or not math.isfinite(self.total):
            raise ConfigError(
                f"privacy budget ({self.unit}) must be a positive finite number, got {self.total}"
            )

    @property
    def spent(self) -> float:
        return math.fsum(c.cost for c in self.ledger)

    @property
    def remaining(self) -> float:
        return max(0.0, self.total - self.spent)

    def _charge(self, step: str, mechanism: str, cost: float) -> None:
        if cost < 0:
            raise ValueError("a charge must be >= 0")
        if self.spent + cost > self.total * (1 + _TOL):
            raise PrivacyGateError(
                f"privacy budget exceeded at step '{step}': spent {self.spent:.6g} + {cost:.6g} > "
                f"{self.total:.6g} {self.unit} (a bug in the generator's budget split)"
            )
        self.ledger.append(Charge(step=step, mechanism=mechanism, cost=cost))

    def is_exhausted(self) -> bool:
        return math.isclose(self.spent, self.total, rel_tol=1e-6)

    def summary(self) -> dict[str, float]:
        return {
            "total": self.total,
            "spent": self.spent,
            **{f"step.{c.step}": c.cost for c in self.ledger},
        }


class ZCDPAccountant(_Accountant):
    """rho-zCDP budget (MST, Private-GSD). Build from (epsilon, delta) with ``from_dp``."""

    def __init__(self, rho: float):
        super().__init__(total=rho, unit="rho (zCDP)")

    @classmethod
    def from_dp(cls, epsilon: float, delta: float) -> ZCDPAccountant:
        return cls(cdp_rho(epsilon, delta))

    def spend(self, rho: float, *, step: str, mechanism: str = "composition") -> None:
        self._charge(step, mechanism, rho)

    def gaussian(self, sigma: float, *, step: str, sensitivity: float = 1.0) -> None:
        """Charge one Gaussian measurement with L2 ``sensitivity`` and noise ``sigma``."""
        self._charge(step, "gaussian", sensitivity**2 / (2 * sigma**2))

    def exponential(self, epsilon: float, *, step: str) -> None:
        """Charge one epsilon-DP exponential mechanism (bounded range: eps^2/8 zCDP)."""
        self._charge(step, "exponential", epsilon**2 / 8)


class PureDPAccountant(_Accountant):
    """Pure epsilon-DP budget (PrivBayes): sequential composition adds epsilons."""

    def __init__(self, epsilon: float):
        super().__init__(total=epsilon, unit="epsilon (pure DP)")

    def spend(self, epsilon: float, *, step: str, mechanism: str = "composition") -> None:
        self._charge(step, mechanism, epsilon)

    def laplace(self, scale: float, *, step: str, sensitivity: float = 1.0) -> None:
        self._charge(step, "laplace", sensitivity / scale)

    def exponential(self, epsilon: float, *, step: str) -> None:
        self._charge(step, "exponential", epsilon)
