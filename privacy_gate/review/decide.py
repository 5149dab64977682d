"""Human review of REVIEW verdicts, from the CLI or a paused flow: both end in :func:`decide_run`.

It checks the decision is allowed (a first decision on a clean REVIEW verdict, on unchanged
data), re-runs the gate on the filtered release when subgroups are suppressed — with the
settings the original run recorded, so the same attacks, epsilon and oracle judge it — publishes
with the approval record, and appends the decision to the MLflow run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from privacy_gate import names, tracking
from privacy_gate.errors import IntegrityError, PrivacyGateError, ReviewError  # noqa: F401 - IntegrityError: what a tampered run raises here
from privacy_gate.publication.publish import ReleaseStore, quarantined_file
from privacy_gate.report.commands import COMMENT_HINT, decision_commands, review_command
from privacy_gate.review.decision_lock import DecisionHold, decision_lock
from privacy_gate.review.decision_recovery import (
    gate_publication,
    resolve_before_deciding,
    resolve_for_review,
)
from privacy_gate.review.decision_recovery import (
    refresh_report as _refresh_report,  # the name tests stub
)
from privacy_gate.review.decision_views import show_decision
from privacy_gate.runs.run_record import RunRecord
from privacy_gate.safe_text import console_lines, mask_secrets
from privacy_gate.tracking import artifact_seal
from privacy_gate.tracking.review_records import (
    ReviewDecision,
    check_decidable,
    check_not_a_regate,
    check_reviewer,
    check_subgroup_decisions,
    pending_text,
    suppressed_with,
)
from privacy_gate.words.checks import reasons_in_words
from privacy_gate.words.evidence import flagged_evidence

if TYPE_CHECKING:  # the re-gate (the whole gate) is imported only when a decision suppresses rows
    from privacy_gate.pipeline.result import RunOutcome

log = logging.getLogger("privacy_gate")


Regate = Callable[..., "RunOutcome"]


def decide_run(
    run_id: str,
    *,
    action: Literal["approve", "reject"],
    reviewer: str,
    comment: str = "",
    subgroups: dict[str, str] | None = None,
    suppress: list[str] | None = None,
    via: str = "cli",
    tracking_uri: str,
    workdir: str,
    regate: Regate | None = None,
) -> ReviewDecision:
    """Check, (re-gate and) publish or reject, and append the decision to the run.

    ``regate``: how to re-run the gate after suppression (default
    :func:`~privacy_gate.runs.regate.regate_run` in this process, imported only then; the CLI
    passes the Prefect flow when a Prefect API is there, so the re-run shows up in the Prefect UI,
    and keeps the outcome for its summary).

    One decision per run: the whole check-then-act holds the run's decision lock (across
    processes) and claim (``decision_lock``); a second decider is refused once the first is
    recorded."""
    check_reviewer(reviewer)  # before the lock, the quarantine fetch and any re-gate
    with decision_lock(tracking_uri, run_id) as local:
        tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
        # a decision a killed decider left half done is completed or rolled back first
        # (decision_recovery)
        resolve_before_deciding(tracker, run_id, by=f"privacy-gate {action} ({via})", locked=local)
        record = RunRecord(
            tracker, run_id
        )  # read under the lock: a decision taken meanwhile is seen
        check_not_a_regate(run_id, tags=record.tags, seal=record.seal)
        record.fetch_quarantine(workdir)
        subgroups = dict(subgroups or {})
        suppress = sorted(set(suppress or []) | {g for g, a in subgroups.items() if a == "reject"})
        current = record.current_sha256()
        check_decidable(run_id, record.verdict, record.decisions, current_sha256=current)
        check_subgroup_decisions(record.verdict, subgroups, suppress)
        if action == "approve":
            suppress = _with_contained_groups(record.verdict, subgroups, suppress)
            record.check_publishable()
        hold = DecisionHold(tracker, run_id, reviewer=reviewer, action=action, local=local)
        hold.claim()
        try:
            # re-checked with the claim held: a rival that decided between our read and our claim
            check_decidable(
                run_id,
                record.verdict,
                [ReviewDecision.from_dict(d) for d in tracker.decisions(run_id)],
                current_sha256=record.current_sha256(),
            )
            # masked here, not only where it is stored: the record read back must equal the decision
            decision = dict(
                action=action,
                reviewer=mask_secrets(reviewer),
                comment=mask_secrets(comment),
                data_sha256=current,
                via=via,
                run_id=run_id,
                subgroups={
                    **{
                        g: "approve"
                        for g in record.verdict.get("flagged_subgroups") or []
                        if action == "approve"
                    },
                    **subgroups,
                    **{g: "reject" for g in suppress},
                },
                suppress=suppress,
            )
            if action == "reject":
                final = ReviewDecision.new(**decision)
                tracker.append_decision(run_id, final.to_dict())
                show_decision(tracker, run_id)
                _refresh_report(tracker, run_id)
                return final
            return _approve(
                tracker,
                record,
                decision,
                suppress=suppress,
                regate=regate,
                tracking_uri=tracking_uri,
                workdir=workdir,
            )
        except BaseException:
            if not _has_decision(tracker, run_id):  # nothing recorded: the run may be decided again
                hold.release()
            raise


def preview_approval(
    run_id: str,
    *,
    reviewer: str,
    suppress: list[str] | None = None,
    tracking_uri: str,
    workdir: str,
    regate: Regate | None = None,
) -> RunOutcome | None:
    """``approve --dry-run``: every check ``approve`` makes before it acts (reviewer, a decidable
    REVIEW on unchanged data, the groups named, a sealed publication), then — with ``suppress`` —
    the re-gate of the filtered release (a ``review_rerun`` run tagged ``gate.dry_run``, never
    decided). Nothing is recorded on the run, no claim is taken and nothing is published. Returns
    the re-gate's outcome (None without ``suppress``); raises a ReviewError as ``approve`` would."""
    check_reviewer(reviewer)
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    record = RunRecord(tracker, run_id)
    check_not_a_regate(run_id, tags=record.tags, seal=record.seal)
    record.fetch_quarantine(workdir)
    check_decidable(
        run_id, record.verdict, record.decisions, current_sha256=record.current_sha256()
    )
    suppress = sorted(set(suppress or []))
    check_subgroup_decisions(record.verdict, {}, suppress)
    suppress = _with_contained_groups(record.verdict, {}, suppress)
    record.check_publishable()
    if not suppress:
        return None
    if regate is None:
        from privacy_gate.runs.regate import regate_run as regate
    log.info(
        "dry run: re-gating the release of run %s without the rows of %s; nothing is decided",
        run_id,
        ", ".join(suppress),
    )
    return regate(
        run_id=run_id, suppress=suppress, tracking_uri=tracking_uri, workdir=workdir, dry_run=True
    )


