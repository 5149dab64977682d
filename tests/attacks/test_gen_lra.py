"""Gen-LRA (privacy_gate/attacks/gen_lra.py): the closed form against refitting the KDE with and
without the target (and against the reference code's own recipe in one dimension), power on near
copies, chance level on an independent release, determinism and chunking, parameter errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from privacy_gate.attacks import ThreatModel, create_attack
from privacy_gate.attacks.density import GaussianKDE
from privacy_gate.attacks.gen_lra import DEFAULT_NEIGHBOURS, GenLRA, silverman_bandwidth
from privacy_gate.data import conform
from privacy_gate.errors import ConfigError
from privacy_gate.estimators import roc_metrics
from privacy_gate.spec import DatasetSpec

SPEC = DatasetSpec.model_validate(
    {
        "name": "lra",
        "columns": {
            **{f"x{i}": {"kind": "numeric"} for i in range(5)},
            "colour": {"kind": "categorical", "categories": ["r", "g", "b"]},
            "size": {"kind": "categorical"},
        },
    }
)
NUMERIC = [f"x{i}" for i in range(5)]


def population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """A small mixed table: correlated and skewed numerics, two categoricals."""
    z = rng.normal(size=(n, 5))
    z[:, 1] += 0.5 * z[:, 0]
    z[:, 3] = np.exp(0.5 * z[:, 3])
    raw = pd.DataFrame({f"x{i}": z[:, i] for i in range(5)})
    raw["colour"] = rng.choice(["r", "g", "b"], n, p=[0.6, 0.3, 0.1])
    raw["size"] = np.where(z[:, 0] > 0.5, "L", rng.choice(["S", "M"], n))
    return conform(raw, SPEC, source="lra")


def near_copies(rows: pd.DataFrame, rng: np.random.Generator, noise: float = 0.05) -> pd.DataFrame:
    """``rows`` with Gaussian noise of ``noise`` standard deviations on every numeric column."""
    out = rows.copy()
    for c in NUMERIC:
        out[c] = out[c] + noise * out[c].std() * rng.normal(size=len(out))
    return out.reset_index(drop=True)


def scenario(seed: int, *, leak: bool, n: int = 300):
    """Members, non-members, reference and a release: a memorising generator's, near copies of
    every member (``leak``), or an independent sample of the same size."""
    rng = np.random.default_rng(seed)
    members, non_members, reference = population(n, rng), population(n, rng), population(2 * n, rng)
    synthetic = near_copies(members, rng) if leak else population(n, rng)
    targets = pd.concat([members, non_members], ignore_index=True)
    labels = np.r_[np.ones(n), np.zeros(n)]
    return ThreatModel(synthetic=synthetic, reference=reference, spec=SPEC), targets, labels


# --------------------------------------------------------------------------- the closed form


def test_closed_form_equals_refitting_the_kde_with_and_without_the_target():
    rng = np.random.default_rng(0)
    reference, synthetic = population(40, rng), population(30, rng)
    targets = pd.concat(
        [near_copies(synthetic.iloc[:4], rng), population(6, rng)], ignore_index=True
    )
    threat = ThreatModel(synthetic=synthetic, reference=reference, spec=SPEC)
    k, h = 5, 0.7
    attack = create_attack("gen_lra", neighbours=k, bandwidth=h).fit(threat)
    got = attack.score(targets)

    enc = attack.encoder_
    R, S, T = enc.transform(reference), enc.transform(synthetic), enc.transform(targets)
    D = R.shape[1]

    def naive_log_density(fit: np.ndarray, at: np.ndarray) -> np.ndarray:
        d2 = ((at[:, None, :] - fit[None, :, :]) ** 2).sum(-1)
        return (
            logsumexp(-d2 / (2 * h * h), axis=1)
            - math.log(len(fit))
            - 0.5 * D * math.log(2 * math.pi * h * h)
        )

    refit, naive = [], []
    for x in T:
        nearest = S[np.argsort(((S - x) ** 2).sum(1), kind="stable")[:k]]
        without = GaussianKDE(bandwidth=h).fit(R).score_samples(nearest)
        with_x = GaussianKDE(bandwidth=h).fit(np.vstack([R, x])).score_samples(nearest)
        refit.append((with_x - without).sum())
        naive.append(
            (naive_log_density(np.vstack([R, x]), nearest) - naive_log_density(R, nearest)).sum()
        )
    np.testing.assert_allclose(got, refit, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got, naive, rtol=1e-9, atol=1e-9)
    # the near copies of synthetic rows stand out; a likelihood ratio of k rows is at least k log(n
    # / (n + 1))
    assert got[:4].min() > got[4:].max()
    assert got.min() >= k * math.log(40 / 41) - 1e-12


def test_matches_the_reference_codes_recipe_in_one_dimension():
    """Synth-MIA's GenLRA: KDTree for the k nearest synthetic rows, scipy ``gaussian_kde`` fitted on
    the reference with and without the target, ``sum log p_Ha - sum log p_H0``. With the bandwidth
    held at ``h`` in both fits (scipy's factor is relative to the data's standard deviation) the
    closed form is that computation exactly."""
    from scipy.stats import gaussian_kde
    from sklearn.neighbors import KDTree

    spec = DatasetSpec.model_validate({"name": "one", "columns": {"v": {"kind": "numeric"}}})
    rng = np.random.default_rng(1)
    reference = pd.DataFrame({"v": rng.normal(size=200)})
    synthetic = pd.DataFrame({"v": rng.normal(size=150)})
    targets = pd.DataFrame({"v": np.r_[synthetic["v"].to_numpy()[:5] + 0.01, rng.normal(size=15)]})
    k, h = 20, 0.3
    attack = create_attack("gen_lra", neighbours=k, bandwidth=h).fit(
        ThreatModel(synthetic=synthetic, reference=reference, spec=spec)
    )
    R, S, T = (attack.encoder_.transform(f)[:, 0] for f in (reference, synthetic, targets))
    tree = KDTree(S[:, None])
    expected = []
    for x in T:
        s = S[tree.query([[x]], k=k)[1][0]]
        fit = np.r_[R, x]
        h0 = gaussian_kde(R, bw_method=h / R.std(ddof=1)).evaluate(s)
        ha = gaussian_kde(fit, bw_method=h / fit.std(ddof=1)).evaluate(s)
        expected.append(np.log(ha).sum() - np.log(h0).sum())
    np.testing.assert_allclose(attack.score(targets), expected, rtol=1e-9, atol=1e-9)


def test_bandwidth_rules_use_the_reference_rows_and_original_columns():
    threat, _, _ = scenario(0, leak=False, n=200)
    n, d = len(threat.reference), 7  # 7 original columns; the one-hot encoding is wider
    silverman = create_attack("gen_lra").fit(threat)
    assert silverman.encoder_.n_features_out_ > d and silverman.encoder_.n_effective_dims_ == d
    assert silverman.density_reference_.bandwidth_ == pytest.approx(
        (n * (d + 2) / 4) ** (-1 / (d + 4))
    )
    assert silverman.density_reference_.bandwidth_ == pytest.approx(silverman_bandwidth(n, d))
    assert create_attack("gen_lra", bandwidth="scott").fit(
        threat
    ).density_reference_.bandwidth_ == pytest.approx(n ** (-1 / (d + 4)))
    assert (
        create_attack("gen_lra", bandwidth=0.25).fit(threat).density_reference_.bandwidth_ == 0.25
    )
    assert (
        silverman.neighbours == silverman.neighbours_ == DEFAULT_NEIGHBOURS
    )  # 200 synthetic rows here


def test_the_searchs_own_distances_agree_with_the_exact_ones(monkeypatch):
    """``k_nearest(exact=False)`` (what Gen-LRA scores with) against the exact distances: the same
    neighbours, and squared distances (what the kernel reads) to 1e-9 on the BLAS search, 1e-4 on
    the float32 faiss index. (A copy's distance is then ~1e-7, not 0: the square root of the
    product form's rounding residue.)"""
    from privacy_gate.attacks import distance
    from privacy_gate.attacks.distance import k_nearest

    rng = np.random.default_rng(5)
    C = (
        rng.normal(size=(400, 12)) + 3.0
    )  # off-centre: the centring is what keeps the product form accurate
    T = np.vstack([C[:10], C[10:20] + 1e-4, rng.normal(size=(60, 12)) + 3.0])
    d_exact, i_exact = k_nearest(T, C, 25, chunk_bytes=5000)
    d_fast, i_fast = k_nearest(T, C, 25, chunk_bytes=5000, exact=False)
    np.testing.assert_array_equal(i_fast, i_exact)
    np.testing.assert_allclose(d_fast**2, d_exact**2, rtol=0, atol=1e-9)
    monkeypatch.setattr(distance, "INDEX_PAIRS", 1)  # the faiss path
    d_index, i_index = k_nearest(T, C, 25, chunk_bytes=5000, exact=False)
    np.testing.assert_array_equal(i_index[:, :5], i_exact[:, :5])
    np.testing.assert_allclose(d_index**2, d_exact**2, rtol=0, atol=1e-4)


# --------------------------------------------------------------------------- power and chance level


@pytest.mark.parametrize("seed", [0, 1])
def test_members_outscore_non_members_when_the_release_holds_near_copies(seed):
    """Measured: 0.905-0.937 over seeds 0-4. (With as many independent rows added to the release,
    0.82-0.88: the KDE's bandwidth is wide next to the copies' noise, and the score weighs squared
    distances, so non-members in sparse regions also score high; ``dcr_ratio`` is near 1 on
    both.)"""
    threat, targets, labels = scenario(seed, leak=True)
    auc = roc_metrics(create_attack("gen_lra").fit(threat).score(targets), labels)["auc"]
    assert auc > 0.8


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_is_at_chance_on_an_independent_release(seed):
    """Members, non-members, reference and release are independent draws of one population, so
    the targets' scores are exchangeable and the AUC has the Mann-Whitney null distribution:
    mean 0.5, standard deviation sqrt((n1 + n0 + 1) / (12 n1 n0)) = 0.0236 for 300 + 300 targets
    (continuous scores). Four standard deviations: a false failure has probability 6e-5."""
    threat, targets, labels = scenario(seed, leak=False)
    n1 = n0 = len(labels) // 2
    sd = math.sqrt((n1 + n0 + 1) / (12 * n1 * n0))
    auc = roc_metrics(create_attack("gen_lra").fit(threat).score(targets), labels)["auc"]
    assert abs(auc - 0.5) < 4 * sd


# ------------------------------------------------------------ determinism, chunking, small releases


def test_scores_are_deterministic_and_do_not_depend_on_the_chunking():
    threat, targets, _ = scenario(3, leak=True, n=150)
    one = create_attack("gen_lra", neighbours=30).fit(threat).score(targets)
    again = create_attack("gen_lra", neighbours=30).fit(threat).score(targets)
    np.testing.assert_array_equal(one, again)
    # a budget of ~1 kB: one target row per block, one row per KDE chunk
    tiny = create_attack("gen_lra", neighbours=30, chunk_bytes=1000).fit(threat).score(targets)
    np.testing.assert_allclose(tiny, one, rtol=1e-12, atol=1e-12)
    # and in parts, as the gate's score_chunks scores them
    parts = np.concatenate(
        [
            create_attack("gen_lra", neighbours=30).fit(threat).score(targets.iloc[i : i + 70])
            for i in range(0, len(targets), 70)
        ]
    )
    np.testing.assert_allclose(parts, one, rtol=1e-12, atol=1e-12)


def test_a_release_smaller_than_neighbours_is_scored_on_all_its_rows():
    threat, targets, _ = scenario(4, leak=False, n=80)  # 80 synthetic rows < 200
    attack = create_attack("gen_lra").fit(threat)
    assert attack.neighbours_ == 80
    assert any("fewer than 200" in note for note in attack.notes_)
    scores = attack.score(targets)
    assert np.isfinite(scores).all()
    np.testing.assert_allclose(
        scores, create_attack("gen_lra", neighbours=80).fit(threat).score(targets), rtol=1e-12
    )


def test_score_before_fit_raises():
    from sklearn.exceptions import NotFittedError

    _, targets, _ = scenario(0, leak=False, n=20)
    with pytest.raises(NotFittedError):
        GenLRA().score(targets)


# --------------------------------------------------------------------- parameters and configuration


@pytest.mark.parametrize(
    "params, parameter",
    [
        ({"neighbours": 0}, "neighbours"),
        ({"neighbours": 2.5}, "neighbours"),
        ({"neighbours": True}, "neighbours"),
        ({"bandwidth": "wide"}, "bandwidth"),
        ({"bandwidth": -0.5}, "bandwidth"),
        ({"bandwidth": float("nan")}, "bandwidth"),
        ({"chunk_bytes": 0}, "chunk_bytes"),
        ({"precision": "half"}, "precision"),
    ],
)
def test_invalid_parameters_raise_a_config_error_naming_the_parameter(params, parameter):
    with pytest.raises(ConfigError, match=rf"^attack 'gen_lra': parameter '{parameter}': ") as err:
        create_attack("gen_lra", **params)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match=rf"^attack 'gen_lra': parameter '{parameter}': "):
        GenLRA(**params)
    with pytest.raises(
        ConfigError,
        match=r"^attack 'gen_lra': unknown parameter\(s\) \['k_nearest'\]; accepted parameters: "
        r"\['neighbours', 'bandwidth', 'chunk_bytes', 'precision'\]",
    ):
        create_attack("gen_lra", k_nearest=10)


