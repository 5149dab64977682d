"""One decision per release: a scheduled run of an unchanged release reuses the decision already
taken on it instead of gating — and asking a reviewer — again.

A *release* is what a release config makes of its data: the config (every setting, the
generator's seed included: ``ReleaseConfig.config_hash``), the bytes of its data files and the
version of privacy-gate that judges it. Its :func:`release_key` is tagged on every MLflow run the
release flow makes (``gate.release_key``). When a deployment's run starts, :func:`prior_decision`
looks for a run of the same key in the config's experiment:

- a REVIEW whose decision is **pending**: the run is skipped, naming the run to decide (without
  this, a daily schedule left one more identical REVIEW in the officer's queue every day, and
  after one was rejected its identical twins stayed pending);
- a **decided** release (APPROVE, BLOCK, or a REVIEW approved or rejected): the run is skipped,
  naming the run that decided it. Gating the same release again could only repeat the decision
  or — with a generator that draws fresh randomness — shop for a different one, and a DP
  generator re-fitted on the same data spends its privacy budget again.

A run that did not complete (status ``error``: an outage, a crash) decided nothing, so the next
run gates. Changing the data or any setting changes the key. ``review.once_per_release: false``
turns the rule off for a config (every scheduled run gates). Runs started by hand
(``privacy-gate run``) always gate; they are tagged too, so a schedule after them reuses theirs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from privacy_gate import names
from privacy_gate.publication import objectstore

_CHUNK = 1 << 20
#: Kinds of runs with a verdict that never decide a release on their own: re-gates, decided with
#: their parent. (The attacks' and a DP audit's nested runs carry no verdict tag.)
_NOT_DECISIONS = frozenset({names.KIND_REVIEW_RERUN, names.KIND_LADDER_FILTER})


def source_fingerprint(location: str | Path) -> str:
    """What identifies the bytes of a data file: the sha256 of a local file; for an ``s3://``
    object its ETag and size (a HEAD request: nothing is downloaded)."""
    if objectstore.is_s3(location):
        etag, size = objectstore.object_etag(str(location))
        return f"s3-etag:{etag}:{size}"
    digest = hashlib.sha256()
    with open(location, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def release_key(config: Any) -> str:
    """The key of the release ``config`` makes of its data now (24 hex digits)."""
    from importlib.metadata import version

    dataset = config.dataset
    parts = {
        "config": config.config_hash(),
        "data": source_fingerprint(dataset.path),
        "reference": source_fingerprint(dataset.reference_path) if dataset.reference_path else None,
        "privacy_gate": version("privacy-gate"),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class PriorDecision:
    """The run that decided (or awaits the decision on) a release."""

    run_id: str
    verdict: str  # APPROVE | REVIEW | BLOCK
    approval: str  # pending | approved | rejected | not_required

    @property
    def pending(self) -> bool:
        return self.verdict == "REVIEW" and self.approval == "pending"

    def reason(self) -> str:
        """Why a run of the same release is skipped, and what to do instead.

        >>> print(PriorDecision("abc", "REVIEW", "pending").reason())
        this release (same data and settings) awaits its review in MLflow run abc: decide it with
        privacy-gate approve abc or privacy-gate reject abc
        >>> print(PriorDecision("abc", "REVIEW", "rejected").reason())
        this release (same data and settings) was already decided in MLflow run abc (REVIEW,
        rejected); change the data or the config to gate a new release
        """
        if self.pending:
            return (
                "this release (same data and settings) awaits its review in MLflow run "
                f"{self.run_id}: decide it "
                f"with privacy-gate approve {self.run_id} or privacy-gate reject {self.run_id}"
            )
        how = self.verdict + (f", {self.approval}" if self.verdict == "REVIEW" else "")
        return (
            "this release (same data and settings) was already decided in MLflow run "
            f"{self.run_id} ({how}); "
            "change the data or the config to gate a new release"
        )


def prior_decision(tracker: Any, key: str) -> PriorDecision | None:
    """The run of ``tracker``'s experiment (a tracker made for the release's config) that decided
    the release ``key`` or awaits its review (a pending review first, then the latest decision, a
    top-level run before a nested one), or None when no run of that release completed."""
    runs = tracker.find_runs(
        f"tags.`{names.TAG_RELEASE_KEY}` = '{key}'", experiment_ids=[tracker.experiment_id]
    )
    decided = []
    for run in runs:
        tags = run.data.tags
        verdict = tags.get(names.TAG_VERDICT)
        if (
            verdict not in ("APPROVE", "REVIEW", "BLOCK")
            or tags.get(names.TAG_STATUS) != "ok"
            or tags.get(names.TAG_KIND) in _NOT_DECISIONS
        ):
            continue
        decided.append(
            (
                run,
                PriorDecision(
                    run.info.run_id, verdict, tags.get(names.TAG_APPROVAL_STATUS, "not_required")
                ),
            )
        )
    pending = [d for _, d in decided if d.pending]
    if pending:
        return pending[0]
    if not decided:
        return None
    run, decision = max(
        decided, key=lambda rd: ("mlflow.parentRunId" not in rd[0].data.tags, rd[0].info.start_time)
    )
    return decision


__all__ = ["PriorDecision", "prior_decision", "release_key", "source_fingerprint"]
