"""Private-GSD (Liu, Tang, Vietri & Wu, "Generating Private Synthetic Data with Genetic
Algorithms", ICML 2023) on discretised data, under rho-zCDP.

Algorithm (budget rho from (epsilon, delta) via ``ZCDPAccountant.from_dp``; add/remove-one
neighbours, as MST in this repo; every measurement is a vector of *unnormalised* counts, whose L2
and L1 sensitivity is 1):

1. **1-way marginals** (``one_way_share`` of rho, split evenly over the d columns): every column's
   count vector with Gaussian noise. They are statistics the search fits, and (post-processing)
   give a public estimate of n and the independence model of step 2.
2. **Selection** (``select_share`` of rho): the workload is every k-way marginal (default k = 2).
   ``n_queries`` of them (default min(all, 2 d)) are chosen by the exponential mechanism, repeated
   without replacement, with score = L1 distance between the marginal's true counts and the
   independence model ``n_hat * outer(p_1, ..., p_k)`` built from the *noisy* 1-way marginals.
   The model is public (post-processing), so adding/removing one record moves one count by 1:
   sensitivity 1. The repeated mechanism is run as one-shot Gumbel top-k (score + Gumbel noise of
   scale 2 / eps_round, keep the top ``n_queries``), which has exactly the distribution of
   ``n_queries`` peeling exponential mechanisms (Durfee & Rogers 2019); each round is charged as
   an eps_round exponential mechanism (eps^2 / 8 zCDP). These are the focal points.
3. **Measurement** (the rest of rho, split evenly over the selected marginals): Gaussian noise on
   each selected marginal's counts. Normalisation uses ``n_hat``, the inverse-variance weighted
   mean of the sums of all noisy marginals (post-processing, no budget, n stays private); targets
   are noisy counts / n_hat clipped to [0, 1], as the reference clips its noisy statistics.
4. **Genetic search** (post-processing, ``_gsd_search``): a dataset of ``n_syn`` rows fitted to
   the targets (1-way and selected k-way) in squared error by the authors' genetic algorithm --
   elite archive, one-value mutation and crossover children of the best dataset, incremental
   fitness, early stop on relative improvement < ``tol`` per window of ``stop_window``
   (default n_syn) generations, at most ``max_generations``.

``sample(n)`` draws rows of the final dataset: without replacement when n <= n_syn (n = n_syn
returns the whole dataset, shuffled), with replacement otherwise, decoded by the discretizer.

Deviations from the published algorithm, and why:

- The authors' one-shot mode measures *all* k-way marginals (no selection, no focal points to
  shadow); their adaptive mode selects marginals in rounds by their error on the current synthetic
  data (so selection is interleaved with the search). We select once, before the search, against
  the independence model -- a cheap, separable step that ``select_focal_points`` can run alone,
  as MAMA-MIA needs. ``n_queries >= #marginals`` gives the one-shot mode: nothing is selected,
  the select share is spent on measurement and the focal points are all marginals.
- The model of the score uses the noisy 1-way marginals (sensitivity 1, as MST) rather than the
  data's own 1-way marginals (whose model moves with the data: the L1 score's sensitivity would be
  bounded only by 2k, i.e. 4x the noise for k = 2), and all 1-way marginals are measured and fitted
  so no column is left uniform when no selected marginal covers it.
- Add/remove neighbours with counts (sensitivity 1) instead of the reference's replace-one
  neighbours with normalised statistics (sensitivity sqrt(2) / n), to match the repo's MST.
- Data are the public discretisation's codes (no real-valued columns / range queries); the
  reference's crossover noise on numeric columns does not apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from itertools import combinations
from typing import Self

import numpy as np
import pandas as pd
from pydantic import model_validator

from privacy_gate.errors import ConfigError, PrivacyGateError
from privacy_gate.generators._gsd_search import SearchResult, Workload, genetic_search
from privacy_gate.generators.accounting import (
    ZCDPAccountant,
    exponential_epsilon_for_rho,
    gaussian_sigma,
)
from privacy_gate.generators.base import register_generator
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.generators.marginal import ZCDPGenerator
from privacy_gate.generators.measurements import NoisyMeasurement, identity_map
from privacy_gate.params import (
    Field,
    NonNegativeInt,
    NonNegativeNumber,
    OpenFraction,
    Params,
    PositiveInt,
    PositiveNumber,
    Seed,
)
from privacy_gate.spec import DatasetSpec


@dataclass
class _Selection:
    """What fit knows after the selection step (all of it DP: noisy counts and chosen queries)."""

    one_way: list[np.ndarray]  # noisy count vector of every column
    sigma_one_way: float
    chosen: list[tuple[int, ...]]  # selected k-way marginals, as column indices, sorted
    n_hat: float  # public estimate of n from the 1-way marginals


def _marginal_counts(codes: np.ndarray, cols: tuple[int, ...], dims: tuple[int, ...]) -> np.ndarray:
    """Counts of one marginal, flattened in C order (``ravel_multi_index`` + ``bincount``)."""
    flat = np.ravel_multi_index(tuple(codes[:, c] for c in cols), dims)
    return np.bincount(flat, minlength=int(np.prod(dims)))


def _n_estimate(noisy: list[np.ndarray], sigmas: list[float]) -> float:
    """Inverse-variance weighted mean of the noisy marginals' sums (each sum has variance
    cells * sigma^2); a public estimate of n, at least 1."""
    w = np.array([1.0 / (len(v) * s * s) for v, s in zip(noisy, sigmas, strict=True)])
    sums = np.array([v.sum() for v in noisy])
    return max(1.0, float(np.sum(w * sums) / np.sum(w)))


class PrivateGSDParams(Params):
    epsilon: PositiveNumber = Field(1.0, description="privacy budget epsilon (finite, > 0)")
    delta: OpenFraction = Field(1e-9, description="privacy parameter delta, in (0, 1)")
    n_bins: PositiveInt = Field(
        20,
        ge=2,
        description="equal-depth bins per continuous column (from public knowledge or the "
        "reference split)",
    )
    seed: Seed | None = Field(
        None,
        description="seed of the generator's randomness (None: fresh entropy; DP noise is always "
        "fresh)",
    )
    k: PositiveInt = Field(2, ge=2, description="marginal order of the measured queries")
    n_queries: PositiveInt | None = Field(
        None, description="k-way marginals selected (None: a default by size)"
    )
    one_way_share: OpenFraction = Field(
        1 / 3, description="share of rho measuring the 1-way marginals"
    )
    select_share: OpenFraction = Field(
        1 / 3, description="share of rho selecting the k-way marginals"
    )
    n_syn: PositiveInt = Field(
        2000, description="rows of the synthetic candidate the search evolves"
    )
    population_size: PositiveInt = Field(100, ge=2, description="genetic-algorithm population size")
    elite_size: PositiveInt = Field(5, description="elite archive size")
    max_generations: NonNegativeInt = Field(20_000, description="generation budget")
    tol: NonNegativeNumber = Field(
        1e-4, description="early stop on relative improvement below this"
    )
    stop_window: PositiveInt | None = Field(
        None, description="generations over which improvement is measured"
    )

    @model_validator(mode="after")
    def _shares(self) -> PrivateGSDParams:
        if self.one_way_share + self.select_share >= 1:
            raise ValueError(
                "one_way_share + select_share must be < 1 (the rest measures the selected "
                "marginals)"
            )
        return self


@register_generator("private_gsd")
class PrivateGSDGenerator(ZCDPGenerator):
    """Private-GSD: noisy 1-way + selected k-way marginals, fitted by a genetic algorithm (zCDP).

    Defaults follow the authors' code (population 100 = 50 mutation + 50 crossover children,
    elite archive of 5, 20,000 generations, early stop window = synthetic size, tol 1e-4, and the
    synthetic size 2,000 of most of their experiment scripts); budget shares follow MST (thirds).
    """

    params_model = PrivateGSDParams

    # -- public knowledge only --------------------------------------------------------------

    def _check_spec(self, spec: DatasetSpec) -> None:
        d = len(spec.attribute_columns)
        if d < self.k:
            raise ConfigError(
                f"generator 'private_gsd': k = {self.k} needs at least {self.k} attribute columns, "
                f"spec '{spec.name}' has {d}"
            )

    def _candidates(self) -> list[tuple[int, ...]]:
        return list(combinations(range(len(self.discretizer_.columns_)), self.k))

    def _n_select(self) -> int:
        n_all = len(self._candidates())
        default = min(n_all, 2 * len(self.discretizer_.columns_))
        return min(n_all, default if self.n_queries is None else int(self.n_queries))

    def _selects(self) -> bool:
        """False in one-shot mode (every marginal is measured: nothing data-dependent to select)."""
        return self._n_select() < len(self._candidates())

    # -- data-dependent steps ---------------------------------------------------------------

    def _select(
        self, codes: np.ndarray, rng: np.random.Generator, acc: ZCDPAccountant
    ) -> _Selection:
        """Steps 1-2 (shared by ``fit`` and ``select_focal_points``): noisy 1-way marginals, then
        the exponential-mechanism selection of k-way marginals."""
        dom = [self.discretizer_.domain_[c] for c in self.discretizer_.columns_]
        d = len(dom)
        sigma1 = gaussian_sigma(self.one_way_share * acc.total / d)
        one_way = []
        for j, name in enumerate(self.discretizer_.columns_):
            acc.gaussian(sigma1, step=f"one_way[{name}]")
            one_way.append(
                np.bincount(codes[:, j], minlength=dom[j]) + rng.normal(0.0, sigma1, dom[j])
            )
        n_hat = _n_estimate(one_way, [sigma1] * d)
        candidates = self._candidates()
        n_select = self._n_select()
        if not self._selects():
            return _Selection(one_way, sigma1, candidates, n_hat)
        probs = []
        for v in one_way:
            p = np.clip(v, 0.0, None)
            probs.append(p / p.sum() if p.sum() > 0 else np.full(len(p), 1.0 / len(p)))
        scores = np.empty(len(candidates))
        for i, cols in enumerate(candidates):
            model = n_hat * reduce(np.multiply.outer, [probs[c] for c in cols]).ravel()
            scores[i] = np.abs(
                _marginal_counts(codes, cols, tuple(dom[c] for c in cols)) - model
            ).sum()
        eps_round = exponential_epsilon_for_rho(self.select_share * acc.total / n_select)
        for r in range(n_select):
            acc.exponential(eps_round, step=f"select[{r}]")
        # Gumbel top-k == n_select exponential mechanisms without replacement, P ~ exp(eps u / (2 *
        # 1))
        noisy = scores + rng.gumbel(0.0, 2.0 / eps_round, size=len(scores))
        chosen = sorted(candidates[i] for i in np.argsort(-noisy, kind="stable")[:n_select])
        return _Selection(one_way, sigma1, chosen, n_hat)

    def _focal(self, chosen: list[tuple[int, ...]]) -> list[FocalPoint]:
        names = self.discretizer_.columns_
        return sorted(
            FocalPoint(kind="query", columns=tuple(names[c] for c in cols)) for cols in chosen
        )

    def select_focal_points(self, data: pd.DataFrame, rng: np.random.Generator) -> list[FocalPoint]:
        """Only steps 1-2 on ``data`` (same code and budget shares as ``fit``, fresh accountant):
        the selected k-way marginals as ``FocalPoint(kind="query", columns=...)``, sorted.

        The accountant is kept in ``selection_accountant_`` for audits.
        """
        codes = self._codes(data, "shadow")
        acc = ZCDPAccountant(self.rho)
        chosen = self._select(codes, rng, acc).chosen
        self.selection_accountant_ = acc
        return self._focal(chosen)

    def fit(
        self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None
    ) -> Self:
        rng, codes = self._start_fit(train, spec, reference)
        acc = ZCDPAccountant(self.rho)
        sel = self._select(codes, rng, acc)
        dom = [self.discretizer_.domain_[c] for c in self.discretizer_.columns_]

        # step 3: Gaussian measurement of the selected marginals with what is left
        share = 1.0 - self.one_way_share - (self.select_share if self._selects() else 0.0)
        sigma2 = gaussian_sigma(share * acc.total / len(sel.chosen))
        measured = []
        for cols in sel.chosen:
            acc.gaussian(
                sigma2,
                step="measure[" + ",".join(self.discretizer_.columns_[c] for c in cols) + "]",
            )
            dims = tuple(dom[c] for c in cols)
            measured.append(
                _marginal_counts(codes, cols, dims) + rng.normal(0.0, sigma2, int(np.prod(dims)))
            )
        if not acc.is_exhausted():  # a bug in the split above, never a user error
            raise PrivacyGateError(f"private_gsd: spent {acc.spent} of rho {acc.total}")
        noisy = sel.one_way + measured
        names = self.discretizer_.columns_
        self.measurements_ = tuple(  # what the search read (white-box DP audits)
            NoisyMeasurement(
                columns=tuple(names[c] for c in q),
                index=tuple(q),
                maps=tuple(identity_map(dom[c]) for c in q),
                shape=tuple(dom[c] for c in q),
                values=v.copy(),
                noise="gaussian",
                scale=s,
            )
            for q, v, s in zip(
                [(j,) for j in range(len(dom))] + list(sel.chosen),
                noisy,
                [sel.sigma_one_way] * len(sel.one_way) + [sigma2] * len(measured),
                strict=True,
            )
        )
        self.n_hat_ = _n_estimate(
            noisy, [sel.sigma_one_way] * len(sel.one_way) + [sigma2] * len(measured)
        )

        # step 4: genetic search on the DP targets only
        acc.spend(0.0, step="genetic search (noisy statistics only)", mechanism="post-processing")
        queries = [(j,) for j in range(len(dom))] + list(sel.chosen)
        workload = Workload(queries, dom)
        target = np.r_[
            np.clip(np.concatenate(noisy) / self.n_hat_, 0.0, 1.0), 0.0
        ]  # + the dummy cell
        result: SearchResult = genetic_search(
            workload,
            target,
            n_syn=self.n_syn,
            rng=rng,
            population_size=self.population_size,
            elite_size=self.elite_size,
            max_generations=self.max_generations,
            tol=self.tol,
            window=self.stop_window,
        )

        self.accountant_ = acc
        self.focal_points_ = self._focal(sel.chosen)
        self.queries_ = [tuple(self.discretizer_.columns_[c] for c in q) for q in queries]
        self.synthetic_codes_ = result.X
        self.fitness_, self.initial_fitness_ = result.fitness, result.initial_fitness
        self.n_generations_, self.history_ = result.n_generations, result.history
        self._sample_rng = rng.spawn(1)[
            0
        ]  # sample(seed=None) after a seeded fit stays reproducible
        return self

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        """``n`` rows of the fitted synthetic dataset (without replacement if n <= n_syn, else
        with), decoded to the spec's columns and types. ``seed=None`` continues a stream spawned
        from the fit's generator (reproducible after a seeded fit, fresh after an unseeded one)."""
        rng = self._sampling_rng(n, seed, fitted_attr="synthetic_codes_")
        n_syn = len(self.synthetic_codes_)
        idx = rng.permutation(n_syn)[:n] if n <= n_syn else rng.integers(0, n_syn, size=n)
        return self._decode(self.synthetic_codes_[idx], rng)
