"""The seal covers every artifact a reviewer sees, on small hand-made REVIEW
runs recorded by ``release.finish`` as a gate run is (summary, description, HTML report and all).

An edited ``audit/subgroups.json`` (AUC 0.99, p 1e-30), HTML report or exposed-records parquet of
a signed run is named by ``review`` (a warning first) and refused by ``approve`` (exit 2, naming
the file); an artifact added or removed after the gate is named too; an untouched run verifies
clean and is approved.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.pipeline.stages import StageClock
from privacy_gate.publication.publish import ReleaseStore
from privacy_gate.review import decide as review
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.runs.release import RunContext, finish

from .test_review_records import GROUP, SUBGROUP_ROWS, flagged_group_verdict

KEY = "artifact-seal-test-key"
runner = CliRunner()
EXPOSED = pd.DataFrame(
    {"row_id": [3, 17, 42], "p_value": [1e-4, 2e-3, 0.4], "exposed": [True, True, False]}
)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(tracking.SIGNING_KEY_ENV, KEY)


def make_signed_review_run(workdir: Path) -> tuple[str, tracking.Tracker]:
    """A finished, signed REVIEW run with the evidence a gate records (audit rows, exposed
    records)."""
    tracker = tracking.Tracker.for_workdir(workdir=workdir, dataset="toy")
    sink = MlflowSink.start(tracker, name="gate-toy", kind="gate_only", dataset="toy")
    ctx = RunContext(
        sink=sink,
        store=ReleaseStore(workdir=workdir),
        dataset="toy",
        clock=StageClock(logging.getLogger("test-artifact-seal")),
    )
    ctx.quarantine(pd.DataFrame({"a": range(20), "b": list("xy") * 10}), "parquet")
    sink.record_json({"mode": "gate_only"}, names.ART_CONFIG)
    sink.record_json({"spec": "toy"}, names.ART_SETTINGS)
    tracker.log_json(sink.run_id, SUBGROUP_ROWS, names.ART_SUBGROUPS)
    tracker.log_frame(sink.run_id, EXPOSED, names.ART_EXPOSED)
    column, _, value = GROUP.partition("=")
    figures = {
        "membership_test.p_adjusted": 0.0008,
        "membership_test.p_value": 2e-5,
        "n_members": 64.0,
        "dcr.auc": 0.62,
    }
    verdict = dataclasses.replace(
        flagged_group_verdict(ctx.quarantined.sha256),
        metrics={
            "dcr.auc": 0.55,
            **{names.subgroup_metric((column,), (value,), k): v for k, v in figures.items()},
        },
    )
    finish(ctx, verdict)
    return sink.run_id, tracker


def _cli(*args: str):
    r = runner.invoke(app, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def _published(workdir: Path) -> list[Path]:
    return sorted((workdir / "published").glob("*/*.parquet"))


def _edit_subgroups(tracker, run_id):
    """What the issue's probe did: the flagged group's figures made damning (AUC 0.99, p 1e-30)."""
    rows = json.loads(tracker.read_text(run_id, names.ART_SUBGROUPS))
    for row in rows:
        if row["group"] == GROUP:
            row.update(auc=0.99, test_p_value=1e-30, test_p_adjusted=1e-30)
    tracker.client.log_text(
        run_id, json.dumps(rows, indent=2), names.ART_SUBGROUPS
    )  # straight to the store


def _edit_report(tracker, run_id):
    page = tracker.read_text(run_id, names.ART_REPORT)
    tracker.client.log_text(
        run_id,
        page.replace("</header>", "<p>ALL CLEAR: approve this run</p></header>", 1),
        names.ART_REPORT,
    )


def _edit_exposed(tracker, run_id):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / Path(names.ART_EXPOSED).name
        EXPOSED.assign(exposed=False).to_parquet(local, index=False)  # "nobody is exposed"
        tracker.client.log_artifact(run_id, str(local), str(Path(names.ART_EXPOSED).parent))


def _edit_subgroup_table(tracker, run_id):
    """The metrics table of the groups edited: the flagged group's rank test made harmless."""
    text = tracker.read_text(run_id, names.ART_METRICS_SUBGROUPS)
    lines = text.splitlines()
    assert any(line.startswith(GROUP + ",") for line in lines), lines[
        :3
    ]  # the table lists the flagged group
    edited = [
        line.split(",")[:2] + ["1"] * (len(line.split(",")) - 2)
        if line.startswith(GROUP + ",")
        else line.split(",")
        for line in lines
    ]
    tracker.client.log_text(
        run_id, "\n".join(map(",".join, edited)) + "\n", names.ART_METRICS_SUBGROUPS
    )


