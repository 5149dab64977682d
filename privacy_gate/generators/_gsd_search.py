"""The genetic search of Private-GSD (Liu, Vietri & Wu, ICML 2023), in numpy.

Given noisy, normalised marginal statistics ``y`` (one flat vector: the cells of every measured
marginal), find an integer-coded dataset of ``n_syn`` rows whose normalised marginals are close
to ``y`` in squared error. This module touches no private data: it only sees the DP targets.

The search follows the authors' ``SimpleGAforSyncData`` / ``GSD`` (github.com/giusevtr/private_gsd,
``models/gsd.py``):

- an *elite archive* of ``elite_size`` whole synthetic datasets (initially uniform random rows)
  and the best dataset found so far;
- each generation proposes ``population_size`` children of the best dataset, each differing in
  ONE attribute value of ONE row: half by *mutation* (a value drawn uniformly from the column's
  domain), half by *crossover* (the value that a random row of a random elite holds in that
  column) -- the reference's ``muta_rate = mate_rate = 1``;
- *incremental fitness*: one changed value moves the row out of one cell and into another in
  each marginal that contains the changed column, so a child's squared error is the parent's plus
  a delta over those ``2 x #affected queries`` cells -- O(#affected cells), not O(#cells), the
  paper's key speed trick. We keep, for the best dataset, the integer counts of every cell and
  each row's cell index in every query, so a child's delta is two gathers and a sum;
- ``tell``: the archive keeps the ``elite_size`` fittest of (archive, children); the best child
  replaces the best dataset if it is strictly better;
- early stop every ``window`` generations when the relative improvement of the best fitness over
  the window is below ``tol`` (reference: window = data size, tol = 1e-4); at most
  ``max_generations`` generations.

All children of one generation are evaluated together (vectorised over the population).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from privacy_gate.generators import progress


class Workload:
    """Marginal queries over integer-coded data laid out as one flat cell vector.

    ``queries[q]`` holds the column indices of query q; its cells are flattened in C order (as
    ``np.ravel_multi_index``) and start at ``offsets[q]``. One extra *dummy* query with one dummy
    cell (index ``n_cells``, never counted) pads the per-column query lists, so every column has
    the same number of (query, stride) slots and the padding contributes no change.
    """

    def __init__(self, queries: Sequence[Sequence[int]], domain: Sequence[int]):
        self.domain = np.asarray(domain, dtype=np.int64)
        self.queries = tuple(tuple(int(c) for c in q) for q in queries)
        if not self.queries:
            raise ValueError("a workload needs at least one query")
        d, n_q = len(self.domain), len(self.queries)
        kmax = max(len(q) for q in self.queries)
        self.attrs = np.zeros((n_q + 1, kmax), dtype=np.intp)  # padding: column 0 with stride 0
        self.strides = np.zeros((n_q + 1, kmax), dtype=np.int64)
        sizes = np.empty(n_q, dtype=np.int64)
        for q, cols in enumerate(self.queries):
            dims = self.domain[list(cols)]
            self.attrs[q, : len(cols)] = cols
            self.strides[q, : len(cols)] = np.cumprod(np.r_[dims[1:], 1][::-1])[
                ::-1
            ]  # C-order strides
            sizes[q] = int(np.prod(dims))
        self.sizes = sizes
        self.n_cells = int(sizes.sum())
        self.offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)  # offsets[n_q] = dummy cell
        # per column: the queries that contain it and its stride there (padded with the dummy)
        per_col = [
            [
                (q, int(self.strides[q, cols.index(j)]))
                for q, cols in enumerate(self.queries)
                if j in cols
            ]
            for j in range(d)
        ]
        width = max(1, max(len(p) for p in per_col))
        self.col_queries = np.full((d, width), n_q, dtype=np.intp)
        self.col_strides = np.zeros((d, width), dtype=np.int64)
        for j, p in enumerate(per_col):
            for s, (q, stride) in enumerate(p):
                self.col_queries[j, s], self.col_strides[j, s] = q, stride

    def cell_index(self, X: np.ndarray) -> np.ndarray:
        """(n, n_queries + 1) flat cell index of every row in every query (last column: dummy)."""
        return (X[:, self.attrs] * self.strides).sum(axis=2) + self.offsets

    def counts(self, X: np.ndarray) -> np.ndarray:
        """Cell counts of ``X`` (length ``n_cells + 1``; the dummy cell is always 0)."""
        return np.bincount(self.cell_index(X)[:, :-1].ravel(), minlength=self.n_cells + 1)


def full_fitness(workload: Workload, target: np.ndarray, X: np.ndarray) -> float:
    """Squared error between the normalised marginals of ``X`` and ``target`` (from scratch)."""
    return float(np.sum((workload.counts(X)[:-1] / len(X) - target[:-1]) ** 2))


@dataclass
class SearchState:
    """The best dataset with its cached statistics: counts per cell, cell index per row/query."""

    X: np.ndarray  # (n, d) codes
    counts: np.ndarray  # (n_cells + 1,) int64
    cells: np.ndarray  # (n, n_queries + 1) flat cell indices
    fitness: float

    @classmethod
    def of(cls, workload: Workload, target: np.ndarray, X: np.ndarray) -> SearchState:
        X = np.array(X, dtype=np.int64)
        cells = workload.cell_index(X)
        counts = np.bincount(cells[:, :-1].ravel(), minlength=workload.n_cells + 1)
        return cls(X, counts, cells, full_fitness(workload, target, X))


def fitness_delta(
    workload: Workload,
    target: np.ndarray,
    state: SearchState,
    rows: np.ndarray,
    cols: np.ndarray,
    vals: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Change of squared error for each child ``X[rows[i], cols[i]] = vals[i]`` of ``state.X``.

    Returns (delta (P,), left cells (P, w), entered cells (P, w)). In each affected query the row
    leaves cell o and enters cell e; with residual r = counts / n - target and h = 1 / n,
    (r_o - h)^2 - r_o^2 + (r_e + h)^2 - r_e^2 = 2 h (r_e - r_o) + 2 h^2 when o != e (the cells of
    different queries are disjoint, so the per-query terms add up exactly).
    """
    h = 1.0 / len(state.X)
    qs = workload.col_queries[cols]  # (P, w)
    left = state.cells[rows[:, None], qs]
    entered = left + (vals - state.X[rows, cols])[:, None] * workload.col_strides[cols]
    r_left = state.counts[left] * h - target[left]
    r_entered = state.counts[entered] * h - target[entered]
    delta = np.where(left != entered, 2.0 * h * (r_entered - r_left) + 2.0 * h * h, 0.0).sum(axis=1)
    return delta, left, entered


