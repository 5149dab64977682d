"""Distance to closest synthetic record (DCR; the GAN-Leaks "full black-box" attack).

A generator that copies or nearly copies training records leaves synthetic rows very close to
its members. The score is ``-min_j ||x - s_j||`` over synthetic rows ``s_j``, on the same
standardised mixed encoding as DOMIAS (encoder fitted on the reference data), so a verbatim
copy scores 0, the maximum.

One module because the distance attacks (``dcr``, ``dcr_ratio``, ``copy_count``) and the
nearest-record searches they share belong together: at scale one search serves all three, and
the share is only right while one place owns both the searches and how the attacks read them.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

import numpy as np
import pandas as pd

from privacy_gate.attacks.base import (
    DEFAULT_CHUNK_BYTES,
    EncodedAttack,
    ThreatModel,
    check_scores,
    register_attack,
)
from privacy_gate.attacks.density import as_matrix, chunked_products, rows_per_chunk
from privacy_gate.attacks.nn_index import (
    RETRIEVE,
    IndexedNeighbours,
    indexed_neighbours,
    proven_nearest,
)
from privacy_gate.params import Field, Params, PositiveInt

#: nearest-record searches with at least this many target x candidate pairs are shared between
#: the attacks of one process (see :func:`nearest_distances`)
SHARE_PAIRS = 50_000_000
#: searches with at least this many pairs run on a faiss flat index (the same exact answer, about
#: 2.5x faster on 2 cores at 16k targets x 200k rows: benchmarks/bench_nn_index.py)
INDEX_PAIRS = 50_000_000
#: Synthetic rows looked at per target by ``copy_count`` (a record copied more often than this
#: scores as if copied this many times: already far above any non-member)
COPY_NEIGHBOURS = 32
#: candidates one indexed search retrieves per target: ``copy_count``'s neighbours, so that
#: ``dcr``'s nearest record (the first of them, proven exact) and ``copy_count``'s count come from
#: one pass over the synthetic rows — at 1,000,000 rows each pass costs about 80 s of one core
SEARCH_NEIGHBOURS = max(RETRIEVE, COPY_NEIGHBOURS)
_SHARED: dict[tuple[str, ...], Future] = {}
T = TypeVar("T")
_SHARED_LOCK = threading.Lock()
_SHARED_MAX = 16


def _digest(a: np.ndarray) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((a.shape, a.dtype.str)).encode())
    h.update(memoryview(np.ascontiguousarray(a)).cast("B"))
    return h.hexdigest()


def _indexed(targets: np.ndarray, candidates: np.ndarray) -> bool:
    """Whether a search of ``targets`` among ``candidates`` runs on the faiss index."""
    return targets.shape[0] * candidates.shape[0] >= INDEX_PAIRS and candidates.shape[0] > RETRIEVE


def _shared(key: tuple[str, ...], compute: Callable[[], T]) -> T:
    """``compute()`` once per process for ``key``: concurrent callers with the same key wait for
    the first one's result instead of repeating it (a failure is not kept)."""
    with _SHARED_LOCK:
        future, owner = _SHARED.get(key), False
        if future is None:
            future, owner = Future(), True
            while len(_SHARED) >= _SHARED_MAX:
                _SHARED.pop(next(iter(_SHARED)))
            _SHARED[key] = future
    if owner:
        try:
            future.set_result(compute())
        except BaseException as exc:
            with _SHARED_LOCK:
                _SHARED.pop(key, None)
            future.set_exception(exc)
            raise
    return future.result()


def _read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


def _neighbours(
    targets: np.ndarray, candidates: np.ndarray, *, chunk_bytes: int, key: tuple[str, str] | None
) -> IndexedNeighbours:
    """The indexed search of ``targets`` among ``candidates`` (:data:`SEARCH_NEIGHBOURS` per
    target), computed once per process when ``key`` (the arrays' digests) is given.

    ``dcr``, ``dcr_ratio`` and ``copy_count`` search the same synthetic rows for the same targets
    on the same encoding, concurrently: the first computes, the others wait for its result instead
    of repeating it (keyed by a digest of both arrays, so only byte-identical inputs share; the
    arrays returned are read-only).
    """

    def search() -> IndexedNeighbours:
        found = indexed_neighbours(targets, candidates, SEARCH_NEIGHBOURS, chunk_bytes=chunk_bytes)
        _read_only(found.distances, found.indices, found.unproven)
        return found

    return search() if key is None else _shared(("neighbours", *key), search)


