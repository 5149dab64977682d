"""How a release flow waits for its reviewer (``review.mode: pause``), and how it picks the review
up again when the reviewer answers.

**A deployment's run** (``serve``, ``deploy``, ``prefect deploy``) is *suspended* on REVIEW
(:func:`prefect.flow_runs.suspend_flow_run`): the typed review form is saved with the run, the run
goes to the Paused-type state ``Suspended`` and its process exits. So a review can stay open for
days and hold nothing meanwhile: no process, no worker, no deployment slot (the server gives it
back when a run pauses), no dataset slot (given back when the gate ended), no lease for anything
to renew. (A run *paused* in its process kept renewing the deployment lease the server had revoked
at the pause; the renewal due ~225 s after the start got 410 and Prefect 3.8 ended the run
``Crashed``: no officer answers in four minutes.)

The suspension's key names the MLflow run under review (:func:`review_key`). When the reviewer
answers (the form's "Resume" in the Prefect UI, or ``resume_flow_run(id, run_input=...)``), the
server schedules the run again and its runner executes the flow *from the top*. The release flow's
first step in a deployment's run, :func:`suspended_for`, reads the run's fired suspension keys back
from the server: this run was suspended for MLflow run R, so it does not gate again.
:func:`resume_review` reads the answer the server kept under that key and decides R as a paused run
does (``decide_run``) — or, when R was decided meanwhile with ``privacy-gate approve|reject``, says
so and ends with the decision already recorded (a run is never decided twice). The re-executed
flow runs no task of the gate, it reads the verdict back from MLflow; so nothing needs persisting
for the resumption (Prefect asks for ``persist_result`` so that a resumed flow's *tasks* are not
re-run), and no real data goes into Prefect's result storage.

A resumed run takes its deployment's concurrency slot again, and with ``CANCEL_NEW`` the server
cancels it ("Deployment concurrency limit reached.") if another run of the deployment is active at
that moment (a scheduled run being skipped, say). The answer is not lost: the deployment's next
run finds the cancelled resumption (:func:`finish_cancelled_resumptions`), decides its review with
the stored answer and ends the cancelled run in its verdict's state.

Unanswered for ``review.timeout_seconds``, the suspended run is ended by the Prefect server:
``Failed``, "The flow was paused and never resumed." (nothing of ours runs then); the MLflow run
stays pending and is decided with ``privacy-gate approve|reject``.

**Any other run** (``privacy-gate run`` with a Prefect API, a flow called from Python) cannot be
suspended — no deployment would run it again — so it pauses in its process
(:func:`prefect.flow_runs.pause_flow_run`; it holds no deployment lease to lose) for at most
``review.timeout_seconds`` and then stays pending.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.exceptions import FlowPauseTimeout
from prefect.flow_runs import pause_flow_run, suspend_flow_run
from prefect.input import keyset_from_paused_state, read_flow_run_input
from prefect.states import Failed, Suspended

from privacy_gate import names, tracking
from privacy_gate.errors import PrivacyGateError
from privacy_gate.flows.review_form import ReviewInput, review_form
from privacy_gate.flows.verdict_states import NotReleased, glance_name, verdict_line, verdict_state
from privacy_gate.gate import Verdict
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.review.decide import decide_run, review_text
from privacy_gate.runs.retrying import unrecorded_block

#: Suspension keys of reviews: this prefix and the MLflow run id (Prefect keys a run's inputs by
#: it, and allows letters, digits and dashes only: an MLflow run id is hex).
REVIEW_KEY_PREFIX = "privacy-gate-review-"
#: The message of a run the server cancelled for its deployment's concurrency limit.
LIMIT_REACHED = "Deployment concurrency limit reached."
_KEY_CHARS = re.compile(r"[0-9A-Za-z-]+")
_ACTED = {"approve": "approved", "reject": "rejected"}

Regate = Callable[..., RunOutcome]


def review_key(run_id: str) -> str | None:
    """The suspension key of the review of MLflow run ``run_id`` (None for an id Prefect cannot
    key).

    >>> review_key("0a1b"), review_key("a/b")
    ('privacy-gate-review-0a1b', None)
    """
    return REVIEW_KEY_PREFIX + run_id if _KEY_CHARS.fullmatch(run_id) else None


def run_of_keys(keys: Iterable[str] | None) -> str | None:
    """The MLflow run a flow run's fired suspension keys name, if one does.

    >>> run_of_keys({"1", "privacy-gate-review-0a1b"}), run_of_keys(None)
    ('0a1b', None)
    """
    return next(
        (
            k.removeprefix(REVIEW_KEY_PREFIX)
            for k in sorted(keys or ())
            if k.startswith(REVIEW_KEY_PREFIX)
        ),
        None,
    )


def _this_flow_run() -> Any:
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    return context.flow_run if context is not None else None


def _deployment_id() -> Any:
    """The deployment of this flow run as the server knows it (not ``prefect.runtime``'s value,
    which an environment variable can set: only a real deployment's run can be suspended)."""
    run = _this_flow_run()
    return run.deployment_id if run is not None else None


def paused_sibling() -> str | None:
    """Another run of this flow run's deployment that is paused or suspended (waiting for its
    review), if any. Such a run gives its deployment's concurrency slot back, so without this check
    every run of a schedule faster than the reviewer would gate the release again and wait too."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.runtime import deployment, flow_run

    if not deployment.id:
        return None
    flt = FlowRunFilter(
        deployment_id=FlowRunFilterDeploymentId(any_=[deployment.id]),
        state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PAUSED])),
    )
    try:
        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs(flow_run_filter=flt, limit=5)
    except Exception as exc:  # noqa: BLE001 - cannot tell: wait as before (bounded by review.timeout_seconds)
        get_run_logger().warning(
            "could not list this deployment's paused runs (%s)", type(exc).__name__
        )
        return None
    return next((str(r.id) for r in runs if str(r.id) != str(flow_run.id)), None)


def _review_text(result: RunOutcome) -> str | None:
    """The run's ``privacy-gate review`` text (evidence first) for the review form; None when it
    cannot be read (the form still lists the flagged groups)."""
    try:
        return review_text(result.run_id, tracking_uri=result.tracking_uri)
    except Exception as exc:  # noqa: BLE001 - the form without the evidence, never no form
        get_run_logger().warning(
            "could not read the review text of run %s (%s)", result.run_id, type(exc).__name__
        )
        return None


def wait_for_review(result: RunOutcome, config: Any, workdir: str, *, regate: Regate) -> RunOutcome:
    """Wait for the reviewer of a REVIEW (see the module docstring): suspend a deployment's run (the
    process exits: this returns only when the run could not be suspended), pause any other run in
    its process. Returns the outcome with what the review added."""
    logger = get_run_logger()
    waiting = paused_sibling()
    if (
        waiting is not None
    ):  # one waiting review per deployment: a fast schedule cannot pile them up
        logger.warning(
            "REVIEW not paused: flow run %s of this deployment already waits for a review; decide "
            "run %s "
            "with privacy-gate approve|reject %s",
            waiting,
            result.run_id,
            result.run_id,
        )
        return result
    if _deployment_id() is not None:
        return _suspend(result, config, workdir, regate=regate)
    return _pause(result, config, workdir, regate=regate)


def _suspend(result: RunOutcome, config: Any, workdir: str, *, regate: Regate) -> RunOutcome:
    logger = get_run_logger()
    key = review_key(result.run_id) if result.run_id else None
    if key is None:
        logger.warning(
            "REVIEW not suspended: MLflow run id %r cannot key a suspension; it stays pending",
            result.run_id,
        )
        return result
    logger.warning(
        "REVIEW: suspended until a reviewer answers (at most %d s; flagged: %s). This "
        "run's process exits now and holds no slot; the review form's answer, or "
        "privacy-gate approve|reject %s, decides it",
        config.review.timeout_seconds,
        ", ".join(result.verdict.flagged_subgroups) or "none",
        result.run_id,
    )
    try:
        answer = suspend_flow_run(
            wait_for_input=review_form(result, evidence=_review_text(result)),
            key=key,
            timeout=config.review.timeout_seconds,
        )
    except (
        RuntimeError
    ) as exc:  # the server refused the suspension (Prefect's Pause signal is no Exception)
        logger.warning(
            "REVIEW not suspended (%s); run %s stays pending: decide it with privacy-gate "
            "approve|reject %s",
            exc,
            result.run_id,
            result.run_id,
        )
        return result
    # the key had fired already: this run was resumed with an answer (resume_review normally takes
    # it before anything is gated again)
    return _apply(result, answer, workdir, regate=regate)


def _pause(result: RunOutcome, config: Any, workdir: str, *, regate: Regate) -> RunOutcome:
    """Pause in this process until a reviewer answers with a typed ``ReviewInput``, or the timeout
    passes (then the run stays pending and can still be decided with ``privacy-gate approve``)."""
    logger = get_run_logger()
    logger.warning(
        "REVIEW: waiting up to %d s for a reviewer (flagged: %s)",
        config.review.timeout_seconds,
        ", ".join(result.verdict.flagged_subgroups) or "none",
    )
    try:
        answer = pause_flow_run(
            wait_for_input=review_form(result, evidence=_review_text(result)),
            timeout=config.review.timeout_seconds,
            poll_interval=min(10, config.review.poll_seconds),
        )
    except FlowPauseTimeout:
        logger.warning(
            "no review within %d s; run %s stays pending",
            config.review.timeout_seconds,
            result.run_id,
        )
        return replace(result, review="timeout")
    return _apply(result, answer, workdir, regate=regate)


def _apply(result: RunOutcome, answer: ReviewInput, workdir: str, *, regate: Regate) -> RunOutcome:
    """Decide the run with the reviewer's answer; a run decided meanwhile keeps its decision."""
    logger = get_run_logger()
    run_id = result.run_id
    try:
        decision = decide_run(
            run_id,
            action=answer.decision,
            reviewer=answer.reviewer,
            comment=answer.comment,
            subgroups=dict(answer.subgroups) if answer.decision == "approve" else None,
            via="flow",
            tracking_uri=result.tracking_uri,
            suppress=answer.suppressed(),
            workdir=workdir,
            regate=regate,
        )
    except PrivacyGateError as exc:
        recorded = _recorded_decision(result)
        if (
            recorded is not None
        ):  # decided between our check and our claim (the decision lock chose)
            return _already_decided(result, recorded, answer)
        logger.error("review decision refused: %s", exc)
        return replace(result, review="refused", review_error=str(exc))
    logger.info(
        "review: %s by %s; published: %s",
        _ACTED[decision.action],
        decision.reviewer,
        decision.published,
    )
    return replace(
        result,
        review=decision.action,
        review_decision=decision.to_dict(),
        published=decision.published,
    )


