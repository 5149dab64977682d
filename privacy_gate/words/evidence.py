"""The evidence on a flagged subgroup in one sentence: from its effect record
(``Verdict.group_effects``, :mod:`privacy_gate.pipeline.group_effects`: its strongest attack's AUC
and members caught with their intervals, and its share of the records named exposed) when the run
recorded one, else from what the audit recorded for it (``audit/subgroups.json``: one row per
group and attack). A figure that was not recorded is left out, never estimated here. Group labels
are safe to print (``experiment.grouping``); no record value is read.

>>> effect = {"members": 18, "non_members": 18, "attack": "dcr", "auc": 1.0, "auc_lower": 0.8241,
...           "auc_upper": 1.0, "auc_interval": "wilson", "tpr": 1.0, "tpr_lower": 0.8241,
...           "tpr_upper": 1.0, "caught": 18, "false_alarms_allowed": 0, "p_adjusted": 1e-9,
...           "groups_audited": 11, "training_records": 44, "named": 44, "named_all": 46}
>>> print(effect_headline("race=X", effect))
race=X: AUC 1 [0.82, 1], 44 of 46 named records
>>> print(effect_sentence("race=X", effect))  # doctest: +NORMALIZE_WHITESPACE
race=X: 18 members among the targets; an attacker (dcr) tells members from non-members with AUC 1
[0.82, 1] (95%, Wilson); 18 of its 18 members caught (100% [82%, 100%]) with no false alarm among
its 18 non-members; 44 of the 46 records named exposed are its (96%), all 44 of its training
records among them; p < 0.0001 after Holm correction for 11 groups

>>> rows = [{"group": "race=X", "attack": "dcr", "n_members": 64, "auc": 0.61,
...          "tpr_at_fpr_0.01": 0.1, "test_p_adjusted": 0.0008},
...         {"group": "race=X", "attack": "domias", "n_members": 64, "n_non_members": 60,
...          "auc": 0.68, "tpr_at_fpr_0.01": 0.3125, "test_p_adjusted": 0.0008},
...         {"group": "race=Y", "attack": "dcr", "n_members": 2000, "auc": 0.5,
...          "test_p_adjusted": 1.0}]
>>> print(group_evidence(rows, "race=X"))
race=X: 64 members among the targets; an attacker (domias) tells members from non-members with AUC
0.68 [0.59, 0.77]; 31% of its members caught at 1% false alarms; p = 0.0008 after Holm correction
for 2 groups
>>> print(group_evidence([], "race=Z"))
race=Z: flagged; the audit recorded no figures for this group
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from privacy_gate.gate.human import human_number, human_percent, p_equals


def finite_or_none(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


Z95 = 1.959963984540054


def hanley_mcneil_interval(
    auc: float, n_pos: int, n_neg: int, z: float = Z95
) -> tuple[float, float]:
    """Approximate 95% interval of an AUC (Hanley & McNeil 1982 standard error), clipped to [0, 1].

    >>> lo, hi = hanley_mcneil_interval(0.5, 100, 100)
    >>> round(lo, 3), round(hi, 3)
    (0.42, 0.58)
    """
    if not (math.isfinite(auc) and n_pos > 0 and n_neg > 0):
        return (math.nan, math.nan)
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc) + (n_neg - 1) * (q2 - auc * auc)) / (
        n_pos * n_neg
    )
    se = math.sqrt(max(var, 0.0))
    return (max(0.0, auc - z * se), min(1.0, auc + z * se))


def auc_interval(auc: float, n_pos: int, n_neg: int, z: float = Z95) -> tuple[float, float]:
    """The 95% interval of an AUC the report and the evidence show: Hanley & McNeil's, except where
    its normal approximation collapses to a point (zero standard error: AUC 0 or 1, a perfect
    separation of a small group); there Wilson's score interval for the AUC as a proportion, with
    the smaller class as its size (a conservative width for that many targets).

    >>> rounded = lambda interval: [round(x, 2) for x in interval]
    >>> rounded(auc_interval(1.0, 18, 18)), rounded(auc_interval(0.0, 18, 30))
    ([0.82, 1.0], [0.0, 0.18])
    >>> auc_interval(0.7, 100, 100) == hanley_mcneil_interval(0.7, 100, 100)
    True
    """
    lo, hi = hanley_mcneil_interval(auc, n_pos, n_neg, z)
    if not (math.isfinite(lo) and lo == hi):
        return lo, hi
    n = min(n_pos, n_neg)
    centre = (auc + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(auc * (1 - auc) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _auc_interval(row: Mapping[str, Any]) -> tuple[float, float] | None:
    """The recorded AUC interval of an audit row, else Hanley & McNeil's from its counts (as the
    report's subgroup table shows it), else None."""
    lo, hi = finite_or_none(row.get("auc_lower")), finite_or_none(row.get("auc_upper"))
    if lo is not None and hi is not None:
        return lo, hi
    n_m, n_n, auc = (
        finite_or_none(row.get("n_members")),
        finite_or_none(row.get("n_non_members")),
        finite_or_none(row.get("auc")),
    )
    if n_m is None or n_n is None or auc is None:
        return None
    lo, hi = auc_interval(auc, int(n_m), int(n_n))
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def group_evidence(
    rows: Sequence[Mapping[str, Any]], group: str, *, through: str | None = None
) -> str:
    """One sentence on ``group`` from the audit ``rows``: its member targets, the strongest
    attack's AUC (with its 95% interval: recorded as ``auc_lower`` / ``auc_upper``, else
    :func:`auc_interval` from the member and non-member counts) and TPR at 1%
    FPR, the exposed records among its members, and the adjusted p-value of its rank test with the
    number of groups corrected for. ``through``: the smaller group that explains its flag."""
    mine = [r for r in rows if str(r.get("group")) == group]
    if not mine:
        return f"{group}: flagged; the audit recorded no figures for this group"
    parts = []
    members = finite_or_none(mine[0].get("n_members"))
    if members is not None:
        parts.append(f"{human_number(members)} members among the targets")
    scored = [r for r in mine if finite_or_none(r.get("auc")) is not None]
    if scored:
        best = max(scored, key=lambda r: float(r["auc"]))
        bounds = _auc_interval(best)
        interval = (
            f" [{human_number(bounds[0], 2)}, {human_number(bounds[1], 2)}]" if bounds else ""
        )
        parts.append(
            f"an attacker ({best.get('attack')}) tells members from non-members with AUC "
            f"{human_number(float(best['auc']), 2)}{interval}"
        )
        tpr = finite_or_none(best.get("tpr_at_fpr_0.01"))
        if tpr is not None:
            parts.append(f"{human_percent(tpr)} of its members caught at 1% false alarms")
    exposed = finite_or_none(mine[0].get("exposed"))
    if exposed:
        parts.append(
            f"{human_number(exposed)} of its member targets singled out as exposed records"
        )
    p_adjusted = finite_or_none(mine[0].get("test_p_adjusted"))
    if p_adjusted is not None:
        n_groups = len({str(r.get("group")) for r in rows})
        parts.append(
            f"{p_equals(p_adjusted)} after Holm correction for {human_number(n_groups)} groups"
        )
    sentence = f"{group}: " + ("; ".join(parts) if parts else "flagged; no figures recorded")
    return sentence + (
        f" (flagged through {through}: not significant without it)" if through else ""
    )