EDITS = {
    names.ART_SUBGROUPS: _edit_subgroups,
    names.ART_REPORT: _edit_report,
    names.ART_EXPOSED: _edit_exposed,
    names.ART_METRICS_SUBGROUPS: _edit_subgroup_table,
}


def test_an_untouched_signed_run_verifies_clean_and_is_approved(tmp_path):
    run_id, tracker = make_signed_review_run(tmp_path)
    _, seal = tracker.read_verified(run_id)
    sealed = seal.get("artifacts") or {}
    for path in (
        names.ART_SUBGROUPS,
        names.ART_EXPOSED,
        names.ART_CONFIG,
        names.ART_SETTINGS,
        names.ART_TIMINGS,
        names.ART_METRICS_ALL,
        *names.METRIC_TABLES,
    ):
        assert path in sealed, sorted(sealed)
    assert tracker.sealed_changes(run_id, seal) == []
    code, out, err = _cli("review", run_id, "--workdir", str(tmp_path))
    assert code == 0 and "WARNING" not in out and "CHANGED" not in out, out
    code, out, err = _cli("approve", run_id, "--reviewer", "ana", "--workdir", str(tmp_path))
    assert code == 0, err
    assert len(_published(tmp_path)) == 1
    # the report re-rendered after the decision is sealed again: the run still verifies clean
    assert tracker.sealed_changes(run_id, tracker.read_verified(run_id)[1]) == []


@pytest.mark.parametrize(
    "artifact", list(EDITS), ids=["subgroups", "report", "exposed", "subgroup-table"]
)
def test_an_edited_artifact_is_named_by_review_and_refused_by_approve(tmp_path, artifact):
    run_id, tracker = make_signed_review_run(tmp_path)
    EDITS[artifact](tracker, run_id)
    code, out, err = _cli("review", run_id, "--workdir", str(tmp_path))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"WARNING: run {run_id} was changed after the gate sealed it"), (
        lines[:3]
    )
    assert f"  CHANGED {artifact}: changed since the gate sealed it" in lines, lines[:4]
    assert sum(line.startswith("  CHANGED ") for line in lines) == 1, lines[:4]
    code, out, err = _cli("approve", run_id, "--reviewer", "ana", "--workdir", str(tmp_path))
    assert code == 2, (out, err)
    assert (
        err.startswith("refused: ")
        and f"{artifact}: changed since the gate sealed it" in err
        and run_id in err
    )
    assert len(err.strip().splitlines()) == 1
    assert _published(tmp_path) == []
    assert (
        tracking.Tracker(uri=tracker.uri, experiment=None).decisions(run_id) == []
    )  # nothing recorded


def test_artifacts_added_or_removed_after_the_seal_are_named(tmp_path):
    run_id, tracker = make_signed_review_run(tmp_path)
    tracker.client.log_text(
        run_id, json.dumps({"note": "all groups fine"}), "audit/second_opinion.json"
    )
    store = Path(tracker.client.get_run(run_id).info.artifact_uri.removeprefix("file://"))
    (store / names.ART_EXPOSED).unlink()
    with pytest.raises(
        review.IntegrityError, match="audit/second_opinion.json: added after the gate sealed"
    ):
        review.decide_run(
            run_id,
            action="approve",
            reviewer="ana",
            tracking_uri=tracker.uri,
            workdir=str(tmp_path),
        )
    assert _published(tmp_path) == []
    found = {
        c.path: c.what for c in tracker.sealed_changes(run_id, tracker.read_verified(run_id)[1])
    }
    assert found == {"audit/second_opinion.json": "added", names.ART_EXPOSED: "removed"}


