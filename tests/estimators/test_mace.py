"""MACE estimators: known truths (Gaussian shift, discrete pmfs), interval coverage, the null case,
per-record intervals, generalised metrics, the DP ceiling and fail-closed input checks."""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from privacy_gate.errors import ConfigError, DataError, InsufficientDataError
from privacy_gate.estimators.mace._models import (
    DiscreteModel,
    Kde1dModel,
    KdeNdModel,
    permuted_labels,
    resolve_method,
)
from privacy_gate.estimators.mace.advantage import (
    AdvantageEstimate,
    IndividualRisk,
    compare_to_dp,
    dp_advantage_bound,
    dp_risk_bound,
    estimate_advantage,
    generalized_metrics,
    individual_risk,
    mcdiarmid_radius,
    risk_histogram_figure,
)


def gaussian_shift(rng, mu, n1, n0):
    z = np.r_[rng.normal(mu, 1.0, n1), rng.normal(0.0, 1.0, n0)]
    return z, np.r_[np.ones(n1, np.int8), np.zeros(n0, np.int8)]


def truth_quad(mu, p):
    """integral |p phi(x - mu) - (1-p) phi(x)| dx by quadrature (the crossing split out)."""
    g = lambda x: abs(p * norm.pdf(x - mu) - (1 - p) * norm.pdf(x))  # noqa: E731
    pts = [mu / 2 - math.log(p / (1 - p)) / mu] if mu else None
    return integrate.quad(g, -12, 12 + mu, points=pts, limit=200)[0]


# --------------------------------------------------------------------------------------------
# known truths


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_truth_formula_matches_quadrature(mu):
    assert truth_quad(mu, 0.5) == pytest.approx(2 * norm.cdf(mu / 2) - 1, abs=1e-8)


@pytest.mark.parametrize("method", ["discrete", "kde"])
@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gaussian_shift_balanced(method, mu):
    rng = np.random.default_rng(int(mu * 10))
    z, m = gaussian_shift(rng, mu, 10_000, 10_000)
    est = estimate_advantage(z, m, method=method, n_permutations=50)
    truth = 2 * norm.cdf(mu / 2) - 1
    assert est.method == method
    assert est.estimate == pytest.approx(truth, abs=0.02)
    assert est.lower <= truth <= est.upper
    assert est.radius == pytest.approx(math.sqrt(2 / 20_000 * math.log(40)))
    assert est.p_value < 0.05


@pytest.mark.parametrize("method", ["discrete", "kde"])
def test_gaussian_shift_unequal_prior(method):
    rng = np.random.default_rng(3)
    p, mu = 0.2, 2.0
    z, m = gaussian_shift(
        rng, mu, 8_000, 8_000
    )  # balanced targets, imbalanced prior (the gate's default)
    truth = truth_quad(mu, p)
    est = estimate_advantage(z, m, prior=p, method=method, n_permutations=50)
    assert truth > abs(2 * p - 1)  # leakage beats the constant guess
    assert est.estimate == pytest.approx(truth, abs=0.02)
    assert est.lower <= truth <= est.upper
    assert est.lower >= 0.6 and est.floor == pytest.approx(0.6)
    # McDiarmid with N1 != pN: sum of squared differences 4 (p^2/N1 + (1-p)^2/N0)
    assert est.radius == pytest.approx(math.sqrt(2 * (0.04 / 8000 + 0.64 / 8000) * math.log(40)))


def test_discrete_pmf_known_total_variation():
    p1 = np.array([0.1, 0.2, 0.3, 0.4])
    p0 = np.array([0.4, 0.3, 0.2, 0.1])
    for prior in (0.5, 0.3):
        truth = np.abs(prior * p1 - (1 - prior) * p0).sum()
        rng = np.random.default_rng(11)
        z = np.r_[rng.choice(4, 3000, p=p1), rng.choice(4, 3000, p=p0)] * 10 + 5  # any values
        m = np.r_[np.ones(3000), np.zeros(3000)]
        est = estimate_advantage(z, m, prior=prior, n_permutations=50)
        assert (
            est.method == "discrete"
            and est.settings["exact_levels"]
            and est.settings["n_cells"] == 4
        )
        assert est.estimate == pytest.approx(truth, abs=0.025)
        assert est.lower <= truth <= est.upper


