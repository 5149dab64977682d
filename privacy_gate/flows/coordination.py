"""What a scheduled release run needs around the gate: one gate per dataset at a time (a Prefect
global concurrency limit), and a Prefect event per verdict for automations.

Concurrency: every release run of a dataset holds a slot of the global concurrency limit
``privacy-gate-dataset-<slug>`` (limit 1) while it gates, so two triggers for one dataset run one
after the other. ``serve`` / ``deploy`` create the limit; a run creates it if it is missing.
The slot is held on a lease the running gate renews (``SLOT_LEASE_SECONDS``): when its process
dies (a killed worker, a stopped ``serve``), the renewals stop and the Prefect server frees the
slot once the lease has run out (its repossessor service, every 15 s by default). A run waits for
the slot at most ``PRIVACY_GATE_SLOT_TIMEOUT_SECONDS`` (default 3600) and then ends BLOCK with a
message naming the command that resets the slot (:func:`reset_command`).

Events: ``privacy-gate.verdict.approve|review|block`` with the dataset as the resource and the
MLflow run as a related resource, linked: its page on the MLflow server (label ``mlflow.run.url``
and ``mlflow_run_url`` in the payload) when the store is one (README, "Run it in production").
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.sync import concurrency
from prefect.events import emit_event
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from privacy_gate.errors import (
    ConfigError,
    InfrastructureError,
    PrivacyGateError,
    service_boundary,
)
from privacy_gate.publication.publish import dataset_slug
from privacy_gate.safe_text import mask_uri

if TYPE_CHECKING:
    from privacy_gate.pipeline.result import RunOutcome

#: Prefect event names (one per verdict) and resource ids: what automations match on.
VERDICT_EVENT = "privacy-gate.verdict.{verdict}"
DATASET_RESOURCE = "privacy-gate.dataset.{slug}"
MLFLOW_RUN_RESOURCE = "mlflow.run.{run_id}"

#: How long a release waits for its dataset's gate slot before it ends BLOCK (seconds).
ENV_SLOT_TIMEOUT = "PRIVACY_GATE_SLOT_TIMEOUT_SECONDS"
DEFAULT_SLOT_TIMEOUT = 3600.0
#: The slot's lease: renewed while the gate runs; the slot of a holder that died is free again
#: within this plus the server's repossessor loop (15 s). Prefect's minimum is 60 s.
SLOT_LEASE_SECONDS = 60.0
#: How the run log marks the slot's wait, hold and release (each followed by the dataset's name):
#: a run's time in the queue and in the gate can be read back from Prefect's logs.
SLOT_WAITING, SLOT_HELD, SLOT_RELEASED = (
    "waiting for the gate slot of dataset",
    "holding the gate slot of dataset",
    "gave back the gate slot of dataset",
)


class GateSlotBusy(PrivacyGateError):
    """The dataset's gate slot is taken and another run already waits for it: this run is
    skipped (it neither gates nor publishes; never retried)."""


class GateSlotTimeout(PrivacyGateError):
    """The dataset's gate slot stayed taken longer than the run may wait (never retried: the
    message says how to free a slot a crashed run left taken)."""


def reset_command(dataset: str) -> str:
    """The command that frees the dataset's gate slot by hand.

    >>> reset_command("Adult")
    'prefect gcl update privacy-gate-dataset-adult --active-slots 0'
    """
    return f"prefect gcl update {dataset_limit_name(dataset)} --active-slots 0"


def slot_timeout() -> float:
    """Seconds a run waits for its dataset's gate slot (``PRIVACY_GATE_SLOT_TIMEOUT_SECONDS``)."""
    raw = os.environ.get(ENV_SLOT_TIMEOUT)
    if raw is None or not raw.strip():
        return DEFAULT_SLOT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"{ENV_SLOT_TIMEOUT}={raw!r}: expected a number of seconds > 0")
    return value


def dataset_limit_name(dataset: str) -> str:
    """The global concurrency limit serialising the gates of one dataset.

    >>> dataset_limit_name("Adult 2024")
    'privacy-gate-dataset-adult-2024'
    """
    return f"privacy-gate-dataset-{dataset_slug(dataset)}"


