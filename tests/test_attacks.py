"""Attacks: KDE correctness and chunking, the Attack contract for every registered attack,
ThreatModel validation and the registry's errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp
from scipy.stats import gaussian_kde
from sklearn.neighbors import KernelDensity

from privacy_gate.attacks import Attack, ThreatModel, available_attacks, create_attack
from privacy_gate.attacks.density import GaussianKDE, rows_per_chunk
from privacy_gate.attacks.distance import nearest_distances
from privacy_gate.config import DatasetSpec
from privacy_gate.data import conform
from privacy_gate.errors import ConfigError, DataError
from privacy_gate.estimators import roc_metrics

# Ten columns of every kind. DOMIAS with Scott's bandwidth needs a few dimensions to isolate
# individual records (with ~5 columns its kernel is wider than the gaps between neighbours and
# copies are only weakly visible; see the benchmark notes), so the toy is not smaller than this.
SPEC = DatasetSpec.model_validate(
    {
        "name": "toy",
        "columns": {
            **{f"n{i}": {"kind": "numeric"} for i in range(6)},
            "grade": {"kind": "ordinal"},
            "when": {"kind": "datetime"},
            "city": {"kind": "categorical", "categories": ["a", "b", "c", "d"]},
            "job": {"kind": "categorical"},
        },
    }
)


def population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """A small mixed table with dependent, skewed and missing values."""
    z = rng.normal(size=(n, 6))
    z[:, 1] += 0.6 * z[:, 0]
    z[:, 2] = np.exp(0.5 * z[:, 2])
    raw = pd.DataFrame({f"n{i}": z[:, i] for i in range(6)})
    raw["n4"] = raw["n4"].mask(rng.random(n) < 0.05)
    raw["grade"] = rng.integers(1, 6, n).astype(float)
    raw["when"] = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 3 * 365, n), unit="D")
    raw["city"] = rng.choice(["a", "b", "c", "d"], n, p=[0.5, 0.3, 0.15, 0.05])
    raw["job"] = np.where(z[:, 0] > 0, "x", rng.choice(["y", "z"], n))
    return conform(raw, SPEC, source="toy")


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(0)
    members = population(300, rng)
    non_members = population(300, rng)
    reference = population(600, rng)
    independent = population(600, rng)
    targets = pd.concat([members, non_members], ignore_index=True)
    labels = np.r_[np.ones(300), np.zeros(300)]
    return {"members": members, "reference": reference, "independent": independent, "targets": targets, "labels": labels}


# --------------------------------------------------------------------------- KDE


def naive_log_density(X: np.ndarray, Y: np.ndarray, h: float) -> np.ndarray:
    d2 = ((Y[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    D = X.shape[1]
    return logsumexp(-d2 / (2 * h * h), axis=1) - math.log(len(X)) - 0.5 * D * math.log(2 * math.pi * h * h)


def test_kde_matches_naive_and_sklearn():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 6))
    Y = np.vstack([rng.normal(size=(40, 6)), X[:5]])  # include exact copies of fit rows
    kde = GaussianKDE(bandwidth=0.45).fit(X)
    got = kde.score_samples(Y)
    np.testing.assert_allclose(got, naive_log_density(X, Y, 0.45), rtol=1e-10, atol=1e-10)
    ref = KernelDensity(kernel="gaussian", bandwidth=0.45).fit(X).score_samples(Y)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_kde_matches_scipy_gaussian_kde_in_one_dimension():
    rng = np.random.default_rng(1)
    x = rng.normal(3.0, 2.0, 400)
    y = np.linspace(-5, 10, 31)
    h = 0.7
    # scipy's kernel covariance is var(x) * factor^2, so factor = h / std picks the same h
    scipy_kde = gaussian_kde(x, bw_method=h / x.std(ddof=1))
    ours = GaussianKDE(bandwidth=h).fit(x[:, None]).score_samples(y[:, None])
    np.testing.assert_allclose(ours, scipy_kde.logpdf(y), rtol=1e-10)


def test_scott_bandwidth_uses_effective_dims():
    X = np.random.default_rng(2).normal(size=(1000, 40))
    assert GaussianKDE().fit(X).bandwidth_ == pytest.approx(1000 ** (-1 / 44))
    assert GaussianKDE().fit(X, n_effective_dims=6).bandwidth_ == pytest.approx(1000 ** (-1 / 10))
    assert GaussianKDE(bandwidth=0.3).fit(X, n_effective_dims=6).bandwidth_ == 0.3


def test_kde_chunking_matches_one_chunk():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(500, 8)), rng.normal(size=(333, 8))
    one = GaussianKDE(bandwidth=0.5, chunk_bytes=2**40).fit(X).score_samples(Y)
    for budget in (1, 8 * 500 * 7, 8 * 500 * 100):  # 1 row, 7 rows, 100 rows per chunk
        np.testing.assert_allclose(GaussianKDE(bandwidth=0.5, chunk_bytes=budget).fit(X).score_samples(Y), one, rtol=1e-13, atol=1e-13)
    assert rows_per_chunk(500, 8 * 500 * 7) == 7
    assert rows_per_chunk(500, 1) == 1


def test_kde_stays_finite_far_away_and_with_tiny_bandwidth():
    X = np.zeros((10, 3))
    Y = np.array([[1e3, 0, 0], [0, 0, 0]])
    out = GaussianKDE(bandwidth=1e-3).fit(X).score_samples(Y)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, naive_log_density(X, Y, 1e-3))


def test_kde_parameter_and_input_errors():
    with pytest.raises(ConfigError, match="bandwidth"):
        GaussianKDE(bandwidth="silverman")
    with pytest.raises(ConfigError, match="bandwidth"):
        GaussianKDE(bandwidth=0)
    with pytest.raises(ConfigError, match="chunk_bytes"):
        GaussianKDE(chunk_bytes=0)
    kde = GaussianKDE().fit(np.zeros((3, 2)))
    with pytest.raises(DataError, match="2 feature"):
        kde.score_samples(np.zeros((1, 3)))
    with pytest.raises(DataError, match="NaN"):
        GaussianKDE().fit(np.array([[np.nan, 1.0]]))


def test_nearest_distances_exact_zero_for_copies_and_chunk_invariant():
    rng = np.random.default_rng(4)
    S = rng.normal(size=(200, 5)) * 1e3  # large norms: cancellation would show here
    T = np.vstack([S[:10], rng.normal(size=(20, 5))])
    d, idx = nearest_distances(T, S, chunk_bytes=1)
    np.testing.assert_array_equal(d[:10], 0.0)
    np.testing.assert_array_equal(idx[:10], np.arange(10))
    brute = np.sqrt(((T[:, None] - S[None]) ** 2).sum(-1)).min(1)
    np.testing.assert_allclose(d, brute, rtol=1e-12)
    d_big, _ = nearest_distances(T, S, chunk_bytes=2**30)
    np.testing.assert_array_equal(d, d_big)


# --------------------------------------------------------------------------- the Attack contract


@pytest.mark.parametrize("name", available_attacks())
def test_attack_contract_and_detects_copies(name, toy):
    attack = create_attack(name)
    assert isinstance(attack, Attack) and attack.name == name
    # synthetic = verbatim copies of the members: every attack must see it
    threat = ThreatModel(synthetic=toy["members"], reference=toy["reference"], spec=SPEC)
    assert attack.fit(threat) is attack
    scores = attack.score(toy["targets"])
    assert scores.shape == (len(toy["targets"]),) and scores.dtype == np.float64
    assert np.isfinite(scores).all()
    assert roc_metrics(scores, toy["labels"])["auc"] > 0.9
    # one score per row, in row order: permuting targets permutes scores
    perm = np.random.default_rng(0).permutation(len(toy["targets"]))
    np.testing.assert_allclose(attack.score(toy["targets"].iloc[perm]), scores[perm], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", available_attacks())
def test_attack_is_at_chance_on_independent_synthetic_data(name, toy):
    threat = ThreatModel(synthetic=toy["independent"], reference=toy["reference"], spec=SPEC)
    auc = roc_metrics(create_attack(name).fit(threat).score(toy["targets"]), toy["labels"])["auc"]
    assert 0.4 <= auc <= 0.6


@pytest.mark.parametrize("name", available_attacks())
def test_attack_score_before_fit_raises(name, toy):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        create_attack(name).score(toy["targets"])


def test_domias_score_is_log_density_ratio(toy):
    threat = ThreatModel(synthetic=toy["independent"], reference=toy["reference"], spec=SPEC)
    attack = create_attack("domias", bandwidth=0.4).fit(threat)
    X = attack.encoder_.transform(toy["targets"])
    expected = naive_log_density(attack.encoder_.transform(toy["independent"]), X, 0.4) - naive_log_density(
        attack.encoder_.transform(toy["reference"]), X, 0.4
    )
    np.testing.assert_allclose(attack.score(toy["targets"]), expected, rtol=1e-9, atol=1e-9)
    # scott: bandwidth from the 10 original columns, not the (wider) one-hot encoding
    scott = create_attack("domias").fit(threat)
    assert scott.encoder_.n_features_out_ > 10
    assert scott.density_synthetic_.bandwidth_ == pytest.approx(600 ** (-1 / 14))


def test_dcr_copies_score_zero(toy):
    threat = ThreatModel(synthetic=toy["members"], reference=toy["reference"], spec=SPEC)
    scores = create_attack("dcr", chunk_bytes=1000).fit(threat).score(toy["targets"])
    np.testing.assert_array_equal(scores[:300], 0.0)
    assert (scores[300:] < 0).all()


# --------------------------------------------------------------------------- ThreatModel


def test_threat_model_validates(toy):
    ref, syn = toy["reference"], toy["members"]
    with pytest.raises(DataError, match="synthetic data has no rows"):
        ThreatModel(synthetic=syn.iloc[:0], reference=ref, spec=SPEC)
    with pytest.raises(DataError, match=r"\['job'\].*reference"):
        ThreatModel(synthetic=syn, reference=ref.drop(columns=["job"]), spec=SPEC)
    with pytest.raises(DataError, match="different columns.*only in synthetic: \\['extra'\\]"):
        ThreatModel(synthetic=syn.assign(extra=1), reference=ref, spec=SPEC)
    with pytest.raises(ConfigError, match="n_train"):
        ThreatModel(synthetic=syn, reference=ref, spec=SPEC, n_train=0)
    with pytest.raises(ConfigError, match="spec"):
        ThreatModel(synthetic=syn, reference=ref, spec={"name": "x"})
    params = {"epochs": 3}
    threat = ThreatModel(synthetic=syn, reference=ref, spec=SPEC, generator="ctgan", generator_params=params, n_train=300)
    params["epochs"] = 99
    assert threat.generator_params["epochs"] == 3  # a copy, and read-only
    with pytest.raises(TypeError):
        threat.generator_params["epochs"] = 5


# --------------------------------------------------------------------------- registry


def test_registry_lists_and_creates():
    assert {"domias", "dcr"} <= set(available_attacks())
    assert available_attacks() == sorted(available_attacks())
    attack = create_attack("domias", bandwidth=0.5, chunk_bytes=2**20)
    assert attack.bandwidth == 0.5 and attack.chunk_bytes == 2**20  # stored as given


def test_create_attack_errors():
    with pytest.raises(ConfigError, match=r"unknown attack 'nope'.*\['dcr', 'domias'"):
        create_attack("nope")
    with pytest.raises(ConfigError, match=r"attack 'domias'.*unknown parameter.*'bandwith'"):
        create_attack("domias", bandwith=0.5)
    with pytest.raises(ConfigError, match=r"attack 'domias'.*'bandwidth'"):
        create_attack("domias", bandwidth=-1)
    with pytest.raises(ConfigError, match=r"attack 'domias'.*'density'.*later"):
        create_attack("domias", density="flow")
    with pytest.raises(ConfigError, match=r"attack 'domias'.*'density'"):
        create_attack("domias", density="histogram")
    with pytest.raises(ConfigError, match=r"attack 'dcr'.*'chunk_bytes'"):
        create_attack("dcr", chunk_bytes="lots")
