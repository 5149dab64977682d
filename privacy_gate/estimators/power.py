"""What a release with no leakage would score at this number of targets: the reference every rule
result carries, so a reviewer can tell "leaky" from "too few targets to tell".

For the ROC metrics these are one-sided 95% quantiles under the null (members and non-members
exchangeable). For MACE they come from the estimator's own figures: the label-permutation bias
(the plug-in estimate's mean under no leakage) plus or minus the McDiarmid radius.

>>> round(null_reference("auc", {"n_members": 500, "n_non_members": 500}), 3)
0.53
>>> round(null_reference("mace.advantage_upper", {"mace.bias": 0.05, "mace.radius": 0.12}), 2)
0.17
>>> round(targets_needed(threshold=0.2, delta=0.05))
738
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

from scipy.stats import hypergeom

from privacy_gate.estimators.exposure import no_signal_share_upper

Z95 = 1.6448536269514722  # one-sided 95% normal quantile
KS95 = math.sqrt(-math.log(0.05) / 2)  # one-sided 95% Kolmogorov-Smirnov constant


def null_reference(metric: str, figures: Mapping[str, float]) -> float | None:
    """The no-signal reference of ``metric`` given one attack's ``figures`` (``n_members``,
    ``n_non_members``, ``mace.bias``, ``mace.radius``) or the exposure figures (``exposed.tested``,
    ``exposed.calibration``, ``exposed.level``, ``exposed.delta``); None when it cannot be told."""
    if metric == "exposed.share_upper" and figures.get("exposed.tested"):
        return no_signal_share_upper(
            int(figures["exposed.tested"]),
            int(figures.get("exposed.calibration") or figures["exposed.tested"]),
            level=figures["exposed.level"],
            delta=figures["exposed.delta"],
        )
    n1, n0 = figures.get("n_members"), figures.get("n_non_members")
    bias, radius = figures.get("mace.bias"), figures.get("mace.radius")
    if metric == "auc" and n1 and n0:
        return 0.5 + Z95 * math.sqrt((n1 + n0 + 1) / (12.0 * n1 * n0))
    if metric.startswith("tpr_at_fpr_") and n1 and n0:
        return tpr_null_quantile(float(metric.removeprefix("tpr_at_fpr_")), int(n1), int(n0))
    if metric == "advantage" and n1 and n0:
        return KS95 * math.sqrt((n1 + n0) / (n1 * n0))
    if metric.startswith("mace.") and radius is not None and bias is not None:
        return {
            "mace.advantage_upper": bias + radius,
            "mace.advantage_lower": max(0.0, bias - radius),
            "mace.advantage": bias,
        }.get(metric)
    return None


@functools.lru_cache(maxsize=4096)
def tpr_null_quantile(fpr: float, n1: int, n0: int, level: float = 0.05) -> float:
    """95% quantile of TPR at ``fpr`` when members and non-members are exchangeable.

    With ``m = floor(fpr * n0)`` non-members allowed above the threshold, the members above it
    are the members drawn before the (m+1)-th non-member in a random order of all targets (a
    negative hypergeometric count): P(X >= k) = P(at most m non-members among the top k + m).
    At few non-members this is far above ``fpr`` (with n1 = n0 = 100 and fpr 0.001 the three
    highest scores are all members one time in eight).

    >>> tpr_null_quantile(0.001, 100, 100), round(tpr_null_quantile(0.01, 5000, 5000), 4)
    (0.05, 0.0138)
    """
    m = int(math.floor(fpr * n0 + 1e-9))
    lo, hi = 1, n1  # P(X >= k) falls with k: the smallest k with P <= level, by bisection
    if hypergeom.cdf(m, n0 + n1, n0, hi + m) > level:
        return 1.0
    while lo < hi:
        mid = (lo + hi) // 2
        if hypergeom.cdf(m, n0 + n1, n0, mid + m) <= level:
            hi = mid
        else:
            lo = mid + 1
    return lo / n1


def targets_needed(*, threshold: float, delta: float) -> float:
    """Targets (members + non-members) for the MACE radius sqrt(2/N log(2/delta)) to be half of
    an upper-bound threshold, so that a release with no leakage can pass it."""
    return 8.0 * math.log(2.0 / delta) / threshold**2


#: The MACE radius the default number of targets aims for (see ``default_targets_per_class``).
TARGET_RADIUS = 0.015


def default_targets_per_class(
    *, delta: float, prior: float = 0.5, radius: float = TARGET_RADIUS
) -> int:
    """Targets per class (members = non-members = n) at which the McDiarmid radius of the MACE
    advantage, sqrt(2 (p^2 + (1-p)^2) / n log(2/delta)), is ``radius``. Releases with more holdout
    records are judged on this many non-members (sampled reproducibly): the radius would shrink
    only with the square root of the extra cost.

    >>> default_targets_per_class(delta=0.05)
    16396
    """
    return math.ceil(2.0 * (prior**2 + (1 - prior) ** 2) * math.log(2.0 / delta) / radius**2)


def mace_radius(n_targets: int, delta: float) -> float:
    return math.sqrt(2.0 / n_targets * math.log(2.0 / delta))
