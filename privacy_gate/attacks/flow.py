"""A masked autoregressive flow (MAF) density estimator in torch, CPU-first.

:class:`MAFDensity` has the interface of :class:`privacy_gate.attacks.density.GaussianKDE`
(``fit(X) -> self``, ``score_samples(X) -> log density``) and is the flexible density of DOMIAS
for larger data (the paper uses the flow BNAF; a MAF is the same family, simpler and as fast on a
CPU). The model, following Papamakarios et al. (2017):

- ``n_transforms`` affine autoregressive layers. Each is a MADE network (Germain et al., 2015)
  that outputs a shift ``mu_i`` and a log-scale ``alpha_i`` for dimension ``i`` from the
  dimensions before it in the layer's ordering; ``u_i = (x_i - mu_i) * exp(-alpha_i)``. The
  ordering is reversed from one layer to the next (``ordering="reverse"``) or a seeded random
  permutation per layer (``ordering="random"``). ``alpha`` is soft-clamped to ``(-3, 3)`` per
  layer and the output layer starts at zero, so training starts at the identity map.
- a standard normal base density: ``log p(x) = log N(u; 0, I) + sum of log |det|``; one pass
  evaluates the density (MAF is slow only to *sample*, which we never do).
- a fixed affine standardisation in front (mean and ``sqrt(var + noise^2)`` per dimension of the
  fit data), with its log-determinant included: densities are densities *on the input space*, so
  two flows fitted on different data (``p_G`` and ``p_R`` in DOMIAS) are comparable.

Discrete dimensions. One-hot categories and missing indicators take two values, and numeric
columns can have point masses (Adult's capital gain is 0 for ~90% of rows); maximum likelihood on
such data is degenerate (the density can grow without bound on the atoms). During training each
minibatch therefore gets fresh Gaussian noise of standard deviation ``noise`` (default 0.1, in
the units of the input: the standardised encoding of MixedEncoder, where one standard deviation
of a numeric column and two different categories are both distance 1) on *every* dimension. The
flow then estimates the smoothed density ``p * N(0, noise^2 I)`` — like a KDE with a (small)
bandwidth ``noise`` on top of a learned density — and ``score_samples`` evaluates it at the clean
points. Since DOMIAS fits ``p_G`` and ``p_R`` with the same noise, the smoothing is the same on
both sides of the ratio.

Training: Adam on the mean negative log-likelihood, gradient-norm clipping, the step size halved
on a plateau of the validation loss, and early stopping on a validation split
(``validation_fraction`` of the rows, 10% by default; its noise is drawn once, so the validation
loss is comparable between epochs): training stops once the validation loss has not improved by
more than ``tol`` for ``patience`` epochs, and the best epoch's weights are restored. Everything
is seeded: parameters are initialised under ``torch.random.fork_rng`` (the global torch RNG
state is restored afterwards) and shuffling and noise come from a private ``torch.Generator``.
The number of torch threads is set for the fit/score call only and restored after.

What a flow does not see. Early stopping on held-out rows makes the flow estimate the smooth
distribution of its data, not the data points: a synthetic set that is a verbatim copy of a few
hundred training records looks, to a flow, like any other sample of the population. In the
attack tests (300 copied members, 10 columns) DOMIAS with the flow reaches AUC ~0.6 where the
KDE — whose bandwidth is below the distances between records — reaches > 0.9; on 20,000 noisy
copies of Adult records (benchmarks/results/domias_speed.json) 0.50 against 0.67. Likewise a
5-layer affine MAF cannot represent hundreds of narrow bumps around memorised records. The flow
pays off for broad, distributional overfitting: on Adult (benchmarks/bench_domias_paper.py, 5
seeds) it is the only attack clearly above chance against CTGAN (AUC 0.546 +- 0.007, KDE 0.513)
but below the KDE against a TVAE that memorises near-copies (0.641 vs 0.692). Copies are the
job of the KDE and of the distance attacks (``dcr``, ``gan_leaks_cal``).
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any

import numpy as np
import torch
from torch import nn

from privacy_gate.attacks.base import not_fitted
from privacy_gate.attacks.density import FlowParams, as_matrix
from privacy_gate.errors import InsufficientDataError
from privacy_gate.params import Component

#: Soft bound of each layer's log-scale: ``alpha = ALPHA_BOUND * tanh(raw / ALPHA_BOUND)``.
ALPHA_BOUND = 3.0
_LOG_2PI = math.log(2.0 * math.pi)


@contextlib.contextmanager
def torch_threads(n: int | None):
    """Run with ``n`` torch intra-op threads (None: leave as is); restore the old number after."""
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(old)


#: Default torch threads for a flow. The matrices of a small MADE (64 hidden units, batches of
#: 256 rows) are too small to gain from intra-op parallelism, and with more threads than idle cores
#: (the gate runs attacks concurrently; CI machines are shared) torch's spinning worker threads
#: slow training down by 5-10x — measured on a shared 2-core machine: 2.4 s with one thread,
#: 5-26 s with two. One thread is the robust default; raise ``n_threads`` on a dedicated machine.
DEFAULT_THREADS = 1


class _MaskedLinear(nn.Linear):
    def __init__(self, n_in: int, n_out: int, mask: np.ndarray):
        super().__init__(n_in, n_out)
        self.register_buffer("mask", torch.as_tensor(mask, dtype=torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.linear(x, self.weight * self.mask, self.bias)


class _MADE(nn.Module):
    """One affine autoregressive layer: ``(mu, alpha)`` of dimension i from the earlier ones."""

    def __init__(self, order: np.ndarray, hidden: tuple[int, ...]):
        super().__init__()
        D = len(order)
        # degrees: input d has degree order[d] in 1..D; hidden units cycle through 1..D-1 so every
        # hidden unit is used; output d may see hidden units of degree < order[d]
        degrees_in = np.asarray(order) + 1
        layers: list[nn.Module] = []
        prev = degrees_in
        for width in hidden:
            deg = np.arange(width) % max(1, D - 1) + 1
            layers.append(
                _MaskedLinear(len(prev), width, (deg[:, None] >= prev[None, :]).astype(np.float32))
            )
            layers.append(nn.Tanh())
            prev = deg
        out_mask = (degrees_in[:, None] > prev[None, :]).astype(np.float32)
        self.out = _MaskedLinear(len(prev), 2 * D, np.vstack([out_mask, out_mask]))
        # zero output layer: mu = 0, alpha = 0, the layer starts as the identity
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)
        self.body = nn.Sequential(*layers)
        self.D = D

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(x) if len(self.body) else x
        mu, raw = self.out(h).split(self.D, dim=1)
        alpha = ALPHA_BOUND * torch.tanh(raw / ALPHA_BOUND)
        return (x - mu) * torch.exp(-alpha), -alpha.sum(dim=1)


class _MAF(nn.Module):
    def __init__(
        self,
        D: int,
        n_transforms: int,
        hidden: tuple[int, ...],
        ordering: str,
        rng: np.random.Generator,
    ):
        super().__init__()
        layers = []
        order = np.arange(D)
        for k in range(n_transforms):
            if ordering == "random":
                order = rng.permutation(D)
            elif k > 0:
                order = order[::-1].copy()
            layers.append(_MADE(order, hidden))
        self.layers = nn.ModuleList(layers)

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(u, log|det du/dz|)`` for a batch of standardised rows ``z``."""
        log_det = torch.zeros(z.shape[0], dtype=z.dtype, device=z.device)
        for layer in self.layers:
            z, ld = layer(z)
            log_det = log_det + ld
        return z, log_det

    def log_prob(self, z: torch.Tensor) -> torch.Tensor:
        u, log_det = self(z)
        return -0.5 * (u * u).sum(dim=1) - 0.5 * z.shape[1] * _LOG_2PI + log_det