def _interval(lower: Any, upper: Any, fmt: Any) -> str:
    lo, hi = finite_or_none(lower), finite_or_none(upper)
    return f" [{fmt(lo)}, {fmt(hi)}]" if lo is not None and hi is not None else ""


def _two(x: float) -> str:
    return human_number(x, 2)


def _figure(effect: Mapping[str, Any], key: str) -> float | None:
    return finite_or_none(effect.get(key))


def _share_named(effect: Mapping[str, Any]) -> str | None:
    """The group's share of the records named exposed, or of the member scan's top set when
    nothing is named: ``44 of 46 named records``, ``29 of scan's top 30``; None when neither was
    measured."""
    named, named_all = _figure(effect, "named"), _figure(effect, "named_all")
    if named_all and named is not None:
        return f"{human_number(named)} of {human_number(named_all)} named records"
    top, top_all = _figure(effect, "top_members"), _figure(effect, "top_members_all")
    if top_all:
        # short: it ends a flow run's name, cut at about 72 characters
        return f"{human_number(top)} of scan's top {human_number(top_all)}"
    return "no record named" if named_all == 0 else None


def _auc(effect: Mapping[str, Any]) -> str | None:
    """``AUC 1 [0.82, 1]``: the strongest attack's AUC inside the group with its interval."""
    auc = _figure(effect, "auc")
    if auc is None:
        return None
    return f"AUC {_two(auc)}" + _interval(effect.get("auc_lower"), effect.get("auc_upper"), _two)


def effect_parts(effect: Mapping[str, Any]) -> list[str]:
    """A flagged group's effect size in a few words: the strongest attack's AUC with its 95%
    interval inside the group (``AUC 1 [0.82, 1]``), and its share of the records named exposed
    (``44 of 46 named records``); a figure not recorded is left out."""
    return [part for part in (_auc(effect), _share_named(effect)) if part]


