"""Human review of REVIEW verdicts: decision records and the rules for accepting them.

A decision is an appended record (who, when, what, comment, data hash) — like the verdict, never
edited. What may be decided: only a REVIEW verdict that finished cleanly, only once, and only
while the quarantined release still has the hash the gate judged.

>>> d = ReviewDecision.new(action="approve", reviewer="ana", data_sha256="ab" * 32)
>>> d.action, d.reviewer
('approve', 'ana')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from privacy_gate.errors import ReviewError
from privacy_gate.names import (
    KIND_REVIEW_RERUN,
    SEAL_REGATE_OF,
    SUPPRESS_COPIES,
    SUPPRESS_EXPOSED,
    TAG_KIND,
    TAG_RERUN_OF,
    exposure_metric,
)
from privacy_gate.safe_text import console_lines
from privacy_gate.words.checks import reasons_in_words
from privacy_gate.words.what_if import what_if

Action = Literal["approve", "reject"]


def check_reviewer(reviewer: str) -> None:
    """Refuse a decision without a reviewer name before any work is done: an empty name (e.g.
    ``--reviewer "$USER"`` with ``USER`` unset) must not re-gate for a minute and then refuse.

    >>> check_reviewer("ada")
    >>> check_reviewer("  ")
    Traceback (most recent call last):
    ...
    privacy_gate.errors.ReviewError: a decision needs a reviewer name (--reviewer NAME); the one
    given is empty, so nothing was re-gated, published or recorded
    """
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise ReviewError(
            "a decision needs a reviewer name (--reviewer NAME); the one given is "
            "empty, so nothing was re-gated, published or recorded"
        )


def decision_words(decision: Any, *, published: str | None = None, short: bool = False) -> str:
    """A reviewer's decision in a few words, for every surface that shows it (the report's verdict
    card, the MLflow run description, a Prefect state): ``approved by ana: published`` (``without
    race=X``: what was suppressed), ``rejected by ana: nothing is published``. ``decision``: a
    :class:`ReviewDecision` or its record; ``published``: where the release went, if it did
    (``short``: said without the place).

    >>> approval = {"action": "approve", "reviewer": "ana", "suppress": ["race=X"]}
    >>> decision_words(approval, published="/p/x")
    'approved by ana without race=X: published to /p/x'
    >>> decision_words({"action": "reject", "reviewer": "bo"})
    'rejected by bo: nothing is published'
    """
    d = decision.to_dict() if isinstance(decision, ReviewDecision) else dict(decision)
    where = published or d.get("published")
    if d.get("action") == "approve":
        suppressed = list(d.get("suppress") or [])
        who = f"approved by {d.get('reviewer')}"
        who += f" without {', '.join(suppressed)}" if suppressed else ""
        if not where or where == "none":
            return f"{who}: not published yet"
        return f"{who}: published" + ("" if short else f" to {where}")
    return f"rejected by {d.get('reviewer')}: nothing is published"


@dataclass(frozen=True)
class ReviewDecision:
    action: Action
    reviewer: str
    at: str
    data_sha256: str  # the quarantined release the reviewer decided on
    comment: str = ""
    subgroups: dict[str, str] = field(default_factory=dict)  # flagged group -> approve | reject
    suppress: tuple[str, ...] = ()  # groups whose synthetic rows were removed before publishing
    via: Literal["cli", "flow"] = "cli"
    rerun_id: str | None = None  # gate re-run on the filtered release (with --suppress)
    published: str | None = None
    # the run decided: a record copied into another run's log is refused there (decision_log);
    # None in records made before decisions named their run
    run_id: str | None = None

    def __post_init__(self) -> None:
        if self.action not in ("approve", "reject"):
            raise ValueError(f"action must be approve or reject, got {self.action!r}")
        check_reviewer(self.reviewer)
        bad = {g: a for g, a in self.subgroups.items() if a not in ("approve", "reject")}
        if bad:
            raise ReviewError(f"subgroup decisions must be 'approve' or 'reject', got {bad}")

    @classmethod
    def new(cls, **kw: Any) -> ReviewDecision:
        kw.setdefault("at", datetime.now(UTC).isoformat(timespec="seconds"))
        kw["suppress"] = tuple(kw.get("suppress", ()))
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["suppress"] = list(self.suppress)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReviewDecision:
        return cls(**{**d, "suppress": tuple(d.get("suppress", ()))})


def check_decidable(
    run_id: str,
    verdict: dict[str, Any],
    decisions: list[ReviewDecision],
    *,
    current_sha256: str | None,
) -> None:
    """Refuse, with a message that says why and what to do, anything but a first decision on a
    clean REVIEW verdict whose quarantined release is unchanged."""
    if decisions:
        first = decisions[0]
        done = {"approve": "approved", "reject": "rejected"}[first.action]
        raise ReviewError(
            f"run {run_id} was already {done} by {first.reviewer} at {first.at}; "
            "decisions are final — run the gate again for a new decision"
        )
    if verdict["verdict"] == "BLOCK":
        raise ReviewError(
            f"run {run_id} was BLOCKed ({verdict['status']}); a BLOCK cannot be approved — fix the "
            "release and run the gate again"
        )
    if verdict["verdict"] == "APPROVE":
        raise ReviewError(
            f"run {run_id} was approved by the gate itself; there is nothing to review"
        )
    expected = (verdict.get("data_hashes") or {}).get("synthetic_file_sha256")
    if not expected:
        raise ReviewError(
            f"run {run_id} recorded no hash of its synthetic release; it cannot be approved"
        )
    if current_sha256 is None:
        raise ReviewError(f"the quarantined release of run {run_id} is gone; run the gate again")
    if current_sha256 != expected:
        raise ReviewError(
            f"the quarantined release of run {run_id} changed since the gate judged it "
            f"(sha256 {current_sha256[:12]}… != {expected[:12]}…); refusing to decide on other data"
        )


def check_not_a_regate(run_id: str, *, tags: dict[str, str], seal: dict[str, Any]) -> None:
    """Refuse to decide the run of a re-gate (``approve RUN --suppress``) on its own: it is decided
    with its parent, whose approval publishes its release. Known from the verdict's seal (a
    tag can be edited) or, for runs recorded before the seal said so, from the run's kind."""
    parent = seal.get(SEAL_REGATE_OF)
    if not parent and tags.get(TAG_KIND) == KIND_REVIEW_RERUN:
        parent = tags.get(TAG_RERUN_OF) or "(its parent: tag missing)"
    if parent:
        raise ReviewError(
            f"run {run_id} is the re-gate of run {parent} (made by approve --suppress); a "
            "re-gate's "
            f"run is decided with its parent, never alone — review or decide run {parent}"
        )


