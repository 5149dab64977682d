"""The ``Verdict``: the decision record of one gate run (a ledger entry: never edited).

>>> v = Verdict.error("boom", data_hashes={})
>>> v.decision, v.status
('BLOCK', 'error')
>>> Verdict.from_dict(v.to_dict()) == v
True
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from privacy_gate.names import check_key

VerdictDecision = Literal["APPROVE", "REVIEW", "BLOCK"]
Status = Literal["ok", "error", "invalid_input"]
DECISIONS: tuple[str, ...] = ("APPROVE", "REVIEW", "BLOCK")
EXIT_CODES = {"APPROVE": 0, "REVIEW": 3, "BLOCK": 4}


@dataclass(frozen=True)
class Check:
    """One rule evaluated on one metric: which value and which bound decided it.

    ``metric`` is the metric's own name (``auc``, ``mace.advantage_lower``, ``utility.quality``),
    ``attack`` the attack (or ``combined``) it belongs to, ``group`` the audited subgroup; ``key``
    joins them into the flat name the metrics dict uses.
    """

    rule: str  # human form, e.g. "any.auc <= 0.6"
    metric: str
    observed: float | None
    threshold: float | None
    bound: Literal["max", "min", "none"]
    action: Literal["block", "review"]
    passed: bool
    message: str
    attack: str | None = None
    group: str | None = None
    null_reference: float | None = (
        None  # what a release with no leakage would score here (gate.power)
    )

    def __post_init__(self) -> None:
        if self.bound not in ("max", "min", "none") or self.action not in ("block", "review"):
            raise ValueError(
                f"invalid check {self.rule!r}: bound={self.bound!r} action={self.action!r}"
            )

    @property
    def key(self) -> str:
        return check_key(attack=self.attack, metric=self.metric, group=self.group)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "key": self.key}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Check:
        return cls(**{k: v for k, v in d.items() if k != "key"})


@dataclass(frozen=True)
class Verdict:
    decision: VerdictDecision
    status: Status
    reasons: tuple[Check, ...]  # the failing checks (and errors), the "why" of the decision
    checks: tuple[Check, ...] = ()  # every rule evaluation, passed or not
    metrics: dict[str, float] = field(default_factory=dict)
    flagged_subgroups: tuple[str, ...] = ()
    # a flagged group flagged only through a smaller flagged one: group -> the smaller group
    explained: dict[str, str] = field(default_factory=dict)
    # blame's "what if" (gate/blame.py): for each flagged group it tried (on a BLOCK or a REVIEW),
    # the decision of the release-wide figures without the group, {group: {"decision": ...,
    # "targets": n, ...}}
    decision_without: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the flagged group the evidence points at (pipeline/group_blame.py: points_at), if one: its
    # reasons lead, and every one-line reason starts with it
    points_at: str | None = None
    # the effect size of each flagged group (pipeline/group_effects.py), {group: {figure: value}}:
    # its targets, its strongest attack's AUC and TPR at 1% false alarms with their 95% intervals,
    # the records named exposed inside it out of all named; counts and figures only
    group_effects: dict[str, dict[str, Any]] = field(default_factory=dict)
    data_hashes: dict[str, str] = field(default_factory=dict)
    rules_hash: str | None = None
    # the error budget (gate.budget): review and block rates, and every test's p-value and levels
    budget: dict[str, Any] = field(default_factory=dict)
    # default protections turned off (gate.disable, or a stage switched off): key -> reason
    disabled: dict[str, str] = field(default_factory=dict)
    run_id: str | None = None
    created_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def __post_init__(self) -> None:
        if self.decision not in DECISIONS:
            raise ValueError(f"decision must be one of {DECISIONS}, got {self.decision!r}")
        if self.status not in ("ok", "error", "invalid_input"):
            raise ValueError(f"invalid status {self.status!r}")
        if self.status != "ok" and self.decision != "BLOCK":
            raise ValueError("a gate run that did not finish cleanly must BLOCK (fail closed)")

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    @classmethod
    def error(cls, message: str, *, status: Status = "error", **kw: Any) -> Verdict:
        """Fail closed: any error is a BLOCK, with the error as its reason."""
        reason = Check(
            rule="gate completed",
            metric="",
            observed=None,
            threshold=None,
            bound="none",
            action="block",
            passed=False,
            message=message,
        )
        return cls(decision="BLOCK", status=status, reasons=(reason,), **kw)

    def with_run_id(self, run_id: str | None) -> Verdict:
        d = self.to_dict()
        d["run_id"] = run_id
        return Verdict.from_dict(d)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = d.pop("decision")
        d["reasons"] = [c.to_dict() for c in self.reasons]
        d["checks"] = [c.to_dict() for c in self.checks]
        d["metrics"] = {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in self.metrics.items()
        }
        return d

    def summary(self) -> dict[str, Any]:
        """The CLI's ``--json`` line: verdict, status, reasons, metrics, flagged_subgroups,
        run_id."""
        d = self.to_dict()
        return {
            k: d[k]
            for k in ("verdict", "status", "reasons", "metrics", "flagged_subgroups", "run_id")
        }

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        d = dict(d)
        d["decision"] = d.pop("verdict")
        d["reasons"] = tuple(Check.from_dict(c) for c in d.get("reasons", ()))
        d["checks"] = tuple(Check.from_dict(c) for c in d.get("checks", ()))
        d["metrics"] = {
            k: (math.nan if v is None else float(v)) for k, v in d.get("metrics", {}).items()
        }
        d["flagged_subgroups"] = tuple(d.get("flagged_subgroups", ()))
        return cls(**d)

    def __eq__(self, other: object) -> bool:  # NaN-safe comparison via the JSON form
        return isinstance(other, Verdict) and self.to_json(sort_keys=True) == other.to_json(
            sort_keys=True
        )

    __hash__ = None  # type: ignore[assignment]
