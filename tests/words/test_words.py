"""Every check the gate makes has words of its own (words/checks.py): a new default rule, budget
test or finding without a sentence fails here; an unknown check falls back to a generic, honest
one."""

from __future__ import annotations

import dataclasses
import math

import pytest

from privacy_gate.config import BUDGET_TESTS, DEFAULT_RULES, BudgetConfig
from privacy_gate.experiment.floors import Shortfall
from privacy_gate.gate import Check, Verdict, decide
from privacy_gate.gate.blame import concentrated_in
from privacy_gate.gate.findings import (
    attack_invalid,
    dependency_dp_bound_exceeded,
    dependency_gap,
    dp_audit_check,
    dp_bound_exceeded,
    validation_failures,
)
from privacy_gate.gate.human import human_number, human_pvalue
from privacy_gate.words.checks import VerdictContext, check_words, reasons_in_words
from privacy_gate.words.figures import gated_attacks

from ..report.golden_reports import GOLDEN

GROUP = "race=Black"


def _every_check() -> tuple[Verdict, list[Check]]:
    """The default gate on a leaking release (the golden copies), with every finding the pipeline
    adds outside the rules, a small-table floor, blame's ruling, a missing figure and an error."""
    metrics = {k: v for k, v in GOLDEN["copy_train"]["metrics"].items() if v is not None}
    # the generator-aware test as a small table's run has it (every budget test is here)
    metrics.update(
        {
            "shadow.pvalue": 1e-6,
            "shadow.fits": 64.0,
            "shadow.out_median": 26.0,
            "shadow.named": 40.0,
            "shadow.power": 0.97,
            "shadow.sufficient": 1.0,
            "shadow.promise_share": 0.1,
        }
    )
    attacks = gated_attacks(metrics)
    findings = validation_failures("synthetic", ["column age: 3% of values outside [17, 90]"]) + [
        attack_invalid("dcr", "gave every target the same score"),
        dependency_gap(
            "dcr", dependency_auc=0.71, iid_auc=0.55, max_gap=0.1, source="source", value="a"
        ),
        dependency_dp_bound_exceeded(
            "dcr", lower=0.4, bound=0.2, epsilon=1.0, source="source", value="a"
        ),
    ]
    shortfall = Shortfall(
        setting="targets.min_per_class",
        required=100,
        available=69,
        asks="is 100",
        have="69 member and 69 non-member targets are available",
        remedy="31 more holdout records",
    )
    verdict = decide(
        DEFAULT_RULES,
        metrics,
        attacks=attacks,
        tests=list(BUDGET_TESTS),
        budget=BudgetConfig(),
        groups={GROUP: {"membership_test.p_adjusted": 0.0004}},
        extra_failures=findings,
        warnings=[
            dp_bound_exceeded("combined", lower=0.9, bound=0.46, epsilon=1.0, message="above")
        ],
        shortfalls=[shortfall],
    )
    without = decide(
        DEFAULT_RULES, {k: v for k, v in metrics.items() if k != "utility.quality"}, attacks=attacks
    )
    missing = next(c for c in without.checks if c.metric == "utility.quality")
    leak = Check(
        rule="exposed.share_lower <= 0.005",
        metric="exposed.share_lower",
        observed=0.02,
        threshold=0.005,
        bound="max",
        action="block",
        passed=False,
        message="x",
    )
    ruled = concentrated_in(
        Verdict(decision="BLOCK", status="ok", reasons=(leak,), flagged_subgroups=(GROUP,)),
        group=GROUP,
        targets=40,
        rest_decision="APPROVE",
    )
    extra = [
        missing,
        *ruled.reasons,
        Verdict.error("load: the file is empty").reasons[0],
        dp_audit_check(epsilon_lower=3.2, epsilon=1.0, max_ratio=1.5, message="broken"),
    ]
    return verdict, [*verdict.checks, *extra]


def test_every_check_of_the_default_gate_has_words_of_its_own():
    verdict, checks = _every_check()
    keys = {c.rule for c in verdict.checks}
    for rule in DEFAULT_RULES:  # every default rule is among the checks sentenced below
        if rule.scope == "global":
            assert any(c.rule == rule.describe() for c in verdict.checks), rule.describe()
    assert {f"test:{t}" for t in BUDGET_TESTS} <= {c.metric for c in verdict.checks}, keys
    context = VerdictContext.of(verdict)
    generic = [c.key for c in checks if not check_words(c, context).specific]
    assert not generic, f"checks without words of their own: {generic}"
    for c in checks:
        words = check_words(c, context)
        assert words.sentence.endswith(".") and words.key == c.key
        assert (
            "violates" not in words.sentence and "(<=)" not in words.sentence
        )  # not the technical message


