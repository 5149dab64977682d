"""Large searches at scale: the faiss-indexed nearest-record search returns exactly the plain
search's distances (copies, near-ties, duplicated rows that float32 cannot separate), and the
KDE's float32 mode stays within its stated error and keeps the ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privacy_gate.attacks.density as density
import privacy_gate.attacks.distance as distance
from privacy_gate.attacks import create_attack
from privacy_gate.attacks.base import ThreatModel
from privacy_gate.attacks.density import GaussianKDE
from privacy_gate.attacks.nn_index import indexed_nearest
from privacy_gate.spec import DatasetSpec

CHUNK = 2**20


def _plain(t, c):
    return distance._nearest_blas(t, c, chunk_bytes=CHUNK)


def test_indexed_search_equals_the_plain_search_with_copies_and_near_copies():
    rng = np.random.default_rng(0)
    C = rng.normal(size=(4000, 12)) * 3 + 5  # off-centre and wide: float32 error is not negligible
    T = np.vstack([C[:50], C[50:100] + 1e-7, C[100:150] + 1e-3, rng.normal(size=(400, 12)) * 3 + 5])
    calls = []
    d, i = indexed_nearest(
        T, C, chunk_bytes=CHUNK, exact_search=lambda t, c: calls.append(len(t)) or _plain(t, c)
    )
    d0, i0 = _plain(T, C)
    assert np.allclose(d, d0, rtol=1e-12, atol=1e-12)
    assert np.array_equal(d[:50], np.zeros(50))  # verbatim copies: exactly 0
    assert np.array_equal(i[:150], np.tile(np.arange(50), 3) + np.repeat([0, 50, 100], 50))


def test_near_ties_float32_cannot_separate_fall_back_to_the_exact_search():
    """Duplicated candidates (a categorical table) make many equally near rows; the true nearest
    may then sit outside the retrieved few, and those targets must be searched exactly."""
    rng = np.random.default_rng(1)
    base = rng.integers(0, 2, size=(40, 6)).astype(float)
    C = base[rng.integers(0, 40, size=3000)] + rng.normal(
        0, 1e-6, size=(3000, 6)
    )  # 3000 near-duplicates of 40 rows
    T = base[rng.integers(0, 40, size=200)] + rng.normal(0, 1e-6, size=(200, 6))
    calls = []
    d, _ = indexed_nearest(
        T, C, chunk_bytes=CHUNK, exact_search=lambda t, c: calls.append(len(t)) or _plain(t, c)
    )
    d0, _ = _plain(T, C)
    assert calls and calls[0] > 0  # the fallback ran
    assert np.allclose(d, d0, rtol=0, atol=1e-12)


def test_without_the_fallback_the_near_ties_would_be_wrong():
    """The fallback is needed: the float32 top-k alone misses the exact nearest here."""
    rng = np.random.default_rng(1)
    base = rng.integers(0, 2, size=(40, 6)).astype(float)
    C = base[rng.integers(0, 40, size=3000)] + rng.normal(0, 1e-6, size=(3000, 6))
    T = base[rng.integers(0, 40, size=200)] + rng.normal(0, 1e-6, size=(200, 6))
    d_no_fallback, _ = indexed_nearest(
        T,
        C,
        chunk_bytes=CHUNK,
        exact_search=lambda t, c: (np.full(len(t), np.inf), np.zeros(len(t), dtype=np.int64)),
    )
    d0, _ = _plain(T, C)
    finite = np.isfinite(d_no_fallback)
    assert (~finite).any()  # these are exactly the targets that were handed to the fallback
    assert np.allclose(d_no_fallback[finite], d0[finite], rtol=0, atol=1e-12)


def _threat(rng, n=600, n_reference=None):
    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "columns": {
                "x": {"kind": "numeric", "nullable": False},
                "y": {"kind": "numeric", "nullable": False},
                "c": {"kind": "categorical", "categories": ["a", "b", "c"]},
            },
        }
    )

    def table(m):
        return pd.DataFrame(
            {
                "x": rng.normal(size=m),
                "y": rng.normal(size=m),
                "c": rng.choice(["a", "b", "c"], size=m),
            }
        )

    syn = table(n)
    targets = pd.concat([syn.iloc[:30], table(200)], ignore_index=True)  # 30 verbatim copies
    reference = table(n if n_reference is None else n_reference)
    return ThreatModel(spec=spec, synthetic=syn, reference=reference), targets


@pytest.mark.parametrize("attack", ["dcr", "dcr_ratio", "copy_count"])
def test_distance_attacks_score_the_same_with_and_without_the_index(monkeypatch, attack):
    threat, targets = _threat(np.random.default_rng(2))
    monkeypatch.setattr(distance, "SHARE_PAIRS", 10**12)
    monkeypatch.setattr(distance, "INDEX_PAIRS", 10**12)
    plain = create_attack(attack).fit(threat).score(targets)
    monkeypatch.setattr(distance, "INDEX_PAIRS", 1)
    indexed = create_attack(attack).fit(threat).score(targets)
    assert np.allclose(indexed, plain, rtol=1e-12, atol=1e-12)


def test_the_nearest_record_and_the_copy_count_share_one_pass_over_the_synthetic_rows(
    monkeypatch,
):
    """``dcr`` and ``copy_count`` read the same index search of the targets among the synthetic
    rows: it runs once, and each attack scores as it does on its own."""
    import faiss

    threat, targets = _threat(np.random.default_rng(3), n_reference=500)
    monkeypatch.setattr(distance, "INDEX_PAIRS", 1)
    monkeypatch.setattr(distance, "SHARE_PAIRS", 10**12)
    alone = {a: create_attack(a).fit(threat).score(targets) for a in ("dcr", "copy_count")}
    searches = []

    class CountedIndex(faiss.IndexFlatL2):
        def search(self, x, k, *args, **kwargs):
            searches.append((len(x), self.ntotal))
            return super().search(x, k, *args, **kwargs)

    monkeypatch.setattr(faiss, "IndexFlatL2", CountedIndex)
    monkeypatch.setattr(distance, "SHARE_PAIRS", 1)
    monkeypatch.setattr(distance, "_SHARED", {})
    shared = {a: create_attack(a).fit(threat).score(targets) for a in ("dcr", "copy_count")}
    # the targets among the synthetic rows once for both attacks (twice without the sharing), the
    # targets among the reference rows, and copy_count's floor (synthetic rows among the reference)
    assert sorted(searches) == sorted([(230, 600), (230, 500), (600, 500)])
    for a in alone:
        assert np.array_equal(shared[a], alone[a])


def test_float32_kde_is_close_to_float64_and_keeps_the_ranking():
    rng = np.random.default_rng(3)
    X, T = rng.normal(size=(5000, 8)) + 4, np.vstack([rng.normal(size=(400, 8)) + 4])
    X[:20] = T[:20]  # copies: the exponent clamp must hold in float32 too
    f64 = GaussianKDE(precision="float64").fit(X, n_effective_dims=8)
    f32 = GaussianKDE(precision="float32").fit(X, n_effective_dims=8)
    a, b = f64.score_samples(T), f32.score_samples(T)
    assert f64.precision_ == "float64" and f32.precision_ == "float32" and b.dtype == np.float64
    assert np.all(np.isfinite(b))
    assert np.max(np.abs(a - b)) < 1e-3
    assert np.corrcoef(np.argsort(np.argsort(a)), np.argsort(np.argsort(b)))[0, 1] > 0.9999


def test_auto_precision_switches_by_job_size_and_domias_says_so(monkeypatch):
    threat, targets = _threat(np.random.default_rng(4))
    small = create_attack("domias").fit(threat)
    exact = small.score(targets)
    assert small.density_synthetic_.precision_ == "float64"
    assert not any("float32" in n for n in small.notes_)
    monkeypatch.setattr(density, "FLOAT32_ROWS", 1)
    large = create_attack("domias").fit(threat)
    approx = large.score(targets)
    assert large.density_synthetic_.precision_ == "float32"
    assert any("float32" in n for n in large.notes_)
    assert np.max(np.abs(approx - exact)) < 1e-3
    pinned = create_attack("domias", precision="float64").fit(threat)
    assert np.array_equal(pinned.score(targets), exact)


def test_precision_must_be_a_known_setting():
    with pytest.raises(Exception, match="precision"):
        GaussianKDE(precision="half")


def _separate_ivf_search(targets, candidates, k, cells, nprobe):
    """One plain faiss IVF search of its own (the member scan's search before the two shared their
    cells)."""
    import faiss

    C = np.ascontiguousarray(candidates, dtype=np.float32)
    quantizer = faiss.IndexFlatL2(C.shape[1])
    quantizer.add(np.ascontiguousarray(cells, dtype=np.float32))
    index = faiss.IndexIVFFlat(quantizer, C.shape[1], len(cells))
    index.add(C)
    index.nprobe = nprobe
    T = np.ascontiguousarray(targets, dtype=np.float32)
    found = index.search(T, k)[1]
    diff = C[np.maximum(found, 0)] - T[:, None, :]
    d = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff).astype(np.float64))
    d[found < 0] = np.inf
    return np.sort(d, axis=1)


@pytest.mark.parametrize("nprobe", [1, 3, 16])
def test_the_shared_cell_choice_gives_the_separate_searches_answers(nprobe):
    """The member scan searches the synthetic rows and the pool with one choice of cells per record:
    the distances are those of two separate searches, bit for bit, copies and near-ties included."""
    from privacy_gate.attacks.nn_index import (
        approximate_nearest,
        approximate_nearest_many,
        ivf_cells,
    )

    rng = np.random.default_rng(3)
    S = rng.normal(size=(6_000, 7)).astype(np.float32)
    P = np.vstack([S[:50], S[:50] + 1e-3, rng.normal(size=(4_000, 7))]).astype(
        np.float32
    )  # copies, near copies
    P = np.vstack([P, P[:20]])  # exact twins in the pool
    cells = ivf_cells(S, seed=0)
    d_syn, d_pool = approximate_nearest_many(
        P, [(S, 32), (P, 2)], cells=cells, nprobe=nprobe, batch=1_000
    )
    assert np.array_equal(d_syn, _separate_ivf_search(P, S, 32, cells, nprobe))
    assert np.array_equal(d_pool, _separate_ivf_search(P, P, 2, cells, nprobe))
    assert np.array_equal(d_syn, approximate_nearest(P, S, k=32, cells=cells, nprobe=nprobe))
    assert (d_syn[:50, 0] == 0).all() and (d_pool[-20:, 1] == 0).all()


def test_the_batches_spread_over_threads_give_the_one_thread_answer(monkeypatch):
    """faiss searches preassigned cells in the calling thread only, so the member scan's search
    spreads its batches over the threads OpenMP may use: the distances are those of one thread, bit
    for bit, and the batches did run on the pool's threads."""
    import threading

    import faiss

    from privacy_gate.attacks import nn_index

    rng = np.random.default_rng(5)
    S = rng.normal(size=(5_000, 6)).astype(np.float32)
    P = np.vstack([S[:40], S[:40] + 1e-3, rng.normal(size=(3_000, 6))]).astype(np.float32)
    cells = nn_index.ivf_cells(S, seed=0)
    monkeypatch.setattr(faiss, "omp_get_max_threads", lambda: 1)
    one = nn_index.approximate_nearest_many(P, [(S, 32), (P, 2)], cells=cells, nprobe=4)
    ran_on: list[str] = []
    found = nn_index._found_distances

    def recorded(*args):
        ran_on.append(threading.current_thread().name)
        return found(*args)

    monkeypatch.setattr(nn_index, "_found_distances", recorded)
    monkeypatch.setattr(faiss, "omp_get_max_threads", lambda: 3)
    three = nn_index.approximate_nearest_many(P, [(S, 32), (P, 2)], cells=cells, nprobe=4)
    assert all(np.array_equal(a, b) for a, b in zip(one, three))
    assert len(ran_on) == 6 and all(n.startswith("ivf-search") for n in ran_on)  # 3 batches x 2


