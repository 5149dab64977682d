"""MACE: the optimal membership advantage of a query, with confidence bounds, and per-record risk
(Liu et al.).

One module because it is the public MACE API: the estimators, their result types and the
re-exports users import from one place.

A *query* is what an attacker sees of a target: one attack score (shape (N,)) or a vector of
several attacks' scores (shape (N, d), d <= 4, the "combined query"). Given the query on N1
members (label 1) and N0 non-members and a prior p of membership, the best any attacker can do
with that query is

    Adv_p = integral |p f1(z) - (1-p) f0(z)| dz = E|f_p(Z)|,
    f_p(z) = (p f1(z) - (1-p) f0(z)) / (p f1(z) + (1-p) f0(z)),

(advantage = 2 * accuracy - 1 of the Bayes classifier). Note Adv_p >= |2p - 1| always: at
p = 0.2 guessing "non-member" for everyone already has advantage 0.6, so compare estimates at
p != 0.5 with that floor, not with 0.

Estimators (``method``):

- ``"discrete"``: W_N = sum_j |p freq1_j - (1-p) freq0_j| over bins j. A discrete query keeps its
  values as bins; a continuous one is cut into equal-depth bins of the pooled scores (label-free,
  see :class:`~privacy_gate.estimators.mace._models.Cells`), ~N^(1/3) of them by default, and
  product bins for d > 1 with 3–9 bins per column (~N^(1/4) / 2: fewer lose more advantage
  than the radius covers; see ``default_bins``).
- ``"kde"``: U_N = integral |p kde1 - (1-p) kde0| on normal scores (rank-transformed scores; the
  advantage is invariant under invertible maps of the query). 1-d: grid KDE with FFT
  convolution; d = 2..4: importance sampling from the pooled KDE, Monte Carlo error reported
  (``mc_se``; 2 mc_se widen ``upper`` and ``lower_permutation``). Bandwidth n^(-1/(d+2)) by default,
  deliberately smaller than Scott's: smoothing loses advantage by O(h^2), and at Scott's h that loss
  outgrows the radius for strong leakage (see ``resolve_bandwidth`` and the benchmark).
- ``"auto"``: discrete for integer-valued or few-valued (<= 50 distinct) queries, kde otherwise.

Bounds at confidence 1 - delta (each side fails with probability <= delta/2):

- radius r = sqrt(2 (p^2/N1 + (1-p)^2/N0) log(2/delta)) from McDiarmid (each record moves the
  plug-in by at most 2p/N1 or 2(1-p)/N0); r = sqrt(2/N log(2/delta)) when N1 = pN as in the
  paper. ``upper = estimate + r``: the plug-in is biased *upwards* (E|X| >= |E X|), so
  E[W_N] >= Adv of the binned / smoothed query and W_N + r covers it. Binning and smoothing can
  only lose advantage (data processing / L1 contraction), so strictly the upper bound covers the
  advantage of the binned or smoothed query; the loss is second order in the bin width or
  bandwidth and far below r at the defaults (the coverage benchmark checks this).
- the same upward bias makes ``estimate - r`` a bound on E[W_N], not on Adv. It is quantified
  by a label-permutation null (labels shuffled ``n_permutations`` times; under no leakage the
  null mean minus |2p-1| is pure bias): ``bias``, ``null_quantile`` and the permutation
  ``p_value`` are reported. ``lower_permutation = max(|2p-1|, estimate - r - bias)`` is the
  debiased bound (floored at |2p-1| rather than 0: no query does worse than the constant guess).
  It is conservative because r is a worst-case radius (the plug-in's standard deviation is
  ~ r/3) and because the bias of |X| is largest where E X = 0, which the null puts in every
  bin at p = 0.5 (per bin the bias is at most its standard deviation, and pooling the classes
  does not shrink that when N1 = pN). It is not provable in general: at p != 0.5 the null has
  no bin near the sign change of p f1 - (1-p) f0, so its bias (~0 at p = 0.2) underestimates
  the alternative's; the slack in r covers that in the benchmark, but no theorem does.
- ``lower_split`` (default ``lower``) is provable: the Bayes plug-in classifier is learned on a
  random half of the targets (stratified; its bins / transform / bandwidth use that half only),
  and its advantage 2 (p TPR - (1-p) FPR) + 1 - 2p is bounded below on the other half with
  one-sided Clopper–Pearson bounds at delta/4 for TPR and FPR. The classifier is fixed given
  the first half, so the bound holds exactly for any N and any binning, and any real classifier's
  advantage is a lower bound of the optimal one. It is also the certified advantage of a concrete
  attack, which is what a reviewer can act on.

Per record (:func:`individual_risk`): f_p at each target's query value with an interval from
Clopper–Pearson (discrete, delta/2 per class) or the KDE normal band (paper Lemma 11), and the
risk |f_p| with its interval. Generalised metrics and the DP connection live in
:mod:`~privacy_gate.estimators.mace.generalized` and :mod:`~privacy_gate.estimators.mace.dp` and
are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd

from privacy_gate.errors import ConfigError, DataError
from privacy_gate.estimators.mace._models import (
    Settings,
    check_query,
    cp_lower,
    cp_upper,
    f_p,
    fit_model,
    permuted_labels,
    resolve_method,
    stratified_split,
    variance_scale,
)
from privacy_gate.estimators.mace.dp import (
    DPComparison,
    compare_to_dp,
    dp_advantage_bound,
    dp_risk_bound,
)
from privacy_gate.estimators.mace.generalized import generalized_metrics

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "AdvantageEstimate",
    "DPComparison",
    "IndividualRisk",
    "Settings",
    "compare_to_dp",
    "dp_advantage_bound",
    "dp_risk_bound",
    "estimate_advantage",
    "generalized_metrics",
    "individual_risk",
    "mcdiarmid_radius",
    "risk_histogram_figure",
]

_TOL = 1e-9


def mcdiarmid_radius(
    *, n_members: int, n_non_members: int, prior: float = 0.5, delta: float = 0.05
) -> float:
    """Two-sided McDiarmid radius of the plug-in advantage: sqrt(2 v log(2/delta)),
    v = p^2/N1 + (1-p)^2/N0 (= 1/N when N1 = pN).

    >>> round(mcdiarmid_radius(n_members=5000, n_non_members=5000), 4)  # sqrt(2/N log 40)
    0.0272
    """
    Settings(prior=prior, delta=delta)
    if n_members < 1 or n_non_members < 1:
        raise DataError("the McDiarmid radius needs at least one member and one non-member")
    return math.sqrt(2.0 * variance_scale(n_members, n_non_members, prior) * math.log(2.0 / delta))


def _checked_fraction(name: str, value: float | None, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if value is None or not math.isfinite(value) or value < -_TOL or value > 1 + _TOL:
        raise ConfigError(f"AdvantageEstimate.{name} must be a number in [0, 1]; got {value!r}")


@dataclass(frozen=True)
class AdvantageEstimate:
    """The optimal membership advantage of a query with its (1 - delta) confidence bounds.

    ``estimate`` is the plug-in W_N / U_N, ``[lower, upper]`` the interval (``lower`` is
    ``lower_split`` or ``lower_permutation`` per ``settings['lower_bound']``), ``radius`` the
    McDiarmid radius, ``bias`` the permutation-null mean minus |2p-1| (the plug-in's upward bias
    under no leakage), ``null_quantile`` the (1 - delta) quantile of the null, ``p_value`` of the
    permutation test of "no leakage", ``mc_se`` the Monte Carlo error of a multi-d KDE integral
    (0 otherwise; twice it is added to ``upper``).
    """

    estimate: float
    lower: float
    upper: float
    radius: float
    bias: float | None
    null_quantile: float | None
    p_value: float | None
    n: int
    n_members: int
    n_non_members: int
    method: str
    prior: float
    delta: float
    lower_split: float
    lower_permutation: float | None
    mc_se: float = 0.0
    settings: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in (
            "estimate",
            "lower",
            "upper",
            "lower_split",
            "null_quantile",
            "p_value",
            "lower_permutation",
        ):
            _checked_fraction(
                name,
                getattr(self, name),
                optional=name in ("null_quantile", "p_value", "lower_permutation"),
            )
        if self.lower > self.upper + _TOL:
            raise ConfigError(f"AdvantageEstimate.lower {self.lower} exceeds upper {self.upper}")
        if self.method not in ("discrete", "kde"):
            raise ConfigError(
                f"AdvantageEstimate.method must be 'discrete' or 'kde'; got {self.method!r}"
            )
        if (
            self.n != self.n_members + self.n_non_members
            or min(self.n_members, self.n_non_members) < 1
        ):
            raise ConfigError(
                "AdvantageEstimate needs n = n_members + n_non_members with both classes present"
            )
        if not (self.radius >= 0 and self.mc_se >= 0) or (
            self.bias is not None and not math.isfinite(self.bias)
        ):
            raise ConfigError(
                "AdvantageEstimate.radius, mc_se and bias must be finite and radius, mc_se >= 0"
            )
        Settings(prior=self.prior, delta=self.delta)
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    @property
    def floor(self) -> float:
        """|2p - 1|: the advantage of the best constant guess, a floor of every estimate."""
        return abs(2 * self.prior - 1)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready dict (the settings nested under ``settings``)."""
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self)}
        return out | {"settings": {k: _plain(v) for k, v in self.settings.items()}}


