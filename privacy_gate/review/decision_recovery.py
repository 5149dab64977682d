"""Decisions a killed process left half done: found, then completed or rolled back.

``approve`` is a sequence: (1) its record ``review/decision-NNN-approve.json`` is written, (2) the
approval tags (``approval.status=approved``, ``approval.published=none``), (3) the release is
published (staged, then renamed into the target, or its manifest PUT last: atomic either way),
(4) ``approval.published`` names where. ``reject`` is (1) and (2). A process killed between (1)
and (4) used to leave a run that ``review --pending`` listed, ``review`` called decided,
``approve`` refused as "already approved" and ``doctor`` did not see: stuck.

**The rule: an approval takes effect when its release is published.**

- Published (the sealed target holds the release, with a manifest naming this run and this
  approval): the approval took effect; its tags are *completed* (``approval.status=approved``,
  ``approval.published=<where>``).
- Not published: the approval did not take effect; it is *rolled back*. A void record
  (``decision_log``) cancels it, the approval tags return to ``pending``, the claim is withdrawn:
  the run is listed by ``review --pending`` and can be decided again.
- A rejection publishes nothing: its record is completed (``approval.status=rejected``), never
  rolled back (fail closed).

Why roll back an unpublished approval rather than publish it:

1. the killed ``approve`` never told its reviewer it had published; for them the command failed,
   and a command that failed leaves nothing done — its commit point is the publication, the one
   step that cannot be undone;
2. completing would publish from ``doctor --fix``, ``review`` or ``reject``, commands whose user
   did not ask for a publication, and without the checks ``approve`` makes at the time it
   publishes (the quarantined bytes, the seal, the sealed artifacts, a re-gate's outcome);
3. a decision record is an artifact: if a record alone could lead to publication, anyone able to
   write the artifact store could get a REVIEW release published by planting one. Rolled back, a
   planted record only costs a void record.

The cost is that the reviewer runs ``approve`` again (it says why).

Who resolves: the next ``approve`` / ``reject`` on the run (under its decision lock, before it
reads the run), ``review RUN`` (when the decision lock is free within ``READ_WAIT_S``) and
``doctor --fix``; ``doctor`` without ``--fix`` reports. Never while the decider may still be
alive: on a local store a live decider holds the decision lock (which dies with its process); on
a server store the claim tag names the decider's host and PID, and only that host can tell — a
claim of another host is reported and left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from privacy_gate import names, tracking
from privacy_gate.errors import IntegrityError, PrivacyGateError
from privacy_gate.publication import objectstore
from privacy_gate.publication.publish import (
    PublishError,
    dataset_slug,
    verify_published,
    verify_published_s3,
)
from privacy_gate.review.decision_lock import DecisionBusy, claim_owner_gone, decision_lock
from privacy_gate.review.decision_views import show_decision
from privacy_gate.tracking import decision_log, signing

log = logging.getLogger("privacy_gate")

#: how long ``review`` and ``doctor`` wait for a run's decision lock before calling it in progress
READ_WAIT_S = 3.0
#: the approval tags a rollback removes (``approval.status`` goes back to pending)
DECIDED_TAGS = (
    names.TAG_APPROVAL_REVIEWER,
    names.TAG_APPROVAL_AT,
    names.TAG_APPROVAL_COMMENT,
    names.TAG_APPROVAL_SHA,
    names.TAG_APPROVAL_PUBLISHED,
    names.TAG_DECISION_CLAIM,
)


@dataclass(frozen=True)
class Resolution:
    """What was found on one run, and what was (or would be) done."""

    run_id: str
    line: str
    fixed: bool
    kind: str  # rolled-back | completed | reset | in-progress | elsewhere


def published_release(target: str, dataset: str, sha256: str) -> tuple[str, dict[str, Any]] | None:
    """(data file or object, verified manifest) of the release of ``dataset`` with content
    ``sha256`` if ``target`` holds it under the reader contract, else None."""
    name = f"{dataset_slug(dataset)}-{sha256[:12]}"
    try:
        if objectstore.is_s3(target):
            folder = objectstore.join(str(target).rstrip("/"), name)
            manifest = verify_published_s3(folder)
            where = objectstore.join(folder, manifest["file"])
        else:
            local = Path(target).resolve() / name
            if not local.is_dir():
                return None
            manifest = verify_published(local)
            where = str(local / manifest["file"])
    except PublishError:
        return None
    return (where, manifest) if manifest.get("sha256") == sha256 else None


def gate_publication(tags: dict[str, str]) -> str | None:
    """Where a gate run's release is published: its ``gate.published`` tag, else (the run could
    not write it: a full disk, a killed process) the release it judged (``gate.synthetic_sha256``)
    found complete in the publish target it recorded. Read from the target, never assumed."""
    if tags.get(names.TAG_PUBLISHED):
        return str(tags[names.TAG_PUBLISHED])
    target, sha = tags.get(names.TAG_PUBLISH_TARGET), tags.get(names.TAG_SYNTHETIC_SHA)
    if not target or not sha:
        return None
    try:
        found = published_release(target, tags.get(names.TAG_DATASET) or "dataset", sha)
    except PrivacyGateError:
        return None
    return found[0] if found else None


def publication_of(
    tracker: tracking.Tracker, run_id: str, decision: dict[str, Any], tags: dict[str, str]
) -> str | None:
    """Where ``decision`` (an approval of ``run_id``) was published, if it was: the release it
    publishes (the run's, or its re-gate's) in the target sealed in the run's verified verdict,
    with a manifest naming this run and this approval."""
    verdict, seal = tracker.read_verified(run_id)
    sha = (verdict.get("data_hashes") or {}).get("synthetic_file_sha256")
    if decision.get("rerun_id"):
        sha = (tracker.read_verified(decision["rerun_id"])[0].get("data_hashes") or {}).get(
            "synthetic_file_sha256"
        )
    target = seal.get(names.SEAL_PUBLISH_TARGET)
    if not target or not sha:
        return None
    found = published_release(
        str(target), seal.get(names.SEAL_DATASET) or tags.get(names.TAG_DATASET) or "dataset", sha
    )
    if found is None:
        return None
    where, manifest = found
    approval = manifest.get("approval") or {}
    mine = manifest.get("run_id") == run_id and all(
        approval.get(k) == decision.get(k) for k in ("action", "reviewer", "at")
    )
    return where if mine else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def refresh_report(tracker: tracking.Tracker, run_id: str) -> None:
    """Re-render the run's HTML report after a decision; the decision stands even if this fails."""
    log.info("re-rendering the HTML report of run %s with the decision", run_id)
    try:
        # the report's figures load matplotlib and the estimators: imported only when one is
        # rendered
        from privacy_gate.report.html import log_report

        log_report(tracker, run_id)
    except Exception as exc:  # noqa: BLE001 - the record stands; the report is derived
        log.warning(
            "could not re-render the HTML report of run %s (%s)", run_id, type(exc).__name__
        )


