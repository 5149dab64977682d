"""Every check of a verdict in words: what was measured, against what (a bar, or a test's level),
and what it means for a reader. The one place a reason becomes a sentence: the HTML report, the
markdown summary and MLflow run description, and the CLI's verdict and ``review`` output all read
it from here. A check's ``message`` stays what it was (the technical record in ``verdict.json``);
its key is shown beside the sentence for experts.

A check kind without words of its own gets a generic but honest sentence (:func:`check_words`
marks it ``specific=False``; a test lists every check the default gate makes and asserts each has
words of its own). Group labels appear as the gate shows them; no record value is read — only the
verdict's figures, its budget record and blame's "what if".

>>> from privacy_gate.gate.verdict import Check, Verdict
>>> c = Check(rule="copies.excess_share <= 0.01", metric="copies.excess_share", observed=0.03,
...           threshold=0.01, bound="max", action="block", passed=False,
...           message="copies.excess_share = 0.03 violates max 0.01 (<=)")
>>> w = check_words(c, VerdictContext.of(Verdict(decision="BLOCK", status="ok", reasons=(c,))))
>>> print(w.sentence)
3% of the synthetic rows copy a training record verbatim, beyond the rate natural twins explain (bar
1%): training records are copied into the release.
>>> w.key, w.specific
('copies.excess_share', True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_gate.config import rule_test
from privacy_gate.gate.blame import CONCENTRATED, explained_note
from privacy_gate.gate.budget import TestOutcome
from privacy_gate.gate.findings import (
    ATTACK_SCORES,
    DEPENDENCY_DP_EXCESS,
    DEPENDENCY_GAP,
    DP_AUDIT_EPSILON,
    DP_BOUND_RULE,
)
from privacy_gate.gate.human import human_number, human_percent, p_equals
from privacy_gate.gate.rules import INSUFFICIENT, POWER_METRIC
from privacy_gate.gate.verdict import Check, Verdict
from privacy_gate.names import (
    COMBINED,
    GROUP_TEST,
    INSUFFICIENT_EVIDENCE,
    VALIDATION_SYNTHETIC,
    check_key,
)
from privacy_gate.words.budget import budget_test_sentence


@dataclass(frozen=True)
class CheckWords:
    """One check in words. ``specific``: False for the generic sentence of a check kind that has
    no words of its own (still honest: the figure, the bar and what the gate did)."""

    sentence: str
    key: str
    action: str
    passed: bool
    specific: bool = True


@dataclass(frozen=True)
class VerdictContext:
    """What a sentence may read beside its check: the verdict's figures, its budget tests, the
    power check, and blame's records (who explains what, and what the rest decides without a
    group)."""

    metrics: Mapping[str, float] = field(default_factory=dict)
    tests: Mapping[str, TestOutcome] = field(default_factory=dict)
    power: Mapping[str, Any] = field(default_factory=dict)
    decision_without: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    blamed: str | None = None  # the group blame's ruling names

    @classmethod
    def of(cls, verdict: Verdict | Mapping[str, Any]) -> VerdictContext:
        d = verdict.to_dict() if isinstance(verdict, Verdict) else verdict
        budget = d.get("budget") or {}
        blamed = next(
            (c.get("group") for c in d.get("reasons") or [] if c.get("metric") == CONCENTRATED),
            None,
        )
        return cls(
            metrics={k: v for k, v in (d.get("metrics") or {}).items() if v is not None},
            tests={t["name"]: TestOutcome.from_dict(t) for t in budget.get("tests") or []},
            power=budget.get("power_check") or {},
            decision_without=d.get("decision_without") or {},
            blamed=blamed,
        )

    def secret_column(self) -> str | None:
        """The inference column whose figures ``inference.risk*`` repeat (the highest lower
        bound)."""
        worst = self.figure("inference.risk_lower")
        if worst is None:
            return None
        columns = sorted(
            k.removeprefix("inference.").removesuffix(".risk_lower")
            for k in self.metrics
            if k.startswith("inference.") and k.endswith(".risk_lower") and k.count(".") == 2
        )
        return next(
            (col for col in columns if self.figure(f"inference.{col}.risk_lower") == worst), None
        )

    def figure(self, key: str) -> float | None:
        v = self.metrics.get(key)
        try:
            v = float(v)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return v if math.isfinite(v) else None


def _check(c: Check | Mapping[str, Any]) -> Check:
    return c if isinstance(c, Check) else Check.from_dict(dict(c))


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _sentence(*parts: str) -> str:
    text = " ".join(p.strip() for p in parts if p and p.strip())
    return _capital(text.rstrip(".") + ".")


# ------------------------------------------------------------------ the rules' bars


def _who(attack: str | None) -> str:
    if attack is None:  # a rule over every attack ("any.auc"): its strongest
        return "the strongest attack's scores"
    return "all attacks' scores together" if attack == COMBINED else f"{attack}'s scores"


def _the_attack(attack: str | None) -> str:
    """``the attack domias``; a rule over every attack names its strongest."""
    return f"the attack {attack}" if attack else "the strongest attack"


_DISCLOSURE = {
    "singling_out": "singles out training records (a predicate from the synthetic data "
    "isolates one real person)",
    "linkability": "links the two parts of a training record",
    "inference": "guesses a training record's secret column",
}


def _bar_measured(
    c: Check, v: float, t: float, *, secret: str | None = None
) -> tuple[str, str] | None:
    """(what was measured against its bar, what crossing it means), or None: no words for it.
    ``secret``: the inference column the summary ``inference.risk*`` figures are those of."""
    m, a = c.metric, c.attack
    pct = human_percent
    if m == "auc":
        return (
            f"{_the_attack(a)} tells training records from holdout records with AUC "
            f"{human_number(v, 3)} (0.5 is guessing; "
            f"bar {human_number(t)})",
            "an attacker can tell who was in the training data",
        )
    if m.startswith("tpr_at_fpr_"):
        fpr = m.removeprefix("tpr_at_fpr_")
        return (
            f"{_the_attack(a)} catches {pct(v)} of the training records at {pct(fpr)} false alarms "
            f"(bar {pct(t)})",
            "some people can be identified as members with confidence",
        )
    if m == "advantage":
        return (
            f"the membership advantage of {_the_attack(a)} (true minus false positive rate at its "
            "best threshold) is "
            f"{human_number(v, 3)} (0 is guessing; bar {human_number(t)})",
            "an attacker beats guessing",
        )
    if m in ("mace.advantage_lower", "mace.advantage_upper", "mace.advantage"):
        how = {
            "mace.advantage_lower": "at least",
            "mace.advantage_upper": "at most",
            "mace.advantage": "about",
        }[m]
        bound = {
            "mace.advantage_lower": "95% lower bound; ",
            "mace.advantage_upper": "95% upper bound; ",
        }.get(m, "")
        return (
            f"the best attacker built on {_who(a)} (MACE) has a membership advantage of {how} "
            f"{human_number(v, 3)} ({bound}0 is guessing; bar {human_number(t)})",
            "an attacker beats guessing by that much for certain",
        )
    if m == "utility.quality":
        return (
            "the synthetic data's one- and two-column distributions match the holdout's to "
            f"{human_number(v, 3)} "
            f"(1 is identical; at least {human_number(t)} required)",
            "the release is too unlike the real data to be useful",
        )
    if m in ("exposed.share_lower", "exposed.share_upper"):
        how, bound = (
            ("at least", "95% lower bound")
            if m.endswith("_lower")
            else ("at most", "95% upper bound")
        )
        return (
            f"the attacks single out {how} {pct(v)} of the training records beyond chance "
            f"({bound}; bar {pct(t)})",
            "some training records are exposed",
        )
    family, _, figure = m.partition(".")
    if family in _DISCLOSURE and figure in ("risk_lower", "risk_upper", "risk"):
        how = {"risk_lower": "at least ", "risk_upper": "at most ", "risk": ""}[figure]
        bound = {"risk_lower": "95% lower bound; ", "risk_upper": "95% upper bound; "}.get(
            figure, ""
        )
        does = _DISCLOSURE[family]
        if family == "inference" and secret:
            does = (
                f"guesses a training record's {secret} (the secret column with the highest "
                "lower bound)"
            )
        return (
            f"an attacker with only the synthetic data {does} better than for people outside the "
            f"training data: risk {how}{human_number(v, 2)} ({bound}0 is no better, 1 is always; "
            "bar "
            f"{human_number(t)})",
            "the release gives away something about the people in it",
        )
    if m == "copies.excess_share":
        return (
            f"{pct(v)} of the synthetic rows copy a training record verbatim, beyond the rate "
            "natural twins "
            f"explain (bar {pct(t)})",
            "training records are copied into the release",
        )
    if m == "agreement.excess_share":
        return (
            f"{pct(v)} of the training records are reproduced on most of their columns beyond "
            "chance (partial "
            f"or rounded copies; bar {pct(t)})",
            "training records are partly copied into the release",
        )
    return None


def _crossed(c: Check) -> bool:
    v, t = float(c.observed), float(c.threshold)  # type: ignore[arg-type]
    return v > t if c.bound == "max" else v < t


def _test_of(c: Check, ctx: VerdictContext) -> TestOutcome | None:
    scope = "subgroup" if c.group else "global"
    name = rule_test(c.metric, c.attack, scope)
    return ctx.tests.get(name) if name else None


def _bar_status(c: Check, ctx: VerdictContext, meaning: str) -> str:
    """How the bar came out and what the gate made of it (mirrors gate/rules.py: _bar_outcome)."""
    if not _crossed(c):
        return "within the bar"
    test = _test_of(c, ctx)
    null = c.null_reference
    if c.metric.endswith("_upper"):
        return (
            "an upper bound: the targets cannot exclude a value this high, which is "
            "uncertainty, not a leak signal (more targets would narrow it)"
        )
    if c.passed:
        return "crossed, but not a leak signal: " + (
            f"the {test.name} test is not significant ({p_equals(test.pvalue)}, above its level "
            f"{human_number(test.review_level, 2)})"
            if test
            else "its test is not significant"
        )
    if ctx.blamed and c.message.endswith(explained_note(ctx.blamed)):
        return f"{meaning}, but only because of {ctx.blamed} (see what suppressing it would do)"
    if (
        null is not None
        and c.action == "review"
        and c.threshold is not None
        and (null > float(c.threshold)) == (c.bound == "max")
    ):
        return (
            f"but a release with no leakage would score about {human_number(null, 3)} here: too "
            "few targets to "
            "tell, so a human decides (more targets would)"
        )
    if test is None:  # a requirement (no leak test owns it), or a verdict judged without the budget
        requirement = rule_test(c.metric, c.attack, "subgroup" if c.group else "global") is None
        return meaning + (" (a requirement, not a leak test)" if requirement else "")
    if c.action == "block":
        return (
            f"and the {test.name} test is significant at its block share ({p_equals(test.pvalue)}, "
            "level "
            f"{human_number(test.block_level, 2)}): {meaning}"
        )
    return (
        f"and the {test.name} test is significant at its review share ({p_equals(test.pvalue)}, "
        "level "
        f"{human_number(test.review_level, 2)}): {meaning}, so a human decides"
    )


def _bar_words(c: Check, ctx: VerdictContext) -> str | None:
    if c.observed is None or c.threshold is None:
        return None
    measured = _bar_measured(c, float(c.observed), float(c.threshold), secret=ctx.secret_column())
    if measured is None:
        return None
    what, meaning = measured
    where = f"in {c.group}, " if c.group else ""
    status = _bar_status(c, ctx, meaning)
    joiner = ", " if status.startswith(("and ", "but ")) else ": "
    return _sentence(where + what + joiner + status)


# ------------------------------------------------------------------ the other checks


def _subgroup_test(c: Check, ctx: VerdictContext) -> str:
    p = "p missing" if c.observed is None else p_equals(c.observed)
    level = human_number(c.threshold, 2)
    if c.passed:
        return _sentence(
            f"in the group {c.group}, members are not told apart from non-members ({p} after Holm "
            "correction, "
            f"above the level {level})"
        )
    return _sentence(
        f"in the group {c.group}, the attacks rank its member targets above its non-members more "
        "than "
        f"chance allows ({p} after Holm correction over every audited group; level {level}): the "
        "release may expose people of this group"
    )


def _power(c: Check, ctx: VerdictContext) -> str:
    m = ctx.metrics
    n1 = next((v for k, v in m.items() if k.endswith(".n_members") and "/" not in k), None)
    n0 = next((v for k, v in m.items() if k.endswith(".n_non_members") and "/" not in k), None)
    targets = (
        f"with {human_number(n1)} member and {human_number(n0)} non-member targets "
        if n1 is not None and n0 is not None
        else ""
    )
    seen = (
        f"{targets}the membership test reliably sees only attacks of AUC "
        f"{human_number(c.observed, 3)} or more, "
        f"and the gate promises to see {human_number(c.threshold, 2)}"
    )
    if c.passed:
        return _sentence(seen + ": enough evidence")
    needed = ctx.power.get("per_class_needed")
    more = (
        (
            f"; about {human_number(needed)} targets per class (more training and holdout records) "
            "would"
        )
        if needed
        else ""
    )
    return _sentence(f"insufficient evidence, not a leak signal: {seen}{more}")


def _floor(c: Check, ctx: VerdictContext) -> str:
    told = c.message.removeprefix(
        INSUFFICIENT
    )  # the shortfall's own sentence: counts and setting names only
    return _sentence(f"insufficient evidence, not a leak signal (a small table): {told}")


def _blame(c: Check, ctx: VerdictContext) -> str:
    without = ctx.decision_without.get(c.group or "") or {}
    decision, targets = without.get("decision"), without.get("targets")
    if decision is None:
        return _sentence(
            c.message
        )  # a verdict recorded before blame kept its "what if": its own words
    return _sentence(
        f"the release-wide figures fail only because of {c.group}: without its "
        f"{human_number(targets)} "
        f"targets they would give {decision}. A reviewer may suppress the group (its synthetic "
        "rows "
        "are removed and the rest is judged again)"
    )


def _dp_bound(c: Check, ctx: VerdictContext) -> str:
    found = (
        f"the best attacker built on {_who(c.attack)} has a membership advantage of at least "
        f"{human_number(c.observed, 3)} (95% lower bound), above the "
        f"{human_number(c.threshold, 3)} the claimed "
        "epsilon allows"
    )
    if c.passed:  # a warning the gate did not raise (gate/rules.py: decide)
        return _sentence(
            found
            + "; not raised, because the membership test is not significant at its share of the "
            "error budget"
        )
    return _sentence(
        found + ": the DP implementation is broken, or the training records are not independent"
    )


def _dependency_gap(c: Check, ctx: VerdictContext) -> str:
    return _sentence(
        f"with members drawn from one source, {_the_attack(c.attack)} tells them apart with an AUC "
        f"{human_number(c.observed, 2)} higher than with independent targets (bar "
        f"{human_number(c.threshold)}): dependent records make the release leakier than its main "
        "figures say"
    )


def _dependency_dp(c: Check, ctx: VerdictContext) -> str:
    return _sentence(
        f"with members drawn from one source, the advantage lower bound of {_the_attack(c.attack)} "
        "is "
        f"{human_number(c.observed, 3)} above the DP bound for independent records: the DP "
        "guarantee "
        "does not cover dependent records"
    )


def _dp_audit(c: Check, ctx: VerdictContext) -> str:
    verdict = "above" if not c.passed else "within"
    return _sentence(
        f"the DP audit shows an epsilon of at least {human_number(c.observed, 3)} (a lower bound), "
        f"{verdict} the {human_number(c.threshold, 3)} the claim allows"
        + (": the generator's DP implementation does not deliver its claim" if not c.passed else "")
    )


def _validation(c: Check, ctx: VerdictContext) -> str:
    return _sentence(f"the synthetic data failed its validation suite: {c.message}")


def _attack_invalid(c: Check, ctx: VerdictContext) -> str:
    return _sentence(
        f"an attack could not rank the targets: {c.message}"
    )  # "<attack>: the attack <why>; .."


def _error(c: Check, ctx: VerdictContext) -> str:
    return _sentence(
        f"the gate did not finish: {c.message.rstrip('.')}. It fails closed, so the release is "
        "blocked"
    )


#: check metric -> its words (prefix matches and the rule-keyed DP-bound check are in _words_of)
_BY_METRIC: dict[str, Callable[[Check, VerdictContext], str]] = {
    POWER_METRIC: _power,
    CONCENTRATED: _blame,
    DEPENDENCY_GAP: _dependency_gap,
    DEPENDENCY_DP_EXCESS: _dependency_dp,
    DP_AUDIT_EPSILON: _dp_audit,
    VALIDATION_SYNTHETIC: _validation,
    ATTACK_SCORES: _attack_invalid,
    "": _error,
}


def _words_of(c: Check, ctx: VerdictContext) -> str | None:
    if c.rule.startswith(DP_BOUND_RULE):  # the DP-bound finding reads a MACE figure a bar reads too
        return _dp_bound(c, ctx)
    if c.metric in _BY_METRIC:
        return _BY_METRIC[c.metric](c, ctx)
    if c.metric.startswith("test:"):
        return budget_test_sentence(c, ctx.tests.get(c.metric.removeprefix("test:")), ctx.metrics)
    if c.metric.startswith(f"{INSUFFICIENT_EVIDENCE}."):
        return _floor(c, ctx)
    if c.metric == f"{GROUP_TEST}.p_adjusted" and c.group:
        return _subgroup_test(c, ctx)
    if c.observed is None and c.passed and "not applicable" in c.message:
        return _sentence("not applicable: the combined query needs at least two gated attacks")
    if c.observed is None and not c.passed and c.bound != "none":
        return _sentence(
            f"the figure {check_key(attack=c.attack, metric=c.metric, group=c.group)} was not "
            "measured (missing or "
            "not a number), and the gate cannot approve without it"
        )
    return _bar_words(c, ctx)


def _generic(c: Check) -> str:
    key = check_key(attack=c.attack, metric=c.metric, group=c.group)
    if c.observed is None or c.threshold is None:
        return _sentence(
            f"the check {key} {'passed' if c.passed else 'failed'} ({c.rule}), so the gate "
            + ("raises nothing" if c.passed else f"asks for {c.action.upper()}")
        )
    side = "within" if c.passed else "beyond"
    return _sentence(
        f"the figure {key} is {human_number(c.observed)}, {side} the {c.bound} bar "
        f"{human_number(c.threshold)}, so the gate "
        + ("raises nothing" if c.passed else f"asks for {c.action.upper()}")
    )


def check_words(check: Check | Mapping[str, Any], context: VerdictContext) -> CheckWords:
    """``check`` in words (its key kept for experts); a kind without words of its own gets the
    generic sentence, marked ``specific=False``."""
    c = _check(check)
    words = _words_of(c, context)
    return CheckWords(
        sentence=words or _generic(c),
        key=c.key,
        action=c.action,
        passed=c.passed,
        specific=words is not None,
    )


def reasons_in_words(verdict: Verdict | Mapping[str, Any]) -> list[CheckWords]:
    """The verdict's reasons in words, in its order (the blocking ones first: gate/rules.py)."""
    d = verdict.to_dict() if isinstance(verdict, Verdict) else verdict
    ctx = VerdictContext.of(d)
    return [check_words(c, ctx) for c in d.get("reasons") or []]