def test_coverage_small_simulation():
    """60 draws per method: [lower, upper] must cover the truth >= 1 - delta of the time (with
    binomial slack: P(Bin(60, 0.95) <= 53) ~ 3%)."""
    mu, truth = 1.0, 2 * norm.cdf(0.5) - 1
    rng = np.random.default_rng(2024)
    for method in ("discrete", "kde"):
        covered = covered_upper = 0
        for _ in range(60):
            z, m = gaussian_shift(rng, mu, 500, 500)
            est = estimate_advantage(
                z, m, method=method, n_permutations=20, seed=int(rng.integers(1 << 30))
            )
            covered += est.lower <= truth <= est.upper
            covered_upper += truth <= est.upper
        assert covered >= 54, (method, covered)
        assert covered_upper >= 57, (method, covered_upper)


def test_error_shrinks_with_n():
    mu, truth = 1.0, 2 * norm.cdf(0.5) - 1
    rng = np.random.default_rng(5)
    for method in ("discrete", "kde"):
        errs, widths = [], []
        for n in (250, 2_500, 25_000):
            e = [
                estimate_advantage(*gaussian_shift(rng, mu, n, n), method=method, n_permutations=0)
                for _ in range(6)
            ]
            errs.append(np.sqrt(np.mean([(x.estimate - truth) ** 2 for x in e])))
            widths.append(np.mean([x.upper - x.lower for x in e]))
        assert errs[0] > errs[1] > errs[2], (method, errs)
        assert widths[0] > widths[1] > widths[2]
        assert errs[2] < 0.01


def test_null_case_estimate_is_bias_and_lower_bound_is_zero():
    rng = np.random.default_rng(8)
    lowers, lowers_perm, debiased, pvals = [], [], [], []
    for _ in range(20):
        z = rng.normal(size=2000)
        m = np.r_[np.ones(1000), np.zeros(1000)]
        for method in ("discrete", "kde"):
            est = estimate_advantage(
                z, m, method=method, n_permutations=100, seed=int(rng.integers(1 << 30))
            )
            lowers.append(est.lower)
            lowers_perm.append(est.lower_permutation)
            debiased.append(est.estimate - est.bias)
            pvals.append(est.p_value)
            assert 0 < est.bias < 0.1 and est.null_quantile >= est.bias
    assert np.mean(np.array(lowers) == 0.0) >= 0.95
    assert np.mean(np.array(lowers_perm) == 0.0) >= 0.95
    assert abs(np.mean(debiased)) < 0.01 and np.max(np.abs(debiased)) < 0.06
    assert 0.2 < np.mean(pvals) < 0.8  # roughly uniform under the null


def test_null_case_unequal_prior_sits_on_the_floor():
    rng = np.random.default_rng(9)
    z = rng.normal(size=4000)
    m = np.r_[np.ones(2000), np.zeros(2000)]
    est = estimate_advantage(z, m, prior=0.2, n_permutations=50)
    assert est.lower == pytest.approx(0.6)
    assert est.estimate - est.bias == pytest.approx(0.6, abs=0.02)


def test_invariant_under_monotone_transforms():
    rng = np.random.default_rng(4)
    z, m = gaussian_shift(rng, 1.0, 800, 800)
    for method in ("discrete", "kde"):
        a = estimate_advantage(z, m, method=method, n_permutations=30)
        b = estimate_advantage(np.exp(3 * z) + 7, m, method=method, n_permutations=30)
        assert a.to_dict() == b.to_dict()


# --------------------------------------------------------------------------------------------
# numerical machinery against exact answers


@pytest.mark.parametrize("prior", [0.5, 0.3])
def test_grid_kde_integral_matches_analytic_two_point_case(prior):
    # one member, one non-member: normal scores -+0.674, so U = int |p phi_h(x-a) - (1-p)
    # phi_h(x-b)|
    x = np.array([[3.0], [-1.0]])
    y = np.array([1, 0], np.int8)
    h = 0.4
    model = Kde1dModel(x, y, prior=prior, bandwidth=h)
    a, b = norm.ppf(0.75), norm.ppf(0.25)
    exact = integrate.quad(
        lambda t: abs(prior * norm.pdf(t, a, h) - (1 - prior) * norm.pdf(t, b, h)),
        -8,
        8,
        points=[a, b, (a + b) / 2],
        limit=200,
    )[0]
    got = model.advantages(y[None, :])[0][0]
    assert got == pytest.approx(exact, abs=1e-4)  # linear binning onto 25 points per bandwidth
    if prior == 0.5:
        assert got == pytest.approx(2 * norm.cdf((a - b) / (2 * h)) - 1, abs=1e-4)