def _to_pending(tracker: tracking.Tracker, run_id: str, tags: dict[str, str], note: str) -> None:
    tracker.set_tags(
        run_id, {names.TAG_APPROVAL_STATUS: "pending", names.TAG_APPROVAL_RECOVERED: note}
    )
    for key in DECIDED_TAGS:
        if key in tags:
            tracker.delete_tag(run_id, key)


def _rollback(
    tracker: tracking.Tracker,
    run_id: str,
    tags: dict[str, str],
    path: str,
    text: str,
    *,
    by: str,
    reason: str,
) -> str:
    """Void the approval at ``path`` (its record, then its digest in ``approval.voids``: the void
    counts from then on), then the tags back to pending; returns the void record's path."""
    void = decision_log.void_record(run_id, path, text, at=_now(), by=by, reason=reason, tags=tags)
    if void is None:
        raise IntegrityError(
            f"run {run_id} is signed: rolling back its interrupted approval ({path}) needs the "
            f"signing key — set {names.ENV_SIGNING_KEY} and run the command again"
        )
    void_path = tracker.append_record(run_id, void)
    tracker.set_tags(
        run_id, {names.TAG_APPROVAL_VOIDS: decision_log.voids_tag(tags, void["digest"])}
    )
    _to_pending(
        tracker, run_id, tags, f"{_now()}: {path} voided by {by} ({void_path}); pending again"
    )
    return void_path


