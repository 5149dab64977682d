"""Human review of REVIEW verdicts: decide later from the CLI, or inside a paused release flow.

Both paths end in :func:`decide_run`, which checks the decision is allowed (a first decision on a
clean REVIEW verdict, on unchanged data), re-runs the gate on the filtered release when subgroups
are suppressed, publishes with the approval record, and appends the decision to the MLflow run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pandas as pd
from prefect import flow, get_run_logger
from prefect.input import RunInput
from pydantic import Field

from privacy_gate import release, tracking
from privacy_gate.config import AuditConfig, DatasetSpec, GateConfig, ReleaseConfig, TargetsConfig
from privacy_gate.data import conform, data_hash, read_table
from privacy_gate.errors import ReviewError
from privacy_gate.gate.audit import group_mask
from privacy_gate.gate.review import Decision, check_decidable, check_subgroup_decisions
from privacy_gate.publish import QuarantinedRelease, ReleaseStore, file_sha256

from flows.release import _finish, _judge, _quarantine, _Run


class ReviewInput(RunInput):
    """The typed input a paused release flow waits for (Prefect UI form or ``resume_flow_run``).

    ``subgroups``: per flagged subgroup ``approve`` or ``reject``; rejected groups are suppressed
    (their synthetic rows removed, the gate re-run) and the rest is published. ``decision:
    reject`` publishes nothing."""

    reviewer: str = Field(min_length=1)
    decision: Literal["approve", "reject"] = "approve"
    subgroups: dict[str, Literal["approve", "reject"]] = Field(default_factory=dict)
    comment: str = ""


class _RunRecord:
    """What the MLflow store holds about one gate run, read back for a decision."""

    def __init__(self, tracker: tracking.Tracker, run_id: str):
        self.run_id = run_id
        self.tags = tracker.run_tags(run_id)
        try:
            self.verdict = tracker.read_json(run_id, tracking.ART_VERDICT)
            self.config = tracker.read_json(run_id, tracking.ART_CONFIG)
        except Exception:  # noqa: BLE001 - a run without its ledger cannot be decided
            raise ReviewError(f"run {run_id} has no verdict.json/config artifact; it is not a finished gate run") from None
        self.decisions = [Decision.from_dict(d) for d in tracker.decisions(run_id)]
        self.experiment_id = tracker.client.get_run(run_id).info.experiment_id
        path = self.tags.get(tracking.TAG_QUARANTINE)
        self.quarantine = Path(path) if path else None
        self.publish_target = Path(self.tags.get(tracking.TAG_PUBLISH_TARGET, "published"))
        self.dataset = self.tags.get(tracking.TAG_DATASET, "dataset")

    def current_sha256(self) -> str | None:
        return file_sha256(self.quarantine) if self.quarantine and self.quarantine.exists() else None

    def quarantined(self) -> QuarantinedRelease:
        fmt = self.quarantine.suffix.lstrip(".")
        return QuarantinedRelease(path=self.quarantine, sha256=self.verdict["data_hashes"]["synthetic_file_sha256"],
                                  rows=-1, fmt=fmt)


def _rebuild(record: _RunRecord) -> dict[str, Any]:
    """The judged inputs again (same files, same split), checked against the recorded hashes."""
    cfg = record.config
    if cfg.get("mode") == "gate_only":
        spec = DatasetSpec.model_validate(cfg["spec"])
        parts = {k: conform(read_table(p), spec, source=p) for k, p in cfg["inputs"].items()}
        splits = release.splits_from_files(parts)
        settings = dict(gate=GateConfig.model_validate(cfg["gate"]),
                        attacks=list(ReleaseConfig.model_fields["attacks"].default_factory()),
                        targets_cfg=TargetsConfig(seed=cfg.get("targets_seed", 0)), audit_cfg=AuditConfig(),
                        generator=None, generator_params={})
        fmt = "parquet"
    else:
        config = ReleaseConfig.model_validate(cfg)
        spec = config.dataset.spec
        real, public_reference = release.load_real_data(config)
        splits = release.split(config, real, public_reference)
        eps = config.generator.params.get("epsilon")
        settings = dict(gate=config.gate, attacks=config.attacks, targets_cfg=config.targets, audit_cfg=config.audit,
                        generator=config.generator.name, mace_cfg=config.mace,
                        privacy={"epsilon": float(eps)} if eps is not None else None,
                        generator_params={**config.generator.params, "seed": config.generator.seed})
        fmt = config.publish.format
    recorded = record.verdict.get("data_hashes", {})
    for name in ("train", "holdout", "reference"):
        if recorded.get(f"{name}_sha256") != data_hash(getattr(splits, name)):
            raise ReviewError(f"the {name} data of run {record.run_id} changed since the gate ran; the gate cannot "
                              "be re-run on the same data — run a new release instead")
    return {"spec": spec, "splits": splits, "fmt": fmt, **settings}


@flow(name="review-regate")
def regate_flow(*, run_id: str, suppress: list[str], tracking_uri: str, workdir: str) -> dict[str, Any]:
    """Re-run the gate on the release of ``run_id`` without the suppressed subgroups' rows."""
    logger = get_run_logger()
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    record = _RunRecord(tracker, run_id)
    tracker.experiment_id = record.experiment_id
    inputs = _rebuild(record)
    spec = inputs["spec"]
    synthetic = (pd.read_parquet(record.quarantine) if record.quarantine.suffix == ".parquet"
                 else pd.read_csv(record.quarantine))
    synthetic = conform(synthetic, spec, source="quarantined release")
    drop = pd.Series(False, index=synthetic.index)
    for label in suppress:
        try:
            drop |= group_mask(synthetic, label)
        except KeyError as exc:
            raise ReviewError(f"--suppress {label!r}: unknown column {exc}") from None
        except ValueError as exc:
            raise ReviewError(f"--suppress {label!r}: {exc}") from None
    logger.info("suppressing %d of %d synthetic rows (%s)", int(drop.sum()), len(synthetic), ", ".join(suppress))
    filtered = synthetic[~drop.to_numpy()].reset_index(drop=True)
    run = _Run(tracker=tracker, run_id=tracker.start_run(
                   name=f"review-rerun-{record.dataset}", kind="review_rerun",
                   tags={tracking.TAG_DATASET: record.dataset, tracking.TAG_RERUN_OF: run_id}),
               store=ReleaseStore(workdir=Path(workdir), target=record.publish_target), dataset=record.dataset,
               config_hash=record.verdict.get("rules_hash"), publish_fmt=inputs["fmt"])
    tracker.log_params(run.run_id, {"rerun_of": run_id, "suppress": ",".join(suppress),
                                    "rows_suppressed": int(drop.sum())})
    tracker.log_json(run.run_id, record.config, tracking.ART_CONFIG)
    try:
        _quarantine(run, filtered)
        verdict = _judge(run, spec=spec, splits=inputs["splits"], synthetic=filtered, gate=inputs["gate"],
                         attacks=inputs["attacks"], targets_cfg=inputs["targets_cfg"], audit_cfg=inputs["audit_cfg"],
                         generator=inputs["generator"], generator_params=inputs["generator_params"],
                         mace_cfg=inputs.get("mace_cfg"), privacy=inputs.get("privacy"))
    except Exception as exc:  # noqa: BLE001 - fail closed
        from flows.release import _failure

        verdict = _failure(run, exc)
    return _finish(run, verdict, publish=False)


