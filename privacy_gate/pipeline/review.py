"""Human review of REVIEW verdicts, from the CLI or a paused flow: both end in :func:`decide_run`.

It checks the decision is allowed (a first decision on a clean REVIEW verdict, on unchanged
data), re-runs the gate on the filtered release when subgroups are suppressed — with the
settings the original run recorded, so the same attacks, epsilon and oracle judge it — publishes
with the approval record, and appends the decision to the MLflow run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from privacy_gate import artifact_seal, names, tracking
from privacy_gate.config import InputLimits, ReleaseConfig
from privacy_gate.spec import DatasetSpec
from privacy_gate.data import Splits, conform, data_hash
from privacy_gate.data.types import value_types
from privacy_gate.errors import IntegrityError, PrivacyGateError, ReviewError
from privacy_gate.gate import Verdict
from privacy_gate.experiment.grouping import names_hashed_values
from privacy_gate.gate.evidence import flagged_evidence
from privacy_gate.label_key import matching_key
from privacy_gate.gate.review_records import (ReviewDecision, check_decidable, check_not_a_regate,
                                               check_subgroup_decisions, pending_text, suppressed_with)
from privacy_gate.pipeline.executor import Executor, LocalExecutor
from privacy_gate.experiment.inputs import (SPLIT_NAMES, GateInputs, load_real_data, read_split_files, split_release,
                                          splits_from_frames)
from privacy_gate.pipeline.decision_lock import DecisionHold, decision_lock
from privacy_gate.pipeline.decision_recovery import resolve_before_deciding, resolve_for_review
from privacy_gate.pipeline.mlflow_sink import MlflowSink, text_sha256
from privacy_gate.pipeline.stages import StageClock
from privacy_gate.pipeline.release import RunContext, finish, log_report_of
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.experiment.settings import GateSettings
from privacy_gate.pipeline.suppression import singled_out, suppression_mask
from privacy_gate.safe_text import console_lines
from privacy_gate import objectstore, quarantine
from privacy_gate.publish import (QUARANTINE_DIR, QuarantinedRelease, ReleaseStore, file_sha256, quarantined_file,
                                  read_quarantined)

log = logging.getLogger("privacy_gate")


class RunRecord:
    """What the tracking store holds about one gate run, read back for a decision.

    Where publication goes and what it publishes come from the verified verdict document's seal
    (under its digest), never from the run's editable tags: :meth:`check_publishable` refuses a
    run whose tags disagree with its seal, or that has no seal."""

    def __init__(self, tracker: tracking.Tracker, run_id: str):
        self.run_id = run_id
        self.tags = tracker.run_tags(run_id)
        self.verdict, self.seal = tracker.read_verified(run_id)
        self._tracker = tracker
        self.config = json.loads(self._sealed_text(names.ART_CONFIG, names.SEAL_CONFIG_SHA))
        self.decisions = [ReviewDecision.from_dict(d) for d in tracker.decisions(run_id)]
        self.experiment_id = tracker.experiment_of(run_id)
        path = self.seal.get(names.SEAL_QUARANTINE) or self.tags.get(names.TAG_QUARANTINE)
        self.quarantine_location = path  # a local path, or an s3:// object (fetch_quarantine)
        self.quarantine = Path(path) if path and not objectstore.is_s3(path) else None
        self.publish_target = self.seal.get(names.SEAL_PUBLISH_TARGET)  # a folder or an s3:// URI
        self.dataset = self.seal.get(names.SEAL_DATASET) or self.tags.get(names.TAG_DATASET, "dataset")
        self._changes: list[artifact_seal.Change] | None = None

    def _sealed_text(self, path: str, seal_key: str) -> str:
        """An artefact the decision reads, checked against the hash sealed with the verdict."""
        try:
            text = self._tracker.read_text(self.run_id, path)
        except Exception:  # noqa: BLE001 - a run without it cannot be decided
            if path == names.ART_CONFIG:
                raise ReviewError(f"run {self.run_id} has no {path} artifact; it is not a finished gate run") from None
            raise ReviewError(f"run {self.run_id} recorded no {path}; it predates re-gating — run the gate "
                              "again") from None
        expected = self.seal.get(seal_key)
        if expected is not None and text_sha256(text) != expected:
            raise IntegrityError(f"{path} of run {self.run_id} changed since the gate decided (its sha256 is sealed "
                                 f"in {names.ART_VERDICT}); refusing to act on it")
        return text

    def check_publishable(self) -> None:
        """Refuse a run whose publication fields are not sealed in its verified verdict, or whose
        tags disagree with the seal (an edited ``gate.publish_target`` must not move a release)."""
        missing = [k for k in (names.SEAL_PUBLISH_TARGET, names.SEAL_QUARANTINE, names.SEAL_SYNTHETIC_SHA,
                               names.SEAL_SETTINGS_SHA) if not self.seal.get(k)]
        if missing:
            raise IntegrityError(f"{names.ART_VERDICT} of run {self.run_id} does not seal {', '.join(missing)} (the "
                                 "run predates sealed publication or never quarantined a release); run the gate "
                                 "again to decide on it")
        for field, tag in names.SEAL_TAGS.items():
            if field in self.seal and self.tags.get(tag) != str(self.seal[field]):
                raise IntegrityError(f"the {tag} tag of run {self.run_id} ({self.tags.get(tag)}) differs from the "
                                     f"{field} sealed in its {names.ART_VERDICT} ({self.seal[field]}); the tag was "
                                     "edited — refusing to act on it")
        judged = (self.verdict.get("data_hashes") or {}).get("synthetic_file_sha256")
        if judged != self.seal[names.SEAL_SYNTHETIC_SHA]:
            raise IntegrityError(f"run {self.run_id}: the sealed release hash differs from the judged one; "
                                 "refusing to act on it")
        changed = self.artifact_changes()
        if changed:  # the evidence the reviewer read is not the gate's: never publish on it
            raise IntegrityError(artifact_seal.problem(self.run_id, changed))

    def artifact_changes(self) -> list[artifact_seal.Change]:
        """The run's artifacts that differ from what the gate sealed (``artifact_seal``)."""
        if self._changes is None:
            self._changes = self._tracker.sealed_changes(self.run_id, self.seal)
        return self._changes

    def settings(self) -> GateSettings:
        text = self._sealed_text(names.ART_SETTINGS, names.SEAL_SETTINGS_SHA)
        try:
            return GateSettings.from_record(json.loads(text))
        except Exception:  # noqa: BLE001
            raise ReviewError(f"run {self.run_id} recorded unreadable gate settings ({names.ART_SETTINGS}); run "
                              "the gate again") from None

    def exposed_records(self) -> pd.DataFrame:
        """The run's exposure scan (row ids and p-values); what ``--suppress exposed`` reads. The
        member scan's discoveries (``exposure.scan_members``), when recorded, are added to it."""
        try:
            frame = self._tracker.read_frame(self.run_id, names.ART_EXPOSED)
        except Exception:  # noqa: BLE001
            raise ReviewError(f"run {self.run_id} recorded no exposed records ({names.ART_EXPOSED}); "
                              "--suppress exposed needs a run of this version") from None
        try:
            scan = self._tracker.read_frame(self.run_id, names.ART_SCAN)
        except Exception:  # noqa: BLE001 - the scan is optional: most runs have none
            return frame
        found = scan.loc[scan["exposed"].astype(bool), ["row_id", "p_value", "exposed"]]
        return pd.concat([frame, found[~found["row_id"].isin(frame["row_id"])]], ignore_index=True)

    def subgroup_rows(self) -> list[dict[str, Any]]:
        """The audit's figures per group and attack (``audit/subgroups.json``); empty when the run
        recorded none (a gate that failed before the audit)."""
        if not self.verdict.get("flagged_subgroups"):
            return []
        try:
            return list(self._tracker.read_json(self.run_id, names.ART_SUBGROUPS) or [])
        except Exception:  # noqa: BLE001 - the evidence is optional: the verdict still shows
            return []

    def fetch_quarantine(self, workdir: str | Path) -> None:
        """A quarantine on object storage, downloaded into ``workdir``'s quarantine and checked
        against its commit record and the judged hash: any machine with the store and the bucket
        decides on the same bytes. Missing or different, it stays None (the decision refuses)."""
        if self.quarantine is not None or not objectstore.is_s3(self.quarantine_location):
            return
        judged = (self.verdict.get("data_hashes") or {}).get("synthetic_file_sha256")
        try:
            self.quarantine = quarantine.fetch(self.quarantine_location, root=Path(workdir) / QUARANTINE_DIR,
                                               sha256=judged)
        except quarantine.QuarantineError as exc:
            log.warning("run %s: %s", self.run_id, exc)

    def current_sha256(self) -> str | None:
        return file_sha256(self.quarantine) if self.quarantine and self.quarantine.exists() else None

    def quarantined(self) -> QuarantinedRelease:
        return quarantined_file(self.quarantine, self.verdict["data_hashes"]["synthetic_file_sha256"])

    def splits(self) -> Splits:
        """The judged real data again (same files, same split), checked against the recorded hashes."""
        cfg = self.config
        if cfg.get("mode") == "gate_only":
            spec = DatasetSpec.model_validate(cfg["spec"])
            limits = InputLimits.model_validate((cfg.get("judging") or {}).get("inputs") or {})
            splits = splits_from_frames(read_split_files(cfg["inputs"], spec, limits))
        else:
            config = ReleaseConfig.model_validate(cfg)
            splits = split_release(config, *load_real_data(config))
        recorded = self.verdict.get("data_hashes", {})
        for name in SPLIT_NAMES:
            if recorded.get(f"{name}_sha256") != data_hash(getattr(splits, name)):
                raise ReviewError(f"the {name} data of run {self.run_id} changed since the gate ran; the gate cannot "
                                  "be re-run on the same data — run a new release instead")
        return splits