def _plan(
    tracker: tracking.Tracker, run_id: str, tags: dict[str, str], *, by: str
) -> tuple[str, str, str, Callable[[], str]] | None:
    """(what was found, what --fix does, kind, the fix returning what it did) for a run whose
    decision log and tags disagree; None when they agree."""
    files = tracker.decision_files(run_id)
    judged = (
        (tracker.read_verified(run_id)[0].get("data_hashes") or {}).get("synthetic_file_sha256")
        if files
        else None
    )
    last = decision_log.effective(run_id, files, tags, release_sha256=judged).last()
    status = tags.get(names.TAG_APPROVAL_STATUS)
    if last is None:
        if status not in ("approved", "rejected"):
            return None

        def reset() -> str:
            _to_pending(tracker, run_id, tags, f"{_now()}: reset to pending by {by}")
            return "approval.status is pending again"

        return (
            (
                f"run {run_id}: approval.status is {status} but no decision stands in its "
                f"{names.DECISIONS_DIR}/ "
                "log (a rollback was interrupted)"
            ),
            "sets approval.status back to pending",
            "reset",
            reset,
        )
    path, decision = last
    who = f"by {decision.get('reviewer')} at {decision.get('at')} ({path})"
    if decision.get("action") == "reject":
        if status == "rejected":
            return None

        def complete_rejection() -> str:
            tracker.set_tags(
                run_id,
                {
                    **decision_log.approval_tags(decision),
                    names.TAG_APPROVAL_RECOVERED: f"{_now()}: completed by {by}",
                },
            )
            return "completed: approval.status=rejected, nothing published"

        return (
            (
                f"run {run_id}: the rejection {who} was recorded but its tags were not set (the "
                "rejecting "
                "process was killed)"
            ),
            "completes it (approval.status=rejected; nothing is published)",
            "completed",
            complete_rejection,
        )
    published = tags.get(names.TAG_APPROVAL_PUBLISHED)
    if decision.get("action") != "approve" or (
        status == "approved" and published and published != "none"
    ):
        return None  # consistent (published, or a publication failure the approver reported)
    where = publication_of(tracker, run_id, decision, tags)
    if where:

        def complete_approval() -> str:
            tracker.set_tags(
                run_id,
                {
                    **decision_log.approval_tags({**decision, "published": where}),
                    names.TAG_APPROVAL_RECOVERED: f"{_now()}: publication recorded by {by}",
                },
            )
            return f"completed: approval.status=approved, approval.published={where}"

        return (
            (
                f"run {run_id}: the approval {who} was published to {where} but its tags do not "
                "say so (the "
                "approving process was killed)"
            ),
            "completes them (approval.status=approved, approval.published)",
            "completed",
            complete_approval,
        )

    def roll_back() -> str:
        reason = (
            "the approving process was killed before the release was published: the approval "
            "never took effect and nothing was published"
        )
        void_path = _rollback(tracker, run_id, tags, path, dict(files)[path], by=by, reason=reason)
        return (
            f"rolled back: {void_path} cancels it, nothing was published, approval.status is "
            "pending — decide "
            f"again with `privacy-gate approve {run_id} --reviewer NAME` (or reject)"
        )

    return (
        (
            f"run {run_id}: the approval {who} was recorded but its release was never published "
            "(the approving "
            "process was killed)"
        ),
        "rolls it back (a void record cancels it; the run awaits a decision again)",
        "rolled-back",
        roll_back,
    )


def resolve(
    tracker: tracking.Tracker, run_id: str, *, fix: bool, by: str, locked: bool
) -> Resolution | None:
    """Find a half-done decision on ``run_id`` and, with ``fix``, resolve it (module doc); None
    when the run's records and tags agree. ``locked``: the caller holds the run's decision lock
    (a local store), so no decider is alive; otherwise the claim tag tells (a server store)."""
    tags = tracker.run_tags(run_id)
    if tags.get(names.TAG_VERDICT) != "REVIEW":
        return None
    plan = _plan(tracker, run_id, tags, by=by)
    if plan is None:
        return None
    found, remedy, kind, act = plan
    claim = tags.get(names.TAG_DECISION_CLAIM)
    gone = True if locked else claim_owner_gone(claim)
    if gone is False:
        return Resolution(
            run_id,
            f"{found}; its decider is still running ({claim}); left alone",
            False,
            "in-progress",
        )
    if gone is None:
        return Resolution(
            run_id,
            f"{found}; its decider ({claim}) ran on another host, the only one that can tell "
            f"whether it is gone — if it is, delete the run's {names.TAG_DECISION_CLAIM} tag and "
            "run `privacy-gate doctor --fix`",
            False,
            "elsewhere",
        )
    if not fix:
        return Resolution(run_id, f"{found}; --fix {remedy}", False, kind)
    if (
        signing.run_key(tags) is None
    ):  # a signed run: its records and report are sealed with the key
        return Resolution(
            run_id,
            f"{found}; the run is signed: set {names.ENV_SIGNING_KEY} to the gate's key to "
            "resolve it",
            False,
            "unchecked",
        )
    done = act()
    show_decision(tracker, run_id)  # completed or rolled back: its name and description say which
    refresh_report(tracker, run_id)
    return Resolution(run_id, f"{found}; {done}", True, kind)