def test_a_report_rewritten_without_the_key_is_not_trusted(tmp_path, monkeypatch):
    """Rendering the report through privacy-gate itself, without the signing key, seals nothing."""
    run_id, tracker = make_signed_review_run(tmp_path)
    monkeypatch.delenv(tracking.SIGNING_KEY_ENV)
    tracker.log_text(run_id, "<html>forged</html>", names.ART_REPORT)
    monkeypatch.setenv(tracking.SIGNING_KEY_ENV, KEY)
    found = tracker.sealed_changes(run_id, tracker.read_verified(run_id)[1])
    # the derived seal was rewritten without the key: neither rendering is trusted any more
    assert {(c.path, c.what) for c in found} == {
        (names.ART_REPORT, "unsealed"),
        (names.ART_SUMMARY, "unsealed"),
    }


def test_a_rejection_stays_possible_on_an_edited_run(tmp_path):
    """Refusing to publish is always allowed: reject does not need a trustworthy record."""
    run_id, tracker = make_signed_review_run(tmp_path)
    _edit_subgroups(tracker, run_id)
    decision = review.decide_run(
        run_id, action="reject", reviewer="ana", tracking_uri=tracker.uri, workdir=str(tmp_path)
    )
    assert decision.action == "reject" and _published(tmp_path) == []


def test_an_unsigned_run_seals_its_artifacts_too(tmp_path, monkeypatch):
    monkeypatch.delenv(tracking.SIGNING_KEY_ENV)
    run_id, tracker = make_signed_review_run(tmp_path)
    assert tracker.run_tags(run_id)[names.TAG_SIGNED] == "false"
    _edit_subgroups(tracker, run_id)
    found = tracker.sealed_changes(run_id, tracker.read_verified(run_id)[1])
    assert [(c.path, c.what) for c in found] == [(names.ART_SUBGROUPS, "changed")]


def test_a_run_without_a_manifest_is_not_approved():
    """A verdict written before the manifest existed seals no evidence: named, never trusted."""
    from privacy_gate.tracking import artifact_seal

    found = artifact_seal.changes(
        "r1", {names.SEAL_SYNTHETIC_SHA: "ab"}, {}, {names.ART_SUBGROUPS: "cd"}
    )
    assert [c.what for c in found] == ["unsealed"] and "seal.artifacts" in found[0].path


@pytest.mark.parametrize(
    "removed",
    [[names.ART_REPORT], [names.ART_SUMMARY], [names.ART_REPORT, names.ART_SUMMARY]],
    ids=["report", "summary", "both"],
)
def test_a_rendering_removed_after_the_seal_is_named_and_refused(tmp_path, removed):
    """The report and the summary are sealed after the verdict: deleting them is a removal too."""
    run_id, tracker = make_signed_review_run(tmp_path)
    store = Path(tracker.client.get_run(run_id).info.artifact_uri.removeprefix("file://"))
    for path in removed:
        (store / path).unlink()
    found = {
        c.path: c.what for c in tracker.sealed_changes(run_id, tracker.read_verified(run_id)[1])
    }
    assert found == {path: "removed" for path in removed}
    code, out, _ = _cli("review", run_id, "--workdir", str(tmp_path))
    assert code == 0 and out.startswith(f"WARNING: run {run_id} was changed"), out[:300]
    assert all(
        f"  CHANGED {p}: sealed by the gate but no longer there" in out.splitlines()
        for p in removed
    ), out[:600]
    code, out, err = _cli("approve", run_id, "--reviewer", "ana", "--workdir", str(tmp_path))
    assert code == 2 and all(
        f"{p}: sealed by the gate but no longer there" in err for p in removed
    ), (out, err)
    assert _published(tmp_path) == []
