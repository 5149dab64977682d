"""Power-aware verdicts and the combined query for any number of attacks (through evaluate)."""

import pytest

import privacy_gate
from privacy_gate.config import TargetsConfig


@pytest.fixture(scope="module")
def parts(adult_full):
    rows = adult_full.sample(n=4000, random_state=4).reset_index(drop=True)
    return dict(
        train=rows[:1200],
        holdout=rows[1200:1600],
        reference=rows[1600:2400],
        synthetic=rows[2400:3600],
    )


def test_too_few_targets_is_insufficient_evidence_not_a_leak(parts, adult_spec):
    """200 + 200 targets: the membership test cannot see the promised AUC 0.6 with 90% power at its
    share of the budget, so an independent sample goes to REVIEW for "insufficient evidence" (its
    own reason, saying how many targets would do); the MACE upper bound, wide at this N, raises
    nothing by itself and says "too few targets to tell"."""
    result = privacy_gate.evaluate(
        **parts,
        spec=adult_spec,
        attacks=[{"name": "dcr"}, {"name": "domias"}],
        targets=TargetsConfig(n_members=200, n_non_members=200),
    )
    assert result.decision == "REVIEW", result
    assert [c.metric for c in result.verdict.reasons] == ["power.detectable_auc"], (
        result.verdict.reasons
    )
    reason = result.verdict.reasons[0]
    assert (
        reason.message.startswith("insufficient evidence (not a leak signal)")
        and "targets per class" in reason.message
    )
    need = result.verdict.budget["power_check"]
    assert (
        need["sufficient"] is False
        and need["per_class_needed"] > 200
        and need["detectable_auc"] > 0.6
    )
    upper = [c for c in result.verdict.checks if c.metric == "mace.advantage_upper"]
    assert upper and all(c.passed for c in upper)
    assert any("too few targets to tell" in c.message for c in upper)
    auc = [
        c
        for c in result.verdict.checks
        if c.metric == "auc" and c.attack == "dcr" and c.group is None
    ]
    assert auc and 0.5 < auc[0].null_reference < 0.6  # every rule result carries the reference


def test_enough_targets_for_the_promise_approve_an_independent_sample(parts, adult_spec):
    """The same release with every holdout record as a target (400 per class, above the 329 the
    power check asks for at this budget) is approved: the insufficient-evidence REVIEW is about size
    only."""
    result = privacy_gate.evaluate(
        **parts, spec=adult_spec, attacks=[{"name": "dcr"}, {"name": "domias"}]
    )
    assert result.verdict.budget["power_check"]["sufficient"] is True, result.verdict.budget
    assert result.decision == "APPROVE", result.verdict.reasons


def test_one_attack_is_not_blocked_for_a_missing_combined_query(parts, adult_spec):
    result = privacy_gate.evaluate(**parts, spec=adult_spec, attacks=[{"name": "dcr"}])
    assert result.verdict.status == "ok" and result.decision != "BLOCK", result
    combined = [c for c in result.verdict.checks if c.attack == "combined"]
    assert combined and all(c.passed and "not applicable" in c.message for c in combined)


def test_more_than_four_attacks_get_a_bounded_combined_query(parts, adult_spec):
    attacks = [
        {"name": "dcr"},
        {"name": "domias"},
        {"name": "gan_leaks_cal"},
        {"name": "domias_eq1"},
        {"name": "mc_neighbourhood"},
    ]
    result = privacy_gate.evaluate(**parts, spec=adult_spec, attacks=attacks)
    assert result.verdict.status == "ok", result
    assert "combined.mace.advantage_lower" in result.metrics
    assert (
        result.metrics["combined.mace.advantage_upper"] < 0.2
    )  # 1-d max-rank query: no multi-d bias


def test_default_targets_reach_the_radius_and_cap_large_holdouts():
    import numpy as np
    import pandas as pd

    from privacy_gate.config import TargetsConfig
    from privacy_gate.data import Splits
    from privacy_gate.estimators.mace.advantage import mcdiarmid_radius
    from privacy_gate.estimators.power import TARGET_RADIUS, default_targets_per_class
    from privacy_gate.experiment.targets import choose_targets

    for delta, prior in ((0.05, 0.5), (0.01, 0.5), (0.05, 0.1)):
        n = default_targets_per_class(delta=delta, prior=prior)
        assert (
            mcdiarmid_radius(n_members=n, n_non_members=n, prior=prior, delta=delta)
            <= TARGET_RADIUS
        )
        assert (
            mcdiarmid_radius(n_members=n - 1, n_non_members=n - 1, prior=prior, delta=delta)
            > TARGET_RADIUS
        )
    frame = pd.DataFrame({"x": np.arange(5000.0)})
    splits = Splits(train=frame, holdout=frame.iloc[:3000], reference=frame.iloc[:10])
    capped = choose_targets(splits, TargetsConfig(seed=3), max_per_class=1000)
    assert int((capped.labels == 0).sum()) == 1000 == int(capped.labels.sum())
    again = choose_targets(splits, TargetsConfig(seed=3), max_per_class=1000)
    assert capped.row_ids.tolist() == again.row_ids.tolist()  # reproducible
    assert (
        int((choose_targets(splits, TargetsConfig(), max_per_class=10**6).labels == 0).sum())
        == 3000
    )
    explicit = choose_targets(splits, TargetsConfig(n_non_members=2500), max_per_class=1000)
    assert int((explicit.labels == 0).sum()) == 2500  # an explicit count is not capped


def test_a_release_that_avoids_its_members_is_not_approved(parts, adult_spec):
    """Real rows that are not the training records, given as the release (here the holdout itself:
    what a near-copy filter that removes too much tends toward), reveal who was in training by
    their absence: every attack ranks the members *below* the non-members. The membership test's
    ensemble reads both tails, so the release is held back and the reason says it avoids its
    members; an independent sample of the same size is still approved (the test above)."""
    release = {**parts, "synthetic": parts["holdout"]}
    result = privacy_gate.evaluate(
        **release, spec=adult_spec, attacks=[{"name": "dcr"}, {"name": "domias"}]
    )
    assert result.decision != "APPROVE", result
    assert result.metrics["membership.ensemble_auc"] < 0.2
    assert result.metrics["dcr.rank_pvalue"] > 0.5  # the one-sided test alone cannot see it
    membership = next(t for t in result.verdict.budget["tests"] if t["name"] == "membership")
    assert membership["detail"] == "ensemble" and membership["pvalue"] <= membership["review_level"]