def test_probed_cells_bound_the_rows_read_per_target():
    """The inverted-file search reads about PROBE_ROWS candidates per target, so its cost grows
    linearly in the targets: up to 16 cells while cells are small (full Adult, 160,000 rows keep
    their search), fewer as they grow."""
    from privacy_gate.attacks.nn_index import PROBE_CELLS, PROBE_ROWS, probe_count

    for n in (10_000, 96_000, 600_000, 6_000_000):
        nlist = int(4 * np.sqrt(n))
        probes = probe_count(n, nlist)
        assert 1 <= probes <= PROBE_CELLS
        assert probes * n / nlist <= PROBE_ROWS + n / nlist  # at most one cell over the bound
    assert probe_count(96_000, int(4 * np.sqrt(96_000))) == PROBE_CELLS


def test_the_disclosure_search_reads_a_bounded_share_of_large_candidate_sets(monkeypatch):
    """Above ``IVF_CELLS * IVF_CELL_ROWS`` candidates the inverted file gets one cell per
    ``IVF_CELL_ROWS``: a target reads about ``IVF_PROBE * IVF_CELL_ROWS`` rows, not an eighth of
    all of them. Copies are still found first, and most targets' nearest is the exact one."""
    import faiss

    import privacy_gate.attacks.nn_index as nn_index

    monkeypatch.setattr(nn_index, "IVF_CELL_ROWS", 100)
    cells = []
    real = faiss.IndexIVFFlat

    def counted(quantizer, dims, n_cells):
        cells.append(n_cells)
        return real(quantizer, dims, n_cells)

    monkeypatch.setattr(faiss, "IndexIVFFlat", counted)
    rng = np.random.default_rng(7)
    C = rng.normal(size=(20_000, 5))
    T = np.vstack([C[:200], rng.normal(size=(300, 5))])
    found = nn_index.k_nearest_indices(T, C, 3)
    assert cells == [200]  # 20,000 / 100, more than the 64 of smaller sets
    assert np.array_equal(found[:200, 0], np.arange(200))  # verbatim copies: their own row
    exact = np.argmin(((T[200:, None, :] - C[None, :, :]) ** 2).sum(axis=2), axis=1)
    assert np.mean(found[200:, 0] == exact) > 0.9
    monkeypatch.setattr(nn_index, "IVF_CELL_ROWS", 10**6)
    nn_index.k_nearest_indices(T, C, 3)
    assert cells[-1] == nn_index.IVF_CELLS
