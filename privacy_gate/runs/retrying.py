"""Retrying a whole gate run when a service it needs did not answer.

A scheduled pipeline meets outages: the tracking server restarts, the object store times out. Such
a run is attempted again from the start (a new MLflow run each time; every attempt fails closed on
its own). The attempts of one release are nested runs under one parent MLflow run, which carries
the final verdict (``tracking.attempt_runs``); a release that needs no retry has no parent. Nothing
else is retried: a bad config, bad data or a gate decision is final. When the attempts run out the
result is a BLOCK naming the failure and the number of attempts, so an outage can delay a release
but never approve one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from privacy_gate.config import RetryConfig
from privacy_gate.errors import PrivacyGateError, is_infrastructure_error
from privacy_gate.gate import Verdict
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.tracking import attempt_runs


def unrecorded_block(reason: str, *, tracking_uri: str | None, dataset: str | None) -> RunOutcome:
    """The result of a run that could not even start its record (no MLflow run): a BLOCK."""
    return RunOutcome(
        verdict=Verdict.error(reason),
        published=None,
        quarantined=None,
        tracking_uri=tracking_uri,
        run_id=None,
        timings={},
        dataset=dataset,
        retryable=True,
        summary_markdown=f"# BLOCK (status: error)\n\n- **block** {reason}\n\nNo MLflow run was "
        "recorded.\n",
    )


def run_with_retries(
    attempt: Callable[[], RunOutcome],
    *,
    retries: RetryConfig,
    logger: Any = None,
    tracking_uri: str | None = None,
    dataset: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> RunOutcome:
    """Call ``attempt`` (a whole recorded run returning its :class:`RunOutcome`) until it ends
    without an infrastructure failure, at most ``retries.attempts`` times. Returns the last
    outcome, with ``attempts`` (how many were made) and, when retries ran out, the reason saying
    so."""
    logger = logger or logging.getLogger("privacy_gate")
    with attempt_runs.attempts() as group:
        try:
            result = _attempts(
                attempt,
                group,
                retries=retries,
                logger=logger,
                tracking_uri=tracking_uri,
                dataset=dataset,
                sleep=sleep,
            )
        except BaseException:
            group.finish(verdict="BLOCK", status="error", run_id=None, logger=logger)
            raise
        group.finish(
            verdict=result.verdict.decision,
            status=result.verdict.status,
            run_id=result.run_id,
            logger=logger,
        )
    return result


def _attempts(
    attempt: Callable[[], RunOutcome],
    group: attempt_runs.AttemptGroup,
    *,
    retries: RetryConfig,
    logger: Any,
    tracking_uri: str | None,
    dataset: str | None,
    sleep: Callable[[float], None],
) -> RunOutcome:
    result: RunOutcome | None = None
    for n in range(1, retries.attempts + 1):
        group.attempt = n
        try:
            result = attempt()
            failure = (
                "; ".join(c.message for c in result.verdict.reasons) if result.retryable else None
            )
        except Exception as exc:
            if not is_infrastructure_error(exc):
                raise
            failure = (
                str(exc)
                if isinstance(exc, PrivacyGateError)
                else f"infrastructure failure before the run was recorded ({type(exc).__name__})"
            )
            result = unrecorded_block(failure, tracking_uri=tracking_uri, dataset=dataset)
        result = replace(result, attempts=n)
        if failure is None:
            return result
        if n < retries.attempts:
            logger.warning(
                "attempt %d of %d failed on infrastructure (%s); retrying in %g s",
                n,
                retries.attempts,
                failure,
                retries.delay_seconds,
            )
            sleep(retries.delay_seconds)
    assert result is not None
    message = f"infrastructure failure in all {retries.attempts} attempts; last: " + "; ".join(
        c.message for c in result.verdict.reasons
    )
    logger.error("%s — BLOCK", message)
    verdict = result.verdict
    return replace(
        result,
        verdict=Verdict.error(message, data_hashes=verdict.data_hashes).with_run_id(verdict.run_id),
    )


__all__ = ["run_with_retries", "unrecorded_block"]
