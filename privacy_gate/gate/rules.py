"""Gate rules and the budget's tests -> checks -> ``Verdict``. Fails closed on missing or NaN
metrics.

Metric keys: ``<attack>.<metric>`` for attack metrics (``domias.auc``), plain keys otherwise
(``utility.quality``). A rule with ``attack: any`` is checked against every attack that ran.

>>> from privacy_gate.config import Rule
>>> v = decide([Rule(metric="auc", attack="any", max=0.6)], {"dcr.auc": 0.5, "domias.auc": 0.7},
...            attacks=["dcr", "domias"])
>>> v.decision, v.reasons[0].attack, v.reasons[0].key
('BLOCK', 'domias', 'domias.auc')
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from privacy_gate.config import BudgetConfig, Rule
from privacy_gate.estimators.power import null_reference
from privacy_gate.experiment.floors import Shortfall
from privacy_gate.gate.budget import (
    WHAT,
    PowerNeed,
    TestOutcome,
    copies_detectable,
    membership_power,
    rule_test,
    run_tests,
)
from privacy_gate.gate.human import human_number, human_percent, p_equals
from privacy_gate.gate.verdict import Check, Verdict, VerdictDecision
from privacy_gate.names import COMBINED, GROUP_TEST, INSUFFICIENT_EVIDENCE, check_key, metric_name


def _rule_targets(rule: Rule, attacks: Sequence[str]) -> list[str | None]:
    """The attacks a rule reads (None: a plain metric such as ``utility.quality``); empty when the
    rule does not apply (the combined query exists only with two or more gated attacks)."""
    if rule.attack is None:
        return [None]
    if rule.attack == COMBINED and len(attacks) < 2:
        return []
    if rule.attack == "any":
        # 'any' with no attack run: nothing was measured, so nothing can be approved
        return list(attacks) or ["<no attack>"]
    return [rule.attack]


def _figures_of(attack: str | None, metrics: Mapping[str, float]) -> Mapping[str, float]:
    """One attack's figures (``n_members``, ``mace.bias``, ...) out of the flat metrics; for a
    plain metric (no attack) the flat metrics themselves (``exposed.tested``, ...)."""
    if attack is None:
        return metrics
    prefix = f"{attack}."
    return {k[len(prefix) :]: v for k, v in metrics.items() if k.startswith(prefix)}


def check_rule(
    rule: Rule, metrics: Mapping[str, float], *, attacks: Sequence[str], group: str | None = None
) -> list[Check]:
    """Evaluate one rule; one check per metric it reads. Missing/NaN values fail the check.

    ``group`` names the subgroup whose metrics are passed (for subgroup-scope rules); the checks
    carry it, and their ``key`` reads ``<group>: <attack>.<metric>``. In a subgroup, a metric the
    group does not have (point estimates of a group too small for them) is not applicable: such
    a group is judged by its rank test, which every group has.
    """
    bound: Literal["max", "min"] = "max" if rule.max is not None else "min"
    targets = _rule_targets(rule, attacks)
    if not targets:
        return [
            Check(
                rule=rule.describe(),
                attack=COMBINED,
                metric=rule.metric,
                group=group,
                observed=None,
                threshold=rule.threshold,
                bound=bound,
                action=rule.action,
                passed=True,
                message=f"{rule.describe()}: not applicable — the combined query needs at least 2 "
                "gated "
                f"attacks ({len(attacks)} ran)",
            )
        ]
    checks = []
    for attack in targets:
        name = check_key(attack=attack, metric=rule.metric, group=group)
        value = metrics.get(metric_name(attack, rule.metric))
        if value is None and group is not None:
            continue
        if value is None or not math.isfinite(float(value)):
            what = "missing" if value is None else "not a finite number"
            checks.append(
                Check(
                    rule=rule.describe(),
                    observed=None,
                    threshold=rule.threshold,
                    bound=bound,
                    action="block",
                    passed=False,
                    message=f"{name} is {what}; the gate cannot approve without it",
                    attack=attack,
                    metric=rule.metric,
                    group=group,
                )
            )
            continue
        value = float(value)
        passed = value <= rule.threshold if bound == "max" else value >= rule.threshold
        op = "<=" if bound == "max" else ">="
        msg = (
            f"{name} = {human_number(value)} {'within' if passed else 'violates'} {bound} "
            f"{human_number(rule.threshold, 6)} ({op})"
        )
        reference = null_reference(rule.metric, _figures_of(attack, metrics))
        action = rule.action
        if (
            not passed
            and reference is not None
            and (reference > rule.threshold if bound == "max" else reference < rule.threshold)
        ):
            msg += (
                f"; a release with no leakage would score about {human_number(reference, 3)} here "
                "— too few targets to "
                "tell, add targets"
            )
            if action == "block" and (value <= reference if bound == "max" else value >= reference):
                # no evidence of leakage beyond chance at this N: a human decides, the gate does not
                # block
                action = "review"
        checks.append(
            Check(
                rule=rule.describe(),
                observed=value,
                threshold=rule.threshold,
                bound=bound,
                action=action,
                passed=passed,
                message=msg,
                null_reference=reference,
                attack=attack,
                metric=rule.metric,
                group=group,
            )
        )
    return checks


def _bar_outcome(check: Check, rule: Rule, test: TestOutcome | None) -> Check:
    """A failed bar raises the verdict only when its test is significant at the share of the
    action's budget; a bar on an upper bound never does (its interval is merely wide)."""
    if check.passed or check.observed is None:
        return check
    if rule.metric.endswith("_upper"):
        return dataclasses.replace(
            check,
            passed=True,
            message=check.message
            + (
                "; an upper bound: the gate cannot exclude a leak of this size here, which is "
                "uncertainty, not a leak signal (too few targets to tell; the budget's power check "
                "says whether that matters)"
            ),
        )
    if test is None:
        return (
            check  # a requirement (utility, the synthetic suite), or a test this run did not have
        )
    if check.action == "block" and test.block:
        return dataclasses.replace(
            check,
            message=check.message
            + (
                f"; the {test.name} test is significant at its block share ({p_equals(test.pvalue)}"
                " <= "
                f"{human_number(test.block_level, 3)})"
            ),
        )
    if test.review:
        return dataclasses.replace(
            check,
            action="review",
            message=check.message
            + (
                f"; the {test.name} test is significant at its review share "
                f"({p_equals(test.pvalue)} <= "
                f"{human_number(test.review_level, 3)})"
                + (" but not at its block share" if check.action == "block" else "")
            ),
        )
    return dataclasses.replace(
        check,
        passed=True,
        message=check.message
        + (
            f"; not a leak signal: the {test.name} test is not significant ({p_equals(test.pvalue)}"
            " > "
            f"{human_number(test.review_level, 3)}, its share of the review budget)"
        ),
    )


