"""MST: differentially private synthetic data from a spanning tree of noisy 2-way marginals.

McKenna, Miklau & Sheldon (2021), "Winning the NIST Contest: A scalable and general approach to
differentially private synthetic data" (Journal of Privacy and Confidentiality 11(3)); the
reference implementation is ``mechanisms/mst.py`` of private-pgm. Privacy is rho-zCDP with
rho = cdp_rho(epsilon, delta); neighbouring datasets differ by adding or removing one record (as
in the reference), so a count vector has L2 sensitivity 1 and an L1 score sensitivity 1.

Budget split (d = number of attribute columns, every charge goes through ``ZCDPAccountant``):

1. rho/3 — all d 1-way marginals, Gaussian mechanism, sigma1 = sqrt(3 d / (2 rho)) each (the
   reference's sigma = sqrt(3 / (2 rho)) with weights 1/sqrt(d), i.e. normalised to unit norm).
   *Domain compression* follows: the values of a column whose noisy count is below 3 sigma1 are
   merged into one extra bin. It reads only the noisy measurements, so it is post-processing
   covered by step 1 (the ledger records it as a zero-cost "post-processing" entry).
2. rho/3 — a spanning tree, Kruskal style: d-1 rounds, each an exponential mechanism with
   epsilon = sqrt(8 (rho/3) / (d-1)) (bounded range: eps^2/8 zCDP per round) over the column pairs
   that join two different components. The score of a pair is the L1 distance between its true
   2-way count table (compressed domain) and the table implied by the independent model built
   from the noisy 1-way marginals; sensitivity 1.
3. rho/3 — the d-1 chosen 2-way marginals, Gaussian mechanism, sigma2 = sqrt(3 (d-1) / (2 rho)).

With a single column there is nothing to select: step 1 gets the whole budget.

Synthesis (post-processing). The reference fits a graphical model to all measurements with
Private-PGM; for a tree the same goal — one distribution consistent with every noisy marginal — is
reached in closed form here: each column's marginal is the inverse-variance-weighted combination
of its noisy 1-way measurement and the row/column sums of its noisy 2-way tables, projected onto
the probability simplex (weighted least squares); each edge table is projected onto the simplex,
then iterative proportional fitting makes its margins equal those column marginals, so the tree
distribution P(root) * prod P(child | parent) reproduces every edge table exactly. Sampling draws
the root, then each child given its parent in BFS order (vectorised inverse-CDF per column). A
merged bin is decompressed by drawing uniformly among the original values it merged (as the
reference does), then ``Discretizer.inverse_transform`` maps codes back to values.

Focal points (MAMA-MIA): the tree edges, ``FocalPoint("marginal", (a, b))`` with a before b in
the discretizer's column order. ``select_focal_points`` runs steps 1-2 only, spending 2/3 of rho.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from itertools import combinations
from typing import Self

import numpy as np
import pandas as pd

from privacy_gate.generators.accounting import ZCDPAccountant, gaussian_sigma
from privacy_gate.generators.base import register_generator
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.generators.marginal import ZCDPGenerator
from privacy_gate.generators.measurements import NoisyMeasurement, identity_map
from privacy_gate.params import (
    Field,
    OpenFraction,
    Params,
    PositiveInt,
    PositiveNumber,
    Seed,
)
from privacy_gate.spec import DatasetSpec

_COMPRESS_SIGMAS = (
    3.0  # values with noisy count < 3 sigma are merged (reference: y >= 3*sigma kept)
)
_SCORE_SENSITIVITY = 1.0  # L1 score: one record added/removed moves one cell of the true table by 1
_IPF_MAX_ITERS = 200
_IPF_TOL = 1e-12
_MIX = 1e-6  # weight of the independent table mixed into each edge table so IPF can always match


def budget_split(rho: float, d: int) -> tuple[float, float, float]:
    """(1-way measurement, tree selection, 2-way measurement) shares of rho for d columns."""
    if d < 2:
        return rho, 0.0, 0.0
    return rho / 3, rho / 3, rho / 3


@dataclass
class _Selection:
    """Everything steps 1-2 produce: noisy 1-way marginals (compressed domain) and the tree."""

    codes: np.ndarray  # (n, d) codes on the compressed domain
    supports: list[np.ndarray]  # per column, bool over the original codes: kept as its own value
    sizes: list[int]  # compressed domain sizes
    one_way: list[np.ndarray]  # noisy counts on the compressed domain (merged bin last)
    one_way_var: list[np.ndarray]  # their noise variances per cell
    totals: list[tuple[float, float]]  # (noisy record count, its variance) per measurement
    edges: list[tuple[int, int]]  # (i, j), i < j, in selection order
    maps: list[np.ndarray] = field(default_factory=list)  # per column: original -> compressed code
    measurements: list[NoisyMeasurement] = field(default_factory=list)  # step 1's, for audits


def _project_simplex(y: np.ndarray, total: float, weights: np.ndarray | None = None) -> np.ndarray:
    """argmin_x sum w (x - y)^2 s.t. x >= 0, sum x = total: x = max(0, y - lam / w), lam by
    bisection."""
    y = np.asarray(y, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    lo = float(np.min(w * (y - total)))  # sum(max(0, y - lo/w)) >= total here
    hi = float(np.max(w * y))  # ... and 0 here
    for _ in range(100):
        lam = 0.5 * (lo + hi)
        if np.maximum(0.0, y - lam / w).sum() > total:
            lo = lam
        else:
            hi = lam
    active = y - hi / w > 0
    if active.any():  # exact lam on the active set bisection found (no 1e-16 leftovers)
        hi = (y[active].sum() - total) / (1.0 / w[active]).sum()
    x = np.maximum(0.0, y - hi / w)
    s = x.sum()
    return x * (total / s) if s > 0 else np.full_like(y, total / y.size)


def _estimate_total(totals: list[tuple[float, float]]) -> float:
    """Inverse-variance-weighted record count from the noisy measurements (never the true n)."""
    values = np.array([t for t, _ in totals])
    inv = 1.0 / np.array([v for _, v in totals])
    return max(1.0, float((values * inv).sum() / inv.sum()))


def _pair_counts(codes: np.ndarray, i: int, j: int, sizes: list[int]) -> np.ndarray:
    flat = np.ravel_multi_index((codes[:, i], codes[:, j]), (sizes[i], sizes[j]))
    return np.bincount(flat, minlength=sizes[i] * sizes[j]).astype(float)


def _measure_and_select(
    codes: np.ndarray,
    domain: list[int],
    columns: list[str],
    *,
    rho: float,
    accountant: ZCDPAccountant,
    rng: np.random.Generator,
) -> _Selection:
    """Steps 1-2 of MST (the only data-dependent steps before the final measurements)."""
    d = len(columns)
    rho1, rho_sel, _ = budget_split(rho, d)
    # step 1: every 1-way marginal, the step's rho shared equally among the d measurements
    sigma1 = gaussian_sigma(rho1 / d)
    supports, sizes, one_way, one_way_var, totals, maps, measured = [], [], [], [], [], [], []
    mapped = np.empty_like(codes)
    for j, name in enumerate(columns):
        y = np.bincount(codes[:, j], minlength=domain[j]) + rng.normal(0.0, sigma1, domain[j])
        accountant.gaussian(sigma1, step=f"measure_1way[{name}]")
        measured.append(
            NoisyMeasurement(
                columns=(name,),
                index=(j,),
                maps=(identity_map(domain[j]),),
                shape=(domain[j],),
                values=y.copy(),
                noise="gaussian",
                scale=sigma1,
            )
        )
        totals.append((float(y.sum()), domain[j] * sigma1**2))
        keep = y >= _COMPRESS_SIGMAS * sigma1
        n_keep, n_merged = int(keep.sum()), int((~keep).sum())
        mapping = np.full(domain[j], n_keep, dtype=np.int64)
        mapping[keep] = np.arange(n_keep)
        mapped[:, j] = mapping[codes[:, j]]
        maps.append(mapping)
        var = np.full(n_keep, sigma1**2)
        if n_merged:  # the merged bin's noisy count is the sum of the merged noisy counts
            y, var = np.append(y[keep], y[~keep].sum()), np.append(var, n_merged * sigma1**2)
        supports.append(keep)
        sizes.append(n_keep + (1 if n_merged else 0))
        one_way.append(y)
        one_way_var.append(var)
    accountant.spend(
        0.0, step="compress_domain (uses step 1's noisy counts only)", mechanism="post-processing"
    )
    sel = _Selection(mapped, supports, sizes, one_way, one_way_var, totals, [], maps, measured)
    if d < 2:
        return sel

    # step 2: the independent model from the noisy 1-way marginals, L1 scores of all pairs
    n_hat = _estimate_total(totals)
    probs = [_project_simplex(y, n_hat, 1.0 / v) / n_hat for y, v in zip(one_way, one_way_var)]
    pairs = np.array(list(combinations(range(d), 2)), dtype=np.int64)
    scores = np.array(
        [
            np.abs(
                _pair_counts(mapped, i, j, sizes) - n_hat * np.outer(probs[i], probs[j]).ravel()
            ).sum()
            for i, j in pairs
        ]
    )
    eps_round = math.sqrt(8 * rho_sel / (d - 1))
    component = np.arange(d)
    for t in range(d - 1):
        open_ = np.flatnonzero(component[pairs[:, 0]] != component[pairs[:, 1]])
        # exponential mechanism (non-monotone score: exp(eps q / (2 sensitivity))) by Gumbel-max
        logits = 0.5 * eps_round / _SCORE_SENSITIVITY * scores[open_]
        k = open_[int(np.argmax(logits + rng.gumbel(size=open_.size)))]
        accountant.exponential(eps_round, step=f"select_edge[{t}]")
        i, j = (int(v) for v in pairs[k])
        component[component == component[j]] = component[i]
        sel.edges.append((i, j))
    return sel


def _ipf(table: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Scale ``table`` until its row sums equal ``rows`` and its column sums ``cols``."""
    for _ in range(_IPF_MAX_ITERS):
        r = table.sum(axis=1)
        table = table * np.divide(rows, r, out=np.zeros_like(r), where=r > 0)[:, None]
        c = table.sum(axis=0)
        table = table * np.divide(cols, c, out=np.zeros_like(c), where=c > 0)[None, :]
        if np.abs(table.sum(axis=1) - rows).max() < _IPF_TOL:
            break
    return table


