"""Decision durability: ``approve`` killed (SIGKILL) at each step of its
sequence — decision record written, approval tags set, publication staged, publication done —
and then ``doctor --fix``, the next ``approve`` or ``review`` leaves a consistent run: published
with ``approval.status=approved`` naming the release, or nothing published, ``pending``, listed by
``review --pending`` and decidable again. Never a stuck run, never a published release with a
pending tag. On small hand-made REVIEW runs recorded by ``release.finish`` (no gate).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.publication.publish import list_published
from privacy_gate.review import decide as review
from tests.tracking.test_review_records import make_review_run

from ..reaper import popen

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "decision_worker.py"
KEY = "durability-test-key"
runner = CliRunner()
#: the step -> what the run must end as once resolved: the publication is an approval's commit point
STEPS = {
    "decision-file": "rolled back",
    "tag-set": "rolled back",
    "publish-started": "rolled back",
    "publish-done": "published",
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    monkeypatch.delenv(tracking.SIGNING_KEY_ENV, raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


def kill_at(step: str, workdir: Path, *args: str) -> None:
    """``privacy-gate ARGS`` in a subprocess, SIGKILLed once it reaches ``step``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = popen(
        [sys.executable, str(WORKER), step, *args, "--workdir", str(workdir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline, seen = time.monotonic() + 120, []
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if not ready:
                continue
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line.rstrip())
            if line.strip() == f"AT {step}":
                break
        assert seen and seen[-1] == f"AT {step}", (seen, proc.poll())
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)


def _cli(*args: str):
    r = runner.invoke(app, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def _published(workdir: Path) -> list[Path]:
    """The published data files, by the reader contract (a killed publication's staging is not
    one)."""
    return [
        folder / json.loads((folder / "manifest.json").read_text())["file"]
        for folder in list_published(workdir / "published")
    ]


def _tags(uri: str, run_id: str) -> dict[str, str]:
    return tracking.Tracker(uri=uri, experiment=None).run_tags(run_id)


def _pending_ids(workdir: Path) -> list[str]:
    code, out, err = _cli("review", "--pending", "--workdir", str(workdir))
    assert code == 0, err
    return [
        line.split()[0] for line in out.splitlines()[1:] if not line.startswith(" ")
    ]  # indented: its commands


def assert_published_by(workdir: Path, uri: str, run_id: str, reviewer: str) -> None:
    """Published once, and every record says so: the approval tags, the decision that stands,
    review."""
    files = _published(workdir)
    assert len(files) == 1, files
    tags = _tags(uri, run_id)
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "approved"
        and tags[names.TAG_APPROVAL_REVIEWER] == reviewer
    ), tags
    assert tags[names.TAG_APPROVAL_PUBLISHED] == str(files[0])
    manifest = json.loads((files[0].parent / "manifest.json").read_text())
    assert manifest["run_id"] == run_id and manifest["approval"]["reviewer"] == reviewer
    assert run_id not in _pending_ids(workdir)
    decisions = tracking.Tracker(uri=uri, experiment=None).decisions(run_id)
    assert [(d["action"], d["reviewer"]) for d in decisions] == [("approve", reviewer)]
    code, out, _ = _cli("review", run_id, "--workdir", str(workdir))
    assert (
        code == 0 and f"decided: approve by {reviewer}" in out and f"published: {files[0]}" in out
    ), out


def assert_pending_and_decidable(workdir: Path, uri: str, run_id: str) -> None:
    """Nothing published, pending, listed, shown as pending — and a new approval goes through."""
    assert _published(workdir) == []
    tags = _tags(uri, run_id)
    assert tags[names.TAG_APPROVAL_STATUS] == "pending", tags
    assert names.TAG_DECISION_CLAIM not in tags and names.TAG_APPROVAL_REVIEWER not in tags
    assert run_id in _pending_ids(workdir)
    code, out, _ = _cli("review", run_id, "--workdir", str(workdir))
    assert code == 0 and "PENDING REVIEW" in out and "decided:" not in out, out
    code, out, err = _cli("approve", run_id, "--reviewer", "cy", "--workdir", str(workdir))
    assert code == 0, err
    assert_published_by(workdir, uri, run_id, "cy")


def assert_doctor_clean(workdir: Path) -> None:
    code, out, _ = _cli("doctor", "--workdir", str(workdir))
    assert code == 0 and "doctor: nothing to reconcile" in out, out


@pytest.mark.parametrize("step", list(STEPS))
def test_approve_killed_then_doctor_fix_resolves_it(tmp_path, step):
    run_id, uri = make_review_run(tmp_path)
    kill_at(step, tmp_path, "approve", run_id, "--reviewer", "ana")
    code, out, _ = _cli("doctor", "--workdir", str(tmp_path))  # reported, nothing changed
    assert code == 1 and "[decision] " in out and run_id in out and "--fix" in out, out
    code, out, _ = _cli("doctor", "--workdir", str(tmp_path), "--fix")
    assert code == 0, out
    decision_lines = [line for line in out.splitlines() if line.startswith("[decision] ")]
    assert len(decision_lines) == 1 and run_id in decision_lines[0], out
    assert STEPS[step] in decision_lines[0] or "completed" in decision_lines[0]
    assert_doctor_clean(tmp_path)
    if STEPS[step] == "published":
        assert_published_by(tmp_path, uri, run_id, "ana")
    else:
        assert_pending_and_decidable(tmp_path, uri, run_id)
    assert_doctor_clean(tmp_path)


@pytest.mark.parametrize("step", list(STEPS))
def test_approve_killed_then_the_next_approve_resolves_it(tmp_path, step):
    run_id, uri = make_review_run(tmp_path)
    kill_at(step, tmp_path, "approve", run_id, "--reviewer", "ana")
    code, _, err = _cli("approve", run_id, "--reviewer", "bo", "--workdir", str(tmp_path))
    if (
        STEPS[step] == "published"
    ):  # ana's approval took effect: the second one is refused, truthfully
        assert code == 2 and f"run {run_id} was already approved by ana" in err, err
        assert_published_by(tmp_path, uri, run_id, "ana")
    else:  # ana's approval never took effect: bo's goes through
        assert code == 0, err
        assert_published_by(tmp_path, uri, run_id, "bo")
    assert_doctor_clean(tmp_path)


@pytest.mark.parametrize("step", list(STEPS))
def test_approve_killed_then_review_resolves_it(tmp_path, step):
    run_id, uri = make_review_run(tmp_path)
    kill_at(step, tmp_path, "approve", run_id, "--reviewer", "ana")
    code, out, err = _cli("review", run_id, "--workdir", str(tmp_path))
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith(f"RECOVERED: run {run_id}: the approval by ana at "), out
    if STEPS[step] == "published":
        assert_published_by(tmp_path, uri, run_id, "ana")
    else:
        assert "rolled back" in first and "nothing was published" in first
        assert_pending_and_decidable(tmp_path, uri, run_id)
    assert_doctor_clean(tmp_path)


@pytest.mark.parametrize("step", ["decision-file", "tag-set"])
def test_reject_killed_is_completed_never_rolled_back(tmp_path, step):
    run_id, uri = make_review_run(tmp_path)
    kill_at(step, tmp_path, "reject", run_id, "--reviewer", "ana")
    code, out, _ = _cli("doctor", "--workdir", str(tmp_path), "--fix")
    assert code == 0, out
    tags = _tags(uri, run_id)
    assert (
        tags[names.TAG_APPROVAL_STATUS] == "rejected" and tags[names.TAG_APPROVAL_REVIEWER] == "ana"
    ), tags
    assert run_id not in _pending_ids(tmp_path) and _published(tmp_path) == []
    code, out, err = _cli("approve", run_id, "--reviewer", "bo", "--workdir", str(tmp_path))
    assert code == 2 and "already rejected by ana" in err and _published(tmp_path) == []


# ---- the rules around it, in-process (the half-done state written as a killed approve leaves it)


def _half_done_approval(uri: str, run_id: str, *, claim: str | None = None) -> dict:
    """The decision record of an approval, written as ``approve`` writes it, and nothing after."""
    tracker = tracking.Tracker(uri=uri, experiment=None)
    judged = tracker.read_verified(run_id)[0]["data_hashes"][
        "synthetic_file_sha256"
    ]  # what approve decides on
    decision = review.ReviewDecision.new(
        action="approve", reviewer="ana", data_sha256=judged, run_id=run_id
    ).to_dict()
    tracker.log_json(run_id, decision, names.decision_artifact(1, "approve"))
    if claim:
        tracker.set_tags(run_id, {names.TAG_DECISION_CLAIM: claim})
    return decision


def test_a_live_decider_on_a_server_store_is_left_alone(tmp_path, monkeypatch):
    """Without a file lock (a tracking server), the claim names the decider's process: alive, its
    half-done decision is in progress, not a finding; on another host, reported and not touched."""
    from privacy_gate.processes import process_start, this_host
    from privacy_gate.review import decision_lock

    monkeypatch.setattr(decision_lock, "lock_path", lambda uri, run_id: None)
    run_id, uri = make_review_run(tmp_path)
    me = (
        f"approve by ana at now (host {this_host()}, pid {os.getpid()} started "
        f"{process_start(os.getpid())}; ab12)"
    )
    _half_done_approval(uri, run_id, claim=me)
    code, out, _ = _cli("doctor", "--workdir", str(tmp_path), "--fix")
    assert code == 0 and "still running" in out and "[decision]" not in out, (
        out
    )  # a note, not a finding
    assert _tags(uri, run_id)[names.TAG_APPROVAL_STATUS] == "pending"
    assert len(tracking.Tracker(uri=uri, experiment=None).decisions(run_id)) == 1  # untouched
    tracking.Tracker(uri=uri, experiment=None).set_tags(
        run_id,
        {
            names.TAG_DECISION_CLAIM: "approve by ana at now (host elsewhere-1, pid 7 started 1; "
            "ab12)"
        },
    )
    code, out, _ = _cli("doctor", "--workdir", str(tmp_path), "--fix")
    assert code == 1 and "ran on another host" in out and names.TAG_DECISION_CLAIM in out, out
    assert len(tracking.Tracker(uri=uri, experiment=None).decisions(run_id)) == 1


def test_a_forged_void_record_does_not_count(tmp_path):
    """A void record counts only with its digest listed in approval.voids: one planted in the
    artifact store alone leaves the approval standing (the run stays decided)."""
    run_id, uri = make_review_run(tmp_path)
    tracker = tracking.Tracker(uri=uri, experiment=None)
    review.decide_run(
        run_id, action="approve", reviewer="ana", tracking_uri=uri, workdir=str(tmp_path)
    )
    first = tracker.decision_files(run_id)[0]
    from privacy_gate.tracking import decision_log

    void = decision_log.void_record(
        run_id,
        first[0],
        first[1],
        at="now",
        by="someone",
        reason="planted",
        tags=tracker.run_tags(run_id),
    )
    tracker.log_json(run_id, void, names.decision_artifact(2, "void"))
    log = tracker.decision_log(run_id)
    assert [d["reviewer"] for d in log.decisions] == ["ana"] and log.voided == []
    assert "not listed in the approval.voids tag" in log.ignored[0]
    _, out, _ = _cli("review", run_id, "--workdir", str(tmp_path))
    assert "decided: approve by ana" in out and "WARNING: review/decision-002-void.json" in out, out


def test_a_signed_run_is_rolled_back_with_a_signed_void(tmp_path, monkeypatch):
    monkeypatch.setenv(tracking.SIGNING_KEY_ENV, KEY)
    run_id, uri = make_review_run(tmp_path)
    _half_done_approval(uri, run_id)
    code, _, err = _cli("approve", run_id, "--reviewer", "bo", "--workdir", str(tmp_path))
    assert code == 0, err
    tracker = tracking.Tracker(uri=uri, experiment=None)
    log = tracker.decision_log(run_id)
    assert [d["reviewer"] for d in log.decisions] == ["bo"] and log.voided[0]["digest"].startswith(
        "hmac-sha256:"
    )
    monkeypatch.setenv(
        tracking.SIGNING_KEY_ENV, "another key"
    )  # a void is only as good as its HMAC
    assert [d["reviewer"] for d in tracker.decision_log(run_id).decisions] == ["ana", "bo"]
