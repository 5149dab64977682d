"""Review hardening on small hand-made REVIEW runs (no gate, no Prefect: seconds each).

- one decision per run, under a lock that holds across processes (and a claim tag on a server);
- a signed run is never accepted unsigned (downgrade), nor unverified without the key;
- publication reads the target from the verified verdict, never from an edited tag.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.errors import IntegrityError, ReviewError
from privacy_gate.gate import Verdict
from privacy_gate.publication.publish import ReleaseStore
from privacy_gate.review import decide as review
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.tracking.review_records import ReviewDecision
from tests.review_stubs import no_key_no_report  # noqa: F401 - autouse: no signing key, no HTML report

KEY = "test-signing-key"
runner = CliRunner()


def make_review_run(workdir: Path) -> tuple[str, str]:
    """A finished REVIEW run recorded the way the gate records one; returns (run id, tracking
    uri)."""
    tracker = tracking.Tracker.for_workdir(workdir=workdir, dataset="toy")
    sink = MlflowSink.start(tracker, name="release-toy", kind="release", dataset="toy")
    store = ReleaseStore(workdir=workdir)
    quarantined = store.quarantine(pd.DataFrame({"a": range(20), "b": list("xy") * 10}))
    sink.record_quarantine(quarantined, target=store.target_label)
    sink.record_json({"mode": "gate_only"}, names.ART_CONFIG)
    sink.record_json({"spec": "toy"}, names.ART_SETTINGS)
    verdict = Verdict(
        decision="REVIEW",
        status="ok",
        reasons=(),
        data_hashes={"synthetic_file_sha256": quarantined.sha256},
    ).with_run_id(sink.run_id)
    sink.record_verdict(verdict, timings={})
    return sink.run_id, tracker.uri


def published(workdir: Path, target: Path | None = None) -> list[Path]:
    return sorted((target or workdir / "published").glob("*/*.parquet"))


def _decide(run_id, uri, workdir, action, reviewer):
    return review.decide_run(
        run_id, action=action, reviewer=reviewer, tracking_uri=uri, workdir=str(workdir)
    )


def _slow_checks(monkeypatch, seconds=0.5):
    """Widen the check-then-act window: every decider passes its checks, then dawdles."""
    original = review.check_decidable

    def slow(*args, **kwargs):
        original(*args, **kwargs)
        time.sleep(seconds)

    monkeypatch.setattr(review, "check_decidable", slow)


def _race(run_id, uri, workdir, deciders):
    results = {}

    def go(action, who):
        try:
            results[who] = _decide(run_id, uri, workdir, action, who)
        except ReviewError as exc:
            results[who] = exc

    threads = [threading.Thread(target=go, args=d) for d in deciders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    wins = [r for r in results.values() if isinstance(r, ReviewDecision)]
    losses = [r for r in results.values() if isinstance(r, ReviewError)]
    return wins, losses


# ---- 1. one decision per run -------------------------------------------------------------------


@pytest.mark.parametrize(
    "deciders",
    [[("reject", "ana"), ("approve", "bo")], [("approve", "ana"), ("approve", "bo")]],
    ids=["reject-vs-approve", "approve-vs-approve"],
)
def test_concurrent_decisions_exactly_one_wins(tmp_path, monkeypatch, deciders):
    run_id, uri = make_review_run(tmp_path)
    _slow_checks(monkeypatch)
    wins, losses = _race(run_id, uri, tmp_path, deciders)
    assert len(wins) == 1 and len(losses) == 1, (wins, losses)
    winner, loser = wins[0], losses[0]
    done = {"approve": "approved", "reject": "rejected"}[winner.action]
    assert f"run {run_id} was already {done} by {winner.reviewer} at" in str(loser)
    tracker = tracking.Tracker(uri=uri, experiment=None)
    assert [d["reviewer"] for d in tracker.decisions(run_id)] == [winner.reviewer]
    assert len(published(tmp_path)) == (1 if winner.action == "approve" else 0)


def test_claim_tag_serialises_deciders_on_a_server_store(tmp_path, monkeypatch):
    """Without a file lock (a remote tracking server), the claim tag lets exactly one decide."""
    from privacy_gate.review import decision_lock

    run_id, uri = make_review_run(tmp_path)
    monkeypatch.setattr(decision_lock, "lock_path", lambda uri, run_id: None)
    monkeypatch.setattr(decision_lock, "SETTLE_S", 0.3)
    _slow_checks(monkeypatch)
    wins, losses = _race(run_id, uri, tmp_path, [("reject", "ana"), ("approve", "bo")])
    assert len(wins) == 1 and len(losses) == 1, (wins, losses)
    assert "being decided" in str(losses[0]) or "already" in str(losses[0])
    if wins[0].action == "reject":
        assert published(tmp_path) == []
    tracker = tracking.Tracker(uri=uri, experiment=None)
    assert len(tracker.decisions(run_id)) == 1


def test_cli_second_decision_after_a_rejection_exits_2(tmp_path):
    run_id, uri = make_review_run(tmp_path)
    r = runner.invoke(app, ["reject", run_id, "--reviewer", "ana", "--workdir", str(tmp_path)])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["approve", run_id, "--reviewer", "bo", "--workdir", str(tmp_path)])
    assert r.exit_code == 2 and f"run {run_id} was already rejected by ana at" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert published(tmp_path) == []


# ---- 2. no downgrade of a signed run ------------------------------------------------------------


def _signed_run(tmp_path, monkeypatch):
    monkeypatch.setenv(tracking.SIGNING_KEY_ENV, KEY)
    run_id, uri = make_review_run(tmp_path)
    monkeypatch.delenv(tracking.SIGNING_KEY_ENV)
    return run_id, uri, tracking.Tracker(uri=uri, experiment=None)


def test_signed_run_rewritten_with_an_unsigned_digest_is_refused(tmp_path, monkeypatch):
    run_id, uri, tracker = _signed_run(tmp_path, monkeypatch)
    text = tracker.read_text(run_id, names.ART_VERDICT)
    # an attacker without the key: a plain digest that matches, and the signed tag stripped
    tracker.set_tags(
        run_id, {names.TAG_VERDICT_DIGEST: "sha256:" + hashlib.sha256(text.encode()).hexdigest()}
    )
    if names.TAG_SIGNED in tracker.run_tags(run_id):
        tracker.client.delete_tag(run_id, names.TAG_SIGNED)
    with pytest.raises(IntegrityError, match="downgraded"):
        _decide(run_id, uri, tmp_path, "approve", "ana")
    assert published(tmp_path) == []


def test_signed_run_needs_the_key_to_be_approved(tmp_path, monkeypatch):
    run_id, uri, _ = _signed_run(tmp_path, monkeypatch)
    with pytest.raises(IntegrityError, match=f"set {tracking.SIGNING_KEY_ENV}"):
        _decide(run_id, uri, tmp_path, "approve", "ana")
    assert published(tmp_path) == []
    monkeypatch.setenv(tracking.SIGNING_KEY_ENV, KEY)
    assert _decide(run_id, uri, tmp_path, "approve", "ana").published


def test_fully_rewritten_unsigned_run_is_refused_where_a_key_is_set(tmp_path, monkeypatch):
    run_id, uri, tracker = _signed_run(tmp_path, monkeypatch)
    doc = json.loads(tracker.read_text(run_id, names.ART_VERDICT))
    doc[names.SEAL][names.SEAL_SIGNED] = False
    text = json.dumps(doc, indent=2)
    tracker.log_text(run_id, text, names.ART_VERDICT)
    tracker.set_tags(
        run_id,
        {
            names.TAG_VERDICT_DIGEST: "sha256:" + hashlib.sha256(text.encode()).hexdigest(),
            names.TAG_SIGNED: "false",
        },
    )
    monkeypatch.setenv(tracking.SIGNING_KEY_ENV, KEY)
    with pytest.raises(IntegrityError, match="accepts no unsigned"):
        _decide(run_id, uri, tmp_path, "approve", "ana")
    assert published(tmp_path) == []


# ---- 3. the digest covers publication ----------------------------------------------------------


def test_edited_publish_target_tag_is_refused(tmp_path, monkeypatch):
    run_id, uri, tracker = _signed_run(tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    tracker.set_tags(run_id, {names.TAG_PUBLISH_TARGET: str(elsewhere)})
    monkeypatch.setenv(tracking.SIGNING_KEY_ENV, KEY)
    with pytest.raises(IntegrityError, match=names.TAG_PUBLISH_TARGET):
        _decide(run_id, uri, tmp_path, "approve", "ana")
    assert published(tmp_path, elsewhere) == [] and published(tmp_path) == []
    # the tag put back: approved, and published where the verdict document says
    tracker.set_tags(run_id, {names.TAG_PUBLISH_TARGET: str((tmp_path / "published").resolve())})
    decision = _decide(run_id, uri, tmp_path, "approve", "ana")
    assert Path(decision.published).parent.parent == (tmp_path / "published").resolve()


def test_edited_settings_are_refused(tmp_path, monkeypatch):
    run_id, uri, tracker = _signed_run(tmp_path, monkeypatch)
    tracker.log_json(run_id, {"spec": "other"}, names.ART_SETTINGS)
    monkeypatch.setenv(tracking.SIGNING_KEY_ENV, KEY)
    with pytest.raises(IntegrityError, match=names.ART_SETTINGS):
        review.RunRecord(tracker, run_id).settings()