def test_a_config_runs_gen_lra_only_when_asked():
    from privacy_gate.config import DEFAULT_ATTACKS, GateOnlyConfig

    assert "gen_lra" not in [
        a.name for a in DEFAULT_ATTACKS
    ]  # the error budget's split over attacks is unchanged
    cfg = GateOnlyConfig.model_validate(
        {"attacks": [{"name": "domias"}, {"name": "gen_lra", "neighbours": 50}]}
    )
    attack = create_attack(cfg.attacks[1].name, **cfg.attacks[1].params)
    assert isinstance(attack, GenLRA) and attack.neighbours == 50


def test_the_gate_runs_gen_lra_and_its_chunked_scoring_gives_the_same_figures(
    adult_full, adult_spec
):
    """Through ``privacy_gate.evaluate``, as ``attacks: [{name: gen_lra}]`` runs it: its metrics and
    scores are reported under its name, and scoring the targets in parts (``runner.score_chunks``)
    changes no figure."""
    import privacy_gate

    rows = adult_full.sample(n=2400, random_state=5).reset_index(drop=True)
    parts = {
        "train": rows[:800],
        "holdout": rows[800:1200],
        "reference": rows[1200:1600],
        "synthetic": rows[1600:],
        "spec": adult_spec,
        "attacks": [{"name": "gen_lra"}],
    }
    whole = privacy_gate.evaluate(**parts)
    assert whole.verdict.status == "ok" and [o.name for o in whole.outcomes] == ["gen_lra"]
    assert abs(whole.metrics["gen_lra.auc"] - 0.5) < 0.1  # an independent release
    assert "gen_lra_score" in whole.scores().columns
    chunked = privacy_gate.evaluate(**parts, score_chunks=3)
    assert chunked.metrics == whole.metrics
