"""``privacy-gate doctor``: reconcile what killed processes left behind.

- runs left RUNNING in the MLflow store whose process is gone (same host, and its PID is not
  alive or belongs to a process with another start time) are marked KILLED with a reason tag —
  unless their release is published (found complete in their publish target: the process ended
  after publishing, e.g. on a full disk), which is recorded and the run closed FINISHED;
  a run made on another host is only reported (its PID means nothing here);
- decisions a killed ``approve`` / ``reject`` left half done (a decision record without its tags
  or its publication) are reported, and resolved with ``fix`` (``decision_recovery``: a published
  approval's tags are completed, an unpublished one is rolled back, a rejection is completed);
- APPROVE verdicts (and approvals by review) without a publication are reported, one line each;
  whether a release is published is read from the publish target itself (the release the run
  judged, complete under the reader contract), so a run that could not record its publication
  (``gate.published``: a full disk) is never called unpublished — ``fix`` records it;
- release folders of a publish target (local or ``s3://``) holding data but no manifest (a
  killed publication) are listed, and removed with ``fix``;
- staging / quarantine work directories of this host's dead processes are removed with ``fix``;
  another host's are reported and never touched.

Without ``fix`` nothing changes. Lines name runs, paths and URIs, never values of records.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privacy_gate import names, tracking
from privacy_gate.errors import PrivacyGateError
from privacy_gate.processes import owner_gone
from privacy_gate.publication import objectstore
from privacy_gate.publication.publish import (
    MANIFEST,
    PUBLISHED_DIR,
    QUARANTINE_DIR,
    QUARANTINE_TMP_PREFIX,
    STAGING_PREFIX,
    temp_dirs,
)
from privacy_gate.review.decision_recovery import doctor_check, gate_publication

#: a release folder's name: ``<dataset slug>-<12 hex of the content hash>``
#: (``ReleaseStore.release_dir``)
RELEASE_FOLDER = re.compile(r"[a-z0-9][a-z0-9._-]*-[0-9a-f]{12}")
#: an orphan younger than this may be a publication in progress: listed, not removed
DEFAULT_MIN_AGE = 600.0


@dataclass
class Finding:
    # stale-run | run-elsewhere | decision | unpublished | unrecorded | orphan | staging | unchecked
    kind: str
    line: str
    fixed: bool = False


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def remaining(self) -> list[Finding]:
        return [f for f in self.findings if not f.fixed]

    def lines(self, *, fix: bool) -> list[str]:
        out = [*self.notes, *(f"[{f.kind}] {f.line}" for f in self.findings)]
        fixed = sum(f.fixed for f in self.findings)
        if not self.findings:
            return [*out, "doctor: nothing to reconcile"]
        tail = f"doctor: {len(self.findings)} finding(s)"
        tail += (
            f", {fixed} fixed, {len(self.remaining)} left"
            if fix
            else "; run with --fix to repair what can be"
        )
        return [*out, tail]


def _label(run: Any) -> str:
    tags = run.data.tags
    return (
        f"run {run.info.run_id} (dataset {tags.get(names.TAG_DATASET, '?')}, "
        f"{tags.get(names.TAG_KIND, '?')})"
    )


def publication(run: Any) -> str | None:
    """Where a run's release is published (``decision_recovery.gate_publication``)."""
    return gate_publication(dict(run.data.tags))


def _close_published(tracker: tracking.Tracker, run: Any, where: str, why: str) -> None:
    """A run whose release is published but whose process ended first: the publication recorded,
    the reason tagged, then FINISHED."""
    tracker.set_tags(run.info.run_id, {names.TAG_PUBLISHED: where, names.TAG_CLOSED_REASON: why})
    tracker.end_run(run.info.run_id)


def stale_runs(
    tracker: tracking.Tracker, *, fix: bool, experiment_ids: list[str] | None = None
) -> list[Finding]:
    """Runs left RUNNING: KILLED (with ``fix``) when this host can tell their process is gone."""
    out = []
    for run in tracker.find_runs("attributes.status = 'RUNNING'", experiment_ids=experiment_ids):
        tags = run.data.tags
        host, pid = tags.get(names.TAG_HOST), tags.get(names.TAG_PID)
        start = tags.get(names.TAG_PROCESS_START)
        gone = owner_gone(host, pid, None if start == "unknown" else start)
        if gone is None:
            why = (
                f"made on host {host} (PID {pid}): only that host can tell whether it is alive"
                if host
                else f"no {names.TAG_HOST}/{names.TAG_PID} tags (an older version made it)"
            )
            out.append(Finding("run-elsewhere", f"{_label(run)}: RUNNING, {why}; not touched"))
        elif gone and (where := publication(run)) is not None:
            why = (
                f"privacy-gate doctor: the release is published ({where}); the gating process "
                f"(host {host}, PID {pid}) ended before closing the run (e.g. a full disk)"
            )
            if fix:
                _close_published(tracker, run, where, why)
            done = (
                f"recorded as published and marked FINISHED ({names.TAG_CLOSED_REASON} set)"
                if fix
                else "--fix records the publication and marks it FINISHED"
            )
            out.append(
                Finding(
                    "stale-run",
                    f"{_label(run)}: RUNNING but its process (host {host}, PID {pid}) is gone; "
                    f"its release IS published ({where}); {done}",
                    fixed=fix,
                )
            )
        elif gone:
            reason = (
                f"privacy-gate doctor: the gating process (host {host}, PID {pid}) is gone; the "
                "run was left "
                "RUNNING by a killed process"
            )
            if fix:
                tracker.mark_killed(run.info.run_id, reason)
            done = (
                f"marked KILLED ({names.TAG_KILLED_REASON} set)" if fix else "--fix marks it KILLED"
            )
            out.append(
                Finding(
                    "stale-run",
                    f"{_label(run)}: RUNNING but its process (host {host}, PID {pid}) is "
                    f"gone; {done}",
                    fixed=fix,
                )
            )
    return out


