"""The records a review reads back and appends on a run, as methods of ``tracking.Tracker``:
the decision log (``decision_log``) and the artifact seal (``artifact_seal``). Through the
tracker's ``client`` only: this module imports no MLflow.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from privacy_gate.names import DECISIONS_DIR, decision_artifact
from privacy_gate.publication.quarantine import sha256_of
from privacy_gate.tracking import artifact_seal
from privacy_gate.tracking.decision_log import DecisionLog, approval_tags
from privacy_gate.tracking.decision_log import effective as effective_decisions


class RunRecords:
    """Mixed into ``tracking.Tracker`` (which provides ``client``, ``run_tags``, ``read_text``,
    ``log_json`` and ``set_tags``)."""

    client: Any

    # ---- the artifact seal
    def artifact_hashes(self, run_id: str) -> dict[str, str]:
        """path -> sha256 of every artifact file of the run, as stored (the whole tree fetched in
        one download, not one per file)."""
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(self.client.download_artifacts(run_id, "", tmp))
            return {
                local.relative_to(root).as_posix(): sha256_of(local)
                for local in sorted(root.rglob("*"))
                if local.is_file()
            }

    def sealed_changes(self, run_id: str, seal: Mapping[str, Any]) -> list[artifact_seal.Change]:
        """The artifacts of ``run_id`` that differ from what its verified ``seal`` and its derived
        seal cover (``artifact_seal.changes``); empty when the run is as the gate left it."""
        return artifact_seal.changes(
            run_id, seal, self.run_tags(run_id), self.artifact_hashes(run_id)
        )

    # ---- the decision log
    def decision_files(self, run_id: str) -> list[tuple[str, str]]:
        """(path, text) of every record of the run's decision log, oldest first."""
        files = sorted(
            f.path for f in self.client.list_artifacts(run_id, DECISIONS_DIR) if not f.is_dir
        )
        return [(f, self.read_text(run_id, f)) for f in files]

    def decision_log(
        self,
        run_id: str,
        tags: Mapping[str, str] | None = None,
        *,
        release_sha256: str | None = None,
    ) -> DecisionLog:
        """The run's decision log: the decisions that stand, and the void records that cancel the
        approvals a killed ``approve`` never published (``decision_log``); a record of another run
        or (given ``release_sha256``) another release is refused."""
        return effective_decisions(
            run_id,
            self.decision_files(run_id),
            self.run_tags(run_id) if tags is None else tags,
            release_sha256=release_sha256,
        )

    def decisions(self, run_id: str) -> list[dict[str, Any]]:
        """The decisions that stand on the run (void records and what they cancel left out)."""
        return self.decision_log(run_id).decisions

    def append_record(self, run_id: str, record: Mapping[str, Any]) -> str:
        """A new record of the decision log (never overwriting one); returns its path."""
        n = len(self.client.list_artifacts(run_id, DECISIONS_DIR)) + 1
        path = decision_artifact(n, record["action"])
        self.log_json(run_id, dict(record), path)
        return path

    def append_decision(self, run_id: str, decision: Mapping[str, Any]) -> None:
        """Append a review decision: a new artifact (never overwriting), then the approval tags. A
        process killed between the two leaves a record without its tags, which
        ``review.decision_recovery`` resolves."""
        self.append_record(run_id, decision)
        self.set_tags(run_id, approval_tags(decision))


__all__ = ["RunRecords"]