def decide_run(run_id: str, *, action: Literal["approve", "reject"], reviewer: str, comment: str = "",
               subgroups: dict[str, str] | None = None, suppress: list[str] | None = None, via: str = "cli",
               tracking_uri: str, workdir: str) -> Decision:
    """Check, (re-gate and) publish or reject, and append the decision to the run."""
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    record = _RunRecord(tracker, run_id)
    subgroups = dict(subgroups or {})
    suppress = sorted(set(suppress or []) | {g for g, a in subgroups.items() if a == "reject"})
    current = record.current_sha256()
    check_decidable(run_id, record.verdict, record.decisions, current_sha256=current)
    check_subgroup_decisions(record.verdict, subgroups, suppress)
    decision = dict(action=action, reviewer=reviewer, comment=comment, data_sha256=current, via=via,
                    subgroups={**{g: "approve" for g in record.verdict.get("flagged_subgroups") or []
                                  if action == "approve"}, **subgroups, **{g: "reject" for g in suppress}},
                    suppress=suppress)
    if action == "reject":
        final = Decision.new(**decision)
        tracker.append_decision(run_id, final.to_dict())
        _refresh_report(tracker, run_id)
        return final
    store = ReleaseStore(workdir=Path(workdir), target=record.publish_target)
    to_publish, rerun_id = record.quarantined(), None
    if suppress:
        result = regate_flow(run_id=run_id, suppress=suppress, tracking_uri=tracking_uri, workdir=workdir)
        rerun = result["verdict"]
        rerun_id = rerun["run_id"]
        if rerun["verdict"] == "BLOCK":
            reasons = "; ".join(c["message"] for c in rerun["reasons"])
            raise ReviewError(f"after suppressing {suppress} the gate still BLOCKs (re-run {rerun_id}): {reasons}")
        to_publish = QuarantinedRelease(path=Path(result["quarantined"]),
                                        sha256=rerun["data_hashes"]["synthetic_file_sha256"], rows=-1,
                                        fmt=Path(result["quarantined"]).suffix.lstrip("."))
    pending = Decision.new(**decision, rerun_id=rerun_id)
    published = store.publish(to_publish, dataset=record.dataset, verdict=record.verdict["verdict"], run_id=run_id,
                              config_hash=record.verdict.get("rules_hash"), approval=pending.to_dict())
    final = Decision.new(**{**pending.to_dict(), "published": str(published)})
    tracker.append_decision(run_id, final.to_dict())
    _refresh_report(tracker, run_id)
    return final


def _refresh_report(tracker: tracking.Tracker, run_id: str) -> None:
    """Re-render the run's HTML report with the decision; the decision stands even if this fails."""
    try:
        from privacy_gate.report.html import log_report

        log_report(tracker, run_id)
    except Exception as exc:  # noqa: BLE001
        import logging

        logging.getLogger(__name__).warning("could not re-render the HTML report of run %s (%s)", run_id,
                                            type(exc).__name__)


def review_text(run_id: str, *, tracking_uri: str) -> str:
    from privacy_gate.gate.review import pending_text

    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    record = _RunRecord(tracker, run_id)
    return pending_text(run_id, record.verdict, record.decisions)
