"""Vectorised, memory-bounded Gaussian kernel density estimation (and a single shrinkage Gaussian).

The density is an isotropic Gaussian product kernel with one bandwidth ``h`` per dimension on
the standardised encoding of :class:`privacy_gate.data.encoding.MixedEncoder`:

    p(x) = 1/n * sum_i (2 pi h^2)^(-D/2) exp(-||x - X_i||^2 / (2 h^2))

Squared distances come from ``||x||^2 + ||y||^2 - 2 x.y`` with one BLAS matrix product per chunk
of target rows (clamped at 0 against cancellation), and the sum over fit rows is a log-sum-exp,
so tiny densities in high dimension do not underflow to log(0) = -inf. Targets are processed in
chunks sized so that the one temporary ``(chunk, n_fit)`` matrix stays within ``chunk_bytes``;
a full ``n_targets x n_fit`` matrix is never materialised.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Literal

import numpy as np
from scipy.linalg import solve_triangular

from privacy_gate.attacks.base import DEFAULT_CHUNK_BYTES, not_fitted
from privacy_gate.errors import ConfigError, DataError, InsufficientDataError
from privacy_gate.params import (
    Component,
    Field,
    NonNegativeNumber,
    OpenFraction,
    Params,
    PositiveInt,
    PositiveNumber,
    Seed,
)

_ITEM = np.dtype(np.float64).itemsize
_LOG = logging.getLogger("privacy_gate.attacks")


def as_matrix(X: object, *, owner: str, n_features: int | None = None) -> np.ndarray:
    """A C-contiguous 2-D float64 array without NaN/inf (checked, not repaired)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise DataError(f"{owner}: expected a 2-D array, got {X.ndim} dimension(s)")
    if n_features is not None and X.shape[1] != n_features:
        raise DataError(f"{owner}: expected {n_features} feature column(s), got {X.shape[1]}")
    if not np.isfinite(X).all():
        raise DataError(
            f"{owner}: the encoded data contains {int((~np.isfinite(X)).sum())} NaN or infinite "
            "value(s)"
        )
    return X