def unpublished(tracker: tracking.Tracker, *, fix: bool = False) -> list[Finding]:
    """APPROVE verdicts and approvals by review that recorded no publication. A release found
    published in its target (the run could not tag it) is reported as unrecorded, never as
    unpublished; ``fix`` tags it."""
    out = []
    approved = [
        r
        for r in tracker.find_runs(f"tags.`{names.TAG_VERDICT}` = 'APPROVE'")
        if r.info.status != "RUNNING"
    ]
    where = {r.info.run_id: publication(r) for r in approved}
    published_ladders = {
        r.data.tags.get(names.TAG_LADDER) for r in approved if where[r.info.run_id]
    }
    for run in approved:
        tags, kind = run.data.tags, run.data.tags.get(names.TAG_KIND)
        found = where[run.info.run_id]
        if found and not tags.get(names.TAG_PUBLISHED):
            if fix:
                tracker.set_tags(run.info.run_id, {names.TAG_PUBLISHED: found})
            done = f"{names.TAG_PUBLISHED} set" if fix else f"--fix sets {names.TAG_PUBLISHED}"
            out.append(
                Finding(
                    "unrecorded",
                    f"{_label(run)}: verdict APPROVE and its release IS published ({found}), but "
                    f"the run could not record it (e.g. a full disk); {done}",
                    fixed=fix,
                )
            )
            continue
        if tags.get(names.TAG_LADDER):
            continue  # an attempt of a ladder: its parent carries the decision
        if kind in names.PUBLISHING_KINDS and not found:
            missing = f"no {names.TAG_PUBLISHED} tag and no release in its target"
        elif kind == "ladder" and run.info.run_id not in published_ladders:
            missing = f"none of its attempts has a {names.TAG_PUBLISHED} tag"
        else:
            continue
        out.append(
            Finding(
                "unpublished",
                f"{_label(run)}: verdict APPROVE but {missing} (publication failed or "
                "was killed); run the gate again to publish",
            )
        )
    for run in tracker.find_runs(f"tags.`{names.TAG_APPROVAL_STATUS}` = 'approved'"):
        published = run.data.tags.get(names.TAG_APPROVAL_PUBLISHED) or ""
        if published == "none" or (published and not published.startswith("failed")):
            continue  # published, or an approval a killed process left half done (doctor_check)
        state = (
            f"{names.TAG_APPROVAL_PUBLISHED} is {published!r}"
            if published
            else f"no {names.TAG_APPROVAL_PUBLISHED} tag"
        )
        out.append(
            Finding(
                "unpublished",
                f"{_label(run)}: approved by review but {state}; run the gate again to publish",
            )
        )
    return out


def _orphan_local(target: Path, *, fix: bool, min_age: float) -> list[Finding]:
    out = []
    for entry in sorted(target.iterdir()):
        if (
            not (entry.is_dir() and RELEASE_FOLDER.fullmatch(entry.name))
            or (entry / MANIFEST).exists()
        ):
            continue
        files = list(entry.iterdir())
        if any(not f.is_file() or f.stem != entry.name for f in files):
            continue  # not only a release's data file: not ours to judge
        age = time.time() - entry.stat().st_mtime
        remove = fix and age >= min_age
        if remove:
            shutil.rmtree(entry, ignore_errors=True)
        out.append(
            Finding(
                "orphan",
                f"{entry}: release data without {MANIFEST} (a killed publication); "
                + _orphan_action(fix, remove),
                fixed=remove,
            )
        )
    return out


def _orphan_action(fix: bool, removed: bool) -> str:
    if removed:
        return "removed"
    return "younger than --min-age, may be in progress; left" if fix else "--fix removes it"