def check_subgroup_decisions(
    verdict: dict[str, Any], subgroups: dict[str, str], suppress: list[str]
) -> None:
    """Per-group decisions must name flagged groups; a rejected group must be suppressed to publish.
    ``exposed`` (the exposed records' synthetic neighbours) may be suppressed when the run
    scanned for exposed records, ``copies`` (rows that copy training records) always."""
    flagged = list(verdict.get("flagged_subgroups") or [])
    metrics = verdict.get("metrics") or {}
    exposure_seen = exposure_metric("tested") in metrics
    allowed = flagged + ([SUPPRESS_EXPOSED] if exposure_seen else [])
    # copies (rows reproducing training records beyond the twin rate) may always be suppressed
    unknown = [
        g
        for g in list(subgroups) + [s for s in suppress if s != SUPPRESS_COPIES]
        if g not in allowed
    ]
    if unknown:
        raise ReviewError(
            f"{unknown} are not flagged subgroups of this run; flagged: {flagged or 'none'}"
            + ("" if exposure_seen else f" ('{SUPPRESS_EXPOSED}': no record was singled out)")
        )


def suppressed_with(flagged: list[str], suppress: list[str]) -> list[str]:
    """The flagged groups whose rows all go when ``suppress`` is applied: each group that is
    suppressed itself or lies inside a suppressed one (it has every condition of that group, its
    values among that group's). Recorded as suppressed, never as approved.

    >>> flagged = ["race=Black", "sex=Female&race=Black", "sex=Female", "race=Other|Black"]
    >>> suppressed_with(flagged, ["race=Black"])
    ['race=Black', 'sex=Female&race=Black']
    >>> suppressed_with(["race=Black", "native_country=Laos"], ["race=Other|Black", "exposed"])
    ['race=Black']
    """
    from privacy_gate.experiment.grouping import RARE_SEPARATOR, parse_group_label

    def conditions(label: str) -> dict[str, set[str]] | None:
        try:
            return {
                col: set(value.split(RARE_SEPARATOR))
                for col, value in parse_group_label(label).items()
            }
        except ValueError:  # not a subgroup label ("exposed")
            return None

    removed = [c for c in (conditions(label) for label in suppress) if c]
    out = []
    for group in flagged:
        mine = conditions(group)
        if mine and any(
            all(col in mine and mine[col] <= values for col, values in s.items()) for s in removed
        ):
            out.append(group)
    return out


def pending_text(
    run_id: str,
    verdict: dict[str, Any],
    decisions: list[ReviewDecision],
    *,
    published: str | None = None,
    evidence: list[str] | None = None,
    commands: Sequence[str] = (),
    command_note: str = "",
) -> str:
    """What `privacy-gate review RUN_ID` shows (``published``: where the approved release went;
    ``evidence``: one sentence per flagged group, ``words.evidence.flagged_evidence``, shown first;
    ``commands``: the complete commands that decide a pending run, with ``command_note`` beside
    them)."""
    lines = [f"run {run_id}: {verdict['verdict']} (status {verdict['status']})"]
    if evidence:
        lines.append("evidence:")
        lines += [f"  - {sentence}" for sentence in evidence]
    if decisions:
        d = decisions[0]
        lines.append(
            f"decided: {d.action} by {d.reviewer} at {d.at}"
            + (f" — {d.comment}" if d.comment else "")
        )
        if d.suppress:
            lines.append(f"  suppressed: {', '.join(d.suppress)}")
        if d.published or (published and published != "none" and d.action == "approve"):
            lines.append(f"  published: {d.published or published}")
    elif verdict["verdict"] == "REVIEW":
        lines.append(
            "PENDING REVIEW — decide with one of"
            + (f" ({command_note})" if command_note else "")
            + ":"
        )
        lines += [f"  {c}" for c in commands]
    flagged = set(verdict.get("flagged_subgroups") or [])
    reasons = list(
        zip(verdict.get("reasons") or [], reasons_in_words(verdict))
    )  # each reason in words, its key after
    if flagged:
        lines.append("flagged subgroups (rule checks):")
        lines += [f"  - {w.sentence} ({w.key})" for c, w in reasons if c.get("group") in flagged]
        lines.append("what suppressing each would do:")
        lines += [f"  - {w.sentence()}" for w in what_if(verdict)]
    other = [w for c, w in reasons if not c.get("group")]
    if other:
        lines.append("other reasons:")
        lines += [f"  - [{w.action}] {w.sentence} ({w.key})" for w in other]
    return console_lines(lines)  # labels, comments and sentences hold data: one line each
