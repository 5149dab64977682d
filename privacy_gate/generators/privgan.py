"""privGAN for tables (Mukherjee et al., "privGAN: Protecting GANs from membership inference
attacks at low cost"), adapted from the paper's image setting: there is no tabular reference
implementation, so this is our adaptation, in torch, on CPU.

The training set is split at random into N disjoint parts. Generator/discriminator pair i sees
only part i. A privacy discriminator D_p (N-way softmax) learns to tell which generator made a
sample. Each generator minimises its GAN loss plus ``privacy_weight`` (lambda) times D_p's
cross-entropy against a random index other than its own (as in the reference code), so a
generator is pushed away from what only its own part looks like, i.e. from memorising it.
D_p is pre-trained on (real record, part index) and joins after ``privacy_delay`` epochs.
Sampling picks a generator at random per row; D_p is never released. With N = 1 and lambda = 0
the same code is a plain GAN, registered as ``gan``: the comparison isolates the defence.

The guarantee is empirical, not differential privacy: the gate measures what it achieves.

Tabular adaptation: the encoding comes from the spec (public ranges and categories; the reference
split where the spec is silent, never the train split; ``tabular_codec``). Outputs are tanh for
scaled numerics and a Gumbel-softmax per categorical block while training (softmax probabilities,
sampled, at release time). Label smoothing on the real labels. A fixed budget of ``epochs``
(no early stopping: a stopping rule that looked at held-out data would need its own accounting).
All randomness comes from the ``seed`` inside a forked torch RNG: the global state is untouched.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.errors import ConfigError
from privacy_gate.generators import progress
from privacy_gate.generators.base import GeneratorCapabilities, clip_to_spec, register_generator
from privacy_gate.generators.tabular_codec import TabularCodec
from privacy_gate.params import (
    Component,
    Field,
    NonNegativeInt,
    NonNegativeNumber,
    Params,
    PositiveInt,
    PositiveNumber,
    Seed,
)
from privacy_gate.spec import DatasetSpec

log = logging.getLogger("privacy_gate")


def partition(n: int, parts: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``parts`` disjoint random index sets covering ``range(n)``, sizes differing by at most one.

    >>> [len(p) for p in partition(10, 3, np.random.default_rng(0))]
    [4, 3, 3]
    """
    return [np.sort(p) for p in np.array_split(rng.permutation(n), parts)]


def wrong_labels(i: int, n: int, parts: int, generator: Any) -> Any:
    """For generator ``i``: ``n`` random part indices, each different from ``i`` (the privacy
    loss's target, as in the reference code)."""
    import torch

    offset = torch.randint(1, parts, (n,), generator=generator)
    return (i + offset) % parts


def generator_loss(
    d_logits: list[Any],
    dp_logits: list[Any] | None,
    targets: list[Any] | None,
    privacy_weight: float,
) -> Any:
    """sum_i [ BCE(D_i(G_i(z)), real) + lambda * CE(D_p(G_i(z)), random index != i) ].
    With lambda = 0 (or no D_p) this is exactly the sum of the N plain GAN generator losses."""
    import torch
    import torch.nn.functional as F

    total = torch.zeros(())
    for i, logits in enumerate(d_logits):
        total = total + F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits))
        if privacy_weight > 0 and dp_logits is not None:
            total = total + privacy_weight * F.cross_entropy(dp_logits[i], targets[i])
    return total


class GANParams(Params):
    seed: Seed | None = Field(
        None, description="seed of training and sampling (None: fresh randomness)"
    )
    epochs: PositiveInt = Field(300, description="training epochs (a fixed budget)")
    batch_size: PositiveInt = Field(128, description="batch size per generator")
    latent_dim: PositiveInt = Field(64, description="noise dimension")
    hidden: tuple[PositiveInt, ...] = Field(
        (128, 128), description="hidden layer sizes of every network"
    )
    lr: PositiveNumber = Field(2e-4, description="Adam learning rate (beta1 0.5)")
    label_smoothing: NonNegativeNumber = Field(0.1, description="real labels are 1 - this")
    log_every: PositiveInt = Field(25, description="progress line every this many epochs")


class PrivGANParams(GANParams):
    n_generators: PositiveInt = Field(
        2, description="N: disjoint parts of the training set, one generator each"
    )
    privacy_weight: NonNegativeNumber = Field(
        1.0, description="lambda: weight of the privacy discriminator's loss"
    )
    privacy_pretrain_epochs: NonNegativeInt = Field(
        20, description="D_p pre-training epochs on (record, part)"
    )
    privacy_delay: NonNegativeInt = Field(
        0, description="epochs before D_p joins adversarial training"
    )


def _mlp(sizes: list[int], *, leaky: bool, dropout: float = 0.0):
    import torch.nn as nn

    layers: list[Any] = []
    for a, b in zip(sizes[:-2], sizes[1:-1]):
        layers += [nn.Linear(a, b), nn.LeakyReLU(0.2) if leaky else nn.ReLU()]
        if dropout:
            layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(sizes[-2], sizes[-1]))
    return nn.Sequential(*layers)


