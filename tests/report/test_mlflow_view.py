"""What the reviewer sees in MLflow: the run description leads with the first reason, the evidence
and the commands that decide, links open the experiment's runs in the model-training view (fast: no
MLflow store)."""

from __future__ import annotations

from privacy_gate import names, tracking
from privacy_gate.gate.verdict import Verdict
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.report.commands import REVIEWER
from privacy_gate.report.html import render_report
from privacy_gate.report.summary import run_outcome_console, verdict_markdown
from privacy_gate.runs.mlflow_sink import MlflowSink

from .test_report import GROUP, RUN_ID, _inputs, _verdict

ROWS = [
    {
        "group": GROUP,
        "attack": "dcr",
        "n_members": 64,
        "n_non_members": 60,
        "auc": 0.68,
        "tpr_at_fpr_0.01": 0.31,
        "test_p_adjusted": 0.0008,
    },
    {
        "group": "race=White",
        "attack": "dcr",
        "n_members": 900,
        "n_non_members": 880,
        "auc": 0.5,
        "test_p_adjusted": 1.0,
    },
]


def test_experiment_url_opens_the_runs_page_in_the_model_training_view():
    assert (
        tracking.experiment_url("http://mlflow:5000/", "7")
        == "http://mlflow:5000/#/experiments/7/runs?workflowType=machine_learning"
    )
    local = tracking.experiment_url("sqlite:////wd/mlflow.db", "3")
    assert local == f"{tracking.LOCAL_UI}/#/experiments/3/runs?workflowType=machine_learning"
    assert tracking.LOCAL_UI.rsplit(":", 1)[1] in tracking.ui_command("sqlite:////wd/mlflow.db")
    assert tracking.experiment_url("http://mlflow:5000", None) is None


def test_cli_summary_markdown_and_report_link_the_experiment_runs():
    outcome = RunOutcome(
        verdict=Verdict.from_dict(_verdict()),
        run_id=RUN_ID,
        tracking_uri="http://mlflow:5000",
        dataset="adult",
        experiment_id="4",
    )
    runs = "http://mlflow:5000/#/experiments/4/runs?workflowType=machine_learning"
    assert f"MLflow runs: {runs}" in run_outcome_console(outcome)
    assert RunOutcome.from_dict(outcome.to_dict()).experiment_id == "4"
    md = verdict_markdown(
        Verdict.from_dict(_verdict()), tracking_uri="http://mlflow:5000", experiment_id="4"
    )
    assert f"]({runs})" in md
    page = render_report(_inputs(tracking_uri="http://mlflow:5000", experiment_id="4"))
    assert f'class="runslink" href="{runs}"' in page


class _Tracker:
    uri = "sqlite:////wd/mlflow.db"

    def __init__(self):
        self.notes = {}

    def artifact_exists(self, run_id, path):
        return path == names.ART_SUBGROUPS

    def read_json(self, run_id, path):
        return ROWS

    def set_description(self, run_id, markdown):
        self.notes[run_id] = markdown


def test_run_description_leads_with_the_first_reason_the_evidence_and_the_decision_commands():
    tracker = _Tracker()
    sink = MlflowSink(tracker, RUN_ID)
    sink.record_description(Verdict.from_dict(_verdict()), "# summary\n\n## Reasons\n")
    note = tracker.notes[RUN_ID]
    first = note.splitlines()[:4]
    assert first[0].startswith("**REVIEW**")
    # the first reason in words, which the folded description shows at a glance; then the group's
    # evidence
    assert first[2].startswith(f"- The figure {GROUP}: dcr.auc is 0.97"), first
    assert (
        first[3].startswith(f"- {GROUP}: 64 members among the targets") and "AUC 0.68 [" in first[3]
    )
    assert (
        f"privacy-gate approve {RUN_ID} --reviewer {REVIEWER} --suppress {GROUP} --workdir /wd"
        in note
    )
    assert f"privacy-gate reject {RUN_ID} --reviewer {REVIEWER} --workdir /wd" in note
    assert note.index("privacy-gate reject") < note.index("## Reasons")  # before the (long) summary


def test_a_block_description_names_its_first_reason_and_no_commands():
    v = _verdict()
    v.update(verdict="BLOCK", flagged_subgroups=[])
    tracker = _Tracker()
    MlflowSink(tracker, RUN_ID).record_description(Verdict.from_dict(v), "# summary")
    note = tracker.notes[RUN_ID]
    assert note.startswith("**BLOCK**") and "privacy-gate approve" not in note
    assert (
        f"- The figure {GROUP}: dcr.auc is 0.97, beyond the max bar 0.7" in note
    )  # its first reason, in words