def deciding_reason(verdict: Verdict) -> Check | None:
    """The reason that decided ``verdict``: a BLOCK's first blocking reason (its review-level ones
    come after), else the first reason; None when every rule passed."""
    reasons = list(verdict.reasons)
    blocking = (
        next((c for c in reasons if c.action == "block"), None)
        if verdict.decision == "BLOCK"
        else None
    )
    return blocking or (reasons[0] if reasons else None)


def reason_line(check: Check, verdict: Verdict | Mapping[str, Any]) -> str:
    """One line for a log or a state message: ``check`` in words with its key after it; its
    technical message when the words cannot be made (a line never fails a run)."""
    try:
        words = check_words(check, VerdictContext.of(verdict))
    except Exception:  # noqa: BLE001
        return " ".join(check.message.split())
    return " ".join((f"{words.sentence} ({words.key})" if words.key else words.sentence).split())


def headline_reason(verdict: Verdict) -> str | None:
    """The deciding reason in one line (:func:`reason_line`), led by the flagged group the
    evidence points at and its effect size when there is one (``race=X: AUC 1 [0.82, 1], 44 of 46
    named records — In the group race=X, ...``): every one-line reason starts with the group.
    None when every rule passed."""
    from privacy_gate.words.evidence import lead_effect

    main = deciding_reason(verdict)
    if main is None:
        return None
    lead = lead_effect(verdict.to_dict())
    return f"{lead} — {reason_line(main, verdict)}" if lead else reason_line(main, verdict)


__all__ = [
    "CheckWords",
    "VerdictContext",
    "check_words",
    "deciding_reason",
    "headline_reason",
    "reason_line",
    "reasons_in_words",
]