def test_check(test: TestOutcome, budget_review: float) -> Check:
    """The check of one budget test: REVIEW when its p-value is at most its review share."""
    pct = f"{100 * budget_review:g}%"
    if not math.isfinite(test.pvalue):
        return Check(
            rule=f"test {test.name}",
            metric=f"test:{test.name}",
            observed=None,
            threshold=test.review_level,
            bound="min",
            action="block",
            passed=False,
            message=f"the {test.name} test has no p-value ({test.detail}); the gate cannot approve "
            "without it",
        )
    p = p_equals(test.pvalue)
    level = human_number(test.review_level, 3)
    if test.review:
        msg = (
            f"evidence of leakage: {WHAT[test.name]} ({p} <= {level}, this test's share of the "
            f"{pct} review budget; smallest part: {test.detail})"
        )
    else:
        msg = (
            f"no evidence that {WHAT[test.name]} ({p} > {level}, its share of the {pct} review "
            "budget)"
        )
    return Check(
        rule=f"test {test.name} at level {level}",
        metric=f"test:{test.name}",
        observed=test.pvalue,
        threshold=test.review_level,
        bound="min",
        action="review",
        passed=not test.review,
        message=msg,
    )


#: how every "insufficient evidence" reason begins (:func:`insufficient_evidence` owns it)
INSUFFICIENT = "insufficient evidence (not a leak signal): "
#: the power check's metric (the other insufficient-evidence keys:
#: ``insufficient_evidence.<setting>``)
POWER_METRIC = "power.detectable_auc"