def apply_change(
    workload: Workload,
    state: SearchState,
    row: int,
    col: int,
    val: int,
    left: np.ndarray,
    entered: np.ndarray,
    delta: float,
) -> None:
    """Move ``state`` to its child (``left``/``entered``: that child's rows from
    ``fitness_delta``)."""
    moved = (
        left != entered
    )  # distinct cells: one per affected query, so plain fancy updates are exact
    state.counts[left[moved]] -= 1
    state.counts[entered[moved]] += 1
    state.cells[row, workload.col_queries[col]] = entered
    state.X[row, col] = val
    state.fitness += float(delta)


@dataclass
class SearchResult:
    X: np.ndarray  # the best synthetic dataset (codes)
    fitness: float  # its squared error to the targets (recomputed from scratch)
    initial_fitness: float  # the best of the initial random archive
    n_generations: int
    history: list[tuple[int, float]] = field(
        default_factory=list
    )  # (generation, best fitness) per window


def genetic_search(
    workload: Workload,
    target: np.ndarray,
    *,
    n_syn: int,
    rng: np.random.Generator,
    population_size: int = 100,
    elite_size: int = 5,
    max_generations: int = 20_000,
    tol: float = 1e-4,
    window: int | None = None,
) -> SearchResult:
    """Private-GSD's genetic search (see the module docstring); ``target`` has ``n_cells + 1``
    entries, the last (dummy) one 0. Deterministic given ``rng``."""
    d = len(workload.domain)
    dom = workload.domain
    window = n_syn if window is None else window
    n_muta = (population_size + 1) // 2  # the reference splits the population half/half
    archive = rng.integers(0, dom, size=(elite_size, n_syn, d))
    arch_fit = np.array([full_fitness(workload, target, x) for x in archive])
    state = SearchState.of(workload, target, archive[int(np.argmin(arch_fit))])
    initial = state.fitness
    history = [(0, initial)]
    last = initial
    t = 0
    for t in range(1, max_generations + 1):
        if t % 100 == 0:
            progress.step(t, max_generations, "generation")
        rows = rng.integers(0, n_syn, size=population_size)
        cols = rng.integers(0, d, size=population_size)
        vals = np.empty(population_size, dtype=np.int64)
        vals[:n_muta] = rng.integers(0, dom[cols[:n_muta]])  # mutation: a random domain value
        n_cross = population_size - n_muta
        donors = rng.integers(
            0, elite_size, size=n_cross
        )  # crossover: an elite's value of that column
        vals[n_muta:] = archive[donors, rng.integers(0, n_syn, size=n_cross), cols[n_muta:]]
        delta, left, entered = fitness_delta(workload, target, state, rows, cols, vals)
        fit = state.fitness + delta
        if fit.min() < arch_fit.max():  # tell: keep the elite_size fittest of archive + children
            order = np.argsort(np.concatenate([arch_fit, fit]), kind="stable")[:elite_size]
            free = np.setdiff1d(np.arange(elite_size), order[order < elite_size])
            for slot, i in zip(free, order[order >= elite_size] - elite_size, strict=True):
                archive[slot] = state.X  # children are materialised from the *current* best
                archive[slot, rows[i], cols[i]] = vals[i]
                arch_fit[slot] = fit[i]
        best = int(np.argmin(fit))
        if fit[best] < state.fitness:
            apply_change(
                workload,
                state,
                int(rows[best]),
                int(cols[best]),
                int(vals[best]),
                left[best],
                entered[best],
                float(delta[best]),
            )
        if t % window == 0:
            # refresh from the exact integer counts so float drift never reaches the stop rule
            state.fitness = float(np.sum((state.counts[:-1] / n_syn - target[:-1]) ** 2))
            history.append((t, state.fitness))
            if state.fitness <= 0.0 or (last - state.fitness) / last < tol:
                break
            last = state.fitness
    return SearchResult(
        X=state.X,
        fitness=full_fitness(workload, target, state.X),
        initial_fitness=initial,
        n_generations=t,
        history=history,
    )
