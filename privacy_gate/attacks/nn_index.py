"""Exact nearest-record search on a faiss index, for searches too large for the plain BLAS loop.

The plain search (:func:`privacy_gate.attacks.distance.nearest_distances` below ``INDEX_PAIRS``)
writes the whole ``(chunk, n_candidates)`` product matrix to memory and reads it back three
times (add norms, argmin); at hundreds of thousands of candidates that traffic, not the
arithmetic, is the cost. faiss's flat index (``IndexFlatL2``, the field's standard library for
vector search) fuses the product and the top-k selection block by block in cache, in float32.

float32 alone would not be exact, so this module keeps the answer exact:

1. retrieve the ``k`` nearest candidates of each target by the float32 distances (``RETRIEVE``
   for the nearest alone, more when the search also serves a count of near candidates);
2. re-rank them by their exact float64 distance, computed from the difference vector (a
   verbatim copy gives exactly 0);
3. prove the winner is the true nearest: every candidate not retrieved has a float32 squared
   distance of at least the ``k``-th one, so its true squared distance is at least that
   minus the float32 error bound ``tol``. Where that floor is not above the winner's exact
   squared distance (float32 cannot separate them: many near-ties, e.g. duplicated records),
   the target is searched again with the plain float64 loop against all candidates.

So the distances returned are those of the plain search (up to which of several exactly tied
candidates is named), whatever the data. The error bound: faiss computes
``||x||^2 + ||y||^2 - 2 x.y`` in float32 after rounding both rows to float32; each term's
rounding and accumulation error is at most ``D * eps32`` times ``||x||^2 + ||y||^2`` (the
worst-case bound of a length-``D`` dot product; typical errors are ``sqrt(D)`` times smaller), so
``tol = 4 * D * eps32 * (||x||^2 + max ||y||^2)`` on rows centred on the candidates' mean (which
keeps the norms, and so the bound, small).
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from privacy_gate.attacks.density import Progress, rows_per_chunk

_LOG = logging.getLogger("privacy_gate.attacks")

#: candidates retrieved per target before the exact re-ranking
RETRIEVE = 8
_EPS32 = float(np.finfo(np.float32).eps)


@dataclass(frozen=True)
class IndexedNeighbours:
    """What one flat-index search of targets among candidates gives (:func:`indexed_neighbours`).

    ``distances``, ``indices``: the ``k`` candidates float32 retrieved, their exact distances
    sorted nearest first, shape ``(n_targets, k)`` — the ``k`` nearest up to which of two
    near-tied candidates float32 put first; ``unproven``: the targets whose first candidate the
    ``k``-th does not prove to be the nearest (:func:`proven_nearest` searches them again).
    """

    distances: np.ndarray
    indices: np.ndarray
    unproven: np.ndarray


def indexed_nearest(
    targets: np.ndarray, candidates: np.ndarray, *, chunk_bytes: int, exact_search
) -> tuple[np.ndarray, np.ndarray]:
    """Exact Euclidean distance from each target to its nearest candidate, and that candidate's
    index, through a faiss flat index (see the module docstring). ``exact_search(targets,
    candidates)`` is the plain float64 search, used for the targets float32 cannot settle.

    >>> rng = np.random.default_rng(0)
    >>> C = rng.normal(size=(500, 5)); T = np.vstack([C[:3], rng.normal(size=(20, 5))])
    >>> from privacy_gate.attacks.distance import _nearest_blas
    >>> exact = lambda t, c: _nearest_blas(t, c, chunk_bytes=2**20)
    >>> d, i = indexed_nearest(T, C, chunk_bytes=2**20, exact_search=exact)
    >>> d0, _ = _nearest_blas(T, C, chunk_bytes=2**20)
    >>> bool(np.array_equal(d, d0)), d[:3].tolist(), i[:3].tolist()
    (True, [0.0, 0.0, 0.0], [0, 1, 2])
    """
    found = indexed_neighbours(targets, candidates, RETRIEVE, chunk_bytes=chunk_bytes)
    return proven_nearest(found, targets, candidates, exact_search=exact_search)


def indexed_neighbours(
    targets: np.ndarray, candidates: np.ndarray, k: int, *, chunk_bytes: int
) -> IndexedNeighbours:
    """One flat-index search that serves both the ``k`` nearest candidates with exact distances
    and, through :func:`proven_nearest`, the exact nearest candidate (retrieved among ``k``
    float32 neighbours, proven by the ``k``-th: a larger ``k`` leaves fewer targets unproven). A
    nearest-record attack and a copy-count attack on the same rows then pay for one pass over the
    candidates, and a caller of the ``k`` nearest alone pays for no proof.

    >>> rng = np.random.default_rng(0)
    >>> C = rng.normal(size=(500, 5)); T = np.vstack([C[:3], rng.normal(size=(20, 5))])
    >>> found = indexed_neighbours(T, C, 4, chunk_bytes=2**20)
    >>> found.distances.shape, found.distances[:3, 0].tolist(), found.unproven.size
    ((23, 4), [0.0, 0.0, 0.0], 0)
    """
    import faiss  # lazy: only large searches need it

    n_t, n_c = targets.shape[0], candidates.shape[0]
    dims = candidates.shape[1]
    k = max(1, min(k, n_c))
    center = candidates.mean(axis=0)
    centred = candidates - center
    c_sq_max = float(np.einsum("ij,ij->i", centred, centred).max())
    index = faiss.IndexFlatL2(dims)
    index.add(np.ascontiguousarray(centred, dtype=np.float32))
    del centred
    sorted_d = np.empty((n_t, k), dtype=np.float64)
    sorted_i = np.empty((n_t, k), dtype=np.int64)
    uncertain: list[np.ndarray] = []
    # the exact re-ranking holds (step, k, dims) float64 differences: keep them within the budget
    step = min(rows_per_chunk(k * dims, chunk_bytes), 65_536)
    progress = Progress("nearest record (index)", n_t, n_c)
    for start in range(0, n_t, step):
        stop = min(start + step, n_t)
        T = targets[start:stop]
        Tc = T - center
        d32, idx = index.search(np.ascontiguousarray(Tc, dtype=np.float32), k)
        diff = candidates[idx] - T[:, None, :]
        exact_sq = np.einsum("ijk,ijk->ij", diff, diff)
        # stable: among exactly tied candidates the one float32 put first is named, as argmin would
        order = np.argsort(exact_sq, axis=1, kind="stable")
        exact_sq = np.take_along_axis(exact_sq, order, axis=1)
        sorted_d[start:stop] = np.sqrt(exact_sq)
        sorted_i[start:stop] = np.take_along_axis(idx, order, axis=1)
        if k < n_c:
            tol = 4.0 * dims * _EPS32 * (np.einsum("ij,ij->i", Tc, Tc) + c_sq_max)
            unsure = d32[:, k - 1].astype(np.float64) - tol <= exact_sq[:, 0]
            if unsure.any():
                uncertain.append(start + np.flatnonzero(unsure))
        progress.done(stop)
    unproven = np.concatenate(uncertain) if uncertain else np.empty(0, dtype=np.int64)
    return IndexedNeighbours(sorted_d, sorted_i, unproven)


def proven_nearest(
    found: IndexedNeighbours, targets: np.ndarray, candidates: np.ndarray, *, exact_search
) -> tuple[np.ndarray, np.ndarray]:
    """Each target's exact nearest distance and candidate row from a search of them
    (:func:`indexed_neighbours`): the first retrieved candidate, and for the targets float32
    could not settle ``exact_search(targets, candidates)`` — the plain float64 search."""
    distances, nearest = found.distances[:, 0].copy(), found.indices[:, 0].copy()
    redo = found.unproven
    if redo.size:
        distances[redo], nearest[redo] = exact_search(targets[redo], candidates)
        if redo.size > 0.05 * len(targets):
            _LOG.info(
                "  nearest record (index): %s of %s targets had near-ties float32 could not "
                "separate; searched again exactly",
                f"{redo.size:,}",
                f"{len(targets):,}",
            )
    return distances, nearest


def ivf_cells(candidates: np.ndarray, *, seed: int = 0) -> np.ndarray:
    """The k-means centroids an inverted-file search of ``candidates`` uses (``4 sqrt(n)`` cells,
    seeded, trained single-threaded so the cells are the same every run). 64 training rows per
    cell and 10 rounds: the cells only steer the search (faiss asks for >= 39 rows per cell), and
    its defaults (256 x 25) cost more than the search itself."""
    import faiss

    n_c, dims = candidates.shape
    C = np.ascontiguousarray(candidates, dtype=np.float32)
    nlist = int(np.clip(4 * np.sqrt(n_c), 1, n_c // 39 or 1))
    train = (
        C
        if n_c <= 64 * nlist
        else C[np.sort(np.random.default_rng(seed).choice(n_c, 64 * nlist, replace=False))]
    )
    kmeans = faiss.Kmeans(dims, nlist, niter=10, seed=int(seed), verbose=False)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # k-means reductions in a fixed order: the same cells every run
    try:
        kmeans.train(train)
    finally:
        faiss.omp_set_num_threads(threads)
    return kmeans.centroids


#: candidate rows an inverted-file search reads per target, at most (``nprobe`` shrinks as the cells
#: grow; :func:`probe_count`). With ``4 sqrt(n)`` cells a fixed ``nprobe`` reads ``4 nprobe sqrt(n)
#: / 4`` rows per target, so the search grew as ``n^1.5``. 1,536 rows leave 16 cells up to 147,000
#: candidates (full Adult and the 160,000-row benchmark keep their search); at 1,000,000 Adult-like
#: rows (600,000 synthetic, 194 per cell) it probes 8 cells, and on 10,000 sampled pool records
#: the nearest synthetic row was still the exact one for 97.7% (16 cells: 99.3%) and the nearest
#: other pool record for 98.0% (99.4%).
PROBE_ROWS = 1_536
#: cells searched per target, at most
PROBE_CELLS = 16


def probe_count(
    n_candidates: int, n_cells: int, *, rows: int = PROBE_ROWS, most: int = PROBE_CELLS
) -> int:
    """Cells to search per target so that about ``rows`` candidate rows are read (between 1 and
    ``most``, and no more than there are cells).

    >>> probe_count(29_305, 684), probe_count(600_000, 3_098), probe_count(100, 1)
    (16, 8, 1)
    """
    per_cell = max(1.0, n_candidates / max(1, n_cells))
    return int(min(n_cells, most, max(1, np.ceil(rows / per_cell))))


def _ivf(candidates: np.ndarray, cells: np.ndarray, quantizer):
    import faiss

    index = faiss.IndexIVFFlat(
        quantizer, candidates.shape[1], len(cells)
    )  # a filled quantizer: trained already
    index.add(candidates)
    return index


def _found_distances(T: np.ndarray, C: np.ndarray, found: np.ndarray) -> np.ndarray:
    # the returned rows' distances recomputed from their differences (an exact copy gives 0), in
    # float32; the caller keeps (batch, k, dims) within cache
    diff = C[np.maximum(found, 0)] - T[:, None, :]
    d = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff).astype(np.float64))
    d[found < 0] = np.inf  # no candidate in the searched cells (only with tiny cells)
    return np.sort(d, axis=1)


def approximate_nearest_many(
    targets: np.ndarray,
    searches: list[tuple[np.ndarray, int]],
    *,
    cells: np.ndarray,
    nprobe: int,
    batch: int = 65_536,
) -> list[np.ndarray]:
    """:func:`approximate_nearest` of the same ``targets`` in several candidate sets steered by the
    same ``cells``: ``searches`` is a list of ``(candidates, k)``, the answer a list of ``(n, k)``
    sorted distances. Which cells a target searches depends only on the target and the cells, so
    it is found once per target and shared by every search (the same answer as separate searches,
    ``tests/attacks/test_nn_index.py``; at 1,000,000 rows each pass over the cells reads 3,098
    centroids per record)."""
    import faiss

    dims = targets.shape[1]
    quantizer = faiss.IndexFlatL2(dims)
    quantizer.add(np.ascontiguousarray(cells, dtype=np.float32))
    nprobe = min(nprobe, len(cells))
    sets = [np.ascontiguousarray(c, dtype=np.float32) for c, _ in searches]
    indexes = [_ivf(C, cells, quantizer) for C in sets]
    for index in indexes:
        index.nprobe = nprobe
    n = targets.shape[0]
    out = [np.empty((n, k), dtype=np.float64) for _, k in searches]
    # faiss searches preassigned cells in the calling thread only, so the batches are spread over
    # as many threads as OpenMP may use (one per test worker; the answer per target is the same)
    threads = max(1, faiss.omp_get_max_threads())
    step = max(1, min(batch, (1 << 24) // max(1, max(k for _, k in searches) * dims)))
    step = max(1, min(step, -(-n // threads)))

    def search(start: int) -> None:
        T = np.ascontiguousarray(targets[start : start + step], dtype=np.float32)
        probe_d, probe_i = quantizer.search(T, nprobe)
        for C, index, (_, k), o in zip(sets, indexes, searches, out):
            _, found = index.search_preassigned(T, k, probe_i, probe_d)
            o[start : start + len(T)] = _found_distances(T, C, found)

    starts = range(0, n, step)
    if threads == 1 or len(starts) == 1:
        for start in starts:
            search(start)
    else:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ivf-search") as pool:
            list(pool.map(search, starts))
    return out


def approximate_nearest(
    targets: np.ndarray,
    candidates: np.ndarray,
    *,
    seed: int = 0,
    nprobe: int | None = None,
    batch: int = 65_536,
    k: int | None = None,
    cells: np.ndarray | None = None,
) -> np.ndarray:
    """Distance from each target to a near (usually the nearest) candidate, from an inverted-file
    index (faiss ``IndexIVFFlat``: k-means cells, ``nprobe`` nearest cells searched — by default
    :func:`probe_count`'s, about ``PROBE_ROWS`` candidates per target), in float32.
    With ``k``: the sorted distances to ``k`` near candidates, shape ``(n, k)`` (``inf`` where the
    searched cells hold fewer).

    Not exact: a target whose nearest candidate lies in a cell that was not searched gets the
    distance to the nearest candidate of the searched cells, which is larger. For that reason it
    serves only scores whose validity does not need exactness — the member scan's conformal
    p-values, where the members and the calibration records go through the very same search, so a
    non-exposed member's score is still exchangeable with the calibration scores. Deterministic:
    the k-means is seeded and trained single-threaded. ``cells``: centroids from :func:`ivf_cells`
    (one k-means can steer several searches in the same space); default: trained on ``candidates``.

    >>> rng = np.random.default_rng(0)
    >>> C = rng.normal(size=(5000, 4)).astype(np.float32)
    >>> d = approximate_nearest(C[:100], C, seed=0)
    >>> float(d.max())
    0.0
    """
    C = np.ascontiguousarray(candidates, dtype=np.float32)
    if cells is None:
        cells = ivf_cells(C, seed=seed)
    if nprobe is None:
        nprobe = probe_count(len(C), len(cells))
    kk = 1 if k is None else k
    (out,) = approximate_nearest_many(targets, [(C, kk)], cells=cells, nprobe=nprobe, batch=batch)
    return out[:, 0] if k is None else out


#: above this many candidates :func:`k_nearest_indices` searches an inverted file (IVF_CELLS k-means
#: cells, IVF_PROBE of them per target) instead of the whole flat index
IVF_FROM, IVF_CELLS, IVF_PROBE = 8_192, 64, 8
#: candidates per cell above which the inverted file gets more cells: a target then reads about
#: ``IVF_PROBE * IVF_CELL_ROWS`` rows whatever the size. With 64 cells at every size a target read
#: an eighth of all candidates, so the disclosure stage grew as rows squared (at 1,000,000
#: Adult-like rows, 73 s of its 90 s in this search over 600,000 synthetic rows). Up to
#: 131,072 candidates the cells are the 64 they were.
IVF_CELL_ROWS = 2_048


def k_nearest_indices(
    targets: np.ndarray, candidates: np.ndarray, k: int, *, batch: int = 16_384, seed: int = 0
) -> np.ndarray:
    """Indices of the ``k`` nearest candidates of each target, nearest first, shape ``(n, k)``,
    from a faiss flat index (exact search in float32: which of two near-tied candidates comes first
    may differ from a float64 search), or above ``IVF_FROM`` candidates an inverted-file index
    (approximate: the nearest of the ``IVF_PROBE`` cells nearest the target, of ``IVF_CELLS`` or
    one per ``IVF_CELL_ROWS`` candidates, whichever is more; a verbatim copy of a
    target lies in the target's own cell, so it is always found). For attacks that use the
    neighbours' identity, not their distances (the disclosure evaluators' linkability and
    inference), where training and control targets go through the very same search.

    >>> C = np.array([[0.0], [1.0], [5.0]])
    >>> k_nearest_indices(np.array([[0.9], [4.0]]), C, 2).tolist()
    [[1, 0], [2, 1]]
    """
    import faiss

    n_c, dims = candidates.shape
    k = min(k, n_c)
    center = candidates.mean(axis=0)
    C = np.ascontiguousarray(candidates - center, dtype=np.float32)
    if n_c > IVF_FROM:
        rng = np.random.default_rng(seed)
        n_cells = max(IVF_CELLS, -(-n_c // IVF_CELL_ROWS))
        kmeans = faiss.Kmeans(dims, n_cells, niter=10, seed=int(seed), verbose=False)
        threads = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)  # the same cells every run
        try:
            kmeans.train(C[np.sort(rng.choice(n_c, min(n_c, 64 * n_cells), replace=False))])
        finally:
            faiss.omp_set_num_threads(threads)
        quantizer = faiss.IndexFlatL2(dims)
        quantizer.add(kmeans.centroids)
        index = faiss.IndexIVFFlat(quantizer, dims, n_cells)
        index.nprobe = IVF_PROBE
    else:
        index = faiss.IndexFlatL2(dims)
    index.add(C)
    out = np.empty((targets.shape[0], k), dtype=np.int64)
    for start in range(0, targets.shape[0], batch):
        T = np.ascontiguousarray(targets[start : start + batch] - center, dtype=np.float32)
        found = index.search(T, k)[1]
        if (found < 0).any():  # fewer than k candidates in the probed cells (tiny cells only)
            found = np.where(found < 0, found[:, :1], found)
        out[start : start + batch] = found
    return out


__all__ = [
    "IVF_CELLS",
    "IVF_CELL_ROWS",
    "IVF_FROM",
    "IVF_PROBE",
    "IndexedNeighbours",
    "PROBE_CELLS",
    "PROBE_ROWS",
    "RETRIEVE",
    "approximate_nearest",
    "approximate_nearest_many",
    "probe_count",
    "proven_nearest",
    "indexed_nearest",
    "indexed_neighbours",
    "ivf_cells",
    "k_nearest_indices",
]