def queue_limit_name(dataset: str) -> str:
    """The global concurrency limit a run of the dataset holds while it waits for the gate slot.

    >>> queue_limit_name("Adult 2024")
    'privacy-gate-queue-adult-2024'
    """
    return f"privacy-gate-queue-{dataset_slug(dataset)}"


class PrefectUnavailable(InfrastructureError):
    """The Prefect API did not answer (converted at :func:`prefect_boundary`)."""


def prefect_boundary() -> contextlib.AbstractContextManager[None]:
    """The service boundary of calls to the Prefect API
    (:func:`privacy_gate.errors.service_boundary`): an API that does not answer raises
    :class:`PrefectUnavailable` naming it (credentials masked)."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value() or "(PREFECT_API_URL not set)"
    return service_boundary(f"the Prefect API at {mask_uri(url)}", unavailable=PrefectUnavailable)


def ensure_dataset_limit(dataset: str) -> str:
    """Create the dataset's concurrency limit (limit 1) unless it exists; returns its name."""
    return _ensure_limit(dataset_limit_name(dataset))


def _ensure_limit(name: str) -> str:
    with prefect_boundary(), get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):  # created meanwhile by another run
                client.create_global_concurrency_limit(
                    GlobalConcurrencyLimitCreate(name=name, limit=1)
                )
    return name


@contextlib.contextmanager
def dataset_slot(dataset: str, *, timeout: float | None = None) -> Iterator[None]:
    """Hold the dataset's slot while the gate runs: wait while another run of it holds it, at most
    ``timeout`` seconds (default :func:`slot_timeout`), then raise :class:`GateSlotTimeout`
    naming the reset command. The slot is leased (``SLOT_LEASE_SECONDS``) to this flow run."""
    from prefect.client.schemas.objects import ConcurrencyLeaseHolder
    from prefect.runtime import flow_run

    timeout = slot_timeout() if timeout is None else timeout
    name = ensure_dataset_limit(dataset)
    logger = get_run_logger()
    holder = ConcurrencyLeaseHolder(type="flow_run", id=flow_run.id) if flow_run.id else None

    def slot(limit: str, wait: float | None) -> contextlib.AbstractContextManager[None]:
        # wait None: one try, a taken slot raises at once (Prefect answers 423 Locked)
        return concurrency(
            limit,
            occupy=1,
            strict=True,
            timeout_seconds=wait,
            max_retries=None if wait else 0,
            lease_duration=SLOT_LEASE_SECONDS,
            holder=holder,
        )

    with contextlib.ExitStack() as held:
        if not _take(held, slot(name, None)):
            with contextlib.ExitStack() as waiting:
                queue = _ensure_limit(queue_limit_name(dataset))
                if not _take(waiting, slot(queue, None)):
                    raise GateSlotBusy(
                        f"the gate slot of dataset {dataset!r} is taken and another run already "
                        "waits for it "
                        f"(concurrency limits {name}, {queue}): this run is skipped — nothing "
                        "gated or published; "
                        "the next scheduled run tries again"
                    )
                logger.info(
                    "%s %r: another run holds it (concurrency limit %s; waiting at most %g s)",
                    SLOT_WAITING,
                    dataset,
                    name,
                    timeout,
                )
                try:
                    held.enter_context(slot(name, timeout))
                except TimeoutError:
                    raise GateSlotTimeout(
                        f"the gate slot of dataset {dataset!r} (concurrency limit {name}) stayed "
                        "taken for "
                        f"{timeout:g} s ({ENV_SLOT_TIMEOUT}); if no gate of this dataset is "
                        "running, a crashed run "
                        f"left it taken: free it with: {reset_command(dataset)}"
                    ) from None
            # the waiting room is free again: the next run may wait while this one gates
        logger.info("%s %r", SLOT_HELD, dataset)
        try:
            yield
        finally:
            logger.info("%s %r", SLOT_RELEASED, dataset)