def insufficient_evidence(
    *,
    rule: str,
    metric: str,
    observed: float,
    threshold: float,
    bound: str,
    passed: bool,
    message: str,
) -> Check:
    """The one form of an "insufficient evidence" check: a REVIEW when ``passed`` is False, never a
    BLOCK and never worded as a leak (the power check, and every stage floor a small table
    misses)."""
    return Check(
        rule=rule,
        metric=metric,
        observed=observed,
        threshold=threshold,
        bound=bound,  # type: ignore[arg-type]
        action="review",
        passed=passed,
        message=message if passed else INSUFFICIENT + message,
    )


def is_insufficient_evidence(check: Check) -> bool:
    """Whether ``check`` is an "insufficient evidence" reason (the power check or a stage floor)."""
    return check.metric == POWER_METRIC or check.metric.startswith(f"{INSUFFICIENT_EVIDENCE}.")


def power_check(need: PowerNeed, *, n_members: int, n_non_members: int, power: float) -> Check:
    """REVIEW for "insufficient evidence" when the membership test cannot see the promised leak."""
    msg = (
        f"with {n_members} member and {n_non_members} non-member targets the membership test "
        "detects an attack "
        f"AUC of {need.detectable_auc:.3f} with {power:.0%} power; the gate promises "
        f"{need.promise_auc:.2f}"
    )
    if not need.sufficient:
        msg += (
            f"; about {need.per_class_needed} targets per class (more training and holdout "
            "records) would reach it"
        )
    return insufficient_evidence(
        rule=f"power to detect AUC {need.promise_auc:g}",
        metric=POWER_METRIC,
        observed=need.detectable_auc,
        threshold=need.promise_auc,
        bound="max",
        passed=need.sufficient,
        message=msg,
    )


#: the twin limit's metric: what the copy test could not have seen (a note, never a reason)
TWIN_LIMIT_METRIC = "copies.detectable_share"


def twin_limit_check(metrics: Mapping[str, float], *, level: float, power: float) -> Check | None:
    """What natural twins hid from a copy test that found nothing: the smallest share of training
    records copied verbatim it would have seen (:func:`privacy_gate.gate.budget.copies_detectable`),
    as a passed check whose message says so (an APPROVE is then not a bare one). None without the
    copy test's figures."""
    twins, compared = metrics.get("copies.holdout_only"), metrics.get("copies.compared")
    if twins is None or compared is None or not math.isfinite(float(twins)) or float(compared) <= 0:
        return None
    share = copies_detectable(int(twins), int(compared), level=level, power=power)
    message = (
        f"what the copy test could not see: {human_number(twins)} distinct release rows equal a "
        "record the "
        f"generator never saw ({human_number(compared)} compared per side), as natural twins do; "
        "so it sees "
        f"verbatim copies of about {human_percent(share)} of the training records or more "
        f"({power:.0%} power "
        "at its level), and fewer would pass unseen here. Partial and near copies are the "
        "agreement and "
        "member scans' to see"
    )
    return Check(
        rule="what natural twins hide from the copy test",
        metric=TWIN_LIMIT_METRIC,
        observed=share,
        threshold=None,
        bound="none",
        action="review",
        passed=True,
        message=message,
    )


def floor_check(shortfall: Shortfall) -> Check:
    """REVIEW for "insufficient evidence" when a stage ran below its floor (a small table): its
    figures are valid, its power is not what the floor asks
    (:mod:`privacy_gate.experiment.floors`)."""
    return insufficient_evidence(
        rule=f"stage floor {shortfall.setting}",
        metric=shortfall.key,
        observed=float(shortfall.available),
        threshold=float(shortfall.required),
        bound="min",
        passed=False,
        message=shortfall.sentence(),
    )


