"""The error budget: every test's level holds where it is hardest to hold (no signal at all, many
natural twins), the shares add up to the budget, and a bar never raises the verdict on its own."""

import math

import numpy as np
import pandas as pd
import pytest

from privacy_gate.config import DEFAULT_RULES, BudgetConfig, Rule, rule_test
from privacy_gate.experiment.agreement import agreement_scan
from privacy_gate.experiment.copies import copy_test
from privacy_gate.gate import decide
from privacy_gate.gate.budget import (
    DEFAULT_WEIGHTS,
    TESTS,
    allocate,
    disclosure_pvalues,
    membership_power,
    proportion_pvalue,
    run_tests,
)
from privacy_gate.spec import DatasetSpec


def _upper_wilson(k: int, n: int, z: float = 3.0) -> float:
    p = k / n
    return (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n
    )


def test_the_shares_add_up_to_the_budget():
    levels = allocate(review=0.02, block=0.001, weights=DEFAULT_WEIGHTS)
    assert set(levels) == set(TESTS)
    assert math.isclose(sum(r for r, _ in levels.values()), 0.02)
    assert math.isclose(sum(b for _, b in levels.values()), 0.001)


def test_the_disclosure_test_holds_its_level_with_no_signal():
    """Training and control targets with one success probability: the exact test rejects at most
    alpha of the time (simulated, 4,000 draws, at several base rates including the extremes)."""
    rng = np.random.default_rng(0)
    for rate in (0.02, 0.3, 0.9):
        k1, k0 = rng.binomial(500, rate, 4000), rng.binomial(500, rate, 4000)
        p = np.array([proportion_pvalue(a, 500, b, 500) for a, b in zip(k1, k0)])
        for alpha in (0.01, 0.05):
            # the exact test is conservative; allow three Monte-Carlo standard errors
            assert (p <= alpha).mean() <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / 4000), (
                rate,
                alpha,
            )


def test_disclosure_pvalues_read_each_evaluator_once():
    m = {
        "singling_out.univariate.train_rate": 0.2,
        "singling_out.univariate.control_rate": 0.1,
        "singling_out.univariate.n_train": 500,
        "singling_out.univariate.n_control": 500,
        "linkability.train_rate": 0.0,
        "linkability.control_rate": 0.0,
        "linkability.n_train": 500,
        "linkability.n_control": 500,
        "inference.age.train_rate": 0.5,
        "inference.age.control_rate": 0.5,
        "inference.age.n_train": 500,
        "inference.age.n_control": 500,
        # the summary figures repeat the worst column: not a test of their own
        "inference.train_rate": 0.5,
        "inference.control_rate": 0.5,
        "inference.n_train": 500,
        "inference.n_control": 500,
    }
    p = disclosure_pvalues(m)
    assert sorted(p) == ["inference.age", "linkability", "singling_out.univariate"]
    assert (
        p["singling_out.univariate"] < 1e-4 and p["linkability"] == 1.0 and p["inference.age"] > 0.4
    )


