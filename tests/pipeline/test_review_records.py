"""What the records say after a review, on small hand-made REVIEW runs (no gate, no Prefect).

The manifest counts the rows it publishes, the report says where an approved release went, the
run's name carries its verdict, and ``review --pending`` lists what awaits a decision.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.gate import Verdict
from privacy_gate.gate.verdict import Check
from privacy_gate.pipeline import review
from privacy_gate.pipeline.mlflow_sink import MlflowSink
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.publish import ReleaseStore

GROUP = "race=Amer-Indian-Eskimo"
runner = CliRunner()

SUBGROUP_ROWS = [  # audit/subgroups.json as the audit writes it: one row per group and attack
    {"group": GROUP, "attack": "dcr", "n_members": 64, "n_non_members": 60, "test_p_value": 2e-5,
     "test_p_adjusted": 0.0008, "test_attack": "dcr", "exposed": 3.0, "auc": 0.62, "tpr_at_fpr_0.01": 0.12},
    {"group": GROUP, "attack": "domias", "n_members": 64, "n_non_members": 60, "test_p_value": 2e-5,
     "test_p_adjusted": 0.0008, "test_attack": "dcr", "exposed": 3.0, "auc": 0.68, "tpr_at_fpr_0.01": 0.31},
    *({"group": f"race=G{i}", "attack": "dcr", "n_members": 1200, "n_non_members": 1100, "test_p_adjusted": 1.0,
       "auc": 0.5, "tpr_at_fpr_0.01": 0.01} for i in range(37)),
]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv(tracking.SIGNING_KEY_ENV, raising=False)


def make_review_run(workdir: Path, *, rows: int = 20) -> tuple[str, str]:
    """A finished REVIEW run with one flagged group, recorded the way the gate records one."""
    tracker = tracking.Tracker.for_workdir(workdir=workdir, dataset="toy")
    sink = MlflowSink.start(tracker, name="release-toy", kind="release", dataset="toy")
    store = ReleaseStore(workdir=workdir)
    quarantined = store.quarantine(pd.DataFrame({"a": range(rows), "b": list("xy") * (rows // 2)}))
    sink.record_quarantine(quarantined, target=store.target_label)
    sink.record_json({"mode": "gate_only"}, names.ART_CONFIG)
    sink.record_json({"spec": "toy"}, names.ART_SETTINGS)
    sink.record_json(SUBGROUP_ROWS, names.ART_SUBGROUPS)
    reason = Check(rule="membership_test.p_adjusted >= 0.01", metric="membership_test.p_adjusted",
                   observed=0.0008, threshold=0.01, bound="min", action="review", passed=False, group=GROUP,
                   message=f"{GROUP}: membership_test.p_adjusted = 0.0008 violates min 0.01 (>=)")
    verdict = Verdict(decision="REVIEW", status="ok", reasons=(reason,), checks=(reason,), flagged_subgroups=(GROUP,),
                      data_hashes={"synthetic_file_sha256": quarantined.sha256}).with_run_id(sink.run_id)
    sink.record_verdict(verdict, timings={})
    return sink.run_id, tracker.uri


def _fake_regate(workdir: Path, kept: int):
    """A re-gate that keeps ``kept`` rows and approves them (the gate itself is not under test)."""
    def regate(*, run_id, suppress, tracking_uri, workdir=str(workdir)):
        q = ReleaseStore(workdir=Path(workdir)).quarantine(pd.DataFrame({"a": range(kept), "b": ["x"] * kept}))
        verdict = Verdict(decision="APPROVE", status="ok", reasons=(),
                          data_hashes={"synthetic_file_sha256": q.sha256}).with_run_id("rerun-1")
        return RunOutcome(verdict=verdict, run_id="rerun-1", tracking_uri=tracking_uri, dataset="toy",
                          quarantined=str(q.path))
    return regate


def test_suppressed_publication_manifest_counts_its_rows(tmp_path):
    run_id, uri = make_review_run(tmp_path)
    decision = review.decide_run(run_id, action="approve", reviewer="ana", suppress=[GROUP], tracking_uri=uri,
                                 workdir=str(tmp_path), regate=_fake_regate(tmp_path, kept=13))
    manifest = json.loads((Path(decision.published).parent / "manifest.json").read_text())
    assert manifest["rows"] == 13 == len(pd.read_parquet(decision.published))


def test_plain_approval_manifest_counts_its_rows(tmp_path):
    run_id, uri = make_review_run(tmp_path, rows=20)
    decision = review.decide_run(run_id, action="approve", reviewer="ana", tracking_uri=uri, workdir=str(tmp_path))
    assert json.loads((Path(decision.published).parent / "manifest.json").read_text())["rows"] == 20


def test_report_after_approval_says_published_and_where(tmp_path):
    run_id, uri = make_review_run(tmp_path)
    decision = review.decide_run(run_id, action="approve", reviewer="ana", tracking_uri=uri, workdir=str(tmp_path))
    tracker = tracking.Tracker(uri=uri, experiment=None)
    page = tracker.read_text(run_id, names.ART_REPORT)
    history = page.split('id="review"')[1].split("</section>")[0]
    assert "not published" not in history and decision.published in history
    banner = page.split("</header>")[0]
    assert f"published to <code>{decision.published}</code>" in banner