@dataclass
class _TreeModel:
    """P(root) * prod P(child | parent) on the compressed domain, with the decompression maps."""

    order: list[int]  # BFS order, order[0] is the root
    parent: dict[int, int]
    root_probs: np.ndarray
    conditionals: dict[int, np.ndarray]  # child -> (size[parent], size[child]) rows sum to 1
    supports: list[np.ndarray]

    def sample_codes(self, n: int, rng: np.random.Generator) -> np.ndarray:
        d = len(self.supports)
        comp = np.zeros((n, d), dtype=np.int64)
        comp[:, self.order[0]] = _draw(
            np.cumsum(self.root_probs)[None, :], np.zeros(n, dtype=np.int64), rng
        )
        for child in self.order[1:]:
            comp[:, child] = _draw(
                np.cumsum(self.conditionals[child], axis=1), comp[:, self.parent[child]], rng
            )
        out = np.empty_like(comp)
        for j, keep in enumerate(self.supports):
            kept, merged = np.flatnonzero(keep), np.flatnonzero(~keep)
            c = comp[:, j]
            is_merged = c >= kept.size
            out[~is_merged, j] = kept[c[~is_merged]]
            # the merged bin: uniformly one of the original values it merged (as the reference)
            out[is_merged, j] = merged[
                rng.integers(0, max(merged.size, 1), size=int(is_merged.sum()))
            ]
        return out


