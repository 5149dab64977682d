"""The re-gate of a judged run's release without the rows a ``--suppress`` removes: what ``approve
RUN --suppress`` runs before it publishes, and a remediation ladder's filter rung.

The filtered release is judged with the settings the original run recorded (the same attacks,
epsilon and oracle), on its real data checked against the recorded hashes, in an MLflow run of
its own. What was removed is reported as counts per ``--suppress`` label, never as rows.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from privacy_gate import names, tracking
from privacy_gate.data import Splits
from privacy_gate.data.types import conform_typed
from privacy_gate.experiment.grouping import names_hashed_values
from privacy_gate.experiment.inputs import GateInputs
from privacy_gate.experiment.settings import GateSettings
from privacy_gate.gate.verdict import Verdict
from privacy_gate.label_key import matching_key
from privacy_gate.pipeline.executor import Executor, LocalExecutor
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.pipeline.stages import StageClock
from privacy_gate.publication.publish import ReleaseStore, read_quarantined
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.runs.release import RunContext, finish
from privacy_gate.runs.run_record import RunRecord
from privacy_gate.runs.suppression import singled_out, suppression_masks

log = logging.getLogger("privacy_gate")


@dataclass(frozen=True)
class SuppressedRelease:
    """A judged run's quarantined release without the rows ``suppress`` removes, with what its
    re-gate needs: the run's recorded settings (the same attacks, epsilon and oracle judge it) and
    its real data (checked against the hashes it recorded). ``removed`` counts the rows removed,
    ``removed_by`` the rows each label removes (a row two labels remove counts for both); no
    row's values leave this object."""

    record: RunRecord
    suppress: tuple[str, ...]
    settings: GateSettings
    splits: Splits
    synthetic: pd.DataFrame  # the filtered release
    removed: int
    rows_before: int
    value_types: dict[str, str] | None = None  # the quarantined file's types
    removed_by: dict[str, int] = field(default_factory=dict)

    @classmethod
    def read(
        cls, record: RunRecord, *, suppress: list[str], workdir: str | Path, logger: Any = None
    ) -> SuppressedRelease:
        """Read ``record``'s sealed release and real data back and apply the ``--suppress`` labels
        (:func:`~privacy_gate.runs.suppression.suppression_masks`)."""
        logger = logger or log
        record.check_publishable()
        record.fetch_quarantine(workdir)
        # a filtered release is no longer the recipe's output, so refits of the recipe cannot
        # calibrate it: the generator-aware test is off in a re-gate (a small table REVIEWs for
        # insufficient evidence there, which does not hold back the reviewer's publication)
        settings = record.settings()
        settings = settings.model_copy(
            update={"shadow": settings.shadow.model_copy(update={"enabled": False})}
        )
        splits = record.splits()
        # written in the input's types: the filtered release keeps them
        synthetic, types = conform_typed(
            read_quarantined(record.quarantine),
            settings.spec,
            source="quarantined release",
            check_identifiers=False,
        )
        logger.info(
            "read the release of run %s (%s rows) and its real data; finding the rows %s removes",
            record.run_id,
            f"{len(synthetic):,}",
            ", ".join(suppress),
        )
        exposed = None
        if names.SUPPRESS_EXPOSED in suppress:
            # the level the gate measured the exposed share at (coarser than exposure.level on a
            # small table)
            level = (record.verdict.get("metrics") or {}).get(
                names.exposure_metric("level")
            ) or settings.exposure.level
            ids = singled_out(record.exposed_records(), level=float(level))
            exposed = splits.train.loc[splits.train.index.intersection(ids)]
            logger.info(
                "suppressing the synthetic neighbours of %d exposed record(s)", len(exposed)
            )
        # a hashed label is resolved with the key that hashed it (this workdir's, checked against
        # the seal)
        key = (
            matching_key(
                workdir,
                fingerprint=record.seal.get(names.SEAL_LABEL_KEY),
                what=f"run {record.run_id}",
            )
            if any(names_hashed_values(s) for s in suppress)
            else None
        )
        masks = suppression_masks(
            suppress,
            synthetic=synthetic,
            spec=settings.spec,
            exposed=exposed,
            reference=splits.reference,
            train=splits.train,
            holdout=splits.holdout,
            label_key=key,
        )
        drop = pd.Series(False, index=synthetic.index)
        for mask in masks.values():
            drop |= mask
        removed = int(drop.sum())
        logger.info(
            "suppressing %s of %s synthetic rows (%s)",
            f"{removed:,}",
            f"{len(synthetic):,}",
            ", ".join(f"{label}: {int(mask.sum()):,}" for label, mask in masks.items()),
        )
        return cls(
            record=record,
            suppress=tuple(suppress),
            settings=settings,
            splits=splits,
            synthetic=synthetic[~drop.to_numpy()].reset_index(drop=True),
            removed=removed,
            rows_before=len(synthetic),
            value_types=types,
            removed_by={label: int(mask.sum()) for label, mask in masks.items()},
        )

    def summary(self) -> dict[str, Any]:
        """What was removed, as counts (``RunOutcome.suppression``): the rows before, the rows
        removed, and the rows each label removes."""
        return {
            "rows_before": self.rows_before,
            "removed": self.removed,
            "by_label": dict(self.removed_by),
        }

    def regate(self, ctx: RunContext) -> Verdict:
        """Record what was removed (a count), quarantine the filtered release in ``ctx`` and gate it
        with the recorded settings. Raises on failure: the caller turns it into a BLOCK."""
        ctx.sink.record_params(
            {
                "rerun_of": self.record.run_id,
                "suppress": ",".join(self.suppress),
                "rows_suppressed": self.removed,
            }
        )
        ctx.sink.record_json(self.record.config, names.ART_CONFIG)
        ctx.value_types = self.value_types
        ctx.quarantine(self.synthetic, self.settings.publish_format)
        return ctx.gate(
            GateInputs(
                splits=self.splits,
                synthetic=self.synthetic,
                synthetic_file_sha256=ctx.quarantined.sha256,
            ),
            self.settings,
        )


