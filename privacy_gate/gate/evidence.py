"""The evidence on a flagged subgroup in one sentence, from what the audit recorded for it
(``audit/subgroups.json``: one row per group and attack). A figure that was not recorded is
left out, never estimated here. Group labels are safe to print (``experiment.grouping``); no
record value is read.

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


def flagged_evidence(rows: Sequence[Mapping[str, Any]], verdict: Mapping[str, Any]) -> list[str]:
    """One sentence per flagged subgroup of ``verdict``, in the verdict's order."""
    explained = verdict.get("explained") or {}
    return [
        group_evidence(rows, g, through=explained.get(g))
        for g in verdict.get("flagged_subgroups") or []
    ]
