"""Query models behind the MACE estimators (Liu et al.): input checks, the rank transform,
binning and kernel density estimates that can be re-evaluated cheaply under label permutations.

One module because the discrete, KDE and multi-dimensional query models share one interface
(fit once, re-evaluate under permutations) and one set of input checks.

A *query* is an attack score per target, shape (N,), or several attack scores, shape (N, d) with
d <= 4. Every model is fitted on one labelled sample and offers two things:

- ``advantages(Y)``: the plug-in optimal advantage sum_j |p P1_j - (1-p) P0_j| (or its integral)
  for each row of a label matrix ``Y`` (the real labels and any number of permutations of them),
  computed as one sparse/dense matrix product so a permutation null costs little more than the
  estimate itself.
- ``local(x)``: class-conditional densities (or bin frequencies) at new query values, with a
  confidence band, for per-record risk and for plug-in classifiers.

Why a rank transform: attack scores live on arbitrary scales (log density ratios, distances,
probabilities). The optimal advantage is invariant under any invertible map of the query — for
d > 1 also under invertible per-column maps and linear maps, since the Jacobian cancels in
integral |p f1 - (1-p) f0| — so each column is replaced by its *normal scores*
Phi^-1((mid-rank - 1/2) / N) in the pooled sample. That makes one bandwidth rule sensible for
any attack, and tied scores stay tied. The transform uses the pooled scores only, never the
labels, so it is the same for every label permutation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.signal import fftconvolve
from scipy.spatial.distance import cdist
from scipy.special import ndtri
from scipy.stats import beta as beta_dist

from privacy_gate.errors import ConfigError, DataError, InsufficientDataError
from privacy_gate.estimators.metrics import as_membership_labels

#: Largest number of attack scores combined into one query (KDE and product bins degrade fast).
MAX_DIMS = 4
#: Fewest members (and non-members) an estimate is computed from.
MIN_PER_CLASS = 10
#: ``method="auto"`` treats a query with at most this many distinct values as discrete.
MAX_LEVELS = 50
#: Cap of the default number of quantile bins (per dimension for d = 1).
MAX_DEFAULT_BINS = 50
#: Grid points per bandwidth of the 1-d grid KDE (integral accurate to ~1e-4 with linear binning).
GRID_PER_BANDWIDTH = 25
#: Kernel cut-off in bandwidths (Gaussian mass beyond 6 h is 2e-9).
KERNEL_CUTOFF = 6.0
#: Kernel evaluations held in memory at once by the multi-d KDE (~32 MB of float64).
CHUNK_CELLS = 1 << 22


# --------------------------------------------------------------------------------------------
# settings

METHODS = ("auto", "discrete", "kde")
LOWER_BOUNDS = ("split", "permutation")


@dataclass(frozen=True)
class Settings:
    """Validated estimator settings shared by the MACE functions (bad values: ConfigError)."""

    prior: float = 0.5
    delta: float = 0.05
    method: str = "auto"
    n_bins: int | None = None
    bandwidth: float | str | None = None
    n_permutations: int = 200
    seed: int = 0
    n_mc: int = 4096
    lower_bound: str = "split"

    def __post_init__(self) -> None:
        def real(v: object) -> bool:
            return isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v)

        def integer(v: object, low: int) -> bool:
            return isinstance(v, Integral) and not isinstance(v, bool) and int(v) >= low

        if not (real(self.prior) and 0.0 < self.prior < 1.0):
            raise ConfigError(
                "prior must be a membership probability strictly between 0 and 1; got "
                f"{self.prior!r}"
            )
        if not (real(self.delta) and 0.0 < self.delta < 1.0):
            raise ConfigError(
                "delta must be an error probability strictly between 0 and 1 (e.g. 0.05); got "
                f"{self.delta!r}"
            )
        if self.method not in METHODS:
            raise ConfigError(f"method must be one of {', '.join(METHODS)}; got {self.method!r}")
        if self.n_bins is not None and not integer(self.n_bins, 2):
            raise ConfigError(
                f"n_bins must be an integer >= 2 (bins per score column) or None for the default; "
                f"got {self.n_bins!r}"
            )
        bw = self.bandwidth
        if not (
            bw is None
            or bw in ("undersmoothed", "scott", "silverman")
            or (not isinstance(bw, str) and real(bw) and bw > 0)
        ):
            raise ConfigError(
                "bandwidth must be 'undersmoothed', 'scott', 'silverman', a positive number "
                f"(normal-score units) or None; got {bw!r}"
            )
        if not integer(self.n_permutations, 0):
            raise ConfigError(
                f"n_permutations must be an integer >= 0; got {self.n_permutations!r}"
            )
        if not integer(self.n_mc, 100):
            raise ConfigError(
                f"n_mc must be an integer >= 100 (Monte Carlo points of the multi-d KDE integral); "
                f"got {self.n_mc!r}"
            )
        if not integer(self.seed, 0):
            raise ConfigError(f"seed must be a non-negative integer; got {self.seed!r}")
        if self.lower_bound not in LOWER_BOUNDS:
            raise ConfigError(
                f"lower_bound must be one of {', '.join(LOWER_BOUNDS)}; got {self.lower_bound!r}"
            )
        if self.lower_bound == "permutation" and self.n_permutations < 1:
            raise ConfigError(
                "lower_bound='permutation' subtracts the permutation-null bias: set n_permutations "
                ">= 1"
            )


# --------------------------------------------------------------------------------------------
# input checks


def check_query(
    scores: object, labels: object, *, min_per_class: int = MIN_PER_CLASS
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int8]]:
    """``(x, y)``: scores as a float (N, d) matrix and labels as int8 0/1; fail closed on bad
    input."""
    try:
        x = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(
            "scores must be numeric: one attack score per target, shape (N,) or (N, d)"
        ) from None
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] == 0:
        raise DataError(f"scores must have shape (N,) or (N, d); got shape {x.shape}")
    if x.shape[1] > MAX_DIMS:
        raise ConfigError(
            f"a combined query has {x.shape[1]} attack scores; combine at most {MAX_DIMS} "
            "(density estimates and product bins degrade quickly in more dimensions)"
        )
    n_nan = int(np.isnan(x).sum())
    if n_nan:
        raise DataError(f"scores contain {n_nan} NaN value(s); an attack must score every target")
    y = np.asarray(labels)
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise DataError(
            f"got {x.shape[0]} score rows but labels of shape {y.shape}; pass one 0/1 label per "
            "target"
        )
    y = as_membership_labels(y)
    n1 = int(y.sum())
    n0 = int(y.size - n1)
    if min(n1, n0) < min_per_class:
        raise InsufficientDataError(
            f"MACE estimates need at least {min_per_class} members and {min_per_class} "
            "non-members; "
            f"got {n1} member(s) and {n0} non-member(s): score more targets"
        )
    return x, y


def resolve_method(x: np.ndarray, method: str) -> str:
    """``"discrete"`` or ``"kde"``; ``"auto"`` picks discrete for integer or few-valued queries.

    A query with at most :data:`MAX_LEVELS` distinct values (rows), or with integer values only,
    is discrete by nature (counts, ranks, thresholded scores) and binning it loses nothing or
    little; anything else is treated as continuous.
    """
    if method != "auto":
        return method
    finite = x[np.isfinite(x)]
    if np.array_equal(finite, np.round(finite)):
        return "discrete"
    n_levels = np.unique(x[:, 0]).size if x.shape[1] == 1 else np.unique(x, axis=0).shape[0]
    return "discrete" if n_levels <= MAX_LEVELS else "kde"


def variance_scale(n1: int, n0: int, prior: float) -> float:
    """``p^2/N1 + (1-p)^2/N0``: each record moves the plug-in by at most 2p/N1 or 2(1-p)/N0.

    This is the sum of squared bounded differences / 4 in McDiarmid's inequality; it equals 1/N
    when the sample is drawn with the prior (N1 = pN), the case the paper states.
    """
    return prior**2 / n1 + (1 - prior) ** 2 / n0


def default_bins(n1: int, n0: int, prior: float, d: int) -> int:
    """Bins per dimension. 1-d: N_eff^(1/3) (capped at 50), N_eff = 1 / variance_scale.

    Two errors pull against each other. The plug-in's upward bias grows like
    sqrt(cells / N_eff). Merging values into bins *loses* advantage (data processing), and that
    loss is what can break ``upper``, since E[W_N] only dominates the binned advantage. For a
    smooth likelihood ratio only bins straddling a sign change of p f1 - (1-p) f0 lose
    anything; the loss falls like 1 / bins^2 per dimension, whatever d is. In 1-d, N^(1/3)
    keeps the loss far inside the McDiarmid radius (~2.7 / sqrt(N)) and the bias at ~0.1 at
    N = 500 and ~0.04 at N = 10,000.

    For d > 1, spreading N^(1/3) cells over the dimensions leaves 2 bins per dimension. With
    2 bins the loss was 0.02–0.06 in simulations, e.g. 0.029 against a radius of 0.027 at
    d = 4, N = 10,000, where ``upper`` then missed the truth. So each dimension gets at least
    ceil(N_eff^(1/4) / 2) bins (the loss ~0.3 / b^2 then stays under half the radius), and at
    most (N_eff / 4)^(1/d) bins so a cell still holds ~4 targets on average. The price is a
    larger upward bias in 3–4 dimensions, which ``bias`` reports.
    """
    n_eff = 1.0 / variance_scale(n1, n0, prior)
    # float ** float is typed Any (a negative base gives a complex); n_eff > 0 here
    total: int = min(MAX_DEFAULT_BINS, max(2, round(n_eff ** (1 / 3))))
    bins: int = max(2, round(total ** (1 / d)))
    if d > 1:
        bins = max(bins, math.ceil(n_eff**0.25 / 2))
        bins = min(bins, max(2, math.floor((n_eff / 4) ** (1 / d))))
    return bins


def resolve_bandwidth(bandwidth: float | str | None, *, n1: int, n0: int, d: int) -> float:
    """Kernel bandwidth in units of the (whitened) normal scores, whose pooled spread is 1.

    ``"undersmoothed"`` (default) n^(-1/(d+2)); ``"scott"`` n^(-1/(d+4)); ``"silverman"``
    (n (d+2) / 4)^(-1/(d+4)); a number is used as it is. n is the harmonic mean of the class
    sizes: the smaller class sets the noise.

    Why not Scott by default: Scott/Silverman are optimal for estimating a density, not the L1
    distance of two. Smoothing both classes can only *lose* advantage (convolution contracts
    L1), by O(h^2), and with h ~ n^(-1/5) that loss shrinks more slowly than the McDiarmid radius
    (~ n^(-1/2)): with leakage 2 Phi(3/2) - 1 = 0.87 and N = 20,000, Scott's U_N is 0.037 low
    against a radius of 0.019, so ``upper`` misses the truth. n^(-1/3) in 1-d (the kernel
    analogue of the N^(1/3) bins) and n^(-1/4) in 2-d keep the loss well inside the radius; the
    price is a larger upward bias, which the permutation null reports and the split lower bound
    does not suffer from.
    """
    n = 2.0 / (1.0 / n1 + 1.0 / n0)
    if bandwidth is None or bandwidth == "undersmoothed":
        return float(n ** (-1.0 / (d + 2)))
    if bandwidth == "scott":
        return float(n ** (-1.0 / (d + 4)))
    if bandwidth == "silverman":
        return float((n * (d + 2) / 4.0) ** (-1.0 / (d + 4)))
    return float(bandwidth)


# --------------------------------------------------------------------------------------------
# Clopper–Pearson


def cp_lower(k: npt.ArrayLike, n: npt.ArrayLike, alpha: float) -> npt.NDArray[np.float64]:
    """One-sided Clopper–Pearson lower bound of a binomial proportion at error ``alpha``."""
    kf = np.asarray(k, dtype=np.float64)
    nf = np.broadcast_to(np.asarray(n, dtype=np.float64), kf.shape)
    with np.errstate(invalid="ignore"):
        out = beta_dist.ppf(alpha, kf, nf - kf + 1)
    return np.where(kf <= 0, 0.0, out)


def cp_upper(k: npt.ArrayLike, n: npt.ArrayLike, alpha: float) -> npt.NDArray[np.float64]:
    """One-sided Clopper–Pearson upper bound of a binomial proportion at error ``alpha``."""
    kf = np.asarray(k, dtype=np.float64)
    nf = np.broadcast_to(np.asarray(n, dtype=np.float64), kf.shape)
    with np.errstate(invalid="ignore"):
        out = beta_dist.ppf(1 - alpha, kf + 1, nf - kf)
    return np.where(kf >= nf, 1.0, out)


# --------------------------------------------------------------------------------------------
# rank transform


class RankTransform:
    """Per-column map to the normal scores of the fitting sample (ties share their mid-rank).

    New values are interpolated between the fitted levels and clipped to the fitted range, so
    the map is a fixed monotone function once fitted (the split lower bound relies on that).
    Infinite scores are ordinary extreme levels.
    """

    def __init__(self, x: np.ndarray):
        n = x.shape[0]
        self.levels: list[np.ndarray] = []
        self.scores: list[np.ndarray] = []
        for j in range(x.shape[1]):
            u, cnt = np.unique(x[:, j], return_counts=True)
            mid = np.cumsum(cnt) - (cnt - 1) / 2.0  # 1-based mid-rank of each tie block
            self.levels.append(u)
            self.scores.append(ndtri((mid - 0.5) / n))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out = np.empty_like(x, dtype=np.float64)
        for j, (u, s) in enumerate(zip(self.levels, self.scores)):
            v = x[:, j]
            pos = np.searchsorted(u, v, side="left")
            hi = np.minimum(pos, u.size - 1)
            lo = np.maximum(pos - 1, 0)
            with np.errstate(invalid="ignore", divide="ignore"):
                w = (v - u[lo]) / (u[hi] - u[lo])
            w = np.clip(np.where(np.isfinite(w), w, 0.5), 0.0, 1.0)
            col = s[lo] + w * (s[hi] - s[lo])
            exact = u[hi] == v
            col[exact] = s[hi[exact]]
            out[:, j] = col
        return out


# --------------------------------------------------------------------------------------------
# local densities


@dataclass(frozen=True)
class Local:
    """Class-conditional densities (bin frequencies for discrete queries) at some query values,
    with pointwise confidence intervals at error ``alpha`` each (NaN when none were asked for)."""

    d1: np.ndarray
    d0: np.ndarray
    lo1: np.ndarray
    hi1: np.ndarray
    lo0: np.ndarray
    hi0: np.ndarray


def f_p(a: np.ndarray, b: np.ndarray, prior: float) -> np.ndarray:
    """f_p = (p a - (1-p) b) / (p a + (1-p) b); 0 where both densities vanish (no evidence)."""
    num = prior * a - (1 - prior) * b
    den = prior * a + (1 - prior) * b
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


# --------------------------------------------------------------------------------------------
# discrete queries


class Cells:
    """Assigns query values to cells: one per distinct value (row), or per-column quantile bins.

    Distinct values are kept as they are when there are at most ``n_bins ** d`` of them: the
    query is discrete and binning would only lose information. Otherwise each column is cut at
    the quantiles of its pooled normal scores (equal-depth bins; a tie block is never split), and
    cells are the product of the column bins. The bins depend on the pooled scores only, never on
    the labels: for fixed bins McDiarmid's bounded-difference argument holds as stated, and the
    permutation null is exact because every permutation sees the same bins.
    """

    def __init__(self, x: np.ndarray, *, bins_per_dim: int):
        n, d = x.shape
        self.d = d
        n_levels = np.unique(x[:, 0]).size if d == 1 else np.unique(x, axis=0).shape[0]
        self.exact = n_levels <= bins_per_dim**d
        if self.exact:
            self.levels = [np.unique(x[:, j]) for j in range(d)]
            self.transform: RankTransform | None = None
            self.shape = tuple(u.size for u in self.levels)
        else:
            self.transform = RankTransform(x)
            t = self.transform(x)
            qs = np.linspace(0.0, 1.0, bins_per_dim + 1)[1:-1]
            self.edges = [np.unique(np.quantile(t[:, j], qs)) for j in range(d)]
            self.shape = tuple(e.size + 1 for e in self.edges)
        codes = self._codes(x)
        self.ids, self.fit_cells = np.unique(codes, return_inverse=True)
        self.fit_cells = self.fit_cells.reshape(-1)
        self.n_cells = int(self.ids.size)

    def _codes(self, x: np.ndarray) -> np.ndarray:
        cols = []
        valid = np.ones(x.shape[0], dtype=bool)
        if self.transform is None:  # exact: one cell per distinct value
            for j, u in enumerate(self.levels):
                pos = np.minimum(np.searchsorted(u, x[:, j]), u.size - 1)
                valid &= u[pos] == x[:, j]
                cols.append(pos)
        else:
            t = self.transform(x)
            cols = [np.searchsorted(e, t[:, j], side="right") for j, e in enumerate(self.edges)]
        codes = (
            np.ravel_multi_index(tuple(cols), self.shape)
            if self.d > 1
            else cols[0].astype(np.int64)
        )
        return np.where(valid, codes, -1)

    def cell_of(self, x: np.ndarray) -> np.ndarray:
        """Cell index of each row, -1 for a value the fitted sample never showed."""
        codes = self._codes(x)
        pos = np.minimum(np.searchsorted(self.ids, codes), self.ids.size - 1)
        return np.where((codes >= 0) & (self.ids[pos] == codes), pos, -1)


class DiscreteModel:
    """Bin frequencies per class: W_N = sum_j |p freq1_j - (1-p) freq0_j| (paper, Theorem 2)."""

    method = "discrete"

    def __init__(self, x: np.ndarray, y: np.ndarray, *, prior: float, n_bins: int | None):
        self.prior = prior
        self.n1 = int(y.sum())
        self.n0 = int(y.size - self.n1)
        self.bins_per_dim = n_bins or default_bins(self.n1, self.n0, prior, x.shape[1])
        self.cells = Cells(x, bins_per_dim=self.bins_per_dim)
        c = self.cells.fit_cells
        k = self.cells.n_cells
        # one-hot cell membership: counts under any labelling are one sparse product
        self.onehot = sparse.csr_matrix(
            (np.ones(c.size, np.float32), (c, np.arange(c.size))), shape=(k, c.size)
        )
        self.total = np.bincount(c, minlength=k).astype(np.float64)
        self.count1 = np.bincount(c[y == 1], minlength=k).astype(np.float64)
        self.count0 = self.total - self.count1

    def settings(self) -> dict[str, object]:
        return {
            "bins_per_dim": self.bins_per_dim,
            "n_cells": self.cells.n_cells,
            "exact_levels": bool(self.cells.exact),
        }

    def advantages(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Plug-in advantage for each row of ``labels`` (C, N); the second array is the MC
        standard error (zero: the sum is exact)."""
        c1 = np.asarray(self.onehot @ labels.T.astype(np.float32), dtype=np.float64)
        c0 = self.total[:, None] - c1
        vals = np.abs(self.prior * c1 / self.n1 - (1 - self.prior) * c0 / self.n0).sum(axis=0)
        return vals, np.zeros_like(vals)

    def local(self, x: np.ndarray, alpha: float | None) -> Local:
        """Frequencies of each row's cell with two-sided Clopper–Pearson intervals at ``alpha``
        (``None``: no intervals, the bands are NaN)."""
        cell = self.cells.cell_of(x)
        # one extra slot for cells the fitted sample never showed: zero counts
        k1 = np.r_[self.count1, 0.0]
        k0 = np.r_[self.count0, 0.0]
        d1, d0 = k1 / self.n1, k0 / self.n0
        if alpha is None:
            nan = np.full_like(d1, np.nan)
            bands = (nan,) * 4
        else:  # per cell, not per target: a few beta quantiles instead of N
            bands = (
                cp_lower(k1, self.n1, alpha / 2),
                cp_upper(k1, self.n1, alpha / 2),
                cp_lower(k0, self.n0, alpha / 2),
                cp_upper(k0, self.n0, alpha / 2),
            )
        lo1, hi1, lo0, hi0 = (b[cell] for b in bands)
        return Local(d1=d1[cell], d0=d0[cell], lo1=lo1, hi1=hi1, lo0=lo0, hi0=hi0)


