"""The DP audit's statistics against analytic cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privacy_gate.estimators import dp_audit as da


def test_clopper_pearson_closed_forms():
    # k = 0: upper = 1 - alpha^(1/n); k = n: lower = alpha^(1/n)
    assert da.cp_upper(0, 50, alpha=0.05) == pytest.approx(1 - 0.05 ** (1 / 50), rel=1e-9)
    assert da.cp_lower(50, 50, alpha=0.05) == pytest.approx(0.05 ** (1 / 50), rel=1e-9)
    lo, hi = da.clopper_pearson(5, 10, alpha=0.05)
    assert lo == pytest.approx(0.187086, abs=1e-5) and hi == pytest.approx(0.812914, abs=1e-5)
    with pytest.raises(ValueError):
        da.cp_upper(3, 2, alpha=0.05)


def test_epsilon_lower_bound_is_the_dp_region():
    eps, delta = 1.3, 1e-3
    for fpr in (0.01, 0.1, 0.3):
        fnr = float(da.dp_tradeoff(fpr, epsilon=eps, delta=delta))
        if fnr > 0:  # a point on the (eps, delta) curve needs exactly eps
            assert da.epsilon_lower_bound(fpr, fnr, delta=delta) == pytest.approx(eps, rel=1e-9)
    assert da.epsilon_lower_bound(0.5, 0.5, delta=0.0) == 0.0
    assert da.epsilon_lower_bound(0.0, 0.5, delta=0.0) == math.inf


def test_gdp_curve_and_mu_round_trip():
    for mu in (0.2, 1.0, 2.5):
        for fpr in (0.01, 0.2):
            assert da.gdp_mu(fpr, float(da.gdp_tradeoff(fpr, mu=mu))) == pytest.approx(mu, rel=1e-9)
    # delta(eps) of mu-GDP: the Gaussian mechanism of sigma = 1/mu (Balle & Wang 2018's formula)
    mu, eps = 0.8, 0.5
    assert da.gdp_delta(eps, mu) == pytest.approx(
        stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    )
    m = da.gdp_mu_for_dp(1.0, 1e-2)
    assert da.gdp_delta(1.0, m) == pytest.approx(1e-2, rel=1e-6)
    assert da.zcdp_mu(0.10341283143348314) == pytest.approx(
        0.4548, abs=1e-4
    )  # dpmm's implied mu at (1, 1e-2)


def test_audit_bound_recovers_a_gaussian_mu():
    rng = np.random.default_rng(0)
    mu, n = 2.0, 4000
    b = da.audit_bound(
        select_in=rng.normal(mu, 1, n),
        select_out=rng.normal(0, 1, n),
        eval_in=rng.normal(mu, 1, n),
        eval_out=rng.normal(0, 1, n),
        delta=1e-5,
    )
    assert b.mu_lower <= mu <= b.mu_upper
    assert abs(b.mu_estimate - mu) < 0.25
    # mu = 2 GDP at delta 1e-5 allows eps ~ 7.5; CP with 4000 runs certifies less, but some
    assert (
        0.5
        < b.epsilon_lower
        < da.epsilon_lower_bound(
            *(lambda f: (f, float(da.gdp_tradeoff(f, mu=mu))))(1e-4), delta=1e-5
        )
        + 1
    )
    est, lo, hi = da.mean_shift_mu(rng.normal(mu, 1, n), rng.normal(0, 1, n))
    assert lo <= mu <= hi and abs(est - mu) < 0.1


def test_no_signal_gives_no_bound():
    rng = np.random.default_rng(1)
    x = [rng.normal(0, 1, 300) for _ in range(4)]
    b = da.audit_bound(select_in=x[0], select_out=x[1], eval_in=x[2], eval_out=x[3], delta=1e-5)
    assert b.epsilon_lower < 0.5 and b.mu_lower < 0.3


def test_saturation_and_one_run_bound():
    # a perfect attack on R runs per side certifies at most log((1 - u) / u), u = 1 -
    # (alpha/2)^(1/R)
    u = 1 - 0.025 ** (1 / 1000)
    assert da.max_certifiable_epsilon(1000, alpha=0.05) == pytest.approx(math.log((1 - u) / u))
    # one run: all guesses right on r canaries: P[Bin(r, p) = r] = p^r = alpha  =>  p = alpha^(1/r)
    r = 200
    p = 0.05 ** (1 / r)
    assert da.one_run_epsilon_lower_bound(correct=r, guesses=r) == pytest.approx(
        math.log(p / (1 - p)), rel=1e-6
    )
    assert da.one_run_epsilon_lower_bound(correct=50, guesses=100) == 0.0


def test_one_run_delta_term():
    # r = v = 1: f(1) = q, the only i is 1: (f(0) - f(1)) / 1 = 1 - q  =>  p = q + 2 m delta (1 - q)
    assert da.one_run_p_value(
        correct=1, guesses=1, epsilon=0.0, delta=0.1, canaries=1
    ) == pytest.approx(0.6)
    # against the theorem written with binomial tails: f(v) + 2 m delta max_i (f(v - i) - f(v)) / i
    m, r, v, eps, delta = 500, 120, 100, 1.2, 1e-4
    q = 1 / (1 + math.exp(-eps))

    def f(x):
        return stats.binom.sf(x - 1, r, q)

    want = f(v) + 2 * m * delta * max((f(v - i) - f(v)) / i for i in range(1, v + 1))
    assert da.one_run_p_value(
        correct=v, guesses=r, epsilon=eps, delta=delta, canaries=m
    ) == pytest.approx(want)
    # the delta term only loosens the bound; at the bound the p-value is alpha
    pure = da.one_run_epsilon_lower_bound(correct=v, guesses=r)
    approx = da.one_run_epsilon_lower_bound(correct=v, guesses=r, delta=delta, canaries=m)
    assert 0 < approx < pure
    assert da.one_run_p_value(
        correct=v, guesses=r, epsilon=approx, delta=delta, canaries=m
    ) == pytest.approx(0.05, abs=1e-6)
    # a delta large enough to explain every correct guess gives no bound
    assert da.one_run_epsilon_lower_bound(correct=r, guesses=r, delta=0.05, canaries=r) == 0.0
    with pytest.raises(ValueError):
        da.one_run_p_value(
            correct=3, guesses=4, epsilon=1.0, delta=1e-5
        )  # delta needs the canaries


def test_dp_auc_bound_is_the_area_above_the_tradeoff_curve():
    fpr = np.linspace(0.0, 1.0, 200_001)
    for eps, delta in ((0.0, 0.0), (0.5, 0.0), (1.0, 1e-9), (2.0, 0.05), (6.0, 1e-3)):
        area = np.trapezoid(1.0 - da.dp_tradeoff(fpr, epsilon=eps, delta=delta), fpr)
        assert da.dp_auc_bound(eps, delta) == pytest.approx(area, abs=1e-6)
    assert da.dp_auc_bound(1.0) == pytest.approx(math.e / (1 + math.e))
    assert da.dp_auc_bound(1000.0) == 1.0  # no overflow: a large epsilon bounds nothing
    with pytest.raises(ValueError):
        da.dp_auc_bound(-1.0)