def _plain(value: object) -> object:
    # numpy scalars (e.g. a seed passed as np.int64) are not JSON-serialisable
    return value.item() if isinstance(value, np.generic) else value


def estimate_advantage(
    scores: object,
    labels: object,
    *,
    prior: float = 0.5,
    delta: float = 0.05,
    method: str = "auto",
    n_bins: int | None = None,
    bandwidth: float | str | None = None,
    n_permutations: int = 200,
    seed: int = 0,
    lower_bound: str = "split",
    n_mc: int = 4096,
) -> AdvantageEstimate:
    """Estimate the optimal membership advantage of a query with (1 - delta) bounds.

    ``scores``: (N,) or (N, d) attack scores (any scale; higher need not mean member);
    ``labels``: 1/True = member. See the module docstring for the estimators and bounds.
    ``n_bins``: bins per score column (discrete); ``bandwidth``: ``"undersmoothed"`` (default,
    n^(-1/(d+2)), see :func:`~privacy_gate.estimators.mace._models.resolve_bandwidth`),
    ``"scott"``, ``"silverman"`` or a number in normal-score units (kde); ``n_mc``: Monte Carlo
    points of the multi-d KDE integral; ``lower_bound``: ``"split"`` (provable, default) or
    ``"permutation"``.

    >>> rng = np.random.default_rng(0)
    >>> z = np.r_[rng.normal(1.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000)]
    >>> m = np.r_[np.ones(2000), np.zeros(2000)]
    >>> est = estimate_advantage(z, m, n_permutations=50)
    >>> est.lower <= 2 * 0.6915 - 1 <= est.upper  # truth 2 Phi(1/2) - 1 = 0.383
    True
    """
    s = Settings(
        prior=prior,
        delta=delta,
        method=method,
        n_bins=n_bins,
        bandwidth=bandwidth,
        n_permutations=n_permutations,
        seed=seed,
        n_mc=n_mc,
        lower_bound=lower_bound,
    )
    x, y = check_query(scores, labels)
    resolved = resolve_method(x, s.method)
    n1 = int(y.sum())
    n0 = int(y.size - n1)
    floor = abs(2 * s.prior - 1)

    model = fit_model(
        x,
        y,
        method=resolved,
        prior=s.prior,
        n_bins=s.n_bins,
        bandwidth=s.bandwidth,
        n_mc=s.n_mc,
        seed=s.seed,
    )
    rng = np.random.default_rng([s.seed, 0x9E7])
    vals, ses = model.advantages(permuted_labels(y, s.n_permutations, rng))
    estimate, mc_se = float(vals[0]), float(ses[0])
    radius = mcdiarmid_radius(n_members=n1, n_non_members=n0, prior=s.prior, delta=s.delta)
    # Monte Carlo error (multi-d KDE only) is independent of the sampling error: widen by 2 SE
    upper = min(1.0, estimate + radius + 2 * mc_se)

    bias = null_q = p_value = lower_perm = None
    if s.n_permutations:
        null = vals[1:]
        # every permuted W is >= |2p-1| (triangle inequality), so the excess is the bias
        bias = max(0.0, float(null.mean()) - floor)
        null_q = float(np.quantile(null, 1 - s.delta))
        # >= with a tolerance: ties with the observed value count against "leakage"
        p_value = float((1 + np.sum(null >= estimate - 1e-12)) / (1 + null.size))
        lower_perm = max(floor, estimate - radius - bias - 2 * mc_se)

    lower_split = _split_lower_bound(x, y, s, resolved)
    lower = lower_split if s.lower_bound == "split" else lower_perm
    # Settings refuses lower_bound="permutation" without permutations
    assert lower is not None
    lower = min(
        lower, upper
    )  # both sides hold together w.p. >= 1 - delta; never report a crossed pair

    return AdvantageEstimate(
        estimate=estimate,
        lower=lower,
        upper=upper,
        radius=radius,
        bias=bias,
        null_quantile=null_q,
        p_value=p_value,
        n=int(y.size),
        n_members=n1,
        n_non_members=n0,
        method=resolved,
        prior=float(s.prior),
        delta=float(s.delta),
        lower_split=min(lower_split, upper),
        lower_permutation=None if lower_perm is None else min(lower_perm, upper),
        mc_se=mc_se,
        settings={
            "method_requested": s.method,
            "n_permutations": s.n_permutations,
            "seed": s.seed,
            "lower_bound": s.lower_bound,
            **model.settings(),
        },
    )