@register_generator("privgan")
class PrivGANGenerator(Component):
    """privGAN: N generators on disjoint parts, a privacy discriminator, lambda-weighted privacy
    loss.

    Learned attributes: ``codec_``, ``generators_``, ``discriminators_``, ``privacy_discriminator_``
    (never released), ``history_`` (losses per epoch), ``privacy_pretrain_accuracy_``,
    ``fit_seconds_``, ``notes_``."""

    params_model = PrivGANParams
    capabilities = GeneratorCapabilities()  # empirical defence, no formal guarantee
    privacy = None
    name = "privgan"

    def _post_init(self) -> None:
        self.hidden = tuple(self.hidden)

    # ---- networks
    def _activate(self, raw: Any, *, tau: float | None) -> Any:
        """tanh per numeric column; per categorical block a Gumbel-softmax (training) or softmax."""
        import torch
        import torch.nn.functional as F

        parts = []
        for _, kind, start, stop in self.codec_.blocks:
            block = raw[:, start:stop]
            if kind == "numeric":
                parts.append(torch.tanh(block))
            elif tau is not None:
                parts.append(F.gumbel_softmax(block, tau=tau, hard=False))
            else:
                parts.append(F.softmax(block, dim=1))
        return torch.cat(parts, dim=1)

    def _fake(self, i: int, n: int, *, tau: float | None = 0.5) -> Any:
        import torch

        return self._activate(self.generators_[i](torch.randn(n, self.latent_dim)), tau=tau)

    # ---- training
    def fit(
        self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None
    ) -> PrivGANGenerator:
        import torch

        n_parts = self.n_generators
        if len(train) < 2 * n_parts:
            raise ConfigError(
                f"generator '{self.name}': {len(train)} training rows cannot be split into "
                f"n_generators={n_parts} parts of at least 2 rows"
            )
        self.spec_ = spec
        self.codec_ = TabularCodec.from_spec(spec, reference=reference)
        X = torch.from_numpy(self.codec_.encode(train))
        self.notes_ = list(self.codec_.notes)
        self.seed_ = self.seed if self.seed is not None else secrets.randbelow(2**31)
        rng = np.random.default_rng(self.seed_)
        self.parts_ = partition(len(train), n_parts, rng)
        started = time.perf_counter()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed_)
            self._train(X, rng)
        self.fit_seconds_ = time.perf_counter() - started
        return self

    def _train(self, X: Any, rng: np.random.Generator) -> None:
        import torch
        import torch.nn.functional as F

        N, width, lam = self.n_generators, self.codec_.width, float(self.privacy_weight)
        sizes = [self.latent_dim, *self.hidden, width]
        self.generators_ = [_mlp(sizes, leaky=False) for _ in range(N)]
        self.discriminators_ = [
            _mlp([width, *self.hidden, 1], leaky=True, dropout=0.3) for _ in range(N)
        ]
        self.privacy_discriminator_ = (
            _mlp([width, *self.hidden, N], leaky=True, dropout=0.3) if N > 1 else None
        )
        betas = (0.5, 0.999)
        g_opt = torch.optim.Adam(
            [p for g in self.generators_ for p in g.parameters()], lr=self.lr, betas=betas
        )
        d_opts = [
            torch.optim.Adam(d.parameters(), lr=self.lr, betas=betas) for d in self.discriminators_
        ]
        dp = self.privacy_discriminator_
        dp_opt = (
            torch.optim.Adam(dp.parameters(), lr=self.lr, betas=betas) if dp is not None else None
        )
        labels_gen = torch.Generator().manual_seed(int(rng.integers(2**31)))
        real_label = 1.0 - float(self.label_smoothing)
        self.privacy_pretrain_accuracy_ = None
        if dp is not None and self.privacy_pretrain_epochs:
            self.privacy_pretrain_accuracy_ = self._pretrain_privacy(X, rng, dp, dp_opt)
        batch = max(1, min(self.batch_size, min(len(p) for p in self.parts_)))
        steps = int(np.ceil(max(len(p) for p in self.parts_) / batch))
        self.history_: list[dict[str, float]] = []
        for epoch in range(1, self.epochs + 1):
            orders = [rng.permutation(p) for p in self.parts_]
            private = dp is not None and lam > 0 and epoch > self.privacy_delay
            sums = {"d_loss": 0.0, "g_loss": 0.0, "dp_loss": 0.0}
            for step in range(steps):
                idx = [o[(step * batch) % len(o) :][:batch] for o in orders]
                # 1. each discriminator on its own part against its own generator
                for i in range(N):
                    real, fake = X[idx[i]], self._fake(i, len(idx[i])).detach()
                    d_real, d_fake = self.discriminators_[i](real), self.discriminators_[i](fake)
                    d_loss = F.binary_cross_entropy_with_logits(
                        d_real, torch.full_like(d_real, real_label)
                    ) + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
                    d_opts[i].zero_grad()
                    d_loss.backward()
                    d_opts[i].step()
                    sums["d_loss"] += float(d_loss.detach()) / N
                # 2. the privacy discriminator: which generator made this sample?
                if private:
                    fakes = torch.cat([self._fake(i, batch).detach() for i in range(N)])
                    who = torch.arange(N).repeat_interleave(batch)
                    dp_loss = F.cross_entropy(dp(fakes), who)
                    dp_opt.zero_grad()
                    dp_loss.backward()
                    dp_opt.step()
                    sums["dp_loss"] += float(dp_loss.detach())
                # 3. the generators: fool their discriminator, and D_p (lambda-weighted)
                fakes = [self._fake(i, batch) for i in range(N)]
                d_logits = [self.discriminators_[i](f) for i, f in enumerate(fakes)]
                dp_logits = [dp(f) for f in fakes] if private else None
                targets = (
                    [wrong_labels(i, batch, N, labels_gen) for i in range(N)] if private else None
                )
                g_loss = generator_loss(d_logits, dp_logits, targets, lam if private else 0.0)
                g_opt.zero_grad()
                g_loss.backward()
                g_opt.step()
                sums["g_loss"] += float(g_loss.detach())
            self.history_.append({k: v / steps for k, v in sums.items()})
            progress.step(epoch, self.epochs, "epoch")
            if epoch % self.log_every == 0 or epoch == self.epochs:
                h = self.history_[-1]
                log.info(
                    "%s epoch %d/%d: D loss %.3f, G loss %.3f%s",
                    self.name,
                    epoch,
                    self.epochs,
                    h["d_loss"],
                    h["g_loss"],
                    f", D_p loss {h['dp_loss']:.3f}" if private else "",
                )

    def _pretrain_privacy(self, X: Any, rng: np.random.Generator, dp: Any, opt: Any) -> float:
        """D_p on (real record, its part index); returns its training accuracy (chance = 1/N)."""
        import torch
        import torch.nn.functional as F

        part_of = torch.empty(len(X), dtype=torch.long)
        for i, p in enumerate(self.parts_):
            part_of[p] = i
        for _ in range(self.privacy_pretrain_epochs):
            for chunk in np.array_split(rng.permutation(len(X)), max(1, len(X) // self.batch_size)):
                loss = F.cross_entropy(dp(X[chunk]), part_of[chunk])
                opt.zero_grad()
                loss.backward()
                opt.step()
        dp.eval()
        with torch.no_grad():
            accuracy = float((dp(X).argmax(dim=1) == part_of).float().mean())
        dp.train()
        return accuracy

    # ---- release
    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        """``n`` rows; each row's generator is drawn uniformly at random."""
        import torch

        seed = (
            seed
            if seed is not None
            else (self.seed if self.seed is not None else secrets.randbelow(2**31))
        )
        rng = np.random.default_rng(seed)
        which = rng.integers(self.n_generators, size=int(n))
        out = np.zeros((int(n), self.codec_.width), dtype=np.float32)
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            for i in range(self.n_generators):
                rows = np.flatnonzero(which == i)
                if len(rows):
                    out[rows] = self._fake(i, len(rows), tau=None).numpy()
        df = self.codec_.decode(out, rng)
        if self.spec_.entity_id:  # synthetic rows stand for no real entity
            df.insert(
                list(self.spec_.columns).index(self.spec_.entity_id),
                self.spec_.entity_id,
                [f"synthetic-{k}" for k in range(int(n))],
            )
        return clip_to_spec(df, self.spec_)

    def discriminator_scores(self, records: pd.DataFrame) -> np.ndarray:
        """White-box attack of the paper (benchmarks only; a release never includes the
        discriminators): the highest discriminator output over the N pairs."""
        import torch

        X = torch.from_numpy(self.codec_.encode(records))
        with torch.no_grad():
            scores = [torch.sigmoid(d.eval()(X)).squeeze(1).numpy() for d in self.discriminators_]
        for d in self.discriminators_:
            d.train()
        return np.max(np.vstack(scores), axis=0)


@register_generator("gan")
class PlainGANGenerator(PrivGANGenerator):
    """The plain-GAN baseline: privGAN's code with one generator and no privacy loss."""

    params_model = GANParams
    name = "gan"

    def _post_init(self) -> None:
        super()._post_init()
        # privGAN's code with one generator and no privacy discriminator (not parameters here)
        self.n_generators, self.privacy_weight, self.privacy_pretrain_epochs, self.privacy_delay = (
            1,
            0.0,
            0,
            0,
        )


__all__ = ["PlainGANGenerator", "PrivGANGenerator", "generator_loss", "partition", "wrong_labels"]
