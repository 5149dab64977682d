"""``privacy-gate review`` / ``approve`` / ``reject``: a person's decision on a REVIEW verdict.

These commands start often and wait on nobody: they import MLflow (through
``privacy_gate.tracking``) and the review records, never the attacks, generators, Prefect or Great
Expectations — except ``approve --suppress``, which re-runs the gate on the filtered release.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from privacy_gate.cli.common import (
    EXIT_BLOCK,
    EXIT_USAGE,
    CommentOpt,
    ReviewerOpt,
    TrackingOpt,
    WorkdirOpt,
    app,
    cli_logger,
    exit_codes,
    quiet_env,
    say,
    show,
    store_uri,
    use_prefect,
)


class RegateWatch:
    """The re-gate ``approve --suppress`` runs (``run``: the Prefect flow, or None for this
    process), keeping its outcome: the summary says what it removed and what it decided, and a
    re-gate that BLOCKs exits 4 like any BLOCK."""

    def __init__(self, run: Callable[..., Any] | None = None):
        self.run = run
        self.outcome: Any = None

    def __call__(self, **kwargs: Any) -> Any:
        run = self.run
        if run is None:
            from privacy_gate.runs.regate import regate_run as run
        self.outcome = run(**kwargs)
        return self.outcome


def _regate_watch(suppress: list[str]) -> RegateWatch | None:
    """The watch over a ``--suppress`` re-gate, None without one. The re-gate takes as long as a
    gate: its stage lines go to stderr, as gate/run print them; it runs as a Prefect flow only when
    a Prefect API is there to record it, otherwise in this process (never a temporary Prefect
    server that may not come up)."""
    if not suppress:
        return None
    cli_logger()
    if use_prefect("auto"):
        from privacy_gate.flows import regate_flow

        return RegateWatch(regate_flow)
    return RegateWatch()


def decide(
    run_id: str,
    action: str,
    *,
    reviewer: str,
    comment: str,
    suppress: list[str],
    workdir: Path,
    tracking_uri: str | None,
) -> None:
    quiet_env()
    from privacy_gate.errors import PrivacyGateError, is_infrastructure_error
    from privacy_gate.safe_text import mask_uri

    uri = store_uri(workdir, tracking_uri)
    regate = _regate_watch(suppress)
    try:
        from privacy_gate.review.decide import decide_run

        decision = decide_run(
            run_id,
            action=action,
            reviewer=reviewer,
            comment=comment,
            suppress=suppress,
            tracking_uri=uri,
            workdir=str(workdir),
            regate=regate,
        )
    except Exception as exc:
        if is_infrastructure_error(exc):  # converted at the store's boundary, credentials masked
            what = (
                str(exc)
                if isinstance(exc, PrivacyGateError)
                else f"the MLflow store {mask_uri(uri)} stopped answering ({type(exc).__name__})"
            )
            say(
                f"error: {what}; run {run_id} may be undecided — check it with: "
                f"privacy-gate review {run_id}",
                err=True,
            )
            raise typer.Exit(EXIT_USAGE) from None
        if not isinstance(exc, PrivacyGateError):
            raise
        if (
            regate is not None and regate.outcome is not None
        ):  # re-gated, then refused (a BLOCK): say both
            regate_summary(regate.outcome)
            if regate.outcome.verdict.decision == "BLOCK":
                say("not published: the gate BLOCKs the filtered release too")
                say(f"run {run_id} still awaits a decision: suppress more, or reject it:")
                say(f"  {reject_command(run_id, uri=uri, workdir=workdir)}")
                raise typer.Exit(EXIT_BLOCK) from None
        say(f"refused: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    if regate is not None and regate.outcome is not None:
        regate_summary(regate.outcome)
    done = {"approve": "approved", "reject": "rejected"}[decision.action]
    say(f"{done} run {run_id} as {decision.reviewer} at {decision.at}")
    if decision.suppress:
        say(
            f"recorded as suppressed: {', '.join(decision.suppress)} (gate re-run "
            f"{decision.rerun_id})"
        )
    settle_prefect(run_id, uri=uri, action=action)
    # the last line: where the release went (scripts read it)
    say(f"published: {decision.published}" if decision.published else "nothing published")


def settle_prefect(run_id: str, *, uri: str, action: str) -> None:
    """The Prefect flow run that made ``run_id``, when it still waits for this review (suspended,
    or ended ``Review pending``), ended in the decision's state (``flows/review_settle.py``); said
    in one line (problems on stderr). Prefect is loaded only for a run a flow made; the decision
    stands whatever happens."""
    from privacy_gate.names import TAG_FLOW_RUN
    from privacy_gate.tracking import Tracker

    try:
        origin = Tracker(uri=uri, experiment=None).run_tags(run_id).get(TAG_FLOW_RUN)
    except Exception:  # noqa: BLE001 - nothing to tell which flow run made it
        return
    if not origin:
        return
    if not use_prefect("auto"):
        say(
            f"note: the Prefect flow run that made run {run_id} ({origin}) was not updated: no "
            "Prefect API is configured here (PREFECT_API_URL), so it keeps its state (a suspended "
            "run ends Failed at its review timeout); the decision is recorded on the MLflow run",
            err=True,
        )
        return
    try:
        from privacy_gate.flows.review_settle import settle_flow_run

        line = settle_flow_run(run_id, tracking_uri=uri, via=f"privacy-gate {action}")
    except Exception as exc:  # noqa: BLE001 - the decision is recorded; its Prefect view is derived
        say(
            f"warning: the Prefect flow run that made run {run_id} could not be updated "
            f"({type(exc).__name__}); the decision stands",
            err=True,
        )
        return
    if line:
        say(line)


def regate_summary(outcome: Any) -> None:
    """The rows the suppression removed (per label) and the re-gate's verdict and run, on stdout."""
    from privacy_gate.report.summary import suppression_console

    show("\n" + suppression_console(outcome))