@dataclass(frozen=True)
class SuppressedRelease:
    """A judged run's quarantined release without the rows ``suppress`` removes, with what its
    re-gate needs: the run's recorded settings (the same attacks, epsilon and oracle judge it) and
    its real data (checked against the hashes it recorded). ``removed`` counts the rows removed;
    no row's values leave this object."""

    record: RunRecord
    suppress: tuple[str, ...]
    settings: GateSettings
    splits: Splits
    synthetic: pd.DataFrame  # the filtered release
    removed: int
    rows_before: int
    value_types: dict[str, str] | None = None  # the quarantined file's types

    @classmethod
    def read(cls, record: RunRecord, *, suppress: list[str], workdir: str | Path, logger: Any = None
             ) -> SuppressedRelease:
        """Read ``record``'s sealed release and real data back and apply the ``--suppress`` labels
        (:func:`~privacy_gate.pipeline.suppression.suppression_mask`)."""
        logger = logger or log
        record.check_publishable()
        record.fetch_quarantine(workdir)
        settings = record.settings()
        splits = record.splits()
        raw = read_quarantined(record.quarantine)
        types = value_types(raw, settings.spec)  # written in the input's types: the filtered release keeps them
        synthetic = conform(raw, settings.spec, source="quarantined release", check_identifiers=False)
        del raw
        exposed = None
        if names.SUPPRESS_EXPOSED in suppress:
            # the level the gate measured the exposed share at (coarser than exposure.level on a small table)
            level = (record.verdict.get("metrics") or {}).get(names.exposure_metric("level")) or settings.exposure.level
            ids = singled_out(record.exposed_records(), level=float(level))
            exposed = splits.train.loc[splits.train.index.intersection(ids)]
            logger.info("suppressing the synthetic neighbours of %d exposed record(s)", len(exposed))
        # a hashed label is resolved with the key that hashed it (this workdir's, checked against the seal)
        key = (matching_key(workdir, fingerprint=record.seal.get(names.SEAL_LABEL_KEY), what=f"run {record.run_id}")
               if any(names_hashed_values(s) for s in suppress) else None)
        drop = suppression_mask(suppress, synthetic=synthetic, spec=settings.spec, exposed=exposed,
                                reference=splits.reference, train=splits.train, holdout=splits.holdout, label_key=key)
        removed = int(drop.sum())
        logger.info("suppressing %d of %d synthetic rows (%s)", removed, len(synthetic), ", ".join(suppress))
        return cls(record=record, suppress=tuple(suppress), settings=settings, splits=splits,
                   synthetic=synthetic[~drop.to_numpy()].reset_index(drop=True), removed=removed,
                   rows_before=len(synthetic), value_types=types)

    def regate(self, ctx: RunContext) -> Verdict:
        """Record what was removed (a count), quarantine the filtered release in ``ctx`` and gate it
        with the recorded settings. Raises on failure: the caller turns it into a BLOCK."""
        ctx.sink.record_params({"rerun_of": self.record.run_id, "suppress": ",".join(self.suppress),
                                "rows_suppressed": self.removed})
        ctx.sink.record_json(self.record.config, names.ART_CONFIG)
        ctx.value_types = self.value_types
        ctx.quarantine(self.synthetic, self.settings.publish_format)
        return ctx.gate(GateInputs(splits=self.splits, synthetic=self.synthetic,
                                   synthetic_file_sha256=ctx.quarantined.sha256), self.settings)


