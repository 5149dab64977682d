"""Verdicts as Prefect states, so a flow run reads at a glance in the Prefect UI and automations
can match on them:

======================  ===========  ===============  ========================================
outcome                 state type   state name       why
======================  ===========  ===============  ========================================
APPROVE                 COMPLETED    Approved         released
REVIEW, undecided       COMPLETED    Review pending   the gate did its work; a person decides
                                                      (see below)
REVIEW, waiting         PAUSED       Suspended        a deployment's run waiting for its review
                                                      form (``review_wait``; ``Paused`` outside
                                                      a deployment): no process, no slot
REVIEW, approved        COMPLETED    Review approved  decided through the review form or the
                                                      CLI: released
REVIEW, rejected        FAILED       Review rejected  decided through the review form or the
                                                      CLI: not released
BLOCK                   FAILED       Blocked          the gate refused the release
no verdict (an error)   FAILED       Failed           the gate did not complete (fail closed)
skipped                 CANCELLED    Skipped          not gated: its dataset's gate is busy and
                                                      a run already waits, a review of this
                                                      deployment is pending, or this release
                                                      was already decided (nothing published)
======================  ===========  ===============  ========================================

The Prefect UI colours a state by its type and shows its name: the names say which verdict and
whether a person has decided it. A REVIEW decided later with ``privacy-gate approve|reject`` moves
a ``Review pending`` or suspended run to ``Review approved`` / ``Review rejected``
(``flows/review_settle.py``); the MLflow run's ``approval.status`` tag is the record of the
decision.

With ``review.mode: pending`` REVIEW is a *terminal*, Completed-type state: the decision is taken
outside the flow run (``privacy-gate approve`` days later, from another machine). With
``review.mode: pause`` the run waits for the typed review input — a deployment's run suspended
(Prefect's ``Suspended``: its process exits, it holds no deployment slot), any other run paused in
its process — and ends ``Review approved`` / ``Review rejected`` with the reviewer's decision in the
state message (the decision recorded with the CLI meanwhile, if there was one: the message says
the form's answer was not applied). ``Review pending`` is not Failed-type: failure automations,
flow retries and "failed runs" views are for releases that were refused or broke. (A suspended
run left unanswered past ``review.timeout_seconds`` is ended by the Prefect server itself:
``Failed``, "The flow was paused and never resumed.", its MLflow run still pending.)

Every state's message is the verdict with its reason (the last line of the run's log, which
Prefect ends with "Finished in state <name>('<message>')"). Prefect's flow run page shows the
state's name on its first screen but not its message (that is on the Details tab), so a run that
ended is named after its message's start (:func:`glance_name`: ``BLOCK: The attack domias tells
training records … · massive-kakapo``), which the page's title shows; its data is the run's
:class:`~privacy_gate.pipeline.result.RunOutcome` — for a Failed- or Cancelled-type state wrapped in
:class:`NotReleased`, the exception Prefect's engine expects there (it raises a failed state's data
when a deployment's run ends, and a plain object would make that a ``TypeError``). Flows declared
with :func:`verdict_flow` return that outcome when called as functions (the CLI, the tests),
whatever the state type.
"""

from __future__ import annotations

from typing import Any

from prefect import Flow
from prefect.states import Cancelled, Completed, Failed, State

from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.report.commands import review_command

#: The names of the verdicts' states (``State.name``).
STATE_APPROVED, STATE_BLOCKED, STATE_FAILED, STATE_SKIPPED = (
    "Approved",
    "Blocked",
    "Failed",
    "Skipped",
)
STATE_REVIEW, STATE_REVIEW_APPROVED, STATE_REVIEW_REJECTED = (
    "Review pending",
    "Review approved",
    "Review rejected",
)
_MAX_REASON = 400  # characters of the reason in a state message (the report has them all)
_SHOWN_GROUPS = 5


def _first(items: list[str], n: int, sep: str) -> str:
    """The first ``n`` items joined, and how many more there are.

    >>> _first(["a", "b", "c"], 2, ", ")
    'a, b (+1 more)'
    """
    more = f" (+{len(items) - n} more)" if len(items) > n else ""
    return sep.join(items[:n]) + more


def _deciding_reason_in_words(verdict: Any) -> str:
    """The deciding reason as a sentence with its key (a BLOCK's first blocking one), and how many
    more there are; words are made for that one reason only."""
    from privacy_gate.words.checks import headline_reason

    line = headline_reason(verdict)
    if line is None:
        return ""
    more = len(verdict.reasons) - 1
    return line + (f" (+{more} more)" if more else "")


def verdict_line(result: RunOutcome) -> str:
    """One line: the verdict, why, and what happened to the release.

    >>> from privacy_gate.gate import Verdict
    >>> verdict = Verdict.error("gate did not complete: boom")
    >>> verdict_line(RunOutcome(verdict, run_id=None, tracking_uri=None, dataset="adult"))
    'BLOCK (gate did not complete): The gate did not finish: gate did not complete: boom. It fails
    closed, so the release is blocked.'
    """
    verdict = result.verdict
    head = (
        verdict.decision
        if verdict.status == "ok"
        else f"{verdict.decision} (gate did not complete)"
    )
    reasons = _deciding_reason_in_words(verdict)
    if len(reasons) > _MAX_REASON:
        reasons = reasons[: _MAX_REASON - 1] + "…"
    parts = [f"{head}: {reasons or 'every rule passed'}"]
    if verdict.flagged_subgroups:
        parts.append(f"flagged: {_first(list(verdict.flagged_subgroups), _SHOWN_GROUPS, ', ')}")
    if result.review in ("approve", "reject"):
        who = (result.review_decision or {}).get("reviewer", "?")
        parts.append(f"{'approved' if result.review == 'approve' else 'rejected'} by {who}")
        if (
            result.review_error
        ):  # e.g. a resumed review decided meanwhile with the CLI: the form's answer not applied
            parts.append(result.review_error)
    elif result.review == "timeout" or (verdict.decision == "REVIEW" and result.review is None):
        parts.append(
            "awaiting review: "
            f"{review_command(result.run_id, tracking_uri=result.tracking_uri, workdir=None)}"
            if result.run_id
            else "awaiting review"
        )
    elif result.review == "refused":
        parts.append(f"review decision refused: {result.review_error}")
    if result.published:
        parts.append(f"published {result.published}")
    if result.run_id:
        parts.append(f"MLflow run {result.run_id}")
    return " — ".join(parts)