def _orphan_s3(target: str, *, fix: bool, min_age: float) -> list[Finding]:
    out = []
    for folder in objectstore.list_prefixes(target):
        name = folder.rsplit("/", 1)[-1]
        if (
            not RELEASE_FOLDER.fullmatch(name)
            or objectstore.get_bytes(objectstore.join(folder, MANIFEST)) is not None
        ):
            continue
        for uri, age in objectstore.list_objects(folder):
            remove = fix and age >= min_age
            if remove:
                objectstore.delete(uri)
            out.append(
                Finding(
                    "orphan",
                    f"{uri}: data object without {MANIFEST} (a killed publication); "
                    + _orphan_action(fix, remove),
                    fixed=remove,
                )
            )
    return out


def orphans(target: str | Path, *, fix: bool, min_age: float = DEFAULT_MIN_AGE) -> list[Finding]:
    """Release folders of a publish target holding data but no manifest."""
    try:
        if objectstore.is_s3(target):
            return _orphan_s3(str(target).rstrip("/"), fix=fix, min_age=min_age)
        return (
            _orphan_local(Path(target), fix=fix, min_age=min_age) if Path(target).is_dir() else []
        )
    except PrivacyGateError as exc:
        return [Finding("unchecked", f"publish target {target}: could not be checked ({exc})")]


def work_dirs(folder: Path, *, prefix: str, fix: bool) -> list[Finding]:
    """Staging / quarantine work directories of dead processes (this host's removed with
    ``fix``)."""
    out = []
    for entry in temp_dirs(folder, prefix=prefix):
        if entry.foreign:
            out.append(
                Finding(
                    "staging",
                    f"{entry.path}: made on host {entry.host} (PID {entry.pid}); only that "
                    "host can tell whether it is in use; left alone",
                )
            )
        elif entry.stale:
            if fix:
                shutil.rmtree(entry.path, ignore_errors=True)
            out.append(
                Finding(
                    "staging",
                    f"{entry.path}: left by a process that is gone (PID {entry.pid}); "
                    + ("removed" if fix else "--fix removes it"),
                    fixed=fix,
                )
            )
    return out


def recorded_targets(tracker: tracking.Tracker) -> set[str]:
    return {
        t
        for r in tracker.find_runs(f"tags.`{names.TAG_PUBLISH_TARGET}` LIKE '%'")
        if (t := r.data.tags.get(names.TAG_PUBLISH_TARGET))
    }


def doctor(
    workdir: Path,
    *,
    tracking_uri: str | None,
    fix: bool,
    targets: list[str] | None = None,
    min_age: float = DEFAULT_MIN_AGE,
) -> Report:
    """Every check; ``tracking_uri`` None: no store to check (its runs are skipped)."""
    report = Report()
    all_targets = {str(Path(workdir) / PUBLISHED_DIR), *(targets or [])}
    if tracking_uri is None:
        report.notes.append(f"no MLflow store in {workdir}; runs not checked")
    else:
        tracker = tracking.Tracker(uri=tracking_uri, experiment=None)
        report.findings += stale_runs(tracker, fix=fix)
        resolved, notes = doctor_check(tracker, fix=fix)
        report.notes += notes
        report.findings += [
            Finding("decision" if r.kind != "unchecked" else "unchecked", r.line, fixed=r.fixed)
            for r in resolved
        ]
        report.findings += unpublished(tracker, fix=fix)
        all_targets |= recorded_targets(tracker)
    for target in sorted(all_targets):
        report.findings += orphans(target, fix=fix, min_age=min_age)
        if not objectstore.is_s3(target):
            report.findings += work_dirs(Path(target), prefix=STAGING_PREFIX, fix=fix)
    report.findings += work_dirs(
        Path(workdir) / QUARANTINE_DIR, prefix=QUARANTINE_TMP_PREFIX, fix=fix
    )
    return report


def reconcile_on_start(uri: str, experiment: str, logger: Any) -> None:
    """The cheap part of doctor before a run starts: this experiment's runs whose process is gone
    are marked KILLED. Never fails the run (a warning at most); never creates a store."""
    db = tracking.sqlite_path(uri)
    if db is not None and not db.is_file():
        return
    try:
        tracker = tracking.Tracker(uri=uri, experiment=None)
        experiment_id = tracker.experiment_id_named(experiment)
        if experiment_id is None:
            return
        for finding in stale_runs(tracker, fix=True, experiment_ids=[experiment_id]):
            if finding.fixed:
                logger.warning("%s", finding.line)
    except Exception as exc:  # noqa: BLE001 - housekeeping: the run goes ahead
        logger.warning(
            "could not check %s for runs left RUNNING (%s); privacy-gate doctor does it",
            uri,
            type(exc).__name__,
        )


__all__ = [
    "DEFAULT_MIN_AGE",
    "Finding",
    "Report",
    "doctor",
    "orphans",
    "publication",
    "reconcile_on_start",
    "stale_runs",
    "unpublished",
    "work_dirs",
]