def test_grid_kde_densities_match_direct_evaluation():
    rng = np.random.default_rng(0)
    x, y = gaussian_shift(rng, 1.0, 300, 200)
    model = Kde1dModel(x[:, None], y, prior=0.5, bandwidth=None)
    t = model.transform(x[:, None])[:, 0]
    pts = np.linspace(-2.5, 2.5, 41)
    direct1 = norm.pdf((pts[:, None] - t[y == 1][None, :]) / model.h).mean(axis=1) / model.h
    assert np.interp(pts, model.grid, model.dens1) == pytest.approx(direct1, abs=1e-3)


def test_multid_kde_monte_carlo_matches_grid_integration():
    rng = np.random.default_rng(1)
    x = np.r_[rng.normal(0.8, 1, (40, 2)), rng.normal(0, 1, (40, 2))]
    y = np.r_[np.ones(40, np.int8), np.zeros(40, np.int8)]
    model = KdeNdModel(x, y, prior=0.4, bandwidth=0.5, n_mc=20_000, seed=0)
    mc, se = (v[0] for v in model.advantages(y[None, :]))
    g = np.linspace(-5, 5, 401)
    gx, gy = np.meshgrid(g, g)
    pts = np.c_[gx.ravel(), gy.ravel()]
    d2 = ((pts[:, None, :] - model.z[None, :, :]) ** 2).sum(-1)
    k = np.exp(-0.5 * d2 / model.h**2) / (2 * np.pi * model.h**2)
    dens = 0.4 * k[:, y == 1].mean(1) - 0.6 * k[:, y == 0].mean(1)
    exact = np.abs(dens).sum() * (g[1] - g[0]) ** 2
    assert 0 < se < 0.01
    assert mc == pytest.approx(exact, abs=4 * se)


def test_vectorised_permutations_match_refitting():
    rng = np.random.default_rng(2)
    x, y = gaussian_shift(rng, 0.7, 150, 250)
    labels = permuted_labels(y, 5, rng)
    for cls in (DiscreteModel, Kde1dModel):
        kw = {"n_bins": None} if cls is DiscreteModel else {"bandwidth": None}
        vals = cls(x[:, None], y, prior=0.3, **kw).advantages(labels)[0]
        refit = [
            cls(x[:, None], row, prior=0.3, **kw).advantages(row[None, :])[0][0] for row in labels
        ]
        assert vals == pytest.approx(refit, abs=1e-9)


# --------------------------------------------------------------------------------------------
# combined queries and method choice


@pytest.mark.parametrize("method", ["discrete", "kde"])
def test_combined_query_two_attacks(method):
    rng = np.random.default_rng(6)
    cov = np.array([[1.0, 0.5], [0.5, 1.0]])
    mu = np.array([1.0, 1.0])
    n = 5000
    L = np.linalg.cholesky(cov)
    z = np.r_[rng.standard_normal((n, 2)) @ L.T + mu, rng.standard_normal((n, 2)) @ L.T]
    z[:, 1] = np.exp(z[:, 1])  # the second attack lives on another scale
    m = np.r_[np.ones(n), np.zeros(n)]
    truth = 2 * norm.cdf(math.sqrt(mu @ np.linalg.solve(cov, mu)) / 2) - 1
    single = 2 * norm.cdf(0.5) - 1
    est = estimate_advantage(z, m, method=method, n_permutations=30)
    assert est.estimate == pytest.approx(truth, abs=0.03)
    assert est.lower <= truth <= est.upper
    assert est.lower > single - 0.05  # combining attacks helps: truth 0.43 vs 0.38 alone
    if method == "kde":
        assert 0 < est.mc_se < 0.01
        assert est.upper == pytest.approx(min(1, est.estimate + est.radius + 2 * est.mc_se))


def test_auto_method_choice():
    rng = np.random.default_rng(0)
    assert resolve_method(rng.integers(0, 1000, (500, 1)).astype(float), "auto") == "discrete"
    assert resolve_method(rng.choice([0.1, 0.5, 0.9], (500, 1)), "auto") == "discrete"
    assert resolve_method(rng.normal(size=(500, 1)), "auto") == "kde"
    assert resolve_method(rng.normal(size=(500, 1)), "discrete") == "discrete"


