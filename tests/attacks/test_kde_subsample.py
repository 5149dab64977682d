"""The KDE's bounded-cost mode: a seeded subsample of the fit rows, with its error against the
full KDE measured per target — checked against the error actually observed over many subsamples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privacy_gate.attacks import create_attack
from privacy_gate.attacks.base import ThreatModel
from privacy_gate.attacks.density import GaussianKDE
from privacy_gate.spec import DatasetSpec


def test_stated_standard_error_matches_the_observed_error_of_the_subsample():
    rng = np.random.default_rng(0)
    X, T = rng.normal(size=(8000, 4)), rng.normal(size=(300, 4))
    full = GaussianKDE(bandwidth=0.5).fit(X).score_samples(T)
    errors, stated = [], []
    for seed in range(40):
        kde = GaussianKDE(bandwidth=0.5, max_fit_rows=800, seed=seed).fit(X)
        errors.append(np.exp(kde.score_samples(T) - full) - 1)  # relative error of the density
        stated.append(kde.rel_se_)
    errors, stated = np.array(errors), np.array(stated)
    observed_sd, stated_se = np.median(errors.std(axis=0)), np.median(stated.mean(axis=0))
    assert stated_se == pytest.approx(observed_sd, rel=0.15)
    assert abs(np.median(errors.mean(axis=0))) < 0.2 * observed_sd  # unbiased for the full KDE
    assert np.mean(np.abs(errors) <= 1.96 * stated) > 0.9


def test_no_subsample_below_the_cap_and_the_same_seed_gives_the_same_density():
    rng = np.random.default_rng(1)
    X, T = rng.normal(size=(500, 3)), rng.normal(size=(20, 3))
    exact = GaussianKDE(max_fit_rows=500).fit(X)
    assert not exact.subsampled and np.array_equal(
        exact.score_samples(T), GaussianKDE().fit(X).score_samples(T)
    )
    assert not hasattr(exact, "rel_se_")
    a = GaussianKDE(max_fit_rows=100, seed=3).fit(X)
    b = GaussianKDE(max_fit_rows=100, seed=3).fit(X)
    c = GaussianKDE(max_fit_rows=100, seed=4).fit(X)
    assert (a.n_samples_, a.n_total_) == (100, 500)
    assert np.array_equal(a.score_samples(T), b.score_samples(T))
    assert not np.array_equal(a.score_samples(T), c.score_samples(T))


def test_domias_reports_the_subsample_and_its_error_in_its_notes():
    rng = np.random.default_rng(2)
    spec = DatasetSpec.model_validate(
        {"name": "t", "columns": {"x": {"kind": "numeric"}, "y": {"kind": "numeric"}}}
    )
    frame = lambda n: pd.DataFrame(rng.normal(size=(n, 2)), columns=["x", "y"])  # noqa: E731
    threat = ThreatModel(
        synthetic=frame(3000),
        reference=frame(1000),
        spec=spec,
        generator=None,
        generator_params={},
        n_train=3000,
    )
    attack = create_attack("domias", max_fit_rows=600).fit(threat)
    attack.score(frame(200))
    notes = " ".join(attack.notes_)
    assert "random 600 of 3,000 rows" in notes and "random 600 of 1,000 rows" in notes
    assert "relative standard error" in notes
    exact = create_attack("domias").fit(threat)  # the default: exact
    exact.score(frame(10))
    assert "random" not in " ".join(exact.notes_)


def test_long_pairwise_jobs_report_progress(monkeypatch, caplog):
    import logging

    import privacy_gate.attacks.density as density
    from privacy_gate.attacks.distance import nearest_distances

    monkeypatch.setattr(density, "PROGRESS_PAIRS", 1000)
    monkeypatch.setattr(density, "PROGRESS_EVERY", 0.0)
    rng = np.random.default_rng(3)
    with caplog.at_level(logging.INFO, logger="privacy_gate.attacks"):
        nearest_distances(
            rng.normal(size=(300, 3)), rng.normal(size=(200, 3)), chunk_bytes=200 * 8 * 100
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "privacy_gate.attacks"]
    assert (
        lines
        and "nearest record: 100 of 300 targets against 200 rows" in lines[0]
        and "ETA" in lines[0]
    )
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="privacy_gate.attacks"):  # small jobs stay quiet
        monkeypatch.setattr(density, "PROGRESS_PAIRS", 10**9)
        nearest_distances(
            rng.normal(size=(300, 3)), rng.normal(size=(200, 3)), chunk_bytes=200 * 8 * 100
        )
    assert not [r for r in caplog.records if r.name == "privacy_gate.attacks"]


def test_large_nearest_record_searches_are_computed_once_and_shared(monkeypatch):
    """dcr and dcr_ratio search the same synthetic rows for the same targets: at scale the second
    (even running concurrently) gets the first's result; different inputs never share."""
    from concurrent.futures import ThreadPoolExecutor

    import privacy_gate.attacks.distance as distance

    calls = []
    real = distance.indexed_neighbours

    def counting(t, c, k, **kwargs):
        calls.append(1)
        return real(t, c, k, **kwargs)

    monkeypatch.setattr(distance, "indexed_neighbours", counting)
    monkeypatch.setattr(distance, "INDEX_PAIRS", 1)
    monkeypatch.setattr(distance, "SHARE_PAIRS", 1000)
    monkeypatch.setattr(distance, "_SHARED", {})
    rng = np.random.default_rng(4)
    T, S = rng.normal(size=(400, 3)), rng.normal(size=(300, 3))
    with ThreadPoolExecutor(4) as pool:
        results = list(
            pool.map(lambda _: distance.nearest_distances(T, S, chunk_bytes=10**6), range(4))
        )
    assert len(calls) == 1
    exact = distance._nearest_blas(T, S, chunk_bytes=10**6)
    assert all(np.allclose(r[0], exact[0], rtol=1e-12, atol=1e-12) for r in results)
    assert all(np.array_equal(r[1], exact[1]) for r in results)
    assert not results[0][0].flags.writeable  # shared: nobody may modify it in place
    S2 = S.copy()
    S2[0, 0] += 1e-9  # one bit of difference: its own search
    distance.nearest_distances(T, S2, chunk_bytes=10**6)
    assert len(calls) == 2
    monkeypatch.setattr(distance, "SHARE_PAIRS", 10**12)  # small searches are not shared
    distance.nearest_distances(T, S, chunk_bytes=10**6)
    assert len(calls) == 3