def effect_headline(group: str, effect: Mapping[str, Any]) -> str:
    """``group`` and its effect size in a few words (a run's name, a card, a state message)."""
    return f"{group}: " + (", ".join(effect_parts(effect)) or "flagged")


def _caught(effect: Mapping[str, Any]) -> str | None:
    tpr, members = _figure(effect, "tpr"), _figure(effect, "members")
    if tpr is None or not members:
        return None
    caught = _figure(effect, "caught")
    caught = round(tpr * members) if caught is None else caught
    share = human_percent(tpr) + _interval(
        effect.get("tpr_lower"), effect.get("tpr_upper"), human_percent
    )
    allowed, non = _figure(effect, "false_alarms_allowed"), _figure(effect, "non_members")
    alarms = (
        f"with no false alarm among its {human_number(non)} non-members"
        if allowed == 0 and non
        else "at 1% false alarms"
    )
    of = f"{human_number(caught)} of its {human_number(members)}"
    return f"{of} members caught ({share}) {alarms}"


def _named_clause(effect: Mapping[str, Any]) -> str | None:
    named, named_all = _figure(effect, "named"), _figure(effect, "named_all")
    if not named_all or named is None:  # a record without both counts says no share
        return _share_named(effect)
    clause = (
        f"{human_number(named)} of the {human_number(named_all)} records named exposed are "
        f"its ({human_percent(named / named_all)})"
    )
    training = _figure(effect, "training_records")
    if training and named == training:
        return clause + f", all {human_number(training)} of its training records among them"
    return clause + (f", of its {human_number(training)} training records" if training else "")


#: how a sentence names the AUC interval an effect record used
_INTERVALS = {"wilson": "Wilson", "hanley-mcneil": "Hanley & McNeil"}


def effect_sentence(group: str, effect: Mapping[str, Any], *, through: str | None = None) -> str:
    """One sentence on ``group`` from its effect record (see the module docstring)."""
    parts = []
    members = _figure(effect, "members")
    if members is not None:
        parts.append(f"{human_number(members)} members among the targets")
    auc = _auc(effect)
    if auc:
        method = _INTERVALS.get(str(effect.get("auc_interval")))
        parts.append(
            f"an attacker ({effect.get('attack')}) tells members from non-members with "
            + auc
            + (f" (95%, {method})" if method else "")
        )
    parts += [part for part in (_caught(effect), _named_clause(effect)) if part]
    p_adjusted = _figure(effect, "p_adjusted")
    if p_adjusted is not None:
        n = _figure(effect, "groups_audited")
        parts.append(
            f"{p_equals(p_adjusted)} after Holm correction"
            + (f" for {human_number(n)} groups" if n else "")
        )
    sentence = f"{group}: " + ("; ".join(parts) if parts else "flagged; no figures recorded")
    return sentence + (_through(through) if through else "")


def _through(group: str) -> str:
    return f" (flagged through {group}: not significant without it)"


def evidence_by_group(
    rows: Sequence[Mapping[str, Any]], verdict: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """(group, sentence) for each flagged subgroup of ``verdict``, the group the evidence points
    at first: from its effect record when the run recorded one, else from the audit's ``rows``."""
    explained = verdict.get("explained") or {}
    effects = verdict.get("group_effects") or {}
    flagged = list(verdict.get("flagged_subgroups") or [])
    lead = verdict.get("points_at")
    if lead in flagged:
        flagged = [lead] + [g for g in flagged if g != lead]
    return [
        (
            g,
            effect_sentence(g, effects[g], through=explained.get(g))
            if g in effects
            else group_evidence(rows, g, through=explained.get(g)),
        )
        for g in flagged
    ]


def flagged_evidence(rows: Sequence[Mapping[str, Any]], verdict: Mapping[str, Any]) -> list[str]:
    """One sentence per flagged subgroup of ``verdict`` (:func:`evidence_by_group`)."""
    return [sentence for _, sentence in evidence_by_group(rows, verdict)]


def lead_effect(verdict: Mapping[str, Any]) -> str | None:
    """The headline of the group the evidence points at (:func:`effect_headline`), or None."""
    lead = verdict.get("points_at")
    effect = (verdict.get("group_effects") or {}).get(lead) if lead else None
    return effect_headline(str(lead), effect) if effect else None


def first_effect(verdict: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The group whose effect a one-screen view shows: the one the evidence points at, else the
    first flagged group with an effect record."""
    effects = verdict.get("group_effects") or {}
    lead = verdict.get("points_at")
    if lead in effects:
        return str(lead), effects[lead]
    flagged = verdict.get("flagged_subgroups") or []
    return next(((g, effects[g]) for g in flagged if g in effects), None)