def resolve_before_deciding(
    tracker: tracking.Tracker, run_id: str, *, by: str, locked: bool
) -> None:
    """What ``approve`` / ``reject`` do first, under the run's decision lock: a half-done decision
    left by a killed decider is resolved (and said so), then the run is read as usual."""
    out = resolve(tracker, run_id, fix=True, by=by, locked=locked)
    if out is not None:
        log.warning("%s", out.line)


def resolve_for_review(tracker: tracking.Tracker, run_id: str) -> list[str]:
    """What ``review RUN`` does first: resolve a half-done decision (if the decision lock is free
    within ``READ_WAIT_S``); returns the lines to print before the run (what was done, the
    approvals voided earlier, void records that do not count)."""
    try:
        with decision_lock(tracker.uri, run_id, timeout=READ_WAIT_S) as local:
            out = resolve(tracker, run_id, fix=True, by="privacy-gate review", locked=local)
            history = tracker.decision_log(run_id)
    except DecisionBusy:
        return [
            f"NOTE: a decision on run {run_id} is in progress (its decision lock is held); what "
            "follows may change"
        ]
    except IntegrityError:
        raise
    except PrivacyGateError as exc:
        return [f"NOTE: run {run_id}: a half-done decision could not be checked ({exc})"]
    lines = [f"RECOVERED: {out.line}" if out.fixed else f"NOTE: {out.line}"] if out else []
    lines += [
        f"voided: the approval by {v.get('voided_reviewer')} at {v.get('voided_at')} "
        f"({v.get('voids')}) — {v.get('reason')}"
        for v in history.voided
    ]
    lines += [f"WARNING: {line}" for line in history.ignored]
    return lines


def doctor_check(tracker: tracking.Tracker, *, fix: bool) -> tuple[list[Resolution], list[str]]:
    """``doctor``'s check of every REVIEW run whose decision log and tags may disagree: pending
    runs with decision records, approvals tagged unpublished, runs with void records. Returns
    (resolutions, notes); a decision in progress is a note, not a finding."""
    queries = (
        f"tags.`{names.TAG_VERDICT}` = 'REVIEW' AND tags.`{names.TAG_APPROVAL_STATUS}` = 'pending'",
        f"tags.`{names.TAG_APPROVAL_STATUS}` = 'approved' AND "
        f"tags.`{names.TAG_APPROVAL_PUBLISHED}` = 'none'",
        f"tags.`{names.TAG_APPROVAL_VOIDS}` LIKE '%'",
    )
    runs = sorted({r.info.run_id for q in queries for r in tracker.find_runs(q)})
    out, notes = [], []
    for run_id in runs:
        try:
            with decision_lock(tracker.uri, run_id, timeout=READ_WAIT_S) as local:
                found = resolve(
                    tracker, run_id, fix=fix, by="privacy-gate doctor --fix", locked=local
                )
        except DecisionBusy:
            notes.append(
                f"run {run_id}: a decision is in progress (its decision lock is held); not checked"
            )
            continue
        except PrivacyGateError as exc:
            found = Resolution(
                run_id,
                f"run {run_id}: its decision records could not be checked ({exc})",
                False,
                "unchecked",
            )
        if found is not None and found.kind == "in-progress":
            notes.append(found.line)
        elif found is not None:
            out.append(found)
    return out, notes


__all__ = [
    "READ_WAIT_S",
    "Resolution",
    "doctor_check",
    "publication_of",
    "gate_publication",
    "published_release",
    "refresh_report",
    "resolve",
    "resolve_before_deciding",
    "resolve_for_review",
]