# ------------------------------------------------------------------------ picking a review up again


def suspended_for(logger: Any) -> str | None:
    """The MLflow run whose review this deployment's flow run was suspended for (and is now resumed
    from, since the flow is running), or None: from the run's fired suspension keys on the
    server."""
    run = _this_flow_run()
    if run is None or run.deployment_id is None:
        return None
    try:
        with get_client(sync_client=True) as client:
            keys = client.read_flow_run(run.id).empirical_policy.pause_keys
    except Exception as exc:  # noqa: BLE001 - the gate's own checks follow (a pending review is skipped)
        logger.warning("could not read this flow run's suspensions (%s)", type(exc).__name__)
        return None
    return run_of_keys(keys)


def review_answer(run_id: str, flow_run_id: Any) -> ReviewInput | None:
    """The answer a reviewer gave to the suspended review of MLflow run ``run_id`` in flow run
    ``flow_run_id`` (the server keeps it under the suspension's key), or None when there is none."""
    keyset = keyset_from_paused_state(Suspended(pause_key=review_key(run_id)))
    value = read_flow_run_input(keyset["response"], flow_run_id=flow_run_id)
    return ReviewInput(**value) if value else None


def recorded_outcome(run_id: str, tracking_uri: str) -> RunOutcome:
    """The run's outcome as MLflow holds it (the verified verdict), for a flow that did not gate."""
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    verdict, seal = tracker.read_verified(run_id)
    tags = tracker.run_tags(run_id)
    return RunOutcome(
        Verdict.from_dict(verdict).with_run_id(run_id),
        run_id=run_id,
        tracking_uri=tracking_uri,
        dataset=seal.get(names.SEAL_DATASET) or tags.get(names.TAG_DATASET),
        quarantined=tags.get(names.TAG_QUARANTINE),
        published=_published(tags),
    )