# --------------------------------------------------------------------------------------------
# continuous queries: kernel density estimates


def _kde_band(
    dens: np.ndarray, n: int, h: float, d: int, alpha: float | None
) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise normal-approximation band of a Gaussian KDE (paper Lemma 11, Chen 2017):
    dens ± z_{1-alpha/2} sqrt(mu_K dens / (n h^d)), mu_K = integral K^2 = (4 pi)^(-d/2).

    It covers the *smoothed* density E[kde](x); the smoothing bias is not included (it is small
    at the default bandwidth and, for |f_p|, partly cancels between the two classes).
    """
    if alpha is None:
        nan = np.full_like(dens, np.nan)
        return nan, nan
    z = float(ndtri(1 - alpha / 2))
    half = z * np.sqrt((4 * math.pi) ** (-d / 2) * np.maximum(dens, 0.0) / (n * h**d))
    return np.maximum(dens - half, 0.0), dens + half


class Kde1dModel:
    """1-d U_N = integral |p kde1 - (1-p) kde0| on a grid (binned KDE).

    The normal scores are linearly binned onto a grid with ``GRID_PER_BANDWIDTH`` points per
    bandwidth and convolved with the Gaussian kernel by FFT; the integral is a Riemann sum over
    the grid, which covers the data +-6 bandwidths (the integrand is smooth and vanishes at the
    ends, so this is the trapezoid rule; with linear binning the integral is accurate to ~1e-4
    absolute, checked against closed forms in the tests). Linear binning is a sparse (G, N)
    matrix, so every label permutation costs one sparse product and one FFT column.
    """

    method = "kde"

    def __init__(
        self, x: np.ndarray, y: np.ndarray, *, prior: float, bandwidth: float | str | None
    ):
        self.prior = prior
        self.n1 = int(y.sum())
        self.n0 = int(y.size - self.n1)
        self.transform = RankTransform(x)
        t = self.transform(x)[:, 0]
        self.h = resolve_bandwidth(bandwidth, n1=self.n1, n0=self.n0, d=1)
        lo = float(t.min()) - KERNEL_CUTOFF * self.h
        hi = float(t.max()) + KERNEL_CUTOFF * self.h
        n_grid = min(1 << 16, int(math.ceil((hi - lo) / self.h * GRID_PER_BANDWIDTH)) + 1)
        self.grid = np.linspace(lo, hi, n_grid)
        self.step = self.grid[1] - self.grid[0]
        pos = (t - lo) / self.step
        left = np.clip(np.floor(pos).astype(np.int64), 0, n_grid - 2)
        w = pos - left
        rows = np.r_[left, left + 1]
        cols = np.r_[np.arange(t.size), np.arange(t.size)]
        self.binning = sparse.csr_matrix((np.r_[1 - w, w], (rows, cols)), shape=(n_grid, t.size))
        self.total = np.asarray(self.binning.sum(axis=1)).ravel()
        m = int(math.ceil(KERNEL_CUTOFF * self.h / self.step))
        offsets = np.arange(-m, m + 1) * self.step
        self.kernel = np.exp(-0.5 * (offsets / self.h) ** 2) / (self.h * math.sqrt(2 * math.pi))
        self.dens1, self.dens0 = (a[:, 0] for a in self._densities(y[None, :]))

    def settings(self) -> dict[str, object]:
        return {
            "bandwidth": self.h,
            "grid_points": int(self.grid.size),
            "transform": "normal_scores",
        }

    def _densities(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c1 = np.asarray(self.binning @ labels.T.astype(np.float64))
        c0 = self.total[:, None] - c1
        conv = fftconvolve(np.hstack([c1, c0]), self.kernel[:, None], mode="same", axes=0)
        conv = np.maximum(conv, 0.0)  # FFT round-off can leave -1e-17 where the density is 0
        k = c1.shape[1]
        return conv[:, :k] / self.n1, conv[:, k:] / self.n0

    def advantages(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d1, d0 = self._densities(labels)
        vals = np.abs(self.prior * d1 - (1 - self.prior) * d0).sum(axis=0) * self.step
        return np.minimum(vals, 1.0), np.zeros_like(vals)

    def local(self, x: np.ndarray, alpha: float | None) -> Local:
        t = self.transform(x)[:, 0]
        d1 = np.interp(t, self.grid, self.dens1)
        d0 = np.interp(t, self.grid, self.dens0)
        lo1, hi1 = _kde_band(d1, self.n1, self.h, 1, alpha)
        lo0, hi0 = _kde_band(d0, self.n0, self.h, 1, alpha)
        return Local(d1=d1, d0=d0, lo1=lo1, hi1=hi1, lo0=lo0, hi0=hi0)


class KdeNdModel:
    """Multi-d U_N by importance sampling from the pooled KDE.

    With a, b the weighted class KDEs (p kde1, (1-p) kde0) and q the pooled KDE of all N points,
    U_N = integral |a - b| = E_{x~q}[ |a(x) - b(x)| / q(x) ]. q is label-free, so the same Monte
    Carlo points serve the estimate and every permutation (common random numbers), and the
    weight |a - b| / q is bounded by max(pN/N1, (1-p)N/N0) (1 when N1 = pN), so the Monte Carlo
    error is small and is reported. Points are drawn as a kernel centre (without replacement
    while n_mc <= N, so each centre is equally likely: the estimate stays unbiased) plus
    h * standard normal noise. Scores are normal-scored per column and whitened with the pooled
    covariance, then a spherical Gaussian kernel is used (a full-covariance kernel in the
    normal-score space, like scipy's gaussian_kde).
    """

    method = "kde"

    def __init__(
        self,
        x: np.ndarray,
        y: np.ndarray,
        *,
        prior: float,
        bandwidth: float | str | None,
        n_mc: int,
        seed: int,
    ):
        self.prior = prior
        self.y = y
        self.n1 = int(y.sum())
        self.n0 = int(y.size - self.n1)
        self.d = x.shape[1]
        self.transform = RankTransform(x)
        t = self.transform(x)
        self.mean = t.mean(axis=0)
        evals, evecs = np.linalg.eigh(np.cov(t, rowvar=False))
        if evals.min() <= 1e-6 * evals.max():
            raise DataError(
                "the combined attack scores are constant or (nearly) collinear in rank; drop "
                "constant, "
                "duplicated or deterministically related attack columns from the combined query"
            )
        self.whiten = evecs / np.sqrt(evals)
        self.z = (t - self.mean) @ self.whiten
        self.h = resolve_bandwidth(bandwidth, n1=self.n1, n0=self.n0, d=self.d)
        self.n_mc = n_mc
        self.seed = seed

    def settings(self) -> dict[str, object]:
        return {"bandwidth": self.h, "n_mc": self.n_mc, "transform": "normal_scores+whitening"}

    def _kernel_sums(self, pts: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Unnormalised kernel sums sum_i exp(-|pt - z_i|^2 / 2h^2) w_i, and without weights."""
        n = self.z.shape[0]
        rows = max(1, CHUNK_CELLS // n)
        w32 = weights.astype(np.float32)
        out = np.empty((pts.shape[0], weights.shape[1]))
        tot = np.empty(pts.shape[0])
        for s in range(0, pts.shape[0], rows):
            # float32 kernel values: relative error 1e-7, half the memory traffic of float64
            k = cdist(pts[s : s + rows], self.z, "sqeuclidean").astype(np.float32)
            k *= np.float32(-0.5 / self.h**2)
            np.exp(k, out=k)
            tot[s : s + rows] = k.sum(axis=1, dtype=np.float64)
            out[s : s + rows] = k @ w32
        return out, tot

    def advantages(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = self.z.shape[0]
        rng = np.random.default_rng([self.seed, 0x3ACE])
        centres = rng.choice(n, size=self.n_mc, replace=self.n_mc > n)
        pts = self.z[centres] + self.h * rng.standard_normal((self.n_mc, self.d))
        s1, tot = self._kernel_sums(pts, labels.T)
        s0 = np.maximum(tot[:, None] - s1, 0.0)
        ratio = np.abs(self.prior * s1 / self.n1 - (1 - self.prior) * s0 / self.n0) / (
            tot[:, None] / n
        )
        return np.minimum(ratio.mean(axis=0), 1.0), ratio.std(axis=0, ddof=1) / math.sqrt(self.n_mc)

    def local(self, x: np.ndarray, alpha: float | None) -> Local:
        z = (self.transform(x) - self.mean) @ self.whiten
        # both class sums from the product (not total - members: float32 round-off could go < 0)
        sums, _ = self._kernel_sums(z, np.c_[self.y, 1 - self.y].astype(np.float64))
        sums = np.maximum(sums, 0.0)
        norm = (2 * math.pi) ** (self.d / 2) * self.h**self.d
        d1 = sums[:, 0] / (self.n1 * norm)
        d0 = sums[:, 1] / (self.n0 * norm)
        lo1, hi1 = _kde_band(d1, self.n1, self.h, self.d, alpha)
        lo0, hi0 = _kde_band(d0, self.n0, self.h, self.d, alpha)
        return Local(d1=d1, d0=d0, lo1=lo1, hi1=hi1, lo0=lo0, hi0=hi0)


QueryModel = DiscreteModel | Kde1dModel | KdeNdModel


def fit_model(
    x: np.ndarray,
    y: np.ndarray,
    *,
    method: str,
    prior: float,
    n_bins: int | None,
    bandwidth: float | str | None,
    n_mc: int,
    seed: int,
) -> QueryModel:
    """The query model for a resolved ``method`` (``"discrete"`` or ``"kde"``)."""
    if method == "discrete":
        return DiscreteModel(x, y, prior=prior, n_bins=n_bins)
    if x.shape[1] == 1:
        return Kde1dModel(x, y, prior=prior, bandwidth=bandwidth)
    return KdeNdModel(x, y, prior=prior, bandwidth=bandwidth, n_mc=n_mc, seed=seed)


def permuted_labels(
    y: np.ndarray, n_permutations: int, rng: np.random.Generator
) -> npt.NDArray[np.int8]:
    """(1 + B, N) int8 matrix: the real labels, then B independent permutations of them."""
    perms = rng.permuted(np.broadcast_to(y, (n_permutations, y.size)), axis=1)
    return np.vstack([y[None, :], perms]).astype(np.int8)


def stratified_split(
    y: np.ndarray, fractions: tuple[float, ...], rng: np.random.Generator
) -> list[np.ndarray]:
    """Index arrays of a random partition with the given fractions within each class."""
    parts: list[list[np.ndarray]] = [[] for _ in fractions]
    cum = np.cumsum(fractions)
    for cls in (1, 0):
        idx = rng.permutation(np.flatnonzero(y == cls))
        cuts = np.round(cum[:-1] * idx.size).astype(int)
        for part, chunk in zip(parts, np.split(idx, cuts)):
            part.append(chunk)
    return [np.sort(np.concatenate(p)) for p in parts]
