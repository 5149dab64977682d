"""What suppressing each flagged group would do, in words, as far as the gate worked it out:
blame's decision of the release-wide figures without the group (``Verdict.decision_without``:
tried on a BLOCK and on a REVIEW, the three smallest groups first,
:mod:`privacy_gate.pipeline.group_blame`), or the smaller group a larger one is flagged through
(``Verdict.explained``). A group the gate did not work out is said to be so: ``approve
--suppress`` re-gates the rest from scratch, and nothing here estimates it.

>>> v = {"flagged_subgroups": ["race=X", "sex=F", "age=90"], "explained": {"sex=F": "race=X"},
...      "decision_without": {"race=X": {"decision": "APPROVE", "targets": 40, "rows": 120,
...                                      "remeasured": ["copies", "scan"]}}}
>>> for w in what_if(v):
...     print(w.short())
Without it: APPROVE.
Flagged through race=X.
What suppressing it gives: not worked out before a re-gate.
>>> print(what_if(v)[0].sentence())  # doctest: +NORMALIZE_WHITESPACE
Suppress race=X: without its 40 targets, and the member scan and the copy test measured again
without its 120 synthetic rows, the release-wide figures give APPROVE.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from privacy_gate.gate.human import human_number
from privacy_gate.gate.verdict import Verdict

#: the tests a what-if measures again without a group's synthetic rows, as a sentence names them
_TEST_NAMES = {
    "scan": "the member scan",
    "copies": "the copy test",
    "agreement": "the agreement scan",
}


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
    rows: int | None = None  # the group's synthetic rows, when tests were measured without them
    remeasured: tuple[str, ...] = ()  # those tests (budget test names)

    def sentence(self) -> str:
        if self.decision is not None:
            alone = " (suppressing it alone would not do)" if self.decision == "BLOCK" else ""
            return (
                f"Suppress {self.group}: without its {human_number(self.targets)} targets"
                f"{self._again()} the release-wide figures give {self.decision}{alone}."
            )
        if self.through is not None:
            return (
                f"Suppress {self.group}: flagged only through {self.through} (without "
                f"{self.through}'s targets its "
                "test is not significant); the gate did not work out the verdict without it."
            )
        return (
            f"Suppress {self.group}: not worked out by the gate (it works out the three "
            "smallest flagged groups that hold at most half the targets); approving with "
            "--suppress re-gates the rest before anything is published."
        )

    def _again(self) -> str:
        """``, and the member scan ... measured again without its N synthetic rows,`` or ''."""
        if self.rows is None or not self.remeasured:
            return ""
        named = [_TEST_NAMES[t] for t in _TEST_NAMES if t in self.remeasured]
        named += [f"the {t} test" for t in self.remeasured if t not in _TEST_NAMES]
        rows = human_number(self.rows)
        return f", and {' and '.join(named)} measured again without its {rows} synthetic rows,"

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
        targets, rows = w.get("targets"), w.get("rows")
        out.append(
            WhatIf(
                group=g,
                decision=w.get("decision"),
                targets=None if targets is None else int(targets),
                through=explained.get(g),
                rows=None if rows is None else int(rows),
                remeasured=tuple(w.get("remeasured") or ()),
            )
        )
    return out


__all__ = ["WhatIf", "what_if"]