def _published(tags: dict[str, str]) -> str | None:
    """Where the run's release was published, from its tags (``none`` after a rejection)."""
    where = tags.get(names.TAG_APPROVAL_PUBLISHED)
    return where if where and where != "none" else None


def _recorded_decision(result: RunOutcome) -> dict[str, Any] | None:
    """The decision that stands on the run (a half-done one completed or rolled back first, as
    ``privacy-gate review`` does), or None while it is pending."""
    from privacy_gate.review.decision_recovery import resolve_for_review

    tracker = tracking.Tracker(uri=result.tracking_uri, experiment=None)
    for line in resolve_for_review(tracker, result.run_id):
        get_run_logger().warning("run %s: %s", result.run_id, line)
    decisions = tracker.decisions(result.run_id)
    return decisions[-1] if decisions else None


def _already_decided(
    result: RunOutcome, recorded: dict[str, Any], answer: ReviewInput
) -> RunOutcome:
    acted = _ACTED.get(recorded.get("action"), recorded.get("action"))
    via = "privacy-gate " + recorded["action"] if recorded.get("via") == "cli" else "a review form"
    note = (
        f"the review form's answer ({answer.decision} by {answer.reviewer}) was not applied: run "
        f"{result.run_id} "
        f"had already been {acted} by {recorded.get('reviewer')} with {via}"
    )
    get_run_logger().warning("%s", note)
    tags = tracking.Tracker(uri=result.tracking_uri, experiment=None).run_tags(result.run_id)
    return replace(
        result,
        review=recorded.get("action"),
        review_decision=recorded,
        review_error=note,
        published=_published(tags),
    )


