"""A full disk is named once, where errors are classified: the failing file (or the workdir) and
the space left on its disk, and what to do; never a traceback, never a retry."""

from __future__ import annotations

import errno
import sqlite3

import numpy as np
import pandas as pd

from privacy_gate import names
from privacy_gate.errors import DiskFullError, disk_full, is_infrastructure_error, safe_reason
from privacy_gate.pipeline.stages import failure_verdict
from privacy_gate.publication.publish import ReleaseStore
from privacy_gate.review.doctor import doctor
from privacy_gate.tracking import Tracker


def _enospc(path) -> OSError:
    return OSError(errno.ENOSPC, "No space left on device", str(path))


def test_enospc_names_the_failing_file_and_the_space_left(tmp_path):
    error = disk_full(_enospc(tmp_path / "mlartifacts" / "verdict.json"))
    assert isinstance(error, DiskFullError)
    text = str(error)
    assert text.startswith(
        f"the disk holding {tmp_path / 'mlartifacts' / 'verdict.json'} is full ("
    )
    assert " MB free): free space and run the gate again" in text


def test_sqlite_disk_full_deep_in_a_chain_names_the_workdir(tmp_path):
    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as inner:
            raise RuntimeError("(sqlite3.OperationalError) while logging") from inner
    except RuntimeError as exc:
        outer = exc
    error = disk_full(outer, where=tmp_path)
    assert error is not None and f"the disk holding {tmp_path} is full" in str(error)
    assert not is_infrastructure_error(outer)  # a retry would fill the same disk


def test_the_verdict_names_the_disk_and_blocks(tmp_path):
    verdict = failure_verdict(
        sqlite3.OperationalError("database or disk is full"), stage="record_verdict", where=tmp_path
    )
    reason = verdict.reasons[0].message
    assert verdict.decision == "BLOCK" and verdict.exit_code == 4
    assert f"record_verdict: the disk holding {tmp_path} is full" in reason
    assert "unexpected" not in reason and "Traceback" not in reason


def test_other_errors_are_classified_as_before(tmp_path):
    denied = PermissionError(errno.EACCES, "Permission denied", str(tmp_path))
    assert safe_reason(denied) == f"Permission denied: {tmp_path}"
    assert disk_full(ValueError("age=37")) is None and safe_reason(ValueError("x")) is None


def test_doctor_reads_a_publication_the_run_could_not_record(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    workdir = tmp_path / "wd"
    tracker = Tracker.for_workdir(workdir=workdir, dataset="adult")
    store = ReleaseStore(workdir=workdir)
    frame = pd.DataFrame({"a": np.arange(50)})
    release = store.quarantine(frame)
    run_id = tracker.start_run(
        name="release-adult",
        kind="release",
        tags={
            names.TAG_DATASET: "adult",
            names.TAG_VERDICT: "APPROVE",
            names.TAG_PUBLISH_TARGET: store.target_label,
            names.TAG_SYNTHETIC_SHA: release.sha256,
        },
    )
    where = store.publish(
        release, dataset="adult", verdict="APPROVE", run_id=run_id, config_hash=None
    )
    tracker.end_run(run_id)  # ... but gate.published could not be written (a full disk)
    lines = doctor(workdir, tracking_uri=tracker.uri, fix=False).lines(fix=False)
    assert not any(line.startswith("[unpublished]") for line in lines), lines
    assert any(f"IS published ({where})" in line for line in lines), lines
    doctor(workdir, tracking_uri=tracker.uri, fix=True)
    assert tracker.run_tags(run_id)[names.TAG_PUBLISHED] == str(where)
    assert doctor(workdir, tracking_uri=tracker.uri, fix=False).remaining == []