def _share_key(targets: np.ndarray, candidates: np.ndarray) -> tuple[str, str] | None:
    """The digests that key a shared search, or None for a search too small to share."""
    if targets.shape[0] * candidates.shape[0] < SHARE_PAIRS:
        return None
    return _digest(targets), _digest(candidates)


def nearest_distances(
    targets: np.ndarray, candidates: np.ndarray, *, chunk_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean distance from each target row to its nearest candidate row, and that row's index.

    The nearest row is found with the fast ``||y||^2 - 2 x.y`` form in chunks of targets (the
    ``||x||^2`` term is constant per target and does not change the argmin); its distance is
    then recomputed exactly from the difference vector, so a verbatim copy gives exactly 0
    instead of a cancellation residue. Large searches run on the faiss index, exact too
    (:mod:`privacy_gate.attacks.nn_index`), and are shared between the attacks of one process
    (:func:`_neighbours`): the search itself, and the proof of each nearest row.
    """
    if not _indexed(targets, candidates):
        return _nearest_blas(targets, candidates, chunk_bytes=chunk_bytes)
    key = _share_key(targets, candidates)

    def nearest() -> tuple[np.ndarray, np.ndarray]:
        found = _neighbours(targets, candidates, chunk_bytes=chunk_bytes, key=key)
        d, idx = proven_nearest(
            found,
            targets,
            candidates,
            exact_search=lambda t, c: _nearest_blas(t, c, chunk_bytes=chunk_bytes),
        )
        _read_only(d, idx)
        return d, idx

    return nearest() if key is None else _shared(("nearest", *key), nearest)


def _nearest_blas(
    targets: np.ndarray, candidates: np.ndarray, *, chunk_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    sq_norms = np.einsum("ij,ij->i", candidates, candidates)
    nearest = np.empty(targets.shape[0], dtype=np.int64)
    for start, stop, B in chunked_products(targets, candidates, chunk_bytes, what="nearest record"):
        B *= -2.0
        B += sq_norms[None, :]
        nearest[start:stop] = B.argmin(axis=1)
    diff = targets - candidates[nearest]
    return np.sqrt(np.einsum("ij,ij->i", diff, diff)), nearest


def k_nearest(
    targets: np.ndarray, candidates: np.ndarray, k: int, *, chunk_bytes: int, exact: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """The ``min(k, n_candidates)`` nearest candidates of each target, nearest first: their
    Euclidean distances and their row indices, both of shape ``(n_targets, min(k, n_candidates))``.

    The neighbours are chosen with the fast ``||y||^2 - 2 x.y`` form (above ``INDEX_PAIRS`` pairs on
    a faiss flat index, float32: with ``exact`` and ``k <= SEARCH_NEIGHBOURS`` the very search the
    nearest-record attacks share). With ``exact`` (default) their distances are recomputed from the
    difference vectors, so a verbatim copy gives exactly 0 and the distances are exact for the rows
    returned; which of two near-tied neighbours is returned may differ in the last float32 bits.
    ``exact=False`` keeps the distances of the selection itself (on rows centred on the candidates'
    mean; float64, or float32 on the index): no ``(rows, k, width)`` differences, several times
    faster for large ``k``, for a caller that reads squared distances (a kernel weight) and can
    take their rounding error (~1e-12 of the rows' squared norms in float64, ~1e-6 on the index;
    a copy's distance comes out near 1e-7 rather than 0), not one that tells a copy from a near
    copy. Memory: the ``(chunk, n_candidates)`` products and the differences stay within
    ``chunk_bytes`` (at least one target row at a time).

    >>> C = np.array([[0.0], [1.0], [3.0]])
    >>> d, i = k_nearest(np.array([[0.9]]), C, 2, chunk_bytes=2**20)
    >>> d.tolist(), i.tolist()
    ([[0.09999999999999998, 0.9]], [[1, 0]])
    >>> d, i = k_nearest(np.array([[0.9]]), C, 2, chunk_bytes=2**20, exact=False)
    >>> d.round(12).tolist(), i.tolist()
    ([[0.1, 0.9]], [[1, 0]])
    """
    n_t, n_c = targets.shape[0], candidates.shape[0]
    kk = min(k, n_c)
    if exact and kk <= SEARCH_NEIGHBOURS and _indexed(targets, candidates):
        # the indexed search the nearest-record attacks share: the same candidates, one pass
        found = _neighbours(
            targets, candidates, chunk_bytes=chunk_bytes, key=_share_key(targets, candidates)
        )
        return found.distances[:, :kk], found.indices[:, :kk]
    idx = np.empty((n_t, kk), dtype=np.int64)
    d2 = None if exact else np.empty((n_t, kk), dtype=np.float64)
    if not exact:  # centred: small norms keep the cancellation error of the product form small
        center = candidates.mean(axis=0)
        targets, candidates = targets - center, candidates - center
    if n_t * n_c >= INDEX_PAIRS and n_c > kk:
        import faiss  # lazy: only large searches need it

        index = faiss.IndexFlatL2(candidates.shape[1])
        index.add(np.ascontiguousarray(candidates, dtype=np.float32))
        for start in range(0, n_t, 65_536):
            found_d2, idx[start : start + 65_536] = index.search(
                np.ascontiguousarray(targets[start : start + 65_536], dtype=np.float32), kk
            )
            if d2 is not None:
                d2[start : start + 65_536] = found_d2
    else:
        sq_norms = np.einsum("ij,ij->i", candidates, candidates)
        for start, stop, B in chunked_products(
            targets, candidates, chunk_bytes, what="nearest records"
        ):
            B *= -2.0
            B += sq_norms[None, :]
            idx[start:stop] = (
                np.argpartition(B, kk - 1, axis=1)[:, :kk]
                if kk < n_c
                else np.broadcast_to(np.arange(n_c), (stop - start, n_c))
            )
            if d2 is not None:
                T = targets[start:stop]
                d2[start:stop] = (
                    np.take_along_axis(B, idx[start:stop], axis=1)
                    + np.einsum("ij,ij->i", T, T)[:, None]
                )
    if d2 is not None:
        dist = np.sqrt(np.maximum(d2, 0.0))
        order = np.argsort(dist, axis=1, kind="stable")
        return np.take_along_axis(dist, order, axis=1), np.take_along_axis(idx, order, axis=1)
    dist = np.empty((n_t, kk), dtype=np.float64)
    # exact distances of the chosen rows, a bounded block at a time
    step = min(4096, rows_per_chunk(kk * candidates.shape[1], chunk_bytes))
    for start in range(0, n_t, step):
        T, chosen = targets[start : start + step], idx[start : start + step]
        diff = candidates[chosen] - T[:, None, :]
        d = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
        order = np.argsort(d, axis=1, kind="stable")
        dist[start : start + len(T)] = np.take_along_axis(d, order, axis=1)
        idx[start : start + len(T)] = np.take_along_axis(chosen, order, axis=1)
    return dist, idx


def k_nearest_distances(
    targets: np.ndarray, candidates: np.ndarray, k: int, *, chunk_bytes: int
) -> np.ndarray:
    """Sorted Euclidean distances from each target to its ``k`` nearest candidates, shape
    ``(n_targets, k)`` (``inf`` where there are fewer than ``k`` candidates): :func:`k_nearest`'s
    distances.

    >>> C = np.array([[0.0], [1.0], [3.0]])
    >>> k_nearest_distances(np.array([[0.9]]), C, 2, chunk_bytes=2**20).tolist()
    [[0.09999999999999998, 0.9]]
    """
    dist, _ = k_nearest(targets, candidates, k, chunk_bytes=chunk_bytes)
    out = np.full((targets.shape[0], k), np.inf)
    out[:, : dist.shape[1]] = dist
    return out


class DistanceParams(Params):
    chunk_bytes: PositiveInt = Field(
        DEFAULT_CHUNK_BYTES,
        description="memory budget in bytes for the temporary distance matrices",
    )


@register_attack("dcr")
class DistanceToClosestRecord(EncodedAttack):
    """Score = minus the distance to the closest synthetic record (higher = more likely member).

    Parameters
    ----------
    chunk_bytes:
        Memory budget in bytes for the temporary ``(chunk, n_synthetic)`` matrix.

    Learned attributes: ``encoder_`` (fitted on the reference data), ``synthetic_encoded_``,
    ``notes_`` (the encoder's notes).
    """

    params_model = DistanceParams

    name = "dcr"

    def fit(self, threat: ThreatModel) -> DistanceToClosestRecord:
        """Fit the encoder on the reference data and encode the synthetic data."""
        self.notes_ = list(self._fit_encoder(threat).notes_)
        self.synthetic_encoded_ = as_matrix(
            self.encoder_.transform(threat.synthetic), owner=f"attack '{self.name}'"
        )
        return self

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """``-distance`` to the closest synthetic row, per target row."""
        X = as_matrix(self._encode(targets), owner=f"attack '{self.name}'")
        distances, _ = nearest_distances(X, self.synthetic_encoded_, chunk_bytes=self.chunk_bytes)
        return check_scores(-distances, owner=f"attack '{self.name}'", n_targets=len(targets))


def synthetic_and_reference_distances(
    scorer: EncodedAttack, targets: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """Distances from each target to its closest synthetic and closest reference row, on a fitted
    attack's encoding (``encoder_``, ``synthetic_encoded_``, ``reference_encoded_``,
    ``chunk_bytes``): the two halves of every reference-calibrated distance attack."""
    X = as_matrix(scorer._encode(targets), owner=f"attack '{scorer.name}'")
    d_syn, _ = nearest_distances(X, scorer.synthetic_encoded_, chunk_bytes=scorer.chunk_bytes)
    d_ref, _ = nearest_distances(X, scorer.reference_encoded_, chunk_bytes=scorer.chunk_bytes)
    return d_syn, d_ref


#: Added to both distances of the log ratio so a verbatim copy (distance 0) scores high but finite.
RATIO_EPSILON = 1e-6


def ratio_scores(d_syn: np.ndarray, d_ref: np.ndarray) -> np.ndarray:
    """``dcr_ratio``'s score from the two nearest-row distances: ``log(d_ref + eps) - log(d_syn +
    eps)``."""
    return np.log(d_ref + RATIO_EPSILON) - np.log(d_syn + RATIO_EPSILON)


@register_attack("dcr_ratio")
class DistanceRatio(DistanceToClosestRecord):
    """Score = ``log d_ref(x) - log d_syn(x)``: the distance to the closest synthetic record,
    calibrated by the distance to the closest reference record.

    A target close to a synthetic row is suspicious only where real records are not just as
    close: in a dense region every record has near neighbours, in a sparse one only a memorised
    record does. ``(d_ref / d_syn) ** D`` is the ratio of the 1-nearest-neighbour density
    estimates of the synthetic and the reference data at ``x`` (DOMIAS's ``p_G / p_R`` with 1-NN
    densities), so the log ratio ranks targets by DOMIAS's statistic at the finest scale: the
    per-record exposure signal. The sets need not be the same size: the size term is a constant
    in the log and does not change the ranking. Verbatim copies score ``log(d_ref + eps) -
    log(eps)``.

    Learned attributes: those of ``dcr`` and ``reference_encoded_``.
    """

    name = "dcr_ratio"

    def fit(self, threat: ThreatModel) -> DistanceRatio:
        super().fit(threat)
        self.reference_encoded_ = as_matrix(
            self.encoder_.transform(threat.reference), owner=f"attack '{self.name}'"
        )
        return self

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """``log(d_ref + eps) - log(d_syn + eps)`` per target row."""
        d_syn, d_ref = synthetic_and_reference_distances(self, targets)
        return check_scores(
            ratio_scores(d_syn, d_ref), owner=f"attack '{self.name}'", n_targets=len(targets)
        )


#: distances below this share of the typical nearest-real-record distance count as this distance
#: (see :func:`copy_scores`)
COPY_FLOOR = 0.01
#: synthetic rows (a seeded sample, when there are more) whose nearest reference row sets
#: ``copy_count``'s floor. The floor is a median: on 1,000,000 Adult-like rows (600,000 synthetic,
#: 200,000 reference) 20,000 sampled rows gave 0.5858 against 0.5851 from all of them, in 22 s
#: instead of 822 s — the whole search was the attack's largest cost and quadratic in the rows.
FLOOR_SAMPLE = 20_000


def copy_scores(d_syn: np.ndarray, d_real: np.ndarray, *, floor: float) -> np.ndarray:
    """``copy_count``'s score from the sorted distances to the nearest synthetic rows ``d_syn``
    (n, k) and the distance to the nearest real row ``d_real`` (n,): the nearest synthetic row's
    log ratio (``dcr_ratio``'s score, so the scores never collapse to one value), plus every further
    synthetic row closer to the record than any real row, weighted by how much closer:

        g_1 + sum_{j >= 2} max(0, g_j),    g_j = log(d_real + eps) - log(max(d_syn_j, floor) + eps).

    ``floor`` (``COPY_FLOOR`` times a typical nearest-real-record distance, the same for every
    record scored) makes an exact match worth as much as a very near one, and no more: populations
    have exact twins, and a holdout record whose twin is in the release must not outrank a record
    copied eight times. What an exact match is worth then grows with ``d_real`` — a copy of an
    unusual record counts more than a copy of a common one.

    >>> D = np.array([[0.0, 0.0, 5.0], [0.5, 2.0, 3.0]])
    >>> copy_scores(D, np.array([1.0, 1.0]), floor=0.01).round(2).tolist()
    [9.21, 0.69]
    """
    d_syn = np.maximum(np.asarray(d_syn, dtype=float), floor)
    gain = np.log(np.asarray(d_real, dtype=float)[:, None] + RATIO_EPSILON) - np.log(
        d_syn + RATIO_EPSILON
    )
    return gain[:, 0] + np.maximum(gain[:, 1:], 0.0).sum(axis=1)


def floor_median(
    synthetic: np.ndarray,
    reference: np.ndarray,
    *,
    chunk_bytes: int,
    sample: int = FLOOR_SAMPLE,
    seed: int = 0,
) -> float:
    """Median distance from a synthetic row to its nearest reference row: over all synthetic rows,
    or over a seeded sample of ``sample`` of them when there are more (``FLOOR_SAMPLE``). The floor
    is one constant for every target, so sampling keeps every target scored by the same function;
    the search over all rows grew as synthetic x reference rows.

    >>> S = np.arange(10.0)[:, None]; floor_median(S, np.array([[0.0]]), chunk_bytes=2**20)
    4.5
    >>> S = np.arange(100_000.0)[:, None]
    >>> m = floor_median(S, np.array([[0.0]]), chunk_bytes=2**20, sample=10_000)
    >>> abs(m / 49_999.5 - 1) < 0.03  # all rows' median 49,999.5
    True
    """
    if len(synthetic) > sample:  # sorted: the rows are read in their order, whatever the draw
        synthetic = synthetic[
            np.sort(np.random.default_rng(seed).choice(len(synthetic), sample, replace=False))
        ]
    d, _ = nearest_distances(synthetic, reference, chunk_bytes=chunk_bytes)
    return float(np.median(d))


class CopyParams(DistanceParams):
    neighbours: PositiveInt = Field(
        COPY_NEIGHBOURS, description="synthetic rows looked at per target (the most copies counted)"
    )


@register_attack("copy_count")
class CopyCount(DistanceRatio):
    """Score = how many synthetic rows lie closer to the record than its nearest reference row,
    each weighted by how much closer (``copy_scores``): the copy-multiplicity statistic.

    ``dcr`` and ``dcr_ratio`` see only the nearest synthetic row, so a record reproduced 40 times
    scores like one reproduced once, and an exact population twin (a holdout record whose values
    another person shares) outranks it. Here each copy adds to the score, and the weight
    ``log(d_ref / d_syn)`` is large where real records are far apart — a near-duplicate of an
    unusual record counts more than one in a dense region. Under no leakage a record has about
    ``n_synthetic / n_reference`` synthetic rows closer than its nearest reference row, each only
    slightly closer.

    Parameters
    ----------
    neighbours:
        Synthetic rows looked at per target.
    chunk_bytes:
        Memory budget in bytes for the temporary distance matrices.

    Learned attributes: those of ``dcr_ratio`` and ``floor_`` (``COPY_FLOOR`` times the median
    distance from a synthetic row to its nearest reference row — over a seeded sample of
    ``FLOOR_SAMPLE`` synthetic rows when there are more: fixed at fit, so every target is scored
    by one function).
    """

    params_model = CopyParams
    name = "copy_count"

    def fit(self, threat: ThreatModel) -> CopyCount:
        super().fit(threat)
        self.floor_ = COPY_FLOOR * floor_median(
            self.synthetic_encoded_, self.reference_encoded_, chunk_bytes=self.chunk_bytes
        )
        return self

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """The weighted count of synthetic rows closer than the nearest reference row, per
        target."""
        X = as_matrix(self._encode(targets), owner=f"attack '{self.name}'")
        d_syn = k_nearest_distances(
            X, self.synthetic_encoded_, self.neighbours, chunk_bytes=self.chunk_bytes
        )
        d_ref, _ = nearest_distances(X, self.reference_encoded_, chunk_bytes=self.chunk_bytes)
        return check_scores(
            copy_scores(d_syn, d_ref, floor=self.floor_),
            owner=f"attack '{self.name}'",
            n_targets=len(targets),
        )