def regate_run(*, run_id: str, suppress: list[str], tracking_uri: str, workdir: str,
               executor: Executor | None = None, logger: Any = None) -> RunOutcome:
    """Re-run the gate on the release of ``run_id`` without the suppressed subgroups' rows. A run
    that cannot be re-gated (unsealed, changed data, an unknown label) raises before the re-run
    starts: the reviewer is told why."""
    logger = logger or log
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    record = RunRecord(tracker, run_id)
    tracker.experiment_id = record.experiment_id
    release = SuppressedRelease.read(record, suppress=suppress, workdir=workdir, logger=logger)
    sink = rerun_sink(tracker, parent=run_id, dataset=record.dataset)
    ctx = RunContext(sink=sink, store=ReleaseStore(workdir=Path(workdir), target=record.publish_target),
                     dataset=record.dataset, clock=StageClock(logger), executor=executor or LocalExecutor(),
                     config_hash=record.verdict.get("rules_hash"))
    try:
        verdict = release.regate(ctx)
    except Exception as exc:  # noqa: BLE001 - fail closed
        verdict = ctx.fail(exc)
    return finish(ctx, verdict, publish=False)


def rerun_sink(tracker: tracking.Tracker, *, parent: str, dataset: str) -> MlflowSink:
    """The MLflow run of a re-gate of ``parent``: kind ``review_rerun``, tagged and sealed as the
    re-gate of ``parent`` (so it is decided with it, never alone: ``check_not_a_regate``)."""
    sink = MlflowSink.start(tracker, name=f"review-rerun-{dataset}", kind=names.KIND_REVIEW_RERUN, dataset=dataset,
                            tags={names.TAG_RERUN_OF: parent})
    sink.seal[names.SEAL_REGATE_OF] = parent
    return sink