def rows_per_chunk(n_columns: int, chunk_bytes: int, *, itemsize: int = _ITEM) -> int:
    """How many target rows fit a ``(rows, n_columns)`` buffer of ``itemsize``-byte values
    (float64 by default) within ``chunk_bytes``.

    At least one row, so a tiny budget still makes progress (then it is exceeded by one row).
    """
    return max(1, int(chunk_bytes) // (itemsize * max(1, n_columns)))


#: pairwise work (target rows x candidate rows) above which a pairwise job reports its progress
PROGRESS_PAIRS = 2_000_000_000
#: seconds between two progress lines
PROGRESS_EVERY = 15.0


class Progress:
    """Progress lines of one long pairwise job, labelled ``what``: targets done, targets/s and ETA
    every :data:`PROGRESS_EVERY` seconds, on the ``privacy_gate.attacks`` logger, for jobs of more
    than :data:`PROGRESS_PAIRS` target x candidate pairs (the KDE, the plain and the indexed
    nearest-record searches)."""

    def __init__(self, what: str, n_targets: int, n_candidates: int):
        self.what, self.n_targets, self.n_candidates = what, n_targets, n_candidates
        self.enabled = n_targets * n_candidates > PROGRESS_PAIRS
        self.started = self.last = time.perf_counter()

    def done(self, n_done: int) -> None:
        """``n_done`` targets are finished."""
        now = time.perf_counter()
        if not self.enabled or n_done >= self.n_targets or now - self.last <= PROGRESS_EVERY:
            return
        self.last, rate = now, n_done / (now - self.started)
        _LOG.info(
            "  %s: %s of %s targets against %s rows (%.0f targets/s, ETA %.0f s)",
            self.what,
            f"{n_done:,}",
            f"{self.n_targets:,}",
            f"{self.n_candidates:,}",
            rate,
            (self.n_targets - n_done) / rate,
        )


def chunked_products(
    targets: np.ndarray,
    candidates: np.ndarray,
    chunk_bytes: int,
    *,
    what: str = "pairwise distances",
    dtype: type = np.float64,
):
    """Yield ``(start, stop, B)`` with ``B = targets[start:stop] @ candidates.T`` for consecutive
    row chunks, all in ONE reused buffer of at most ``chunk_bytes`` — the shared core of every
    pairwise computation here (KDE, nearest record, neighbourhood counts). Callers may modify
    ``B`` in place; it is overwritten by the next chunk. Large jobs log their progress (targets
    done, rows/s, ETA) on the ``privacy_gate.attacks`` logger, labelled ``what``."""
    n_t, n_c = targets.shape[0], candidates.shape[0]
    step = rows_per_chunk(n_c, chunk_bytes, itemsize=np.dtype(dtype).itemsize)
    buf = np.empty((min(step, max(n_t, 1)), n_c), dtype=dtype)
    progress = Progress(what, n_t, n_c)
    for start in range(0, n_t, step):
        stop = min(start + step, n_t)
        B = buf[: stop - start]
        np.matmul(targets[start:stop], candidates.T, out=B)
        yield start, stop, B
        progress.done(stop)


# --------------------------------------------------------------------------- parameter models
# (all torch-free: DOMIAS's flow settings are checked without importing torch)


#: ``precision="auto"`` computes the KDE in float32 from this many fit rows on (about 2x faster:
#: half the memory traffic and vectorised float32 exp). On Adult-like rows the log densities move
#: by a median 3e-6 and at most 3e-4, and the ranking of targets is unchanged to a Spearman
#: correlation of 1 - 5e-10 (benchmarks/bench_nn_index.py); smaller fits stay in float64, so every
#: figure up to ~150k-row tables is bit-for-bit the float64 one. The choice depends on the fit
#: only, not on how many targets one call scores, so scoring the targets in chunks (on a cluster)
#: gives the same figures as scoring them at once.
FLOAT32_ROWS = 100_000
Precision = Literal["auto", "float64", "float32"]
PRECISION_HELP = (
    f"KDE arithmetic: float64, float32, or auto (float32 from {FLOAT32_ROWS:,} fit rows on)"
)


class KDEParams(Params):
    """Settings of :class:`GaussianKDE`."""

    bandwidth: Literal["scott"] | PositiveNumber = Field(
        "scott", description="KDE bandwidth: Scott's rule or a positive number (standardised units)"
    )
    chunk_bytes: PositiveInt = Field(
        DEFAULT_CHUNK_BYTES, description="memory budget in bytes for the temporary distance matrix"
    )
    max_fit_rows: PositiveInt | None = Field(
        None, description="fit on a seeded random subsample of at most this many rows (None: all)"
    )
    seed: Seed = Field(0, description="seed of the subsample")
    precision: Precision = Field("auto", description=PRECISION_HELP)


class GaussianDensityParams(Params):
    """Settings of :class:`GaussianDensity`."""

    ridge: NonNegativeNumber = Field(
        1e-2, description="variance floor added to the diagonal of the shrinkage covariance"
    )


class FlowSettings(Params):
    """Settings of the masked autoregressive flow (:class:`privacy_gate.attacks.flow.MAFDensity`)
    but its seed: what DOMIAS's ``flow_params`` may set."""

    n_transforms: PositiveInt = Field(5, description="number of MADE layers")
    hidden: tuple[PositiveInt, ...] = Field(
        (64, 64), description="widths of the hidden layers of each MADE"
    )
    ordering: Literal["reverse", "random"] = Field(
        "reverse",
        description="autoregressive order: flipped between layers, or a seeded permutation per "
        "layer",
    )
    noise: NonNegativeNumber = Field(
        0.1, description="std of the Gaussian training noise on every input dimension"
    )
    learning_rate: PositiveNumber = Field(
        5e-3, description="Adam step size (halved when the validation loss stalls)"
    )
    weight_decay: NonNegativeNumber = Field(1e-6, description="Adam weight decay")
    batch_size: PositiveInt = Field(512, description="minibatch rows")
    max_epochs: PositiveInt = Field(100, description="at most this many passes over the data")
    patience: PositiveInt = Field(
        15, description="stop after this many epochs without a validation gain above tol"
    )
    tol: NonNegativeNumber = Field(
        1e-2, description="smallest validation-loss gain (nats per row) that counts"
    )
    validation_fraction: OpenFraction = Field(
        0.1, description="share of rows held out for early stopping"
    )
    max_seconds: PositiveNumber | None = Field(
        None, description="wall-clock budget of training (None: no budget)"
    )
    n_threads: PositiveInt | None = Field(
        None, description="torch threads during fit/score (None: 1)"
    )


class FlowParams(FlowSettings):
    """Settings of :class:`privacy_gate.attacks.flow.MAFDensity`."""

    seed: Seed = Field(0, description="seed of initialisation, split, shuffling and noise")


# --------------------------------------------------------------------------- estimators


class GaussianKDE(Component):
    """Gaussian KDE with an isotropic per-dimension bandwidth, chunked for bounded memory.

    Parameters
    ----------
    bandwidth:
        ``"scott"`` (default) or a positive float ``h`` in standardised units. Scott's rule gives
        ``h = n ** (-1 / (d + 4))`` where ``d`` is ``n_effective_dims`` passed to ``fit`` — the
        number of *original columns* — or the width of ``X`` if not given. The original column
        count is used because one-hot encoding inflates the width (Adult: 15 columns become
        ~110 features); with that ``d`` Scott's factor tends to 1, a kernel as wide as the
        whole data, and the density ratio of DOMIAS loses all locality.
    chunk_bytes:
        Memory budget in bytes for the temporary distance matrix of one chunk of targets.
    precision:
        ``"auto"`` (default): float64, or float32 from :data:`FLOAT32_ROWS` fit rows on;
        ``"float64"`` / ``"float32"`` force one. The result is float64 either way, and
        ``precision_`` records what the last ``score_samples`` used.
    max_fit_rows, seed:
        With more fit rows than ``max_fit_rows``, the KDE is fitted on a seeded uniform subsample
        of that many rows (Scott's rule still uses all the rows given): the cost per target is
        bounded whatever the data size. The subsample's density is an unbiased estimate of the
        full KDE's; ``score_samples`` records each target's relative standard error against it
        in ``rel_se_`` (from the kernel values themselves, with the finite-population
        correction), so the error is stated, not assumed. A near-copy of a target survives the
        subsample only with probability ``max_fit_rows / n``: copy detection belongs to the
        nearest-record attacks, which stay exact.

    Learned attributes: ``X_`` (fit data, after any subsample), ``bandwidth_`` (the ``h`` used),
    ``n_samples_`` (rows fitted), ``n_total_`` (rows given), ``n_features_in_``,
    ``n_effective_dims_``; after ``score_samples``: ``precision_``, and for a subsampled fit
    ``rel_se_``.
    """

    params_model = KDEParams

    @property
    def subsampled(self) -> bool:
        return self.n_samples_ < self.n_total_

    def fit(self, X: np.ndarray, *, n_effective_dims: int | None = None) -> GaussianKDE:
        """Store the fit data and resolve the bandwidth."""
        X = as_matrix(X, owner="GaussianKDE.fit")
        n, width = X.shape
        if n == 0:
            raise InsufficientDataError("GaussianKDE.fit: no rows to fit a density on")
        self.n_total_ = n
        if self.max_fit_rows is not None and n > self.max_fit_rows:
            keep = np.sort(
                np.random.default_rng(self.seed).choice(n, size=self.max_fit_rows, replace=False)
            )
            X, n = X[keep], self.max_fit_rows
        if n_effective_dims is None:
            d = width
        elif (
            isinstance(n_effective_dims, bool)
            or not isinstance(n_effective_dims, (int, np.integer))
            or n_effective_dims < 1
        ):
            raise ConfigError(
                "GaussianKDE.fit: 'n_effective_dims' must be a positive integer, got "
                f"{n_effective_dims!r}"
            )
        else:
            d = int(n_effective_dims)
        # Scott's rule from all the rows given, so a subsample estimates exactly the full KDE
        self.bandwidth_ = (
            float(self.n_total_ ** (-1.0 / (d + 4)))
            if self.bandwidth == "scott"
            else float(self.bandwidth)
        )
        # centring on the fit mean keeps norms small, which limits the cancellation error of
        # ||x||^2 + ||y||^2 - 2 x.y for near-identical rows
        self._center = X.mean(axis=0)
        self.X_ = X
        Xc = X - self._center
        # exponent -||x - y||^2 / (2h^2) = x.y/h^2 - ||y||^2/(2h^2) - ||x||^2/(2h^2): the fit rows
        # are pre-scaled by 1/h^2 and the per-target term is added after the log-sum-exp, which
        # saves four elementwise passes over each (chunk, n_fit) buffer
        inv_h2 = 1.0 / self.bandwidth_**2
        self._Xc_scaled = Xc * inv_h2
        self._col_term = -0.5 * inv_h2 * np.einsum("ij,ij->i", Xc, Xc)
        self.n_samples_ = n
        self.n_features_in_ = width
        self.n_effective_dims_ = d
        return self

    def score_samples(self, X: np.ndarray) -> np.ndarray:
        """Log density at each row of ``X`` (float64, finite)."""
        if not hasattr(self, "X_"):
            not_fitted("GaussianKDE")
        X = as_matrix(X, owner="GaussianKDE.score_samples", n_features=self.n_features_in_)
        h2 = self.bandwidth_**2
        # the kernel's normalising constant uses the full width D: it is the density on R^D
        log_norm = -math.log(self.n_samples_) - 0.5 * self.n_features_in_ * math.log(
            2.0 * math.pi * h2
        )
        Xc = X - self._center
        row_term = -0.5 / h2 * np.einsum("ij,ij->i", Xc, Xc)
        out = np.empty(X.shape[0], dtype=np.float64)
        sub = self.subsampled
        rel_se = np.zeros(X.shape[0]) if sub else None
        single = self.precision == "float32" or (
            self.precision == "auto" and self.n_samples_ >= FLOAT32_ROWS
        )
        self.precision_ = "float32" if single else "float64"
        fit_rows, col_term = self._Xc_scaled, self._col_term
        if single:
            Xc, fit_rows, col_term = (a.astype(np.float32) for a in (Xc, fit_rows, col_term))
        for start, stop, B in chunked_products(
            Xc, fit_rows, self.chunk_bytes, what="KDE", dtype=Xc.dtype.type
        ):
            B += col_term[None, :]
            peak = B.max(axis=1)
            # clamp squared distances at 0: an exponent above -row_term means ||x - y||^2 < 0,
            # a cancellation residue of near-identical rows; only rows whose maximum is above
            # the bound can hold such entries, so the clamp costs nothing in the usual case
            bound = -row_term[start:stop]
            over = peak > bound
            if over.any():
                B[over] = np.minimum(B[over], bound[over, None])
                peak[over] = bound[over]
            # in-place log-sum-exp over fit rows: one buffer, no temporaries of its size
            B -= peak[:, None]
            np.exp(B, out=B)
            s1 = B.sum(axis=1)
            out[start:stop] = np.log(s1) + peak
            if sub:  # standard error of a mean of m kernel values drawn without replacement from n
                m, fpc = self.n_samples_, 1.0 - self.n_samples_ / self.n_total_
                np.square(B, out=B)
                rel_se[start:stop] = np.sqrt(
                    np.maximum(m * B.sum(axis=1) / s1**2 - 1.0, 0.0) / m * fpc
                )
        if sub:
            self.rel_se_ = rel_se
        return out + row_term + log_norm


class GaussianDensity(Component):
    """One multivariate Gaussian with a shrinkage covariance: the DOMIAS "prior" for ``p_R``.

    When the reference set is small, a non-parametric ``p_R`` (KDE, flow) is noisy, and noise in
    the denominator of ``p_G / p_R`` becomes noise in every score (DOMIAS paper, Sec. 5.2 and
    App. C: even a crude parametric prior for ``p_R`` beats ignoring it). This estimator fits the
    mean and the Ledoit-Wolf shrinkage covariance (well conditioned even with more dimensions
    than rows), plus ``ridge`` on the diagonal: a variance floor, so a dimension that is constant
    in the fit data (a category the reference never shows) does not get a near-zero variance that
    would make any target with that category infinitely unlikely. The default ridge 0.01 equals
    the Gaussian training noise (standard deviation 0.1) of
    :class:`privacy_gate.attacks.flow.MAFDensity`.

    Interface as :class:`GaussianKDE`: ``fit(X) -> self``, ``score_samples(X) -> log density``.
    Learned attributes: ``mean_``, ``covariance_``, ``shrinkage_``, ``n_samples_``,
    ``n_features_in_``.
    """

    params_model = GaussianDensityParams

    def fit(self, X: np.ndarray, **_ignored: object) -> GaussianDensity:
        """Fit mean and shrinkage covariance (``n_effective_dims`` etc. are accepted and
        ignored)."""
        from sklearn.covariance import LedoitWolf  # lazy: importing scikit-learn costs ~0.8 s

        X = as_matrix(X, owner="GaussianDensity.fit")
        n, D = X.shape
        if n < 2:
            raise InsufficientDataError(f"GaussianDensity.fit: need at least 2 rows, got {n}")
        lw = LedoitWolf(assume_centered=False).fit(X)
        cov = lw.covariance_ + self.ridge * np.eye(D)
        # a last guard for ridge=0 and constant data: a tiny relative jitter keeps Cholesky defined
        jitter = 1e-12 * max(1.0, float(np.trace(cov)) / D)
        self._chol = np.linalg.cholesky(cov + jitter * np.eye(D))
        self._log_norm = -0.5 * D * math.log(2.0 * math.pi) - float(
            np.log(np.diag(self._chol)).sum()
        )
        self.mean_ = lw.location_
        self.covariance_ = cov
        self.shrinkage_ = float(lw.shrinkage_)
        self.n_samples_ = n
        self.n_features_in_ = D
        return self

    def score_samples(self, X: np.ndarray) -> np.ndarray:
        """Log density at each row of ``X`` (float64)."""
        if not hasattr(self, "_chol"):
            not_fitted("GaussianDensity")
        X = as_matrix(X, owner="GaussianDensity.score_samples", n_features=self.n_features_in_)
        W = solve_triangular(self._chol, (X - self.mean_).T, lower=True)
        return self._log_norm - 0.5 * np.einsum("ij,ij->j", W, W)