def regate_run(
    *,
    run_id: str,
    suppress: list[str],
    tracking_uri: str,
    workdir: str,
    executor: Executor | None = None,
    logger: Any = None,
    dry_run: bool = False,
) -> RunOutcome:
    """Re-run the gate on the release of ``run_id`` without the suppressed subgroups' rows, with
    a progress line per stage (reading and filtering first), and say what was removed
    (``RunOutcome.suppression``). A run that cannot be re-gated (unsealed, changed data, an
    unknown label) raises before the re-run starts: the reviewer is told why. ``dry_run``: the
    re-gate of ``approve --suppress --dry-run``, named and tagged so (``gate.dry_run``)."""
    logger = logger or log
    clock = StageClock(logger)
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    record = RunRecord(tracker, run_id)
    tracker.experiment_id = record.experiment_id
    with clock.stage(
        "suppress", f"removing the rows of {', '.join(suppress)} from the release of run {run_id}"
    ):
        release = SuppressedRelease.read(record, suppress=suppress, workdir=workdir, logger=logger)
    sink = rerun_sink(tracker, parent=run_id, dataset=record.dataset, dry_run=dry_run)
    logger.info(
        "re-gating the filtered release (%s rows) in run %s with the settings run %s recorded",
        f"{len(release.synthetic):,}",
        sink.run_id,
        run_id,
    )
    ctx = RunContext(
        sink=sink,
        store=ReleaseStore(workdir=Path(workdir), target=record.publish_target),
        dataset=record.dataset,
        clock=clock,
        executor=executor or LocalExecutor(),
        config_hash=record.verdict.get("rules_hash"),
    )
    try:
        verdict = release.regate(ctx)
    except Exception as exc:  # noqa: BLE001 - fail closed
        verdict = ctx.fail(exc)
    return dataclasses.replace(finish(ctx, verdict, publish=False), suppression=release.summary())


def rerun_sink(
    tracker: tracking.Tracker, *, parent: str, dataset: str, dry_run: bool = False
) -> MlflowSink:
    """The MLflow run of a re-gate of ``parent``: kind ``review_rerun``, tagged and sealed as the
    re-gate of ``parent`` (so it is decided with it, never alone: ``check_not_a_regate``)."""
    tags = {names.TAG_RERUN_OF: parent, **({names.TAG_DRY_RUN: "true"} if dry_run else {})}
    sink = MlflowSink.start(
        tracker,
        name=f"review-{'dry-run' if dry_run else 'rerun'}-{dataset}",
        kind=names.KIND_REVIEW_RERUN,
        dataset=dataset,
        tags=tags,
    )
    sink.seal[names.SEAL_REGATE_OF] = parent
    return sink
