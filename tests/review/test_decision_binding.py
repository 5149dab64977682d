"""A decision record decides the run it names, on the release it names. Another run's approval
copied into a pending run's decision log used to be "RECOVERED" as that run's approval (rolled back,
or completed when a release matched); now the record carries its run id (and the release hash it was
taken on) and a record naming another run or another release is refused, naming both, by review,
approve and doctor. Nothing is published and no tag changes."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from privacy_gate import names
from privacy_gate.cli import app
from tests.tracking.test_artifact_seal import _published, make_signed_review_run

runner = CliRunner()


def _cli(*args: str):
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout + r.stderr


def _copy_record(tracker, source_run: str, target_run: str, edit=None) -> None:
    [(path, text)] = tracker.decision_files(source_run)
    record = json.loads(text)
    if edit:
        edit(record)
    tracker.client.log_text(target_run, json.dumps(record, indent=2), path)  # straight to the store


def _approved_and_pending(tmp_path):
    first, tracker = make_signed_review_run(tmp_path)
    second, _ = make_signed_review_run(tmp_path)
    code, out = _cli("approve", first, "--reviewer", "ana", "--workdir", str(tmp_path))
    assert code == 0, out
    assert (
        json.loads(tracker.decision_files(first)[0][1])["run_id"] == first
    )  # the record names its run
    return first, second, tracker


def _assert_refused_untouched(tracker, run_id, tmp_path, published_before, *, says: str) -> None:
    tags_before = tracker.run_tags(run_id)
    for args in (["review", run_id], ["approve", run_id, "--reviewer", "bo"], ["doctor", "--fix"]):
        code, out = _cli(*args, "--workdir", str(tmp_path))
        assert code != 0, (args, out)
        assert "RECOVERED" not in out, (args, out)
        if args[0] != "doctor":
            assert says in out and "copied from another run's decision log" in out, (args, out)
            assert "Traceback" not in out
    assert tracker.run_tags(run_id).get(names.TAG_APPROVAL_STATUS) == tags_before.get(
        names.TAG_APPROVAL_STATUS
    )
    assert _published(tmp_path) == published_before


def test_another_runs_approval_copied_in_is_refused(tmp_path):
    first, second, tracker = _approved_and_pending(tmp_path)
    before = _published(tmp_path)
    _copy_record(tracker, first, second)
    _assert_refused_untouched(tracker, second, tmp_path, before, says=f"decides run {first}")


def test_an_older_record_without_a_run_id_is_bound_by_its_release(tmp_path):
    first, second, tracker = _approved_and_pending(tmp_path)
    before = _published(tmp_path)

    def older(record):
        record.pop("run_id")
        record["data_sha256"] = "ab" * 32  # taken on another release

    _copy_record(tracker, first, second, older)
    _assert_refused_untouched(tracker, second, tmp_path, before, says="not on the run's release")
