"""Blame the smallest group that explains a flag.

A leak of one small group (say every training record of one race, near-copied) also moves the
release-wide figures: the global block rules fire, the release is BLOCKed with the group named, and
the reviewer's remedy — suppress the group and re-gate the rest — is closed. And a larger group
that contains it (``sex=Female``, through the leaked group's women) is flagged alongside, with
nothing saying which flag explains which. Two rulings, both on figures the pipeline recomputes
without the group (:mod:`privacy_gate.pipeline.gate_run`):

- :func:`concentrated_in` — a BLOCK whose failing block rules are all leakage figures becomes a
  REVIEW naming the smallest flagged group without which the release would not be blocked. Any
  other failure (validation, utility, an attack that could not rank, an error) keeps the BLOCK:
  only leakage can be explained by a group.
- :func:`explained_groups` — a flagged group that is no longer significant once a smaller flagged
  group's targets are removed is "flagged through" that group.

>>> from privacy_gate.gate.verdict import Check
>>> c = Check(rule="exposed.share_lower <= 0.005", metric="exposed.share_lower", observed=0.02,
...           threshold=0.005, bound="max", action="block", passed=False, message="too high")
>>> v = Verdict(decision="BLOCK", status="ok", reasons=(c,), flagged_subgroups=("race=X",))
>>> r = concentrated_in(v, group="race=X", targets=40, rest_decision="APPROVE")
>>> r.decision, [x.action for x in r.reasons], r.reasons[-1].group
('REVIEW', ['review', 'review'], 'race=X')
>>> concentrated_in(v, group="race=X", targets=40, rest_decision="BLOCK") is v
True
"""

from __future__ import annotations

import dataclasses

from privacy_gate.gate.verdict import Check, Verdict
from privacy_gate.names import INFERENCE, LINKABILITY, SINGLING_OUT

#: metric families whose failures a leaking group can explain (release-wide leakage figures, the
#: disclosure risks among them); anything else (validation.*, utility.*, a failed run) is not the
#: group's doing
LEAKAGE_PREFIXES = (
    "exposed.",
    "mace.",
    "auc",
    "tpr_at_fpr_",
    "advantage",
    "membership_test.",
    f"{SINGLING_OUT}.",
    f"{LINKABILITY}.",
    f"{INFERENCE}.",
)


def is_leakage(check: Check) -> bool:
    """A failing check on a leakage figure of a real attack (not a failed run or validation)."""
    return (
        bool(check.metric)
        and check.metric.startswith(LEAKAGE_PREFIXES)
        and "invalid" not in check.metric
    )


#: the metric of blame's ruling check
CONCENTRATED = "blame.concentrated"


def explained_note(group: str) -> str:
    """What a softened block check's message ends with: the group that explains it."""
    return f" (explained by {group})"


def concentrated_in(verdict: Verdict, *, group: str, targets: int, rest_decision: str) -> Verdict:
    """``verdict`` as a REVIEW naming ``group`` when the release without the group's ``targets``
    would not be blocked (``rest_decision``) and every failing block check is a leakage figure;
    else ``verdict`` itself."""
    blocking = [c for c in verdict.reasons if c.action == "block"]
    if (
        verdict.decision != "BLOCK"
        or verdict.status != "ok"
        or rest_decision == "BLOCK"
        or not blocking
    ):
        return verdict
    if not all(is_leakage(c) for c in blocking):
        return verdict
    softened = tuple(
        dataclasses.replace(c, action="review", message=c.message + explained_note(group))
        if c.action == "block"
        else c
        for c in verdict.reasons
    )
    ruling = Check(
        rule="exposure concentrated in one flagged group",
        metric=CONCENTRATED,
        observed=None,
        threshold=None,
        bound="none",
        action="review",
        passed=False,
        group=group,
        message=(
            f"the release-wide block rules fail because of {group}: without its {targets} targets "
            f"the release would be {rest_decision}, so a reviewer may suppress it "
            f"(privacy-gate approve RUN --suppress '{group}') and the rest is judged again"
        ),
    )
    return dataclasses.replace(verdict, decision="REVIEW", reasons=softened + (ruling,))


def explained_groups(
    rest_pvalues: dict[str, float], *, smaller: str, level: float
) -> dict[str, str]:
    """``{group: smaller}`` for every flagged group whose family-adjusted p-value once
    ``smaller``'s targets are removed (``rest_pvalues``) is no longer below ``level``.

    >>> explained_groups({"sex=Female": 0.4, "race=Y": 0.001}, smaller="race=X", level=0.01)
    {'sex=Female': 'race=X'}
    """
    return {g: smaller for g, p in rest_pvalues.items() if g != smaller and p >= level}


__all__ = [
    "CONCENTRATED",
    "LEAKAGE_PREFIXES",
    "concentrated_in",
    "explained_groups",
    "explained_note",
    "is_leakage",
]
