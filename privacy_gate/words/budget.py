"""The error budget's seven tests in words (:mod:`privacy_gate.gate.budget`): what each compared,
its p-value against its share of the budget, and what a significant result means. Read by
:mod:`privacy_gate.words.checks`; figures from the verdict only (counts, shares, the test's smallest
part: an attack, an evaluator or a group label as the gate shows it).

>>> from privacy_gate.gate.verdict import Check
>>> t = TestOutcome(name="scan", weight=2, review_level=0.004, block_level=0.0002, pvalue=0.00025,
...                 components=1, detail="scan_tail_pvalue")
>>> c = Check(rule="test scan at level 0.004", metric="test:scan", observed=0.00025,
...           threshold=0.004, bound="min", action="review", passed=False,
...           message="evidence of leakage: ...")
>>> m = {"exposed.scan_tested": 1800.0, "exposed.scan_calibration": 1200.0,
...      "exposed.scan_tail_top": 12.0, "exposed.scan_count": 0.0}
>>> print(budget_test_sentence(c, t, m))
The member scan compared all 1,800 training records with 1,200 records the generator never saw:
among the 12 with the most close synthetic copies, more are training records than chance allows (p =
0.00025, below this test's level 0.004). A few people may be copied into the release many times; too
few to name any one of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from privacy_gate.gate.budget import ENSEMBLE, TestOutcome
from privacy_gate.gate.human import human_number, human_percent, p_equals
from privacy_gate.gate.verdict import Check
from privacy_gate.names import MEMBERSHIP


def _get(metrics: Mapping[str, Any], key: str) -> float | None:
    try:
        v = float(metrics[key])
    except (KeyError, TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _many(n: int, what: str) -> str:
    return f"{human_number(n)} {what}{'' if n == 1 else 's'}"


def _count(metrics: Mapping[str, Any], key: str) -> str | None:
    v = _get(metrics, key)
    return None if v is None else human_number(v)


def _membership(t: TestOutcome, m: Mapping[str, Any], hit: bool) -> str:
    a = t.detail
    if a == ENSEMBLE:
        return _ensemble(m, hit)
    auc, n1, n0 = _get(m, f"{a}.auc"), _count(m, f"{a}.n_members"), _count(m, f"{a}.n_non_members")
    auc_text = f" with AUC {human_number(auc, 3)}, where 0.5 is guessing" if auc is not None else ""
    who = (
        f"the {n1} member targets above the {n0} non-members"
        if n1 and n0
        else "member targets above non-members"
    )
    if hit:
        return (
            f"The attacks tell training records from holdout records: {a} ranks {who}{auc_text} "
            "([p]). An attacker can tell, better than chance, whether a person was in the training "
            "data."
        )
    return (
        "No evidence that the attacks tell training records from holdout records: the strongest, "
        f"{a}, "
        f"reaches{auc_text.replace(' with', '')} ([p])."
    )


def _ensemble(m: Mapping[str, Any], hit: bool) -> str:
    auc = _get(m, f"{MEMBERSHIP}.ensemble_auc")
    auc_text = f" (AUC {human_number(auc, 3)}, where 0.5 is guessing)" if auc is not None else ""
    if not hit:
        return (
            "No evidence that the attacks together tell training records from holdout "
            f"records{auc_text} ([p])."
        )
    if auc is not None and auc < 0.5:
        return (
            "The release avoids its training records: all attacks together rank the member targets "
            "*below* the "
            f"non-members{auc_text} ([p]). Real records that were not in training are closer to "
            "the release than "
            "the training records are, so an attacker learns who was in training from their "
            "absence (a "
            "near-copy filter that removed too much, or real rows that are not the members given "
            "as the release)."
        )
    return (
        "The attacks together tell training records from holdout records: their mean rank puts the "
        "member "
        f"targets above the non-members{auc_text} ([p]). An attacker can tell, better than chance, "
        "whether a "
        "person was in the training data."
    )


def _targets(t: TestOutcome, m: Mapping[str, Any], hit: bool) -> str:
    top = _count(m, "exposed.tail_top")
    if not hit:
        return (
            "No more training records than chance among the targets the attacks rank as most "
            "exposed ([p])."
        )
    if t.detail == "simes_pvalue":
        found = "the member targets' exposure p-values are smaller than chance allows (Simes' test)"
    elif t.detail == "share_pvalue":
        level = _get(m, "exposed.level")
        at = f" at {human_percent(level)} false alarms" if level is not None else ""
        found = f"more member targets than non-members pass the attacks' threshold{at}"
    else:
        among = f"the {top} targets" if top else "the targets"
        found = (
            f"among {among} the attacks rank as most exposed, more are training records than "
            "chance allows"
        )
    named = _count(m, "exposed.count")
    tail = (
        f"; {named} are named as exposed"
        if named and named != "0"
        else ", even where none can be named"
    )
    return f"{found[:1].upper()}{found[1:]} ([p]): some training records are exposed{tail}."


def _scan(t: TestOutcome, m: Mapping[str, Any], hit: bool) -> str:
    n, cal, top = (_count(m, f"exposed.scan_{k}") for k in ("tested", "calibration", "tail_top"))
    pool = (
        f"all {n} training records with {cal} records the generator never saw"
        if n and cal
        else "every training record with records the generator never saw"
    )
    if not hit:
        return (
            f"The member scan compared {pool}: no more training records than chance have many "
            "close synthetic "
            "copies ([p])."
        )
    named = _count(m, "exposed.scan_count")
    among = (
        f"among the {top} with the most close synthetic copies"
        if top
        else "among those with the most copies"
    )
    members, lower = _get(m, "exposed.scan_top_members"), _get(m, "exposed.scan_top_exposed_lower")
    if named and named != "0":
        end = f"{named} of them are named as exposed"
    elif members and lower:
        end = (
            f"too few to name any one of them, but of the {_many(int(members), 'training record')} "
            "in the scan's "
            f"top set at least {human_number(lower)} are copied (95 %)"
        )
    else:
        end = "too few to name any one of them"
    return (
        f"The member scan compared {pool}: {among}, more are training records than chance allows "
        "([p]). "
        f"A few people may be copied into the release many times; {end}."
    )


def _agreement(t: TestOutcome, m: Mapping[str, Any], hit: bool) -> str:
    if not hit:
        return (
            "No evidence that training records are reproduced on most of their columns more "
            "often than holdout records ([p])."
        )
    share, named = _get(m, "agreement.excess_share"), _count(m, "agreement.count")
    extra = (
        f"; {named} training records are named, {human_percent(share)} of the training data beyond "
        "chance"
        if share is not None and named
        else ""
    )
    return (
        "Training records are reproduced on most of their columns (partial or rounded copies, or a "
        "rare "
        f"quasi-identifier combination) more often than holdout records ([p]){extra}."
    )


def _copies(t: TestOutcome, m: Mapping[str, Any], hit: bool) -> str:
    b, c = _count(m, "copies.train_only"), _count(m, "copies.holdout_only")
    counts = (
        f"{b} distinct synthetic rows equal a training record only, {c} a holdout record only; "
        if b is not None and c is not None
        else ""
    )
    if not hit:
        return (
            "Synthetic rows equal a training record no more often than a holdout record of the "
            "same size "
            f"({counts}[p]): no verbatim copies beyond natural twins."
        )
    share = _get(m, "copies.excess_share")
    extra = (
        f"; about {human_percent(share)} of the synthetic rows are copies beyond natural twins"
        if share
        else ""
    )
    return (
        "Synthetic rows equal a training record more often than a holdout record of the same size "
        f"({counts}[p])"
        f"{extra}: training records are copied into the release."
    )


_EVALUATOR = {
    "singling_out": "singling people out",
    "singling_out.univariate": "singling people out with one column",
    "singling_out.multivariate": "singling people out with three columns",
    "linkability": "linking two parts of a record",
}


def _disclosure(t: TestOutcome, m: Mapping[str, Any], hit: bool) -> str:
    ev = t.detail
    what = _EVALUATOR.get(ev) or (
        f"guessing the {ev.partition('.')[2]} column" if ev.startswith("inference.") else ev
    )
    tr, cr = _get(m, f"{ev}.train_rate"), _get(m, f"{ev}.control_rate")
    rates = (
        f": {human_percent(tr)} right on training records, {human_percent(cr)} on control records"
        if tr is not None and cr is not None
        else ""
    )
    if not hit:
        return (
            "No evidence that an attacker with only the synthetic data does better on training "
            "records than on "
            f"people outside them (closest: {what}{rates}; [p])."
        )
    return (
        "An attacker with only the synthetic data does better on training records than on people "
        "outside them "
        f"({what}{rates}; Bonferroni over {_many(t.components, 'attack')}: [p]): the release gives "
        "away something "
        "about the people in it."
    )


def _subgroups(t: TestOutcome, m: Mapping[str, Any], hit: bool) -> str:
    if not hit:
        return (
            "No subgroup's members are told apart from its non-members (the smallest Holm-adjusted "
            "over "
            f"{_many(t.components, 'group')}: [p])."
        )
    return (
        f"At least one subgroup's members are told apart from its non-members: {t.detail} "
        "(Holm-adjusted over "
        f"{_many(t.components, 'group')}: [p]). The release may expose people of that group."
    )


def _shadow(t: TestOutcome, m: Mapping[str, Any], hit: bool) -> str:
    fits, out = _count(m, "shadow.fits"), _count(m, "shadow.out_median")
    how = (
        f"The generator was refitted {fits} times on training sets drawn from the records the "
        "gate holds, and each record's score on the release was set against its own scores in "
        f"the refits that never saw it (about {out} each)"
    )
    if not hit:
        return (
            f"{how}: training records do not stand out against their own refits more than "
            "the other records ([p])."
        )
    named = _count(m, "shadow.named")
    extra = (
        f"; {named} training records are named (FDR 5 %: their release score is above "
        "nearly all of their own refit scores)"
        if named and named != "0"
        else ""
    )
    return (
        f"{how}: training records score higher on the release than on the refits that "
        f"never saw them, more than the other records do ([p]){extra}. The generator "
        "memorises records."
    )


_TESTS: dict[str, Callable[[TestOutcome, Mapping[str, Any], bool], str]] = {
    "membership": _membership,
    "targets": _targets,
    "scan": _scan,
    "agreement": _agreement,
    "copies": _copies,
    "disclosure": _disclosure,
    "subgroups": _subgroups,
    "shadow": _shadow,
}


def budget_test_sentence(
    check: Check, outcome: TestOutcome | None, metrics: Mapping[str, Any]
) -> str | None:
    """The sentence of a budget test's check (``test:<name>``), or None for a test without words
    (or without its recorded outcome). ``[p]`` in a template becomes the p-value against the
    test's share of the review budget."""
    name = check.metric.removeprefix("test:")
    words = _TESTS.get(name)
    if words is None or outcome is None:
        return None
    if check.observed is None:
        return (
            f"The {name} test has no p-value ({outcome.detail}), and the gate cannot approve "
            "without it."
        )
    hit = not check.passed
    side = "below" if hit else "above"
    p = (
        f"{p_equals(check.observed)}, {side} this test's level "
        f"{human_number(outcome.review_level, 2)}"
    )
    return words(outcome, metrics, hit).replace("[p]", p)


__all__ = ["budget_test_sentence"]