def reject_command(run_id: str, *, uri: str, workdir: Path) -> str:
    from privacy_gate.report.commands import decision_commands

    return decision_commands(
        run_id, tracking_uri=uri, workdir=workdir, flagged=[], with_review=False
    )[-1]


@app.command(
    epilog=exit_codes((0, "shown")),
    short_help="Show a run's evidence and decisions, or the pending runs.",
)
def review(
    run_id: Annotated[
        str | None, typer.Argument(metavar="RUN_ID", help="MLflow run id of a gate run.")
    ] = None,
    pending: Annotated[
        bool,
        typer.Option(
            "--pending",
            help="List the REVIEW runs awaiting a decision "
            "(run id, dataset, when, flagged groups).",
        ),
    ] = False,
    workdir: WorkdirOpt = Path(".privacy-gate"),
    tracking_uri: TrackingOpt = None,
) -> None:
    """Show a run's evidence, verdict, what is pending review and the decisions taken; or, with
    --pending, every run awaiting a decision."""
    quiet_env()
    from privacy_gate.errors import PrivacyGateError

    if pending == (run_id is not None):
        say(
            "error: review: give a RUN_ID, or --pending to list the runs awaiting a decision",
            err=True,
        )
        raise typer.Exit(EXIT_USAGE)
    uri = store_uri(workdir, tracking_uri)
    try:
        from privacy_gate.review.decide import pending_runs_text, review_text

        show(
            pending_runs_text(tracking_uri=uri, workdir=workdir)
            if pending
            else review_text(run_id, tracking_uri=uri, workdir=workdir)
        )
    except PrivacyGateError as exc:
        say(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None


@app.command(
    epilog=exit_codes(
        (0, "approved: the release is published (--dry-run: it would be)"),
        (4, "--suppress: the re-gate of the filtered release BLOCKs; nothing is published"),
    ),
    short_help="Approve a REVIEW verdict and publish the release.",
)
def approve(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN_ID", help="MLflow run id of a REVIEW verdict.")
    ],
    reviewer: ReviewerOpt,
    comment: CommentOpt = "",
    suppress: Annotated[
        list[str] | None,
        typer.Option(
            "--suppress",
            help='Publish without this subgroup\'s synthetic rows, e.g. "race=Black" (repeatable), '
            "or "
            '"exposed": without the exposed records\' closest synthetic rows, or "copies": without '
            "the rows that copy training records; the gate re-runs on the filtered release first.",
        ),
    ] = None,
    workdir: WorkdirOpt = Path(".privacy-gate"),
    tracking_uri: TrackingOpt = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Make every check approve makes and, with --suppress, re-gate the filtered "
            "release and show what it removes and decides; record no decision and publish nothing.",
        ),
    ] = False,
) -> None:
    """Approve a REVIEW verdict and publish the release (optionally without some subgroups)."""
    if dry_run:
        preview(
            run_id,
            reviewer=reviewer,
            suppress=list(suppress or []),
            workdir=workdir,
            tracking_uri=tracking_uri,
        )
        return
    decide(
        run_id,
        "approve",
        reviewer=reviewer,
        comment=comment,
        suppress=list(suppress or []),
        workdir=workdir,
        tracking_uri=tracking_uri,
    )


def preview(
    run_id: str, *, reviewer: str, suppress: list[str], workdir: Path, tracking_uri: str | None
) -> None:
    """``approve --dry-run``: the checks, and with ``--suppress`` the re-gate and what it removes
    and decides; exit 4 when the filtered release still BLOCKs (approve would be refused), else
    0."""
    quiet_env()
    from privacy_gate.errors import PrivacyGateError

    uri = store_uri(workdir, tracking_uri)
    regate = _regate_watch(suppress)
    try:
        from privacy_gate.review.decide import preview_approval

        outcome = preview_approval(
            run_id,
            reviewer=reviewer,
            suppress=suppress,
            tracking_uri=uri,
            workdir=str(workdir),
            regate=regate,
        )
    except PrivacyGateError as exc:
        say(f"refused: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    from privacy_gate.report.commands import decision_command

    if outcome is not None:
        regate_summary(outcome)
    say(f"dry run: no decision was recorded on run {run_id} and nothing was published")
    if outcome is not None and outcome.verdict.decision == "BLOCK":
        say("approve with these options would be refused: the gate BLOCKs the filtered release too")
        raise typer.Exit(EXIT_BLOCK)
    command = decision_command(
        "approve", run_id, tracking_uri=uri, workdir=workdir, suppress=suppress, reviewer=reviewer
    )
    what = "the filtered release" if suppress else "the release"
    say(f"approve with these options would publish {what}: {command}")


@app.command(
    epilog=exit_codes((0, "rejected: nothing is published")),
    short_help="Reject a REVIEW verdict: nothing is published.",
)
def reject(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN_ID", help="MLflow run id of a REVIEW verdict.")
    ],
    reviewer: ReviewerOpt,
    comment: CommentOpt = "",
    workdir: WorkdirOpt = Path(".privacy-gate"),
    tracking_uri: TrackingOpt = None,
) -> None:
    """Reject a REVIEW verdict: nothing is published; the release stays in quarantine."""
    decide(
        run_id,
        "reject",
        reviewer=reviewer,
        comment=comment,
        suppress=[],
        workdir=workdir,
        tracking_uri=tracking_uri,
    )