class MAFDensity(Component):
    """Masked autoregressive flow density estimator (see the module docstring).

    Parameters
    ----------
    n_transforms: number of MADE layers (default 5).
    hidden: widths of the hidden layers of each MADE (default ``(64, 64)``).
    ordering: ``"reverse"`` (default: the autoregressive order flips between layers) or
        ``"random"`` (a seeded random permutation per layer).
    noise: standard deviation of the Gaussian training noise on every input dimension, in input
        units (default 0.1; see "Discrete dimensions" above). 0 switches it off — only sensible
        for truly continuous data.
    learning_rate, weight_decay: Adam settings (default 5e-3 and 1e-6). The step size is halved
        whenever the validation loss stalls for ``patience // 3`` epochs.
    batch_size: minibatch rows (default 512: on a CPU the cost of a step is mostly overhead,
        so fewer, larger steps train faster — 2-3x against 256 at the same accuracy).
    max_epochs, patience, tol: at most ``max_epochs`` passes; stop when the validation loss (mean
        negative log-likelihood, nats per row) has not improved by more than ``tol`` for
        ``patience`` epochs (defaults 100, 15 and 0.01). With a smaller ``tol`` a flow on
        122-dimensional Adult data keeps "improving" by a few thousandths of a nat per epoch.
        The epoch budget is a speed compromise: on 20,000 x 122 (Adult) an epoch takes ~0.65 s
        on one core, so DOMIAS's two flows fit in ~2 minutes; the validation loss is still
        creeping down then (by ~0.7 nats per row between epochs 100 and 190), so a fit that hits
        the budget says so in ``stopped_by_`` and in the DOMIAS notes.
    validation_fraction: share of rows held out for early stopping (default 0.1; at least 1 row).
        With fewer than 20 rows there is no split and the (noisy) training loss is monitored.
    max_seconds: optional wall-clock budget for training; when it runs out the best weights so
        far are kept and ``stopped_by_`` says so (not reproducible across machines; default None).
    seed: seeds initialisation, the split, shuffling and noise (default 0).
    n_threads: torch threads during fit/score (default 1, see ``DEFAULT_THREADS``).

    Learned attributes: ``n_features_in_``, ``n_samples_``, ``n_epochs_`` (epochs run),
    ``best_epoch_``, ``stopped_by_`` (``"patience"``, ``"max_epochs"`` or ``"max_seconds"``),
    ``history_`` (``{"train": [...], "validation": [...]}`` mean NLL per epoch, nats per row),
    ``fit_seconds_``, ``model_``.
    """

    params_model = FlowParams

    def _post_init(self) -> None:
        self.hidden = tuple(self.hidden)

    # ------------------------------------------------------------------ fitting

    def fit(self, X: np.ndarray, **_ignored: Any) -> MAFDensity:
        """Fit by maximum likelihood with early stopping. Extra keywords (``n_effective_dims``,
        which the KDE takes) are accepted and ignored, so both estimators are interchangeable."""
        X = as_matrix(X, owner="MAFDensity.fit")
        n, D = X.shape
        if n < 2:
            raise InsufficientDataError(
                f"MAFDensity.fit: need at least 2 rows to fit a flow, got {n}"
            )
        if D == 0:
            raise InsufficientDataError("MAFDensity.fit: the data has no feature columns")
        start = time.perf_counter()
        # the fixed standardisation (its log-determinant is part of every log density)
        self._mean = X.mean(axis=0)
        self._scale = np.sqrt(X.var(axis=0) + self.noise**2)
        self._scale[self._scale < 1e-12] = 1.0  # constant column and no noise: leave it as is
        self._log_det_std = -float(np.log(self._scale).sum())
        Z = torch.from_numpy(((X - self._mean) / self._scale).astype(np.float32))
        noise_z = torch.from_numpy((self.noise / self._scale).astype(np.float32))

        rng = np.random.default_rng(self.seed)
        if n >= 20:
            n_val = min(n - 1, max(1, round(self.validation_fraction * n)))
            perm = rng.permutation(n)
            val_idx, train_idx = perm[:n_val], perm[n_val:]
            Z_train, Z_val = (
                Z[torch.from_numpy(np.sort(train_idx))],
                Z[torch.from_numpy(np.sort(val_idx))],
            )
        else:
            Z_train, Z_val = Z, Z

        with torch_threads(self.n_threads or DEFAULT_THREADS), torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            gen = torch.Generator().manual_seed(self.seed + 1)
            model = _MAF(D, self.n_transforms, self.hidden, self.ordering, rng)
            # validation noise drawn once: the validation loss is comparable between epochs
            Z_val_noisy = Z_val + noise_z * torch.randn(Z_val.shape, generator=gen)
            opt = torch.optim.Adam(
                model.parameters(), lr=self.learning_rate, weight_decay=self.weight_decay
            )
            # halve the step size when the validation loss stalls for a third of the patience
            sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
                opt,
                factor=0.5,
                patience=max(1, self.patience // 3),
                threshold=self.tol,
                threshold_mode="abs",
            )
            history: dict[str, list[float]] = {"train": [], "validation": []}
            best, best_epoch, best_state, wait, reference = math.inf, 0, None, 0, math.inf
            stopped_by = "max_epochs"
            n_train = Z_train.shape[0]
            for epoch in range(1, self.max_epochs + 1):
                model.train()
                order = torch.randperm(n_train, generator=gen)
                total = 0.0
                for s in range(0, n_train, self.batch_size):
                    batch = Z_train[order[s : s + self.batch_size]]
                    batch = batch + noise_z * torch.randn(batch.shape, generator=gen)
                    loss = -model.log_prob(batch).mean()
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                    opt.step()
                    total += float(loss.detach()) * batch.shape[0]
                history["train"].append(total / n_train - self._log_det_std)
                model.eval()
                with torch.inference_mode():
                    val = -float(model.log_prob(Z_val_noisy).double().mean()) - self._log_det_std
                history["validation"].append(val)
                if not math.isfinite(val):
                    stopped_by = "diverged"
                    break
                sched.step(val)
                if val < best:  # the weights to keep: the best epoch, however small the gain
                    best, best_epoch = val, epoch
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                if val < reference - self.tol:  # progress that counts for early stopping
                    reference, wait = val, 0
                else:
                    wait += 1
                    if wait >= self.patience:
                        stopped_by = "patience"
                        break
                if self.max_seconds is not None and time.perf_counter() - start > self.max_seconds:
                    stopped_by = "max_seconds"
                    break
            if best_state is not None:
                model.load_state_dict(best_state)
        model.eval()
        self.model_ = model
        self.history_ = history
        self.n_epochs_ = len(history["validation"])
        self.best_epoch_ = best_epoch
        self.stopped_by_ = stopped_by
        self.n_samples_ = n
        self.n_features_in_ = D
        self.fit_seconds_ = time.perf_counter() - start
        return self

    # ------------------------------------------------------------------ scoring

    def score_samples(self, X: np.ndarray, *, batch_rows: int = 8192) -> np.ndarray:
        """Log density at each row of ``X`` (float64), evaluated in batches of ``batch_rows``."""
        if not hasattr(self, "model_"):
            not_fitted("MAFDensity")
        X = as_matrix(X, owner="MAFDensity.score_samples", n_features=self.n_features_in_)
        out = np.empty(X.shape[0], dtype=np.float64)
        with torch_threads(self.n_threads or DEFAULT_THREADS), torch.inference_mode():
            for s in range(0, X.shape[0], batch_rows):
                Z = torch.from_numpy(
                    ((X[s : s + batch_rows] - self._mean) / self._scale).astype(np.float32)
                )
                u, log_det = self.model_(Z)
                # the base log-density in float64: far-away rows have large u, u^2 must not overflow
                u64 = u.double()
                logp = (
                    -0.5 * (u64 * u64).sum(dim=1) - 0.5 * u.shape[1] * _LOG_2PI + log_det.double()
                )
                out[s : s + batch_rows] = logp.numpy()
        return out + self._log_det_std