def _twins_table(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """A low-entropy population (4 categorical columns of 2-4 values, skewed): most rows have
    natural twins, as in a mostly categorical survey table."""
    return pd.DataFrame(
        {
            "a": rng.choice(["x", "y"], n, p=[0.7, 0.3]),
            "b": rng.choice(list("pqr"), n, p=[0.6, 0.3, 0.1]),
            "c": rng.choice(list("uvwz"), n, p=[0.4, 0.3, 0.2, 0.1]),
            "d": rng.choice(["0", "1"], n),
        }
    )


TWINS_SPEC = DatasetSpec.model_validate(
    {"name": "twins", "columns": {c: {"kind": "categorical"} for c in "abcd"}}
)


def test_the_copy_test_holds_its_level_among_natural_twins():
    """An independent sample of a low-entropy population equals some training row most of the time
    (the old 1% copy-share rule blocked every such release); judged against the holdout's twins at
    the same size, the sign test rejects at most its level (200 seeds)."""
    rejections, shares = 0, []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        pop = _twins_table(2500, rng)
        train, holdout, synthetic = pop.iloc[:1000], pop.iloc[1000:1500], pop.iloc[1500:]
        t = copy_test(synthetic, train, holdout, TWINS_SPEC, seed=seed)
        rejections += t.pvalue <= 0.05
        shares.append(t.train_share)
    assert min(shares) > 0.5  # natural twins everywhere
    assert rejections / 200 <= 0.05 + 0.03, rejections


def test_the_copy_test_sees_copies_among_twins():
    rng = np.random.default_rng(1)
    # a richer table: copies of distinct rows are findable beyond the twins
    pop = pd.concat(
        [_twins_table(3000, rng), pd.DataFrame({"e": rng.integers(0, 2000, 3000).astype(str)})],
        axis=1,
    )
    spec = DatasetSpec.model_validate(
        {"name": "t", "columns": {c: {"kind": "categorical"} for c in "abcde"}}
    )
    train, holdout, synthetic = pop.iloc[:1000], pop.iloc[1000:1500], pop.iloc[1500:2500].copy()
    synthetic.iloc[:50] = train.iloc[:50].to_numpy()  # 5% verbatim copies
    t = copy_test(synthetic, train, holdout, spec, seed=0)
    assert t.pvalue < 1e-4 and t.excess_share > 0.02


def test_the_agreement_scan_holds_its_level_with_no_signal():
    """Independent samples of one population (mixed columns): the scan's p-value is at most 0.1 in
    at most about 10% of 60 seeds (Wilson 3-sigma upper bound of the observed rate above 0.1
    fails)."""
    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "columns": {
                "k": {"kind": "categorical"},
                "m": {"kind": "categorical"},
                "x": {"kind": "numeric"},
                "y": {"kind": "numeric"},
            },
            "quasi_identifiers": ["k", "x"],
        }
    )
    hits = 0
    for seed in range(60):
        rng = np.random.default_rng(100 + seed)
        n = 1600
        pop = pd.DataFrame(
            {
                "k": rng.integers(0, 12, n).astype(str),
                "m": rng.choice(list("abc"), n),
                "x": rng.normal(size=n).round(2),
                "y": rng.gamma(2.0, size=n).round(1),
            }
        )
        train, holdout, reference, synthetic = (
            pop.iloc[i * 400 : (i + 1) * 400].reset_index(drop=True) for i in range(4)
        )
        r = agreement_scan(synthetic, train, holdout, reference, spec, seed=seed)
        hits += r.pvalue <= 0.1
    assert _upper_wilson(hits, 60) >= 0.1 or hits / 60 <= 0.1  # consistent with a valid 10% test
    assert hits <= 12, hits


def _figures(**p) -> dict[str, float]:
    """Metrics with each test's p-value set (no signal by default)."""
    m = {
        "dcr.rank_pvalue": p.get("membership", 0.5),
        "membership.ensemble_pvalue": p.get("ensemble", 0.5),
        "dcr.n_members": 1000,
        "dcr.n_non_members": 1000,
        "exposed.tail_pvalue": p.get("targets", 0.5),
        "exposed.simes_pvalue": 0.9,
        "exposed.share_pvalue": 0.9,
        "exposed.scan_tail_pvalue": 0.9,
        "exposed.scan_simes_pvalue": 0.9,
        "agreement.pvalue": 0.9,
        "copies.pvalue": 0.9,
        "dcr.auc": 0.52,
        "dcr.tpr_at_fpr_0.01": 0.01,
        "dcr.mace.advantage_lower": 0.0,
        "dcr.mace.advantage_upper": 0.1,
        "exposed.share_lower": 0.0,
        "exposed.share_upper": 0.01,
        "copies.excess_share": 0.0,
        "agreement.excess_share": 0.0,
        "utility.quality": 0.9,
    }
    m.update(p.get("extra", {}))
    return m


TESTS_NO_DISCLOSURE = [t for t in TESTS if t not in ("disclosure", "shadow")]
RULES = [r for r in DEFAULT_RULES if rule_test(r.metric, r.attack, r.scope) != "disclosure"]


def test_a_bar_alone_does_not_raise_the_verdict():
    """AUC 0.65 on 1000 + 1000 targets but a rank test at p = 0.3 cannot happen together in real
    data; here it shows the rule: a crossed bar without its test's significance is no leak
    signal."""
    rules = RULES
    v = decide(
        rules,
        _figures(membership=0.3, extra={"dcr.auc": 0.65}),
        attacks=["dcr"],
        tests=TESTS_NO_DISCLOSURE,
    )
    assert v.decision == "APPROVE", v.reasons
    auc = next(c for c in v.checks if c.key == "dcr.auc")
    assert auc.passed and "not a leak signal" in auc.message