def _locked(exc: BaseException | None) -> bool:
    """Prefect's answer to a one-try acquisition of a taken slot (HTTP 423 Locked)."""
    return getattr(getattr(exc, "response", None), "status_code", None) == 423


class _QuietLocked(logging.Filter):
    """Drops Prefect's ERROR record of a one-try acquisition that found the slot taken (its
    service logs every failed item, with the item's future): expected here (the run then waits or
    is skipped, and says so), not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        for arg in record.args if isinstance(record.args, tuple) else ():
            future = arg[-1] if isinstance(arg, tuple) and arg else None
            if (
                isinstance(future, concurrent.futures.Future)
                and future.done()
                and not future.cancelled()
                and _locked(future.exception())
            ):
                return False
        return True


logging.getLogger("prefect._internal.concurrency").addFilter(_QuietLocked())


def _take(stack: contextlib.ExitStack, slot: contextlib.AbstractContextManager[None]) -> bool:
    """Enter ``slot`` (a one-try acquisition) on ``stack``; False when it is taken."""
    from prefect.concurrency._asyncio import ConcurrencySlotAcquisitionError

    try:
        stack.enter_context(slot)
    except ConcurrencySlotAcquisitionError as exc:
        if _locked(exc.__cause__):
            return False
        raise
    return True


def mlflow_run_url(tracking_uri: str | None, run_id: str | None) -> str | None:
    """The run's page on an MLflow server (MLflow's direct run link, which opens the run in its
    experiment), or None for a store with no UI address (a sqlite file) or no run.

    >>> mlflow_run_url("http://mlflow:5000/", "abc")
    'http://mlflow:5000/#/runs/abc'
    >>> mlflow_run_url("sqlite:///x.db", "abc") is None
    True
    """
    if not (tracking_uri and run_id and tracking_uri.startswith(("http://", "https://"))):
        return None
    return f"{tracking_uri.rstrip('/')}/#/runs/{run_id}"


def emit_verdict_event(result: RunOutcome) -> None:
    """``privacy-gate.verdict.<approve|review|block>`` about the dataset, related to the MLflow run
    (with its URL when the store is a server). The payload carries the decision and rule messages
    (figures, never record values)."""
    verdict = result.verdict
    dataset = result.dataset or "unknown"
    url = mlflow_run_url(result.tracking_uri, result.run_id)
    related = []
    if result.run_id:
        related.append(
            {
                "prefect.resource.id": MLFLOW_RUN_RESOURCE.format(run_id=result.run_id),
                "prefect.resource.role": "mlflow-run",
                "prefect.resource.name": result.run_id,
                **({"mlflow.run.url": url} if url else {}),
            }
        )
    emit_event(
        event=VERDICT_EVENT.format(verdict=verdict.decision.lower()),
        resource={
            "prefect.resource.id": DATASET_RESOURCE.format(slug=dataset_slug(dataset)),
            "prefect.resource.name": dataset,
            "prefect.resource.role": "dataset",
        },
        related=related,
        payload={
            "verdict": verdict.decision,
            "status": verdict.status,
            "reasons": [c.message for c in verdict.reasons],
            "flagged_subgroups": list(verdict.flagged_subgroups or []),
            "published": result.published,
            "tracking_uri": result.tracking_uri,
            "run_id": result.run_id,
            "mlflow_run_url": url,
            "attempts": result.attempts,
        },
    )


__all__ = [
    "DATASET_RESOURCE",
    "DEFAULT_SLOT_TIMEOUT",
    "ENV_SLOT_TIMEOUT",
    "GateSlotBusy",
    "GateSlotTimeout",
    "MLFLOW_RUN_RESOURCE",
    "SLOT_HELD",
    "SLOT_LEASE_SECONDS",
    "SLOT_RELEASED",
    "SLOT_WAITING",
    "VERDICT_EVENT",
    "dataset_limit_name",
    "dataset_slot",
    "emit_verdict_event",
    "ensure_dataset_limit",
    "mlflow_run_url",
    "queue_limit_name",
    "reset_command",
    "slot_timeout",
]