def _draw(cdf: np.ndarray, row: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One inverse-CDF draw per element from row ``row`` of ``cdf``, all rows in one searchsorted.

    Row r's CDF is shifted by r so the flattened array is non-decreasing; ``r + u`` (u in [0, 1))
    then lands inside row r.
    """
    cdf = cdf / cdf[:, -1:]
    cdf[:, -1] = 1.0
    k = cdf.shape[1]
    flat = (cdf + np.arange(cdf.shape[0])[:, None]).ravel()
    idx = np.searchsorted(flat, row + rng.random(row.size), side="right")
    return np.minimum(idx - row * k, k - 1)


def _fit_tree(
    sel: _Selection, two_way: dict[tuple[int, int], np.ndarray], var2: float
) -> _TreeModel:
    """A consistent tree distribution from the noisy 1-way and 2-way marginals (see module doc)."""
    d = len(sel.sizes)
    totals = list(sel.totals) + [(float(y.sum()), y.size * var2) for y in two_way.values()]
    n_hat = _estimate_total(totals)
    # each column's marginal: its 1-way measurement combined with its edge tables' margins
    est_sum = [y / v for y, v in zip(sel.one_way, sel.one_way_var)]
    inv_sum = [1.0 / v for v in sel.one_way_var]
    for (i, j), y in two_way.items():
        table = y.reshape(sel.sizes[i], sel.sizes[j])
        for node, margin, other in (
            (i, table.sum(axis=1), sel.sizes[j]),
            (j, table.sum(axis=0), sel.sizes[i]),
        ):
            est_sum[node] = est_sum[node] + margin / (other * var2)
            inv_sum[node] = inv_sum[node] + 1.0 / (other * var2)
    probs = [_project_simplex(e / w, n_hat, w) / n_hat for e, w in zip(est_sum, inv_sum)]
    joint = {}
    for (i, j), y in two_way.items():
        table = (_project_simplex(y, n_hat) / n_hat).reshape(sel.sizes[i], sel.sizes[j])
        table = (1 - _MIX) * table + _MIX * np.outer(probs[i], probs[j])
        joint[i, j] = _ipf(table, probs[i], probs[j])
    # BFS from column 0 (neighbours in column order: deterministic)
    neighbours: dict[int, list[int]] = {v: [] for v in range(d)}
    for i, j in two_way:
        neighbours[i].append(j)
        neighbours[j].append(i)
    order, parent, queue, seen = [], {}, deque([0]), {0}
    while queue:
        v = queue.popleft()
        order.append(v)
        for w in sorted(neighbours[v]):
            if w not in seen:
                seen.add(w)
                parent[w] = v
                queue.append(w)
    conditionals = {}
    for child, par in parent.items():
        table = joint[par, child] if (par, child) in joint else joint[child, par].T
        rows = table.sum(axis=1, keepdims=True)
        # a parent value of probability 0 is never drawn; give it the child's marginal anyway
        conditionals[child] = np.where(
            rows > 0, table / np.where(rows > 0, rows, 1.0), probs[child][None, :]
        )
    return _TreeModel(order, parent, probs[0], conditionals, sel.supports)


class MSTParams(Params):
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


@register_generator("mst")
class MSTGenerator(ZCDPGenerator):
    """MST (McKenna, Miklau & Sheldon 2021) under (epsilon, delta)-DP via rho-zCDP; see the module
    doc."""

    params_model = MSTParams

    def _select(
        self, codes: np.ndarray, accountant: ZCDPAccountant, rng: np.random.Generator
    ) -> _Selection:
        dz = self.discretizer_
        return _measure_and_select(
            codes,
            [dz.domain_[c] for c in dz.columns_],
            list(dz.columns_),
            rho=accountant.total,
            accountant=accountant,
            rng=rng,
        )

    def _focal_points(self, sel: _Selection) -> list[FocalPoint]:
        cols = self.discretizer_.columns_
        return sorted(FocalPoint(kind="marginal", columns=(cols[i], cols[j])) for i, j in sel.edges)

    def select_focal_points(self, data: pd.DataFrame, rng: np.random.Generator) -> list[FocalPoint]:
        """Steps 1-2 on ``data`` with a fresh accountant (2/3 of rho; all of it for one column).

        The accountant is kept in ``selection_accountant_`` for audits.
        """
        accountant = ZCDPAccountant(self.rho)
        sel = self._select(self._codes(data, "shadow"), accountant, rng)
        self.selection_accountant_ = accountant
        return self._focal_points(sel)

    def fit(
        self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None
    ) -> Self:
        rng, codes = self._start_fit(train, spec, reference)
        accountant = ZCDPAccountant(self.rho)
        sel = self._select(codes, accountant, rng)
        # step 3: the chosen 2-way marginals on the compressed domain
        d = codes.shape[1]
        two_way, var2, measured = {}, 1.0, list(sel.measurements)
        if sel.edges:
            sigma2 = gaussian_sigma(budget_split(accountant.total, d)[2] / len(sel.edges))
            var2 = sigma2**2
            cols = self.discretizer_.columns_
            for i, j in sel.edges:
                x = _pair_counts(sel.codes, i, j, sel.sizes)
                two_way[i, j] = x + rng.normal(0.0, sigma2, x.size)
                measured.append(
                    NoisyMeasurement(
                        columns=(cols[i], cols[j]),
                        index=(i, j),
                        maps=(sel.maps[i], sel.maps[j]),
                        shape=(sel.sizes[i], sel.sizes[j]),
                        values=two_way[i, j].copy(),
                        noise="gaussian",
                        scale=sigma2,
                    )
                )
                accountant.gaussian(sigma2, step=f"measure_2way[{cols[i]},{cols[j]}]")
        accountant.spend(0.0, step="synthesis (noisy marginals only)", mechanism="post-processing")
        self.model_ = _fit_tree(sel, two_way, var2)
        self.edges_ = [
            (self.discretizer_.columns_[i], self.discretizer_.columns_[j]) for i, j in sel.edges
        ]
        self.focal_points_ = self._focal_points(sel)
        self.accountant_ = accountant
        self.measurements_ = tuple(measured)  # what synthesis read (white-box DP audits)
        self._sample_rng = rng.spawn(1)[
            0
        ]  # sample(seed=None) after a seeded fit stays reproducible
        return self

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        rng = self._sampling_rng(n, seed, fitted_attr="model_")
        return self._decode(self.model_.sample_codes(int(n), rng), rng)