#: the generator-aware test's power check (``insufficient_evidence.shadow``)
SHADOW_POWER_METRIC = f"{INSUFFICIENT_EVIDENCE}.shadow"


def shadow_power(checks: list[Check], metrics: Mapping[str, float], *, power: float) -> list[Check]:
    """Where the generator-aware test ran: with its power sufficient, the insufficient-evidence
    reasons (the targets' power check, the stage floors) become notes — the test holds back a
    release memorising ``shadow.promise_share`` of the training records with the budget's power,
    which is the promise on a table too small for the targets; without it, one more reason says
    how many fits would reach it. A run that had its power without the test is unchanged."""
    fits = int(metrics.get("shadow.fits", 0))
    share = float(metrics.get("shadow.promise_share", 0.0))
    reached = float(metrics.get("shadow.power", 0.0))
    sufficient = bool(metrics.get("shadow.sufficient", 0.0))
    needed = metrics.get("shadow.fits_needed")
    lacking = [c for c in checks if is_insufficient_evidence(c) and not c.passed]
    what = (
        f"with {fits} fits the generator-aware test holds back a release memorising "
        f"{human_percent(share)} of the training records with {reached:.0%} power"
    )
    if sufficient:
        note = f"; {what}, so the gate's power does not rest on the targets here"
        return [
            dataclasses.replace(
                c, passed=True, action="review", message=c.message.removeprefix(INSUFFICIENT) + note
            )
            if c in lacking
            else c
            for c in checks
        ]
    if needed is not None and math.isfinite(float(needed)):
        more = (
            f"; about {int(needed):,} fits (shadow.max_fits, and the time shadow.max_seconds "
            f"allows) would reach {power:.0%}"
        )
    else:
        more = (
            "; no number of fits reaches it on so few records: more training and holdout "
            "records are needed"
        )
    check = insufficient_evidence(
        rule="generator-aware test's power",
        metric=SHADOW_POWER_METRIC,
        observed=reached,
        threshold=power,
        bound="min",
        passed=not lacking,
        message=what + more,
    )
    return checks + [check]