def _split_lower_bound(x: np.ndarray, y: np.ndarray, s: Settings, method: str) -> float:
    """Certified advantage of the plug-in Bayes classifier learned on a stratified half of the
    targets and evaluated on the other half (one-sided Clopper–Pearson, delta/4 for TPR and FPR).
    Floored at |2p-1|, the advantage of a constant guess, which needs no data."""
    rng = np.random.default_rng([s.seed, 0x5B11])
    learn, hold = stratified_split(y, (0.5, 0.5), rng)
    model = fit_model(
        x[learn],
        y[learn],
        method=method,
        prior=s.prior,
        n_bins=s.n_bins,
        bandwidth=s.bandwidth,
        n_mc=s.n_mc,
        seed=s.seed,
    )
    loc = model.local(x[hold], alpha=None)
    positive = s.prior * loc.d1 > (1 - s.prior) * loc.d0
    yh = y[hold]
    k1, n1 = int(positive[yh == 1].sum()), int((yh == 1).sum())
    k0, n0 = int(positive[yh == 0].sum()), int((yh == 0).sum())
    tpr_lo = float(cp_lower(k1, n1, s.delta / 4))
    fpr_hi = float(cp_upper(k0, n0, s.delta / 4))
    return max(
        abs(2 * s.prior - 1), 2 * (s.prior * tpr_lo - (1 - s.prior) * fpr_hi) + 1 - 2 * s.prior
    )