def test_a_significant_test_reviews_and_a_significant_large_leak_blocks():
    rules = RULES
    review = decide(rules, _figures(membership=0.001), attacks=["dcr"], tests=TESTS_NO_DISCLOSURE)
    assert review.decision == "REVIEW" and [c.key for c in review.reasons] == ["test:membership"]
    block = decide(
        rules,
        _figures(membership=1e-6, extra={"dcr.auc": 0.7}),
        attacks=["dcr"],
        tests=TESTS_NO_DISCLOSURE,
    )
    assert block.decision == "BLOCK" and block.reasons[0].key == "dcr.auc"
    # significant at the review share but not at the block share: the bar reviews
    mid = decide(
        rules,
        _figures(membership=0.001, extra={"dcr.auc": 0.7}),
        attacks=["dcr"],
        tests=TESTS_NO_DISCLOSURE,
    )
    assert mid.decision == "REVIEW"
    assert mid.budget["review"] == 0.02 and {t["name"] for t in mid.budget["tests"]} == set(
        TESTS_NO_DISCLOSURE
    )


def test_a_missing_test_fails_closed():
    m = _figures()
    del m["copies.pvalue"]
    v = decide(RULES, m, attacks=["dcr"], tests=TESTS_NO_DISCLOSURE)
    assert v.decision == "BLOCK" and any(c.key == "test:copies" for c in v.reasons)


def test_the_overall_false_alarm_rate_is_the_budget_with_no_signal():
    """Every test's p-value uniform and independent (the least favourable case for Bonferroni is
    close to it): the verdict is REVIEW or worse at most 2% and BLOCK never (20,000 draws)."""
    rng = np.random.default_rng(7)
    rules = [r for r in RULES if r.scope == "global"]
    review = block = 0
    n = 20000
    tests = TESTS_NO_DISCLOSURE[:-1]  # no subgroups here
    levels = allocate(review=0.02, block=0.001, weights={t: DEFAULT_WEIGHTS[t] for t in tests})
    for _ in range(n):
        u = rng.random(len(tests))
        review += any(u[i] <= levels[t][0] for i, t in enumerate(tests))
    assert review / n <= 0.02 + 3 * math.sqrt(0.02 * 0.98 / n)
    # and through decide on a few hundred of the draws (the same rule, the real code path)
    for _ in range(300):
        u = rng.random(5)
        m = _figures(
            membership=u[0],
            targets=u[1],
            extra={
                "exposed.scan_tail_pvalue": u[2],
                "agreement.pvalue": u[3],
                "copies.pvalue": u[4],
            },
        )
        v = decide(rules, m, attacks=["dcr"], tests=tests)
        block += v.decision == "BLOCK"
    assert block == 0


def test_power_check_and_targets_needed_agree():
    need = membership_power(200, 200, level=0.004, power=0.9, promise_auc=0.6)
    assert not need.sufficient
    enough = membership_power(
        need.per_class_needed, need.per_class_needed, level=0.004, power=0.9, promise_auc=0.6
    )
    assert enough.sufficient
    assert not membership_power(
        need.per_class_needed - 2,
        need.per_class_needed - 2,
        level=0.004,
        power=0.9,
        promise_auc=0.6,
    ).sufficient


def test_budget_settings_are_checked():
    with pytest.raises(ValueError, match="must not exceed"):
        BudgetConfig(review=0.001, block=0.01)
    with pytest.raises(ValueError, match="unknown test"):
        BudgetConfig(weights={"scna": 1.0})
    with pytest.raises(ValueError, match="disable"):
        BudgetConfig(weights={"scan": 0.0})
    with pytest.raises(ValueError, match="error budget"):
        Rule(metric="exposed.tail_pvalue", min=0.01)
    assert run_tests({}, tests=["copies"], budget=BudgetConfig(), attacks=[])[0].pvalue != 0.5