Regate = Callable[..., RunOutcome]


def decide_run(run_id: str, *, action: Literal["approve", "reject"], reviewer: str, comment: str = "",
               subgroups: dict[str, str] | None = None, suppress: list[str] | None = None, via: str = "cli",
               tracking_uri: str, workdir: str, regate: Regate | None = None) -> ReviewDecision:
    """Check, (re-gate and) publish or reject, and append the decision to the run.

    ``regate``: how to re-run the gate after suppression (default :func:`regate_run` in this
    process; the CLI passes the Prefect flow so the re-run shows up in the Prefect UI).

    One decision per run: the whole check-then-act holds the run's decision lock (across
    processes) and claim (``decision_lock``); a second decider is refused once the first is recorded."""
    with decision_lock(tracking_uri, run_id) as local:
        tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
        # a decision a killed decider left half done is completed or rolled back first (decision_recovery)
        resolve_before_deciding(tracker, run_id, by=f"privacy-gate {action} ({via})", locked=local)
        record = RunRecord(tracker, run_id)  # read under the lock: a decision taken meanwhile is seen
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
            check_decidable(run_id, record.verdict, [ReviewDecision.from_dict(d) for d in tracker.decisions(run_id)],
                            current_sha256=record.current_sha256())
            decision = dict(action=action, reviewer=reviewer, comment=comment, data_sha256=current, via=via,
                            subgroups={**{g: "approve" for g in record.verdict.get("flagged_subgroups") or []
                                          if action == "approve"}, **subgroups, **{g: "reject" for g in suppress}},
                            suppress=suppress)
            if action == "reject":
                final = ReviewDecision.new(**decision)
                tracker.append_decision(run_id, final.to_dict())
                _refresh_report(MlflowSink(tracker, run_id))
                return final
            return _approve(tracker, record, decision, suppress=suppress, regate=regate, tracking_uri=tracking_uri,
                            workdir=workdir)
        except BaseException:
            if not _has_decision(tracker, run_id):  # nothing recorded: the run may be decided again
                hold.release()
            raise


def _with_contained_groups(verdict: dict[str, Any], subgroups: dict[str, str], suppress: list[str]) -> list[str]:
    """``suppress`` and every flagged group whose rows all go with it (``sex=Female&race=Black``
    with ``race=Black``), so the decision records exactly what was removed. A group approved
    explicitly although its rows go with a suppressed one is refused."""
    gone = suppressed_with(list(verdict.get("flagged_subgroups") or []), suppress)
    contradicted = [g for g in gone if subgroups.get(g) == "approve"]
    if contradicted:
        raise ReviewError(f"{contradicted} approved, but their rows are removed with the suppressed "
                          f"{[s for s in suppress if s not in contradicted]}; suppress them too or do not suppress those")
    return sorted(set(suppress) | set(gone))