#: characters of the state message a flow run's name starts with: Prefect's flow run page (v2 UI)
#: shows about 75 characters of a name in its title at 1280 px, the v1 UI wraps it
_NAME_HEAD = 72
_NAME_SEP = " · "


def glance_name(message: str, name: str) -> str:
    """The name of a flow run that ended in a state with ``message``: the message's first part
    (the verdict and the start of its reason, cut at a word) before the run's generated ``name``;
    a run named so already keeps its generated name.

    >>> msg = ("BLOCK: The attack domias tells training records from holdout records with AUC "
    ...        "0.856 (0.5 is guessing; bar 0.6) (domias.auc) — MLflow run abc")
    >>> glance_name(msg, "massive-kakapo")
    'BLOCK: The attack domias tells training records from holdout records … · massive-kakapo'
    >>> glance_name("APPROVE: every rule passed — MLflow run abc", "REVIEW: dated · calm-otter")
    'APPROVE: every rule passed · calm-otter'
    """
    head = " ".join(message.split(" — ")[0].split())
    if len(head) > _NAME_HEAD:
        head = head[:_NAME_HEAD].rsplit(" ", 1)[0] + " …"
    base = name.rsplit(_NAME_SEP, 1)[-1].strip()
    return f"{head}{_NAME_SEP}{base}" if base else head


class NotReleased(Exception):  # named for what happened, not an error of the code
    """A run that did not release: its :class:`RunOutcome` as the data of its Failed- or
    Cancelled-type state (see the module docstring); the message is the state's.

    >>> import pickle
    >>> from privacy_gate.gate import Verdict
    >>> outcome = RunOutcome(Verdict.error("x"), run_id="r", tracking_uri=None, dataset="d")
    >>> e = NotReleased("BLOCK: x", outcome)
    >>> copy = pickle.loads(pickle.dumps(e)); str(copy), copy.outcome.run_id
    ('BLOCK: x', 'r')
    """

    def __init__(self, message: str, outcome: RunOutcome) -> None:
        super().__init__(message)
        self.outcome = outcome

    def __reduce__(self):
        return type(self), (str(self), self.outcome)


def verdict_state(result: RunOutcome) -> State:
    """The flow run's final state for ``result`` (see the module's table)."""
    message = verdict_line(result)
    verdict = result.verdict
    if verdict.status != "ok":
        return Failed(name=STATE_FAILED, message=message, data=NotReleased(message, result))
    if verdict.decision == "BLOCK":
        return Failed(name=STATE_BLOCKED, message=message, data=NotReleased(message, result))
    if verdict.decision == "REVIEW" and result.review == "reject":
        return Failed(
            name=STATE_REVIEW_REJECTED, message=message, data=NotReleased(message, result)
        )
    if verdict.decision == "REVIEW":
        name = STATE_REVIEW_APPROVED if result.review == "approve" else STATE_REVIEW
        return Completed(name=name, message=message, data=result)
    return Completed(name=STATE_APPROVED, message=message, data=result)


def skipped_state(result: RunOutcome, reason: str) -> State:
    """The final state of a run that did not gate (``reason`` says why); its data is ``result``,
    a BLOCK that was never recorded (fail closed for a caller that reads the outcome)."""
    message = f"skipped: {reason}"
    return Cancelled(name=STATE_SKIPPED, message=message, data=NotReleased(message, result))


def outcome_of(state: State) -> Any:
    """The :class:`RunOutcome` a verdict state carries; any other failure is raised."""
    value = state.result(raise_on_failure=False)
    if isinstance(value, NotReleased):
        return value.outcome
    if isinstance(value, RunOutcome):
        return value
    return state.result()  # a failure that is no verdict: raised as Prefect raises it


class VerdictFlow(Flow):
    """A flow whose final state is its verdict's (:func:`verdict_state`). Called as a function it
    returns the :class:`RunOutcome` for every verdict (a Blocked run is a verdict, not an
    exception); ``return_state=True`` gives the state."""

    def __call__(self, *args: Any, return_state: bool = False, **kwargs: Any) -> Any:
        state = super().__call__(*args, return_state=True, **kwargs)
        return state if return_state else outcome_of(state)

    def with_options(self, **kwargs: Any) -> VerdictFlow:
        new = super().with_options(**kwargs)
        new.__class__ = type(self)
        return new


def verdict_flow(**options: Any):
    """``@flow(**options)`` for a flow that returns :func:`verdict_state` of its outcome."""
    return lambda fn: VerdictFlow(fn, **options)


__all__ = [
    "NotReleased",
    "STATE_APPROVED",
    "STATE_BLOCKED",
    "STATE_FAILED",
    "STATE_REVIEW",
    "STATE_REVIEW_APPROVED",
    "STATE_REVIEW_REJECTED",
    "STATE_SKIPPED",
    "VerdictFlow",
    "glance_name",
    "outcome_of",
    "skipped_state",
    "verdict_flow",
    "verdict_line",
    "verdict_state",
]