def test_the_copy_filter_removes_partial_copies_and_spares_a_clean_release():
    """``--suppress copies``: on a clean release it removes about its level (1%: here at most 2% of
    1,500 rows); with 60 one-column partial copies in a low-entropy table (many natural twins) it
    removes most of them and few others."""
    from privacy_gate.experiment.agreement import copy_rows

    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "columns": {
                **{f"k{i}": {"kind": "categorical"} for i in range(6)},
                "x": {"kind": "numeric"},
            },
        }
    )
    rng = np.random.default_rng(5)
    n = 7500
    pop = pd.DataFrame(
        {**{f"k{i}": rng.integers(0, 8, n).astype(str) for i in range(6)}, "x": rng.normal(size=n)}
    )
    train, holdout, reference, synthetic = (
        pop.iloc[i * 1500 : (i + 1) * 1500].reset_index(drop=True) for i in range(4)
    )
    clean = copy_rows(synthetic, train, holdout, reference, spec)
    assert clean.mean() <= 0.02, clean.sum()
    leaky = synthetic.copy()
    part = train.iloc[:60].copy()
    part["k0"] = pop["k0"].iloc[6000:6060].to_numpy()
    leaky.iloc[:60] = part.to_numpy()
    drop = copy_rows(leaky, train, holdout, reference, spec)
    assert drop[:60].mean() >= 0.6 and drop[60:].mean() <= 0.02, (drop[:60].sum(), drop[60:].sum())


def test_copies_can_always_be_suppressed_other_labels_must_be_flagged():
    from privacy_gate.errors import ReviewError
    from privacy_gate.tracking.review_records import check_subgroup_decisions

    verdict = {"flagged_subgroups": ["race=Black"], "metrics": {}}
    check_subgroup_decisions(verdict, {}, ["copies", "race=Black"])
    with pytest.raises(ReviewError, match="not flagged"):
        check_subgroup_decisions(verdict, {}, ["race=White"])


def test_a_release_that_avoids_its_members_is_reviewed_and_said_so():
    """The membership test reads the ensemble's two-sided p-value beside each attack's one-sided
    test: members ranked *below* non-members (ensemble AUC 0.1) hold the release back, and the
    report's sentence says the release avoids its training records."""
    from privacy_gate.words.budget import budget_test_sentence

    m = _figures(ensemble=1e-5, extra={"membership.ensemble_auc": 0.1})
    v = decide(RULES, m, attacks=["dcr"], tests=TESTS_NO_DISCLOSURE)
    assert v.decision == "REVIEW" and [c.key for c in v.reasons] == ["test:membership"]
    t = next(
        t
        for t in run_tests(m, tests=TESTS_NO_DISCLOSURE, budget=BudgetConfig(), attacks=["dcr"])
        if t.name == "membership"
    )
    assert t.detail == "ensemble" and t.components == 2 and t.pvalue == 2e-5
    assert "avoids its training records" in budget_test_sentence(v.reasons[0], t, m)
    # without the ensemble's figure the test cannot be computed, and the gate fails closed
    del m["membership.ensemble_pvalue"]
    assert decide(RULES, m, attacks=["dcr"], tests=TESTS_NO_DISCLOSURE).decision == "BLOCK"


def test_a_copy_test_that_found_nothing_says_what_twins_hid():
    """An APPROVE is not a bare one: with many natural twins the verdict carries the smallest share
    of verbatim copies the copy test would have seen, and more twins mean a larger share."""
    from privacy_gate.gate.rules import TWIN_LIMIT_METRIC

    def limit(twins: int) -> float:
        m = _figures(extra={"copies.holdout_only": twins, "copies.compared": 2000.0})
        v = decide(RULES, m, attacks=["dcr"], tests=TESTS_NO_DISCLOSURE)
        assert v.decision == "APPROVE"
        check = next(c for c in v.checks if c.metric == TWIN_LIMIT_METRIC)
        assert check.passed and "fewer would pass unseen" in check.message
        return float(check.observed)

    assert limit(0) < 0.01 < limit(400) < limit(1600)
    # a significant copy test needs no such note
    m = _figures(
        extra={"copies.pvalue": 1e-6, "copies.holdout_only": 400.0, "copies.compared": 2000.0}
    )
    assert not any(
        c.metric == TWIN_LIMIT_METRIC
        for c in decide(RULES, m, attacks=["dcr"], tests=TESTS_NO_DISCLOSURE).checks
    )