def test_infinite_scores_are_extreme_ranks():
    rng = np.random.default_rng(1)
    z, m = gaussian_shift(rng, 1.5, 500, 500)
    z2 = z.copy()
    z2[np.argsort(z)[-20:]] = np.inf
    z2[np.argsort(z)[:5]] = -np.inf
    est = estimate_advantage(z2, m, method="kde", n_permutations=20)
    assert math.isfinite(est.estimate) and 0 < est.estimate < 1


# --------------------------------------------------------------------------------------------
# individual risk


def test_individual_risk_clopper_pearson_covers_true_risk():
    p1 = np.array([0.05, 0.15, 0.3, 0.5])
    p0 = np.array([0.5, 0.3, 0.15, 0.05])
    prior = 0.3
    true_f = (prior * p1 - (1 - prior) * p0) / (prior * p1 + (1 - prior) * p0)
    rng = np.random.default_rng(12)
    hits, f_hits = [], []
    for _ in range(100):
        z = np.r_[rng.choice(4, 300, p=p1), rng.choice(4, 300, p=p0)]
        r = individual_risk(z, np.r_[np.ones(300), np.zeros(300)], prior=prior, method="discrete")
        truth = np.abs(true_f[z])
        assert np.all(r.risk_lower <= r.risk + 1e-12) and np.all(r.risk <= r.risk_upper + 1e-12)
        # one interval per level: check each level once
        _, first = np.unique(z, return_index=True)
        hits.extend((r.risk_lower[first] <= truth[first]) & (truth[first] <= r.risk_upper[first]))
        f_hits.extend((r.f_lower[first] <= true_f) & (true_f <= r.f_upper[first]))
    assert np.mean(hits) >= 0.95
    assert np.mean(f_hits) >= 0.95  # Clopper–Pearson at delta/2 per class: conservative


def test_individual_risk_kde_tracks_analytic_f():
    rng = np.random.default_rng(13)
    mu, n = 1.5, 5000
    z, m = gaussian_shift(rng, mu, n, n)
    r = individual_risk(z, m, method="kde")
    true_f = np.tanh((mu * z - mu**2 / 2) / 2)  # log-likelihood ratio mu z - mu^2/2 at p = 0.5
    inner = np.abs(z - mu / 2) < 2
    assert np.median(np.abs(r.f - true_f)[inner]) < 0.05
    covered = (r.risk_lower <= np.abs(true_f)) & (np.abs(true_f) <= r.risk_upper)
    assert covered[inner].mean() > 0.8  # pointwise band, smoothing bias not included
    assert r.method == "kde" and r.risk.max() <= 1


def test_individual_risk_frame_and_figure(tmp_path):
    rng = np.random.default_rng(14)
    z, m = gaussian_shift(rng, 1.0, 200, 300)
    r = individual_risk(z, m)
    ids = np.array([f"row-{i}" for i in range(z.size)])
    frame = r.to_frame(ids)
    assert list(frame.columns) == ["row_id", "risk", "risk_lower", "risk_upper", "f"]
    assert frame["row_id"].tolist() == ids.tolist()
    assert frame["risk"].to_numpy() == pytest.approx(np.abs(frame["f"].to_numpy()))
    with pytest.raises(DataError):
        r.to_frame(ids[:-1])
    with pytest.raises(DataError):
        r.to_frame(np.zeros(z.size))
    with pytest.raises(ValueError):
        r.risk[0] = 0.5  # frozen arrays
    summary = r.summary()
    assert 0 <= summary["mean_risk"] <= summary["max_risk"] <= summary["max_risk_upper"] <= 1
    fig = risk_histogram_figure(r)
    fig.savefig(tmp_path / "risk.png")
    assert (tmp_path / "risk.png").stat().st_size > 1000


def test_individual_risk_combined_query():
    rng = np.random.default_rng(15)
    z = np.c_[rng.normal(size=600), rng.normal(size=600)]
    z[:300] += 1.0
    r = individual_risk(z, np.r_[np.ones(300), np.zeros(300)], method="kde")
    assert isinstance(r, IndividualRisk) and len(r) == 600
    assert r.f[:300].mean() > 0 > r.f[300:].mean()