def _with_contained_groups(
    verdict: dict[str, Any], subgroups: dict[str, str], suppress: list[str]
) -> list[str]:
    """``suppress`` and every flagged group whose rows all go with it (``sex=Female&race=Black``
    with ``race=Black``), so the decision records exactly what was removed. A group approved
    explicitly although its rows go with a suppressed one is refused."""
    gone = suppressed_with(list(verdict.get("flagged_subgroups") or []), suppress)
    contradicted = [g for g in gone if subgroups.get(g) == "approve"]
    if contradicted:
        raise ReviewError(
            f"{contradicted} approved, but their rows are removed with the suppressed "
            f"{[s for s in suppress if s not in contradicted]}; suppress them too or do not "
            "suppress those"
        )
    return sorted(set(suppress) | set(gone))


def _has_decision(tracker: tracking.Tracker, run_id: str) -> bool:
    try:
        return bool(tracker.decisions(run_id))
    except Exception:  # noqa: BLE001 - unknown: keep the claim (it blocks, never publishes)
        return True


def _approve(
    tracker: tracking.Tracker,
    record: RunRecord,
    decision: dict[str, Any],
    *,
    suppress: list[str],
    regate: Regate | None,
    tracking_uri: str,
    workdir: str,
) -> ReviewDecision:
    """(Re-gate and) record the approval, read it back, then publish to the sealed target."""
    run_id = record.run_id
    store = ReleaseStore(workdir=Path(workdir), target=record.publish_target)
    to_publish, rerun_id = record.quarantined(), None
    if suppress:
        if regate is None:
            from privacy_gate.runs.regate import regate_run as regate
        log.info(
            "approving run %s without the rows of %s: re-gating the filtered release first",
            run_id,
            ", ".join(suppress),
        )
        result = regate(
            run_id=run_id, suppress=suppress, tracking_uri=tracking_uri, workdir=workdir
        )
        rerun = result.verdict
        rerun_id = rerun.run_id
        if rerun.decision == "BLOCK":
            reasons = " ".join(f"{w.sentence} ({w.key})" for w in reasons_in_words(rerun))
            raise ReviewError(
                f"after suppressing {suppress} the gate still BLOCKs (re-run {rerun_id}): {reasons}"
            )
        to_publish = quarantined_file(
            Path(result.quarantined), rerun.data_hashes["synthetic_file_sha256"]
        )
    # the approval is recorded, and read back, before anything is published
    approval = ReviewDecision.new(**decision, rerun_id=rerun_id)
    tracker.append_decision(run_id, approval.to_dict())
    recorded = tracker.decisions(run_id)
    if not recorded or ReviewDecision.from_dict(recorded[-1]) != approval:
        raise ReviewError(
            f"the approval of run {run_id} could not be read back from {tracking_uri}; nothing was "
            "published"
        )
    try:
        published = store.publish(
            to_publish,
            dataset=record.dataset,
            verdict=record.verdict["verdict"],
            run_id=run_id,
            config_hash=record.verdict.get("rules_hash"),
            approval=approval.to_dict(),
        )
    except Exception as exc:  # noqa: BLE001 - publication is atomic: nothing partial is visible
        tracker.set_tags(run_id, {names.TAG_APPROVAL_PUBLISHED: f"failed ({type(exc).__name__})"})
        reason = str(exc) if isinstance(exc, PrivacyGateError) else type(exc).__name__
        raise ReviewError(
            f"run {run_id} is approved but publication failed ({reason}); nothing is visible in "
            f"{store.target} — run the gate again to publish"
        ) from None
    tracker.set_tags(run_id, {names.TAG_APPROVAL_PUBLISHED: str(published)})
    show_decision(tracker, run_id)
    _refresh_report(tracker, run_id)
    return ReviewDecision.new(**{**approval.to_dict(), "published": str(published)})