def _has_decision(tracker: tracking.Tracker, run_id: str) -> bool:
    try:
        return bool(tracker.decisions(run_id))
    except Exception:  # noqa: BLE001 - unknown: keep the claim (it blocks, never publishes)
        return True


def _approve(tracker: tracking.Tracker, record: RunRecord, decision: dict[str, Any], *, suppress: list[str],
             regate: Regate | None, tracking_uri: str, workdir: str) -> ReviewDecision:
    """(Re-gate and) record the approval, read it back, then publish to the sealed target."""
    run_id = record.run_id
    store = ReleaseStore(workdir=Path(workdir), target=record.publish_target)
    to_publish, rerun_id = record.quarantined(), None
    if suppress:
        result = (regate or regate_run)(run_id=run_id, suppress=suppress, tracking_uri=tracking_uri, workdir=workdir)
        rerun = result.verdict
        rerun_id = rerun.run_id
        if rerun.decision == "BLOCK":
            reasons = "; ".join(c.message for c in rerun.reasons)
            raise ReviewError(f"after suppressing {suppress} the gate still BLOCKs (re-run {rerun_id}): {reasons}")
        to_publish = quarantined_file(Path(result.quarantined), rerun.data_hashes["synthetic_file_sha256"])
    # the approval is recorded, and read back, before anything is published
    approval = ReviewDecision.new(**decision, rerun_id=rerun_id)
    tracker.append_decision(run_id, approval.to_dict())
    recorded = tracker.decisions(run_id)
    if not recorded or ReviewDecision.from_dict(recorded[-1]) != approval:
        raise ReviewError(f"the approval of run {run_id} could not be read back from {tracking_uri}; nothing was "
                          "published")
    try:
        published = store.publish(to_publish, dataset=record.dataset, verdict=record.verdict["verdict"],
                                  run_id=run_id, config_hash=record.verdict.get("rules_hash"),
                                  approval=approval.to_dict())
    except Exception as exc:  # noqa: BLE001 - publication is atomic: nothing partial is visible
        tracker.set_tags(run_id, {names.TAG_APPROVAL_PUBLISHED: f"failed ({type(exc).__name__})"})
        reason = str(exc) if isinstance(exc, PrivacyGateError) else type(exc).__name__
        raise ReviewError(f"run {run_id} is approved but publication failed ({reason}); nothing is visible in "
                          f"{store.target} — run the gate again to publish") from None
    tracker.set_tags(run_id, {names.TAG_APPROVAL_PUBLISHED: str(published)})
    _refresh_report(MlflowSink(tracker, run_id))
    return ReviewDecision.new(**{**approval.to_dict(), "published": str(published)})


def _refresh_report(sink: MlflowSink) -> None:
    """Re-render the run's HTML report with the decision; the decision stands even if this fails."""
    try:
        log_report_of(sink)
    except Exception as exc:  # noqa: BLE001
        log.warning("could not re-render the HTML report of run %s (%s)", sink.run_id, type(exc).__name__)


def review_text(run_id: str, *, tracking_uri: str) -> str:
    """What ``privacy-gate review RUN`` prints: the evidence on each flagged group first (from the
    audit's recorded figures), then the decision state and the rule checks."""
    recovered = resolve_for_review(tracking_uri, run_id)  # a half-done decision: resolved and said first
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    record = RunRecord(tracker, run_id)
    text = pending_text(run_id, record.verdict, record.decisions,
                        published=record.tags.get(names.TAG_APPROVAL_PUBLISHED),
                        evidence=flagged_evidence(record.subgroup_rows(), record.verdict))
    changed = record.artifact_changes()  # named first, loudly: approve refuses such a run
    head = artifact_seal.warning_lines(run_id, changed) + recovered
    return f"{console_lines(head)}\n{text}" if head else text


def pending_runs_text(*, tracking_uri: str) -> str:
    """What ``privacy-gate review --pending`` prints: one line per REVIEW run awaiting a decision
    (run id, dataset, when it started, flagged groups), oldest first."""
    tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
    runs = tracker.runs_awaiting_review()
    if not runs:
        return "no runs awaiting review"
    lines = [f"{len(runs)} run(s) awaiting review (decide with `privacy-gate review RUN_ID`, then approve / reject):"]
    for r in runs:
        flagged = ", ".join(r["flagged"]) or "none"
        lines.append(f"{r['run_id']}  {r['dataset']}  {r['started']}  flagged: {flagged}")
    return console_lines(lines)