def test_the_subgroup_bar_of_a_gate_without_budget_has_words():
    """The ``[each subgroup] any.auc`` bar decides a group only when no budget runs (tests=None)."""
    v = decide(
        DEFAULT_RULES,
        {"dcr.auc": 0.5, "utility.quality": 0.9},
        attacks=["dcr"],
        groups={GROUP: {"dcr.auc": 0.81}},
    )
    bar = next(c for c in v.checks if c.group == GROUP)
    words = check_words(bar, VerdictContext.of(v))
    assert words.specific and words.sentence.startswith(
        f"In {GROUP}, the attack dcr tells training records from"
    )
    assert "AUC 0.81" in words.sentence and "bar 0.7" in words.sentence


def test_an_unknown_check_gets_an_honest_generic_sentence():
    c = Check(
        rule="novel.figure <= 0.2",
        metric="novel.figure",
        observed=0.35,
        threshold=0.2,
        bound="max",
        action="review",
        passed=False,
        message="novel.figure = 0.35 violates max 0.2 (<=)",
    )
    words = check_words(c, VerdictContext())
    assert not words.specific
    assert (
        words.sentence
        == "The figure novel.figure is 0.35, beyond the max bar 0.2, so the gate asks for REVIEW."
    )


@pytest.mark.parametrize(
    "metric, passed, expect",
    [
        (
            "auc",
            False,
            "and the membership test is significant at its block share (p < 0.0001, level "
            "0.00017): an attacker can tell who was in the training data.",
        ),
        (
            "mace.advantage_upper",
            True,
            "an upper bound: the targets cannot exclude a value this high, which is "
            "uncertainty, not a leak signal",
        ),
    ],
)
def test_a_bar_says_what_its_test_made_of_it(metric, passed, expect):
    verdict, _ = _every_check()
    c = next(c for c in verdict.checks if c.metric == metric and c.attack == "dcr")
    assert c.passed is passed
    assert expect in check_words(c, VerdictContext.of(verdict)).sentence


def test_a_crossed_bar_without_a_significant_test_is_not_a_leak_signal():
    verdict, _ = _every_check()
    c = next(c for c in verdict.checks if c.metric == "agreement.excess_share")
    v = dataclasses.replace(
        verdict,
        budget={
            **verdict.budget,
            "tests": [
                {**t, "pvalue": 0.3} if t["name"] == "agreement" else t
                for t in verdict.budget["tests"]
            ],
        },
    )
    quiet = dataclasses.replace(c, passed=True)
    assert (
        "crossed, but not a leak signal: the agreement test is not significant (p = 0.3"
        in check_words(quiet, VerdictContext.of(v)).sentence
    )


def test_reasons_in_words_keep_the_verdicts_order():
    verdict, _ = _every_check()
    words = reasons_in_words(verdict)
    assert [w.key for w in words] == [c.key for c in verdict.reasons]
    assert words[0].action == "block"


def test_numbers_for_people_never_use_exponent_notation():
    for value in [10.0**k * m for k in range(-320, 20) for m in (1, 3.7)] + [
        -2.5e-12,
        9e-17,
        2.4e-181,
    ]:
        for text in (human_number(value), human_number(value, 2), human_pvalue(value)):
            assert "e" not in text.lower(), (value, text)
        if 0 < value < 1e-4:
            assert human_pvalue(value) == "< 0.0001"
        if math.isfinite(value) and 1e-6 <= abs(value) < 1e15:  # and the figure is still the figure
            assert float(human_number(value, 6).replace(",", "")) == pytest.approx(value, rel=1e-5)


def test_an_effect_record_with_a_count_missing_is_worded_without_a_share():
    from privacy_gate.words.evidence import effect_headline, effect_parts

    # a verdict that records how many were named in all but not in the group says no share
    effect = {"auc": 1.0, "auc_lower": 0.8, "auc_upper": 1.0, "named_all": 12}
    assert effect_parts(effect) == ["AUC 1 [0.8, 1]"]
    assert effect_headline("g", {**effect, "named": 3}).endswith("3 of 12 named records")