def resume_review(
    run_id: str, *, tracking_uri: str, workdir: str, regate: Regate, flow_run_id: Any = None
) -> RunOutcome:
    """The review of MLflow run ``run_id``, decided with the answer given to flow run
    ``flow_run_id`` (this one by default); raises when the verdict or the answer cannot be read."""
    logger = get_run_logger()
    flow_run_id = flow_run_id or _this_flow_run().id
    result = recorded_outcome(run_id, tracking_uri)
    answer = review_answer(run_id, flow_run_id)
    logger.info(
        "resumed review of MLflow run %s: %s",
        run_id,
        f"{answer.decision} by {answer.reviewer}" if answer else "no answer was given",
    )
    recorded = _recorded_decision(result)
    if recorded is not None and answer is not None:
        return _already_decided(result, recorded, answer)
    if recorded is not None:
        return replace(result, review=recorded.get("action"), review_decision=recorded)
    if answer is None:  # resumed without the form (Prefect requires it; kept pending if not)
        logger.warning("no review answer; run %s stays pending", run_id)
        return result
    return _apply(result, answer, workdir, regate=regate)


def unapplied_state(
    run_id: str, exc: BaseException, *, tracking_uri: str | None, dataset: str | None
) -> Any:
    """The final state of a resumed run whose review could not be decided (fail closed: nothing was
    published by it; the MLflow run stays pending)."""
    reason = str(exc) if isinstance(exc, PrivacyGateError) else type(exc).__name__
    message = (
        f"review of MLflow run {run_id} not decided: {reason}; it stays pending: decide it with "
        f"privacy-gate approve {run_id} or privacy-gate reject {run_id}"
    )
    get_run_logger().error("%s", message)
    outcome = replace(
        unrecorded_block(message, tracking_uri=tracking_uri, dataset=dataset), retryable=False
    )
    return Failed(name="Failed", message=message, data=NotReleased(message, outcome))


