"""One gate run as the tracking store holds it, read back for a decision: its verified verdict,
settings, real data, quarantined release and evidence (:class:`RunRecord`).

``review`` and ``reject`` read only the verdict, the evidence and the decisions; the settings and
the real data (the attacks' and generators' models, the data readers) are imported by the
methods that re-gate, so those commands start without them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from privacy_gate import names, tracking
from privacy_gate.errors import IntegrityError, ReviewError
from privacy_gate.publication import objectstore, quarantine
from privacy_gate.publication.publish import (
    QUARANTINE_DIR,
    QuarantinedRelease,
    file_sha256,
    quarantined_file,
)
from privacy_gate.tracking import artifact_seal
from privacy_gate.tracking.review_records import ReviewDecision

if TYPE_CHECKING:  # imported by the methods that re-gate (see the module docstring)
    from privacy_gate.data import Splits
    from privacy_gate.experiment.settings import GateSettings

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
        judged = (self.verdict.get("data_hashes") or {}).get("synthetic_file_sha256")
        self.decisions = [
            ReviewDecision.from_dict(d)
            for d in tracker.decision_log(run_id, self.tags, release_sha256=judged).decisions
        ]
        self.experiment_id = tracker.experiment_of(run_id)
        path = self.seal.get(names.SEAL_QUARANTINE) or self.tags.get(names.TAG_QUARANTINE)
        self.quarantine_location = path  # a local path, or an s3:// object (fetch_quarantine)
        self.quarantine = Path(path) if path and not objectstore.is_s3(path) else None
        self.publish_target = self.seal.get(names.SEAL_PUBLISH_TARGET)  # a folder or an s3:// URI
        self.dataset = self.seal.get(names.SEAL_DATASET) or self.tags.get(
            names.TAG_DATASET, "dataset"
        )
        self._changes: list[artifact_seal.Change] | None = None

    def _sealed_text(self, path: str, seal_key: str) -> str:
        """An artefact the decision reads, checked against the hash sealed with the verdict."""
        try:
            text = self._tracker.read_text(self.run_id, path)
        except Exception:  # noqa: BLE001 - a run without it cannot be decided
            if path == names.ART_CONFIG:
                raise ReviewError(
                    f"run {self.run_id} has no {path} artifact; it is not a finished gate run"
                ) from None
            raise ReviewError(
                f"run {self.run_id} recorded no {path}; it predates re-gating — run the gate again"
            ) from None
        expected = self.seal.get(seal_key)
        if expected is not None and artifact_seal.text_sha256(text) != expected:
            raise IntegrityError(
                f"{path} of run {self.run_id} changed since the gate decided (its sha256 is sealed "
                f"in {names.ART_VERDICT}); refusing to act on it"
            )
        return text

    def check_publishable(self) -> None:
        """Refuse a run whose publication fields are not sealed in its verified verdict, or whose
        tags disagree with the seal (an edited ``gate.publish_target`` must not move a release)."""
        missing = [
            k
            for k in (
                names.SEAL_PUBLISH_TARGET,
                names.SEAL_QUARANTINE,
                names.SEAL_SYNTHETIC_SHA,
                names.SEAL_SETTINGS_SHA,
            )
            if not self.seal.get(k)
        ]
        if missing:
            raise IntegrityError(
                f"{names.ART_VERDICT} of run {self.run_id} does not seal {', '.join(missing)} (the "
                "run predates sealed publication or never quarantined a release); run the gate "
                "again to decide on it"
            )
        for field, tag in names.SEAL_TAGS.items():
            if field in self.seal and self.tags.get(tag) != str(self.seal[field]):
                raise IntegrityError(
                    f"the {tag} tag of run {self.run_id} ({self.tags.get(tag)}) differs from the "
                    f"{field} sealed in its {names.ART_VERDICT} ({self.seal[field]}); the tag was "
                    "edited — refusing to act on it"
                )
        judged = (self.verdict.get("data_hashes") or {}).get("synthetic_file_sha256")
        if judged != self.seal[names.SEAL_SYNTHETIC_SHA]:
            raise IntegrityError(
                f"run {self.run_id}: the sealed release hash differs from the judged one; "
                "refusing to act on it"
            )
        changed = self.artifact_changes()
        if changed:  # the evidence the reviewer read is not the gate's: never publish on it
            raise IntegrityError(artifact_seal.problem(self.run_id, changed))

    def artifact_changes(self) -> list[artifact_seal.Change]:
        """The run's artifacts that differ from what the gate sealed (``artifact_seal``)."""
        if self._changes is None:
            self._changes = self._tracker.sealed_changes(self.run_id, self.seal)
        return self._changes

    def settings(self) -> GateSettings:
        from privacy_gate.experiment.settings import GateSettings

        text = self._sealed_text(names.ART_SETTINGS, names.SEAL_SETTINGS_SHA)
        try:
            return GateSettings.from_record(json.loads(text))
        except Exception:  # noqa: BLE001
            raise ReviewError(
                f"run {self.run_id} recorded unreadable gate settings ({names.ART_SETTINGS}); run "
                "the gate again"
            ) from None

    def exposed_records(self) -> pd.DataFrame:
        """The run's exposure scan (row ids and p-values); what ``--suppress exposed`` reads. The
        member scan's discoveries (``exposure.scan_members``), when recorded, are added to it."""
        try:
            frame = self._tracker.read_frame(self.run_id, names.ART_EXPOSED)
        except Exception:  # noqa: BLE001
            raise ReviewError(
                f"run {self.run_id} recorded no exposed records ({names.ART_EXPOSED}); "
                "--suppress exposed needs a run of this version"
            ) from None
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
            self.quarantine = quarantine.fetch(
                self.quarantine_location, root=Path(workdir) / QUARANTINE_DIR, sha256=judged
            )
        except quarantine.QuarantineError as exc:
            log.warning("run %s: %s", self.run_id, exc)

    def current_sha256(self) -> str | None:
        return (
            file_sha256(self.quarantine) if self.quarantine and self.quarantine.exists() else None
        )

    def quarantined(self) -> QuarantinedRelease:
        return quarantined_file(
            self.quarantine, self.verdict["data_hashes"]["synthetic_file_sha256"]
        )

    def splits(self) -> Splits:
        """The judged real data again (same files, same split), checked against the recorded
        hashes."""
        from privacy_gate.config import InputLimits, ReleaseConfig
        from privacy_gate.data import data_hash
        from privacy_gate.experiment.inputs import (
            SPLIT_NAMES,
            load_real_data,
            read_split_files,
            split_release,
            splits_from_frames,
        )
        from privacy_gate.spec import DatasetSpec

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
                raise ReviewError(
                    f"the {name} data of run {self.run_id} changed since the gate ran; the gate "
                    "cannot "
                    "be re-run on the same data — run a new release instead"
                )
        return splits


__all__ = ["RunRecord"]
