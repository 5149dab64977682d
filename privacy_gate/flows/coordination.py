"""What a scheduled release run needs around the gate: one gate per dataset at a time (a Prefect
global concurrency limit), and a Prefect event per verdict for automations.

Concurrency: every release run of a dataset holds a slot of the global concurrency limit
``privacy-gate-dataset-<slug>`` (limit 1) while it gates, so two triggers for one dataset run one
after the other. ``serve`` / ``deploy`` create the limit; a run creates it if it is missing.

Events: ``privacy-gate.verdict.approve|review|block`` with the dataset as the resource and the
MLflow run as a related resource (README, "Run it in production").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prefect import get_run_logger
from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.sync import concurrency
from prefect.events import emit_event
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from privacy_gate.publish import dataset_slug

if TYPE_CHECKING:
    from privacy_gate.pipeline.result import RunOutcome

#: Prefect event names (one per verdict) and resource ids: what automations match on.
VERDICT_EVENT = "privacy-gate.verdict.{verdict}"
DATASET_RESOURCE = "privacy-gate.dataset.{slug}"
MLFLOW_RUN_RESOURCE = "mlflow.run.{run_id}"


def dataset_limit_name(dataset: str) -> str:
    """The global concurrency limit serialising the gates of one dataset.

    >>> dataset_limit_name("Adult 2024")
    'privacy-gate-dataset-adult-2024'
    """
    return f"privacy-gate-dataset-{dataset_slug(dataset)}"


def ensure_dataset_limit(dataset: str) -> str:
    """Create the dataset's concurrency limit (limit 1) unless it exists; returns its name."""
    name = dataset_limit_name(dataset)
    with get_client(sync_client=True) as client:
        try:
            client.read_global_concurrency_limit_by_name(name)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):  # created meanwhile by another run
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
    return name


@contextlib.contextmanager
def dataset_slot(dataset: str) -> Iterator[None]:
    """Hold the dataset's slot while the gate runs (waits while another run of it holds it)."""
    name = ensure_dataset_limit(dataset)
    get_run_logger().info("waiting for the gate slot of dataset %r (concurrency limit %s)", dataset, name)
    with concurrency(name, occupy=1, strict=True):
        yield


def emit_verdict_event(result: RunOutcome) -> None:
    """``privacy-gate.verdict.<approve|review|block>`` about the dataset, related to the MLflow run.
    The payload carries the decision and rule messages (figures, never record values)."""
    verdict = result.verdict
    dataset = result.dataset or "unknown"
    related = []
    if result.run_id:
        related.append({"prefect.resource.id": MLFLOW_RUN_RESOURCE.format(run_id=result.run_id),
                        "prefect.resource.role": "mlflow-run", "prefect.resource.name": result.run_id})
    emit_event(event=VERDICT_EVENT.format(verdict=verdict.decision.lower()),
               resource={"prefect.resource.id": DATASET_RESOURCE.format(slug=dataset_slug(dataset)),
                         "prefect.resource.name": dataset, "prefect.resource.role": "dataset"},
               related=related,
               payload={"verdict": verdict.decision, "status": verdict.status,
                        "reasons": [c.message for c in verdict.reasons],
                        "flagged_subgroups": list(verdict.flagged_subgroups or []),
                        "published": result.published, "tracking_uri": result.tracking_uri,
                        "run_id": result.run_id, "attempts": result.attempts})


__all__ = ["DATASET_RESOURCE", "MLFLOW_RUN_RESOURCE", "VERDICT_EVENT", "dataset_limit_name", "dataset_slot",
           "emit_verdict_event", "ensure_dataset_limit"]
