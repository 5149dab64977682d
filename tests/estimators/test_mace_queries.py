"""MACE in the gate: metrics per attack and combined, the DP-bound warning, per-record risk."""

import numpy as np
import pytest

from privacy_gate.config import DEFAULT_RULES
from privacy_gate.estimators.mace.queries import mace_for_attacks
from privacy_gate.gate import decide
from privacy_gate.gate.findings import dp_bound_exceeded
from privacy_gate.names import COMBINED


def _scores(mu: float, n: int = 800, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = np.r_[np.ones(n), np.zeros(n)].astype(int)
    a = np.r_[rng.normal(mu, 1, n), rng.normal(0, 1, n)]
    b = np.r_[rng.normal(mu / 2, 1, n), rng.normal(0, 1, n)]
    return {"a": a, "b": b}, labels


def test_metrics_for_each_attack_and_the_combined_query():
    scores, labels = _scores(1.0)
    res = mace_for_attacks(
        scores,
        labels,
        np.arange(len(labels)),
        prior=0.5,
        delta=0.05,
        n_permutations=20,
        epsilon=None,
    )
    for name in ("a", "b", COMBINED):
        m = {
            k.split(".mace.")[1]: v for k, v in res.metrics.items() if k.startswith(f"{name}.mace.")
        }
        assert m["advantage_lower"] <= m["advantage"] <= m["advantage_upper"]
    truth_a = 2 * 0.6914624612740131 - 1  # 2 Phi(mu/2) - 1 at mu = 1
    assert res.metrics["a.mace.advantage_lower"] <= truth_a <= res.metrics["a.mace.advantage_upper"]
    assert "a.mace.ppv_upper" in res.metrics and not res.dp
    assert list(res.per_record.columns) == [
        "row_id",
        "risk",
        "risk_lower",
        "risk_upper",
        "f",
        "attack",
    ]
    assert res.risk_attack == "a" and len(res.per_record) == len(labels)


def test_lower_bound_above_the_dp_bound_is_a_review_warning():
    scores, labels = _scores(3.0)  # far more leakage than epsilon 0.05 allows
    res = mace_for_attacks(
        scores,
        labels,
        np.arange(len(labels)),
        prior=0.5,
        delta=0.05,
        n_permutations=0,
        epsilon=0.05,
    )
    exceeded = {q: c for q, c in res.dp.items() if c.exceeds}
    assert "a" in exceeded and all("broken" in c.message for c in exceeded.values())
    # the gate turns each into a review-level check on the query's advantage lower bound
    checks = [
        dp_bound_exceeded(q, lower=c.lower, bound=c.bound, epsilon=c.epsilon, message=c.message)
        for q, c in exceeded.items()
    ]
    assert "a.mace.advantage_lower" in {c.key for c in checks}
    assert all(c.action == "review" and not c.passed for c in checks)
    quiet = mace_for_attacks(
        scores,
        labels,
        np.arange(len(labels)),
        prior=0.5,
        delta=0.05,
        n_permutations=0,
        epsilon=50.0,
    )
    assert not any(c.exceeds for c in quiet.dp.values())


@pytest.mark.parametrize(
    "mu, n, expected", [(0.0, 5000, "APPROVE"), (0.35, 500, "REVIEW"), (3.0, 5000, "BLOCK")]
)
def test_default_mace_rules_approve_review_block(mu, n, expected):
    """With the membership test as the whole budget: no signal -> APPROVE; a weak signal (true
    advantage 0.14) on few targets -> the rank test is significant but the lower bound does not
    cross 0.10 -> REVIEW; a strong one -> significant at the block share and lower bound > 0.10 ->
    BLOCK (the MACE bars and the membership test alone)."""
    from privacy_gate.estimators.group_tests import membership_figures

    scores, labels = _scores(mu, n=n, seed=1)
    res = mace_for_attacks(
        scores,
        labels,
        np.arange(len(labels)),
        prior=0.5,
        delta=0.05,
        n_permutations=0,
        epsilon=None,
    )
    figures = {
        **res.metrics,
        **membership_figures(scores, labels, None),
        **{f"{a}.n_members": float(labels.sum()) for a in scores},
        **{f"{a}.n_non_members": float((1 - labels).sum()) for a in scores},
    }
    rules = [r for r in DEFAULT_RULES if r.metric.startswith("mace.")]
    assert decide(rules, figures, attacks=["a", "b"], tests=["membership"]).decision == expected


def test_per_record_risk_is_the_maximum_over_attacks():
    """A record exposed to one attack only gets that attack's risk, whichever attack is strongest
    on average; each attack's interval is taken at delta / k."""
    from privacy_gate.estimators.mace.advantage import individual_risk
    from privacy_gate.estimators.mace.queries import per_record_risk

    scores, labels = _scores(1.0)
    ids = np.arange(len(labels))
    frame, _ = per_record_risk(scores, labels, ids, prior=0.5, delta=0.05)
    for s in scores.values():
        single = individual_risk(s, labels, method="discrete", prior=0.5, delta=0.025).to_frame(ids)
        assert (frame["risk"].to_numpy() >= single["risk"].to_numpy() - 1e-12).all()
        assert (frame["risk_upper"].to_numpy() >= single["risk_upper"].to_numpy() - 1e-12).all()
    assert set(frame["attack"]) <= set(scores)


def test_reported_estimate_lies_inside_its_own_bounds_at_strong_leakage():
    """Near-perfect separation: the smoothed plug-in saturates (~0.94) below the certified split
    lower bound (~0.98). The recorded estimate, the group figures and the log line must agree
    with their interval; the raw plug-in is recorded under its own name."""
    from privacy_gate.estimators.mace.queries import mace_group_metrics

    rng = np.random.default_rng(0)
    n = 1000
    labels = np.r_[np.ones(n), np.zeros(n)].astype(int)
    scores = np.r_[rng.normal(6, 1, n), rng.normal(0, 1, n)]
    res = mace_for_attacks(
        {"dcr": scores},
        labels,
        np.arange(2 * n),
        prior=0.5,
        delta=0.05,
        n_permutations=0,
        epsilon=None,
    )
    m = res.metrics
    assert m["dcr.mace.advantage_lower"] <= m["dcr.mace.advantage"] <= m["dcr.mace.advantage_upper"]
    g = mace_group_metrics(scores, labels, prior=0.5, delta=0.05)
    assert g["mace.advantage_lower"] <= g["mace.advantage"] <= g["mace.advantage_upper"]
    assert (
        m["dcr.mace.advantage_plugin"] < m["dcr.mace.advantage_lower"]
    )  # the case of the issue, recorded

    from privacy_gate.pipeline.gate_run import mace_line

    line = mace_line("dcr", m)
    est, lo, hi = (
        float(x)
        for x in line.split("MACE advantage ")[1]
        .split(" (")[0]
        .replace("[", "")
        .replace("]", "")
        .replace(",", "")
        .split()
    )
    assert lo <= est <= hi and "plug-in" in line