def finish_cancelled_resumptions(*, tracking_uri: str, workdir: str, regate: Regate) -> list[str]:
    """Decide the reviews of this deployment's runs that were resumed with an answer but cancelled
    by the server before they ran (their deployment's slot was taken at that moment), and end each
    in its verdict's state. Returns one line per run finished. A review that fails here is left for
    the next run (a warning); nothing is published unless ``decide_run`` publishes."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterStartTime,
        FlowRunFilterState,
        FlowRunFilterStateName,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType
    from prefect.client.schemas.sorting import FlowRunSort

    logger = get_run_logger()
    this = _this_flow_run()
    if this is None or this.deployment_id is None:
        return []
    # runs that had started (a suspended run had), then were cancelled: few, unlike the scheduled
    # runs CANCEL_NEW cancels before they start; "Cancelled" leaves out the (many) runs ended
    # Skipped
    flt = FlowRunFilter(
        deployment_id=FlowRunFilterDeploymentId(any_=[this.deployment_id]),
        state=FlowRunFilterState(
            type=FlowRunFilterStateType(any_=[StateType.CANCELLED]),
            name=FlowRunFilterStateName(any_=["Cancelled"]),
        ),
        start_time=FlowRunFilterStartTime(is_null_=False),
    )
    try:
        with get_client(sync_client=True) as client:
            runs = client.read_flow_runs(
                flow_run_filter=flt, sort=FlowRunSort.START_TIME_DESC, limit=20
            )
    except Exception as exc:  # noqa: BLE001
        logger.warning(
            "could not look for cancelled resumptions of reviews (%s)", type(exc).__name__
        )
        return []
    done = []
    for run in runs:
        run_id = run_of_keys(run.empirical_policy.pause_keys)
        if (
            run.id == this.id
            or run_id is None
            or (run.state.message if run.state else None) != LIMIT_REACHED
        ):
            continue
        try:
            if review_answer(run_id, run.id) is None:  # cancelled while suspended: nobody answered
                continue
            logger.warning(
                "flow run %s was resumed with the review of MLflow run %s and then cancelled by "
                "the "
                "server (deployment concurrency limit reached) before it ran: deciding it here",
                run.id,
                run_id,
            )
            outcome = resume_review(
                run_id,
                tracking_uri=tracking_uri,
                workdir=workdir,
                regate=regate,
                flow_run_id=run.id,
            )
            line = (
                f"{verdict_line(outcome)} (decided by flow run {this.id}: the server had "
                "cancelled this run's resumption)"
            )
            state = verdict_state(outcome).model_copy(update={"data": None, "message": line})
            with get_client(sync_client=True) as client:
                client.set_flow_run_state(run.id, state, force=True)
                # named like a run that ended by itself (verdict_states.glance_name)
                client.update_flow_run(run.id, name=glance_name(line, run.name or ""))
        except Exception as exc:  # noqa: BLE001 - left for the next run; nothing published by this one
            logger.warning(
                "could not finish the resumed review of flow run %s (%s)",
                run.id,
                str(exc) if isinstance(exc, PrivacyGateError) else type(exc).__name__,
            )
            continue
        done.append(
            f"finished the review of flow run {run.id}, resumed but cancelled by the server: "
            f"{verdict_line(outcome)}"
        )
    return done


__all__ = [
    "LIMIT_REACHED",
    "REVIEW_KEY_PREFIX",
    "finish_cancelled_resumptions",
    "paused_sibling",
    "recorded_outcome",
    "resume_review",
    "review_answer",
    "review_key",
    "run_of_keys",
    "suspended_for",
    "unapplied_state",
    "wait_for_review",
]