# --------------------------------------------------------------------------------------------
# individual risk


def _readonly(a: npt.ArrayLike, dtype: npt.DTypeLike = np.float64) -> np.ndarray:
    arr = np.array(a, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class IndividualRisk:
    """Per-target f_p (signed: > 0 looks like a member) and risk |f_p| with (1 - delta) intervals.

    Arrays are read-only and aligned with the targets passed. ``labels`` is kept only for
    aggregate plots; :meth:`to_frame` never includes it (who is a member is the secret).
    """

    f: np.ndarray
    f_lower: np.ndarray
    f_upper: np.ndarray
    risk: np.ndarray
    risk_lower: np.ndarray
    risk_upper: np.ndarray
    labels: np.ndarray
    method: str
    prior: float
    delta: float
    settings: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = ("f", "f_lower", "f_upper", "risk", "risk_lower", "risk_upper")
        for name in names:
            object.__setattr__(self, name, _readonly(getattr(self, name)))
        object.__setattr__(self, "labels", _readonly(self.labels, np.int8))
        n = self.f.shape
        if any(getattr(self, k).shape != n for k in names) or self.labels.shape != n or len(n) != 1:
            raise ConfigError("IndividualRisk arrays must be 1-D and of equal length")
        if np.isnan(
            np.c_[self.f, self.f_lower, self.f_upper, self.risk, self.risk_lower, self.risk_upper]
        ).any():
            raise DataError("IndividualRisk contains NaN")
        if (
            (self.f_lower > self.f + _TOL).any()
            or (self.f > self.f_upper + _TOL).any()
            or (self.risk_lower > self.risk + _TOL).any()
            or (self.risk > self.risk_upper + _TOL).any()
        ):
            raise ConfigError("IndividualRisk intervals must contain their estimates")
        if (
            np.abs(self.f_lower).max(initial=0) > 1 + _TOL
            or np.abs(self.f_upper).max(initial=0) > 1 + _TOL
        ):
            raise ConfigError("f_p lies in [-1, 1]")
        if self.method not in ("discrete", "kde"):
            raise ConfigError(
                f"IndividualRisk.method must be 'discrete' or 'kde'; got {self.method!r}"
            )
        Settings(prior=self.prior, delta=self.delta)
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    def __len__(self) -> int:
        return int(self.f.size)

    def to_frame(self, row_ids: object = None) -> pd.DataFrame:
        """DataFrame keyed by row id: ``row_id, risk, risk_lower, risk_upper, f`` — no data values
        and no membership labels. ``row_ids`` defaults to 0..N-1."""
        ids = np.arange(len(self)) if row_ids is None else np.asarray(row_ids)
        if ids.shape != (len(self),):
            raise DataError(
                f"row_ids must hold one id per target ({len(self)}); got shape {ids.shape}"
            )
        if pd.Index(ids).has_duplicates:
            raise DataError("row_ids must be unique: per-record risk is keyed by row id")
        return pd.DataFrame(
            {
                "row_id": ids,
                "risk": self.risk,
                "risk_lower": self.risk_lower,
                "risk_upper": self.risk_upper,
                "f": self.f,
            }
        )

    def summary(self) -> dict[str, float]:
        """Aggregates for metrics: mean/median/max risk and upper bound, share with risk_lower >
        0.5."""
        return {
            "mean_risk": float(self.risk.mean()),
            "median_risk": float(np.median(self.risk)),
            "max_risk": float(self.risk.max()),
            "max_risk_upper": float(self.risk_upper.max()),
            "max_risk_lower": float(self.risk_lower.max()),
            "share_risk_lower_above_0.5": float((self.risk_lower > 0.5).mean()),
        }


def f_interval_to_risk(f_lo: np.ndarray, f_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interval of |f| from an interval of f: 0 is inside when the interval straddles it."""
    lo = np.where(f_lo > 0, f_lo, np.where(f_hi < 0, -f_hi, 0.0))
    return lo, np.maximum(np.abs(f_lo), np.abs(f_hi))


def individual_risk(
    scores: object,
    labels: object,
    *,
    prior: float = 0.5,
    delta: float = 0.05,
    method: str = "auto",
    n_bins: int | None = None,
    bandwidth: float | str | None = None,
    seed: int = 0,
    n_mc: int = 4096,
) -> IndividualRisk:
    """Per-target f_p(z) and risk |f_p(z)| with (1 - delta) pointwise intervals.

    Discrete queries: frequencies of the target's bin, two-sided Clopper–Pearson intervals at
    delta/2 per class; f_p increases in P1 and decreases in P0, so its interval ends are
    f(P1_lo, P0_hi) and f(P1_hi, P0_lo) (paper Lemma 5). Continuous queries: KDE values with the
    pointwise normal band of paper Lemma 11 at delta/2 per class (it covers the smoothed density;
    smoothing bias is not included). As in the paper, a target is scored with the estimates it
    helped fit.

    >>> r = individual_risk([0, 0, 1, 1] * 10, [1, 0, 1, 1] * 10)
    >>> sorted(set(np.round(r.f, 3).tolist()))  # value 0: 1/3 of members, all non-members
    [-0.5, 1.0]
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
    x, y = check_query(scores, labels)
    resolved = resolve_method(x, s.method)
    model = fit_model(
        x,
        y,
        method=resolved,
        prior=s.prior,
        n_bins=s.n_bins,
        bandwidth=s.bandwidth,
        n_mc=s.n_mc,
        seed=s.seed,
    )
    loc = model.local(x, alpha=s.delta / 2)
    f = f_p(loc.d1, loc.d0, s.prior)
    f_lo = np.minimum(f_p(loc.lo1, loc.hi0, s.prior), f)
    f_hi = np.maximum(f_p(loc.hi1, loc.lo0, s.prior), f)
    r_lo, r_hi = f_interval_to_risk(f_lo, f_hi)
    return IndividualRisk(
        f=f,
        f_lower=f_lo,
        f_upper=f_hi,
        risk=np.abs(f),
        risk_lower=r_lo,
        risk_upper=r_hi,
        labels=y,
        method=resolved,
        prior=float(s.prior),
        delta=float(s.delta),
        settings={"method_requested": s.method, **model.settings()},
    )


def risk_histogram_figure(risk: IndividualRisk, *, bins: int = 40) -> Figure:
    """A matplotlib Figure (Agg, no pyplot state) for an MLflow artifact: risk histograms of
    members and non-members, and every target's risk with its interval, sorted by risk."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not isinstance(risk, IndividualRisk):
        raise ConfigError("risk_histogram_figure needs an IndividualRisk (from individual_risk)")
    fig = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    edges = np.linspace(0.0, 1.0, bins + 1)
    for cls, name, color in ((1, "members", "tab:red"), (0, "non-members", "tab:blue")):
        ax1.hist(
            risk.risk[risk.labels == cls],
            bins=edges,
            alpha=0.55,
            color=color,
            label=f"{name} ({int((risk.labels == cls).sum())})",
        )
    ax1.set(
        xlabel="individual risk |f_p|",
        ylabel="targets",
        title=f"risk by membership (p = {risk.prior:g})",
    )
    ax1.legend()
    order = np.argsort(risk.risk, kind="stable")
    rank = np.arange(order.size)
    ax2.fill_between(
        rank,
        risk.risk_lower[order],
        risk.risk_upper[order],
        color="0.8",
        step="mid",
        label=f"{1 - risk.delta:.0%} interval",
    )
    ax2.plot(rank, risk.risk[order], color="k", lw=1, label="estimate")
    ax2.set(
        xlabel="targets sorted by risk",
        ylabel="|f_p|",
        ylim=(0, 1.02),
        title=f"risk profile ({risk.method})",
    )
    ax2.legend(loc="upper left")
    return fig