def review_text(run_id: str, *, tracking_uri: str, workdir: str | Path | None = None) -> str:
    """What ``privacy-gate review RUN`` prints: the evidence on each flagged group first (from the
    audit's recorded figures), then the decision state (a pending run: the complete commands that
    decide it, pointed at ``workdir``, default the one the run recorded) and the rule checks."""
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    recovered = resolve_for_review(tracker, run_id)  # a half-done decision: resolved and said first
    record = RunRecord(tracker, run_id)
    commands = decision_commands(
        run_id,
        tracking_uri=tracking_uri,
        workdir=workdir if workdir is not None else record.tags.get(names.TAG_WORKDIR),
        flagged=record.verdict.get("flagged_subgroups") or [],
        with_review=False,
    )
    text = pending_text(
        run_id,
        record.verdict,
        record.decisions,
        published=record.tags.get(names.TAG_APPROVAL_PUBLISHED),
        evidence=flagged_evidence(record.subgroup_rows(), record.verdict),
        commands=commands,
        command_note=COMMENT_HINT,
    )
    if (
        record.verdict.get("verdict") == "APPROVE"
        and record.tags.get(names.TAG_KIND) in names.PUBLISHING_KINDS
    ):  # read from the target when the run could not record it (a full disk)
        where = gate_publication(record.tags)
        text += "\n" + console_lines(
            [f"published: {where}" if where else "not published: the release stays in quarantine"]
        )
    changed = record.artifact_changes()  # named first, loudly: approve refuses such a run
    head = artifact_seal.warning_lines(run_id, changed) + recovered
    return f"{console_lines(head)}\n{text}" if head else text


def pending_runs_text(*, tracking_uri: str, workdir: str | Path | None = None) -> str:
    """What ``privacy-gate review --pending`` prints: for each REVIEW run awaiting a decision
    (oldest first) its run id, dataset, start and flagged groups, then the command that shows its
    evidence and the commands that decide it (pointed at ``workdir``)."""
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    runs = tracker.runs_awaiting_review()
    if not runs:
        return "no runs awaiting review"
    lines = [
        f"{len(runs)} run(s) awaiting review, oldest first; read each one's evidence, then approve "
        "or reject:"
    ]
    for r in runs:
        flagged = ", ".join(r["flagged"]) or "none"
        lines.append(f"{r['run_id']}  {r['dataset']}  {r['started']}  flagged: {flagged}")
        lines.append(f"  {review_command(r['run_id'], tracking_uri=tracking_uri, workdir=workdir)}")
    return console_lines(lines)