# --------------------------------------------------------------------------------------------
# generalised metrics


def test_generalized_metrics_gaussian_shift():
    rng = np.random.default_rng(16)
    mu, p, n = 2.0, 0.2, 6000
    z, m = gaussian_shift(rng, mu, n, n)
    g = generalized_metrics(z, m, prior=p, method="kde")
    # AM: predict member where f1 > f0 (x > mu/2): TPR = TNR = Phi(mu/2)
    am_truth = norm.cdf(mu / 2)
    assert g["am"] == pytest.approx(am_truth, abs=0.02)
    assert g["am_holdout_lower"] <= am_truth <= g["am_holdout_upper"]
    assert g["am_lower"] <= g["am"] <= g["am_upper"]
    # WA is increasing in accuracy; the optimal accuracy is (1 + Adv_p) / 2
    acc = (1 + truth_quad(mu, p)) / 2
    assert g["wa"] == pytest.approx(2 * acc / (1 + acc), abs=0.02)
    assert g["wa_threshold"] == 0.5 and g["am_threshold"] == p
    # PPV: at least the prior, at most 1; bounds ordered
    assert p < g["ppv"] <= 1 and g["ppv_lower"] <= g["ppv_upper"]
    assert g["ppv_holdout_lower"] <= g["ppv"] <= g["ppv_holdout_upper"]
    assert g["ppv_n_positive"] >= 1 and 0 < g["ppv_threshold"] < 1
    json.dumps(g)


def test_generalized_metrics_null_is_at_chance():
    rng = np.random.default_rng(17)
    z = rng.normal(size=3000)
    g = generalized_metrics(z, np.r_[np.ones(1500), np.zeros(1500)], prior=0.3, method="discrete")
    assert g["am_holdout_lower"] == pytest.approx(0.5)  # floored at the constant guess
    assert g["am"] == pytest.approx(0.5, abs=0.05)
    assert g["ppv"] == pytest.approx(0.3, abs=0.08)


# --------------------------------------------------------------------------------------------
# DP ceiling


@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 3.0])
def test_dp_bound_at_half_is_tanh(eps):
    assert dp_risk_bound(eps, 0.5) == pytest.approx(math.tanh(eps / 2))
    assert dp_advantage_bound(eps) == pytest.approx(math.tanh(eps / 2))


def test_dp_bound_unequal_prior():
    p, eps = 0.1, 1.0
    lam = math.log(p / (1 - p))
    assert dp_risk_bound(eps, p) == pytest.approx(
        max(abs(math.tanh((eps + lam) / 2)), abs(math.tanh((lam - eps) / 2)))
    )
    # equivalently the largest |f_p| with a likelihood ratio in [e^-eps, e^eps]
    f = lambda r: (p * r - (1 - p)) / (p * r + (1 - p))  # noqa: E731
    assert dp_risk_bound(eps, p) == pytest.approx(max(abs(f(math.e)), abs(f(1 / math.e))))
    assert dp_risk_bound(0.0, 0.2) == pytest.approx(0.6)
    assert dp_risk_bound(math.inf, 0.2) == 1.0
    assert dp_risk_bound(1.0, 0.2) == pytest.approx(dp_risk_bound(1.0, 0.8))


def test_compare_to_dp():
    rng = np.random.default_rng(18)
    z, m = gaussian_shift(rng, 2.0, 3000, 3000)
    est = estimate_advantage(z, m, n_permutations=20)
    bad = compare_to_dp(est, epsilon=0.5)
    assert bad.exceeds and bad.lower == est.lower and bad.bound == pytest.approx(math.tanh(0.25))
    assert "exceeds the DP bound" in bad.message and "broken" in bad.message
    ok = compare_to_dp(est, epsilon=5.0)
    assert not ok.exceeds and "within" in ok.message
    assert compare_to_dp(0.3, epsilon=1.0).exceeds is False
    with pytest.raises(ConfigError):
        compare_to_dp(individual_risk(z, m), epsilon=0.5)  # max of pointwise bounds is no bound
    with pytest.raises(ConfigError):
        compare_to_dp(est, epsilon=1.0, p=0.2)  # estimate made at 0.5
    with pytest.raises(ConfigError):
        dp_risk_bound(-1.0)
    with pytest.raises(ConfigError):
        dp_risk_bound(1.0, 1.0)


# --------------------------------------------------------------------------------------------
# value objects and input errors