def decide(
    rules: Iterable[Rule],
    metrics: Mapping[str, float],
    *,
    attacks: Sequence[str],
    groups: Mapping[str, Mapping[str, float]] | None = None,
    extra_failures: Iterable[Check] = (),
    warnings: Iterable[Check] = (),
    data_hashes: Mapping[str, str] | None = None,
    rules_hash: str | None = None,
    tests: Sequence[str] | None = None,
    budget: BudgetConfig | None = None,
    disabled: Mapping[str, str] | None = None,
    shortfalls: Iterable[Shortfall] = (),
) -> Verdict:
    """One calibrated decision (:mod:`privacy_gate.gate.budget`).

    ``tests`` are the budget's tests this run has; each gets its share of the review and block
    budgets and REVIEWs when significant at it. A rule's bar raises the verdict to its action
    only when the rule's test is significant at that action's share; with ``tests=None`` (no
    budget) the bars decide alone, as plain thresholds. ``groups`` maps subgroup labels to their
    figures; a group is flagged when its Holm-adjusted rank test is significant at the
    ``subgroups`` share. ``extra_failures`` are requirements found outside the rules (the
    synthetic suite, an attack that could not rank); ``warnings`` (DP-bound excess, dependency gap)
    raise a REVIEW only together with a significant membership test. ``shortfalls`` are the stage
    floors a small table did not meet: each a REVIEW for "insufficient evidence"
    (:func:`floor_check`).
    """
    rules = list(rules)
    budget = budget or BudgetConfig()
    outcomes = (
        run_tests(metrics, tests=tests, budget=budget, attacks=attacks, groups=groups)
        if tests is not None
        else ()
    )
    by_test = {t.name: t for t in outcomes}
    checks = [test_check(t, budget.review) for t in outcomes]
    for r in rules:
        if r.scope != "global":
            continue
        test = by_test.get(rule_test(r.metric, r.attack, r.scope) or "")
        checks += [_bar_outcome(c, r, test) for c in check_rule(r, metrics, attacks=attacks)]
    flagged: list[str] = []
    sub = by_test.get("subgroups")
    for label, group_metrics in (groups or {}).items():
        if sub is not None:
            p = group_metrics.get(f"{GROUP_TEST}.p_adjusted")
            significant = p is None or not math.isfinite(float(p)) or float(p) <= sub.review_level
            if significant:
                flagged.append(label)
                checks.append(
                    Check(
                        rule=f"subgroup rank test at level {human_number(sub.review_level, 3)}",
                        metric=f"{GROUP_TEST}.p_adjusted",
                        group=label,
                        observed=None if p is None else float(p),
                        threshold=sub.review_level,
                        bound="min",
                        action="review",
                        passed=False,
                        message=f"{label}: its members are told apart from its non-members "
                        "(Holm-adjusted "
                        f"{p_equals(float(p)) if p is not None else 'p missing'} <= "
                        f"{human_number(sub.review_level, 3)})",
                    )
                )
            continue
        group_checks = [
            c
            for r in rules
            if r.scope == "subgroup"
            for c in check_rule(r, group_metrics, attacks=attacks, group=label)
        ]
        checks += group_checks
        if any(not c.passed for c in group_checks):
            flagged.append(label)
    membership = by_test.get("membership")
    for w in warnings:
        if membership is not None and not membership.review and not w.passed:
            w = dataclasses.replace(
                w,
                passed=True,
                message=w.message
                + (
                    "; not raised: the membership test is not significant at its share of the "
                    "error budget"
                ),
            )
        checks.append(w)
    checks += list(extra_failures)
    power = None
    if membership is not None and attacks:
        n1 = metrics.get(metric_name(attacks[0], "n_members"))
        n0 = metrics.get(metric_name(attacks[0], "n_non_members"))
        if n1 is not None and n0 is not None:
            # each component's level: the attacks and the ensemble share the test's level
            # (Bonferroni)
            need = membership_power(
                int(n1),
                int(n0),
                level=membership.review_level / max(1, membership.components),
                power=budget.power,
                promise_auc=budget.promise_auc,
            )
            checks.append(
                power_check(need, n_members=int(n1), n_non_members=int(n0), power=budget.power)
            )
            power = {
                "detectable_auc": need.detectable_auc,
                "promise_auc": need.promise_auc,
                "per_class_needed": need.per_class_needed,
                "sufficient": need.sufficient,
            }
    copies = by_test.get("copies")
    if copies is not None and not copies.review:
        limit = twin_limit_check(metrics, level=copies.review_level, power=budget.power)
        checks += [limit] if limit is not None else []
    shortfalls = list(shortfalls)
    checks += [floor_check(s) for s in shortfalls]
    if "shadow" in by_test:
        checks = shadow_power(checks, metrics, power=budget.power)
    failed = tuple(c for c in checks if not c.passed)
    decision: VerdictDecision
    if any(c.action == "block" for c in failed):
        decision = "BLOCK"
    elif failed:
        decision = "REVIEW"
    else:
        decision = "APPROVE"
    record = (
        {
            "review": budget.review,
            "block": budget.block,
            "power": budget.power,
            "promise_auc": budget.promise_auc,
            "tests": [t.to_dict() for t in outcomes],
            "power_check": power,
        }
        if tests is not None
        else {}
    )
    if shortfalls:
        record["floors"] = [s.to_dict() for s in shortfalls]
    return Verdict(
        decision=decision,
        status="ok",
        reasons=_ordered(failed),
        checks=tuple(checks),
        metrics={k: float(v) for k, v in metrics.items()},
        flagged_subgroups=tuple(flagged),
        data_hashes=dict(data_hashes or {}),
        rules_hash=rules_hash,
        budget=record,
        disabled=dict(disabled or {}),
    )


def _ordered(failed: tuple[Check, ...]) -> tuple[Check, ...]:
    """The reasons, the blocking ones first (a BLOCK's state message leads with what blocked it)."""
    return tuple(sorted(failed, key=lambda c: 0 if c.action == "block" else 1))
