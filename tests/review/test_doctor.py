"""``privacy-gate doctor``: runs left RUNNING by killed processes, approvals never published,
release data without a manifest and staging folders — reported, and repaired with --fix."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from privacy_gate import names
from privacy_gate.cli import app
from privacy_gate.processes import process_start, this_host
from privacy_gate.publication.publish import STAGING_PREFIX, ReleaseStore
from privacy_gate.review.doctor import reconcile_on_start
from privacy_gate.tracking import Tracker


def _dead_pid() -> int:
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(out.stdout)


def _doctor(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["doctor", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture
def tracker(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return Tracker.for_workdir(workdir=tmp_path / "wd", dataset="adult")


def _run(tracker: Tracker, **tags: str) -> str:
    return tracker.start_run(
        name="release-adult", kind="release", tags={names.TAG_DATASET: "adult", **tags}
    )


def test_runs_record_the_host_pid_and_start_of_their_process(tracker):
    tags = tracker.run_tags(_run(tracker))
    assert tags[names.TAG_HOST] == this_host() and tags[names.TAG_PID] == str(os.getpid())
    assert tags[names.TAG_PROCESS_START] == process_start(os.getpid())


def test_doctor_marks_runs_of_gone_processes_killed_and_leaves_other_hosts_runs(tracker, tmp_path):
    dead = _run(tracker, **{names.TAG_PID: str(_dead_pid())})
    reused = _run(
        tracker, **{names.TAG_PROCESS_START: "1"}
    )  # this PID, but another process's start time
    alive = _run(tracker)  # this very process: in progress
    foreign = _run(tracker, **{names.TAG_HOST: "another-host", names.TAG_PID: "1"})
    status = lambda run_id: tracker.client.get_run(run_id).info.status  # noqa: E731
    wd = str(tmp_path / "wd")

    code, out = _doctor("--workdir", wd)
    assert code == 1, out
    assert f"[stale-run] run {dead} (dataset adult, release)" in out and reused in out
    assert f"run {foreign}" in out and "another-host" in out and alive not in out
    assert {status(r) for r in (dead, reused, alive, foreign)} == {"RUNNING"}  # report only

    code, out = _doctor("--workdir", wd, "--fix")
    assert code == 1, out  # the other host's run is left for that host
    assert (
        status(dead) == status(reused) == "KILLED" and status(alive) == status(foreign) == "RUNNING"
    )
    reason = tracker.run_tags(dead)[names.TAG_KILLED_REASON]
    assert "is gone" in reason and this_host() in reason
    assert "marked KILLED" in out and "not touched" in out


def test_before_a_run_the_datasets_runs_of_gone_processes_are_killed(tracker, caplog):
    dead = _run(tracker, **{names.TAG_PID: str(_dead_pid())})
    logger = logging.getLogger("privacy_gate.test.doctor")
    reconcile_on_start(
        tracker.uri, "privacy-gate/other", logger
    )  # another dataset's experiment: untouched
    assert tracker.client.get_run(dead).info.status == "RUNNING"
    with caplog.at_level(logging.WARNING, logger="privacy_gate.test.doctor"):
        reconcile_on_start(tracker.uri, "privacy-gate/adult", logger)
    assert tracker.client.get_run(dead).info.status == "KILLED"
    assert dead in caplog.text


def test_approvals_without_a_publication_are_reported(tracker, tmp_path):
    lost = _run(tracker, **{names.TAG_VERDICT: "APPROVE"})
    done = _run(tracker, **{names.TAG_VERDICT: "APPROVE", names.TAG_PUBLISHED: "/x/adult.parquet"})
    reviewed = _run(
        tracker,
        **{
            names.TAG_VERDICT: "REVIEW",
            names.TAG_APPROVAL_STATUS: "approved",
            names.TAG_APPROVAL_PUBLISHED: "failed (PublishError)",
        },
    )
    blocked = _run(tracker, **{names.TAG_VERDICT: "BLOCK"})
    for run_id in (lost, done, reviewed, blocked):
        tracker.end_run(run_id)
    code, out = _doctor("--workdir", str(tmp_path / "wd"), "--fix")
    assert code == 1, out
    lines = [line for line in out.splitlines() if line.startswith("[unpublished]")]
    assert len(lines) == 2, out
    assert (
        f"run {lost} (dataset adult, release): verdict APPROVE but no gate.published tag"
        in lines[0]
    )
    assert reviewed in lines[1] and "approval.published is 'failed (PublishError)'" in lines[1]


def _orphan(target, sha: str = "0123456789ab"):
    folder = target / f"adult-{sha}"
    folder.mkdir(parents=True)
    (folder / f"{folder.name}.parquet").write_bytes(b"data of a killed publication")
    return folder


def test_orphan_release_data_is_listed_and_removed_with_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    wd = tmp_path / "wd"
    store = ReleaseStore(workdir=wd)
    complete = store.publish(
        store.quarantine(pd.DataFrame({"a": [1, 2]})),
        dataset="adult",
        verdict="APPROVE",
        run_id="r",
        config_hash=None,
    )
    orphan = _orphan(wd / "published")
    code, out = _doctor("--workdir", str(wd), "--fix")  # young: may be in progress
    assert code == 1 and orphan.exists() and "younger than --min-age" in out, out
    code, out = _doctor("--workdir", str(wd))
    assert (
        code == 1 and f"[orphan] {orphan}" in out and "--fix removes it" in out and orphan.exists()
    ), out
    code, out = _doctor("--workdir", str(wd), "--fix", "--min-age", "0")
    assert code == 0 and "removed" in out and not orphan.exists(), out
    assert complete.exists()
    code, out = _doctor("--workdir", str(wd))
    assert code == 0 and "nothing to reconcile" in out, out


def test_another_hosts_staging_is_never_removed(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    wd = tmp_path / "wd"
    target = wd / "published"
    foreign = target / f"{STAGING_PREFIX}another-host-{_dead_pid()}-abc123"
    mine = target / f"{STAGING_PREFIX}{this_host()}-{_dead_pid()}-def456"
    for folder in (foreign, mine):
        folder.mkdir(parents=True)
        (folder / "partial.parquet").write_bytes(b"partial")
    store = ReleaseStore(workdir=wd)  # a publication cleans this host's dead staging only
    store.publish(
        store.quarantine(pd.DataFrame({"a": [1]})),
        dataset="d",
        verdict="APPROVE",
        run_id="r",
        config_hash=None,
    )
    assert foreign.exists() and not mine.exists()
    mine.mkdir()
    code, out = _doctor("--workdir", str(wd), "--fix")
    assert code == 1, out
    assert foreign.exists() and not mine.exists()
    assert (
        "another-host" in out
        and "left alone" in out
        and f"{mine}: left by a process that is gone" in out
    )