def test_advantage_estimate_to_dict_and_validation():
    rng = np.random.default_rng(19)
    est = estimate_advantage(*gaussian_shift(rng, 1.0, 300, 300), n_permutations=10)
    d = est.to_dict()
    json.dumps(d)
    assert {
        "estimate",
        "lower",
        "upper",
        "radius",
        "bias",
        "null_quantile",
        "p_value",
        "n",
        "method",
        "prior",
        "delta",
        "settings",
    } <= set(d)
    assert d["settings"]["n_permutations"] == 10
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.estimate = 0.0  # frozen
    with pytest.raises(ConfigError):
        AdvantageEstimate(**(d | {"lower": 0.9, "upper": 0.1}))
    with pytest.raises(ConfigError):
        AdvantageEstimate(**(d | {"estimate": 1.5}))
    none = estimate_advantage(*gaussian_shift(rng, 1.0, 300, 300), n_permutations=0)
    assert none.bias is None and none.p_value is None and none.lower == none.lower_split


def test_input_errors():
    z = np.r_[np.random.default_rng(0).normal(size=100)]
    m = np.r_[np.ones(50), np.zeros(50)]
    with pytest.raises(DataError, match="NaN"):
        estimate_advantage(np.where(np.arange(100) == 3, np.nan, z), m)
    with pytest.raises(InsufficientDataError, match="members"):
        estimate_advantage(z, np.ones(100))
    with pytest.raises(InsufficientDataError):
        estimate_advantage(z[:55], m[:55])  # 5 non-members
    with pytest.raises(DataError, match="0/1"):
        estimate_advantage(z, m * 2)
    with pytest.raises(DataError):
        estimate_advantage(z, m[:-1])
    for bad in (
        {"prior": 0.0},
        {"prior": 1.0},
        {"prior": float("nan")},
        {"delta": 0.0},
        {"delta": 1.5},
        {"method": "magic"},
        {"n_bins": 1},
        {"bandwidth": -1.0},
        {"bandwidth": "wide"},
        {"n_permutations": -1},
        {"lower_bound": "permutation", "n_permutations": 0},
        {"n_mc": 10},
    ):
        with pytest.raises(ConfigError):
            estimate_advantage(z, m, **bad)
    with pytest.raises(ConfigError, match="at most 4"):
        estimate_advantage(np.c_[z, z, z, z, z], m)
    with pytest.raises(DataError, match="collinear"):
        estimate_advantage(np.c_[z, 2 * z + 1], m, method="kde")
    with pytest.raises(InsufficientDataError):
        generalized_metrics(z[25:75], m[25:75])  # three parts need 30 per class
    with pytest.raises(ConfigError):
        mcdiarmid_radius(n_members=10, n_non_members=10, delta=2.0)


def test_speed_n20000_with_200_permutations():
    rng = np.random.default_rng(20)
    z, m = gaussian_shift(rng, 1.0, 10_000, 10_000)
    for method in ("discrete", "kde"):
        start = time.perf_counter()
        estimate_advantage(z, m, method=method, n_permutations=200)
        assert time.perf_counter() - start < 10.0


def test_constant_attack_has_no_advantage_beyond_the_constant_guess():
    m = np.r_[np.ones(60), np.zeros(140)]
    for prior in (0.5, 0.25):
        for method in ("discrete", "kde"):
            est = estimate_advantage(
                np.full(200, 3.0), m, prior=prior, method=method, n_permutations=20
            )
            assert est.estimate == pytest.approx(abs(2 * prior - 1), abs=1e-6)
            assert est.lower == pytest.approx(abs(2 * prior - 1), abs=1e-6)
            assert est.p_value == 1.0
    with pytest.raises(DataError, match="constant"):
        estimate_advantage(np.c_[np.full(200, 3.0), np.arange(200.0)], m, method="kde")


def test_numpy_scalars_are_valid_settings():
    rng = np.random.default_rng(21)
    z, m = gaussian_shift(rng, 1.0, 100, 100)
    est = estimate_advantage(
        z,
        m,
        prior=np.float32(0.4),
        delta=np.float64(0.1),
        n_bins=np.int64(6),
        method="discrete",
        n_permutations=np.int32(10),
    )
    assert est.settings["bins_per_dim"] == 6 and est.prior == pytest.approx(0.4)
    json.dumps(est.to_dict())
