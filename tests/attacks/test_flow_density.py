"""MAFDensity (the normalising-flow density of DOMIAS) and GaussianDensity (the "prior" p_R):
accuracy against a known density, early stopping, seeding, parameter and input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from privacy_gate.attacks.density import GaussianDensity
from privacy_gate.attacks.flow import MAFDensity
from privacy_gate.errors import ConfigError, DataError, InsufficientDataError

# a 2-d mixture of two correlated Gaussians: bimodal, so a single Gaussian cannot fit it
WEIGHTS = (0.6, 0.4)
MEANS = (np.array([-2.0, 0.0]), np.array([2.0, 1.0]))
COVS = (np.array([[0.5, 0.25], [0.25, 0.5]]), np.eye(2) * 0.3)


def sample_mixture(n: int, rng: np.random.Generator) -> np.ndarray:
    first = rng.random(n) < WEIGHTS[0]
    a = rng.multivariate_normal(MEANS[0], COVS[0], n)
    b = rng.multivariate_normal(MEANS[1], COVS[1], n)
    return np.where(first[:, None], a, b)


def true_log_density(X: np.ndarray) -> np.ndarray:
    return np.log(
        sum(w * multivariate_normal(m, c).pdf(X) for w, m, c in zip(WEIGHTS, MEANS, COVS))
    )


@pytest.fixture(scope="module")
def mixture():
    rng = np.random.default_rng(0)
    train, test = sample_mixture(2000, rng), sample_mixture(2000, rng)
    flow = MAFDensity(noise=0.0, seed=0).fit(train)  # continuous data: no training noise
    return train, test, flow


def test_flow_log_likelihood_close_to_the_true_density(mixture):
    train, test, flow = mixture
    true = true_log_density(test).mean()
    got = flow.score_samples(test)
    assert got.shape == (len(test),) and got.dtype == np.float64 and np.isfinite(got).all()
    # held-out mean log-likelihood within 0.1 nats of the truth (it cannot beat it by more than
    # noise)
    assert true - 0.1 < got.mean() < true + 0.03
    # and far better than the best single Gaussian, which cannot represent two modes
    gauss = multivariate_normal(train.mean(0), np.cov(train.T)).logpdf(test).mean()
    assert got.mean() > gauss + 0.3
    # pointwise: the log density tracks the true one (modes and valley in the right places)
    assert np.corrcoef(got, true_log_density(test))[0, 1] > 0.95


def test_flow_density_integrates_to_one(mixture):
    _, _, flow = mixture
    # Riemann sum of exp(log density) on a grid covering the mass
    xs, ys = np.linspace(-6, 6, 241), np.linspace(-5, 5, 201)
    gx, gy = np.meshgrid(xs, ys)
    grid = np.c_[gx.ravel(), gy.ravel()]
    mass = np.exp(flow.score_samples(grid)).sum() * (xs[1] - xs[0]) * (ys[1] - ys[0])
    assert mass == pytest.approx(1.0, abs=0.03)


def test_early_stopping_stops_and_restores_the_best_epoch(mixture):
    _, _, flow = mixture
    assert flow.stopped_by_ == "patience"
    assert flow.n_epochs_ < flow.max_epochs
    val = np.array(flow.history_["validation"])
    assert len(val) == flow.n_epochs_ == len(flow.history_["train"])
    assert val.argmin() + 1 == flow.best_epoch_  # the restored weights are the best epoch's
    # the last `patience` epochs brought no progress larger than tol over the best before them
    before = val[: -flow.patience].min()
    assert val[-flow.patience :].min() > before - flow.tol
    assert flow.score_samples(mixture[1][:5]).shape == (5,)
    # a tiny epoch budget stops by max_epochs instead
    small = MAFDensity(max_epochs=2, hidden=(8,), n_transforms=1).fit(
        np.random.default_rng(1).normal(size=(100, 2))
    )
    assert small.stopped_by_ == "max_epochs" and small.n_epochs_ == 2


def test_seeded_reproducible_and_leaves_global_rng_alone():
    X = np.random.default_rng(2).normal(size=(300, 3))
    fast = dict(max_epochs=5, hidden=(16,), n_transforms=2)
    torch.manual_seed(123)
    before = torch.get_rng_state().clone()
    threads = torch.get_num_threads()
    a = MAFDensity(seed=7, **fast).fit(X).score_samples(X)
    assert torch.equal(torch.get_rng_state(), before)  # the global torch RNG is untouched
    assert torch.get_num_threads() == threads  # and the thread setting restored
    b = MAFDensity(seed=7, **fast).fit(X).score_samples(X)
    np.testing.assert_array_equal(a, b)
    c = MAFDensity(seed=8, **fast).fit(X).score_samples(X)
    assert not np.allclose(a, c)
    # random orderings are seeded too
    r1 = MAFDensity(seed=3, ordering="random", **fast).fit(X).score_samples(X)
    r2 = MAFDensity(seed=3, ordering="random", **fast).fit(X).score_samples(X)
    np.testing.assert_array_equal(r1, r2)


def test_batched_scoring_matches_one_batch(mixture):
    _, test, flow = mixture
    np.testing.assert_allclose(
        flow.score_samples(test, batch_rows=7), flow.score_samples(test), rtol=1e-6, atol=1e-5
    )


def test_noise_keeps_discrete_dimensions_from_degenerating():
    # one binary dimension (a one-hot slot) next to a continuous one
    rng = np.random.default_rng(4)
    X = np.c_[rng.normal(size=600), (rng.random(600) < 0.3) / math.sqrt(2)]
    fast = dict(max_epochs=40, hidden=(16, 16), n_transforms=2, seed=0)
    noisy = MAFDensity(noise=0.1, **fast).fit(X)
    out = noisy.score_samples(X)
    assert np.isfinite(out).all()
    # the density is the smoothed one: bounded by the Gaussian noise's peak (about
    # -log(0.1 * sqrt(2 pi)) ~ 1.4 nats for the binary dimension) plus the continuous part
    assert out.max() < 3.0
    # the two values of the binary dimension get their frequencies' order
    assert out[X[:, 1] > 0].mean() < out[X[:, 1] == 0].mean()


def test_far_away_rows_stay_finite(mixture):
    _, _, flow = mixture
    out = flow.score_samples(np.array([[1e4, -1e4], [0.0, 0.0]]))
    assert np.isfinite(out).all() and out[0] < out[1]


def test_flow_parameter_and_input_errors():
    for bad in (
        dict(n_transforms=0),
        dict(hidden=[0]),
        dict(hidden="64"),
        dict(ordering="natural"),
        dict(noise=-0.1),
        dict(learning_rate=0),
        dict(batch_size=0),
        dict(max_epochs=1.5),
        dict(patience=True),
        dict(validation_fraction=1.0),
        dict(max_seconds=0),
        dict(seed=-1),
        dict(n_threads=0),
    ):
        (name,) = bad
        with pytest.raises(ConfigError, match=f"MAFDensity: parameter '{name}'"):
            MAFDensity(**bad)
    with pytest.raises(InsufficientDataError, match="at least 2 rows"):
        MAFDensity().fit(np.zeros((1, 2)))
    with pytest.raises(DataError, match="NaN"):
        MAFDensity().fit(np.array([[np.nan, 1.0], [0.0, 1.0]]))
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MAFDensity().score_samples(np.zeros((1, 2)))
    flow = MAFDensity(max_epochs=1, hidden=(4,), n_transforms=1).fit(
        np.random.default_rng(0).normal(size=(30, 2))
    )
    with pytest.raises(DataError, match="2 feature"):
        flow.score_samples(np.zeros((1, 3)))


def test_max_seconds_budget_stops_training():
    X = np.random.default_rng(5).normal(size=(2000, 4))
    flow = MAFDensity(max_seconds=1e-9, seed=0).fit(X)
    assert flow.stopped_by_ == "max_seconds" and flow.n_epochs_ == 1


# --------------------------------------------------------------------------- GaussianDensity


def test_gaussian_density_matches_scipy_with_shrinkage_and_ridge():
    from sklearn.covariance import LedoitWolf

    rng = np.random.default_rng(6)
    X = rng.multivariate_normal([1.0, -1.0, 0.0], [[1, 0.5, 0], [0.5, 2, 0.3], [0, 0.3, 0.5]], 400)
    Y = rng.normal(size=(50, 3))
    g = GaussianDensity().fit(X)
    cov = LedoitWolf().fit(X).covariance_ + 0.01 * np.eye(3)
    np.testing.assert_allclose(
        g.score_samples(Y), multivariate_normal(X.mean(0), cov).logpdf(Y), rtol=1e-9
    )
    assert 0 <= g.shrinkage_ <= 1


def test_gaussian_density_survives_constant_and_wide_data():
    rng = np.random.default_rng(7)
    X = np.c_[rng.normal(size=(20, 30)), np.zeros(20)]  # more columns than rows, one constant
    g = GaussianDensity().fit(X)
    out = g.score_samples(np.c_[rng.normal(size=(5, 30)), np.full(5, 1 / math.sqrt(2))])
    assert np.isfinite(out).all()
    with pytest.raises(ConfigError, match="GaussianDensity: parameter 'ridge'"):
        GaussianDensity(ridge=-1)
    with pytest.raises(InsufficientDataError):
        GaussianDensity().fit(np.zeros((1, 3)))
