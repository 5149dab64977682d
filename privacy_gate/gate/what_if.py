"""What suppressing each flagged group would do, in words, as far as the gate worked it out:
blame's decision of the release-wide figures without the group's targets
(``Verdict.decision_without``: tried on a BLOCK, smallest groups first,
:mod:`privacy_gate.pipeline.group_blame`), or the smaller group a larger one is flagged through
(``Verdict.explained``). A group the gate did not work out is said to be so: ``approve --suppress``
re-gates the rest from scratch, and nothing here estimates it.

>>> v = {"flagged_subgroups": ["race=X", "sex=F", "age=90"], "explained": {"sex=F": "race=X"},
...      "decision_without": {"race=X": {"decision": "APPROVE", "targets": 40}}}
>>> for w in what_if(v):
...     print(w.short())
Without it: APPROVE.
Flagged through race=X.
What suppressing it gives: not worked out before a re-gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from privacy_gate.gate.human import human_number
from privacy_gate.gate.verdict import Verdict


@dataclass(frozen=True)
class WhatIf:
    """What suppressing one flagged group would do, as far as the gate worked it out: blame's
    ``decision`` of the release-wide figures without the group's ``targets`` (tried on a BLOCK,
    smallest groups first), or the smaller group it is flagged ``through``; neither: not worked
    out."""

    group: str
    decision: str | None = None
    targets: int | None = None
    through: str | None = None

    def sentence(self) -> str:
        if self.decision is not None:
            return (
                f"Suppress {self.group}: without its {human_number(self.targets)} targets the "
                "release-wide figures "
                f"give {self.decision}"
                + (" (suppressing it alone would not do)" if self.decision == "BLOCK" else "")
                + "."
            )
        if self.through is not None:
            return (
                f"Suppress {self.group}: flagged only through {self.through} (without "
                f"{self.through}'s targets its "
                "test is not significant); the gate did not work out the verdict without it."
            )
        return (
            f"Suppress {self.group}: not worked out by the gate (it estimates this only for a "
            "BLOCK one group may "
            "explain); approving with --suppress re-gates the rest before anything is published."
        )

    def short(self) -> str:
        if self.decision is not None:
            return f"Without it: {self.decision}."
        if self.through is not None:
            return f"Flagged through {self.through}."
        return "What suppressing it gives: not worked out before a re-gate."


def what_if(verdict: Verdict | Mapping[str, Any]) -> list[WhatIf]:
    """One :class:`WhatIf` per flagged group, in the verdict's order. A group the gate did not work
    out is said to be so (``approve --suppress`` re-gates it from scratch): never estimated here."""
    d = verdict.to_dict() if isinstance(verdict, Verdict) else verdict
    without = d.get("decision_without") or {}
    explained = d.get("explained") or {}
    out = []
    for g in d.get("flagged_subgroups") or []:
        w = without.get(g) or {}
        targets = w.get("targets")
        out.append(
            WhatIf(
                group=g,
                decision=w.get("decision"),
                targets=None if targets is None else int(targets),
                through=explained.get(g),
            )
        )
    return out


__all__ = ["WhatIf", "what_if"]
