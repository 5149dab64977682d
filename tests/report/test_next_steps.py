"""The next steps printed after a verdict are complete commands: the real run id, the
workdir the run used (absolute, shell-quoted), options that exist, no placeholders; after a BLOCK,
where the quarantined release and the report are. Fast: no gate, no store."""

from __future__ import annotations

import html
import os
import shlex
import subprocess
from pathlib import Path

import pytest
import typer

from privacy_gate.cli import app
from privacy_gate.gate.verdict import Verdict
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.report.commands import REVIEWER, decision_commands, review_command, store_options
from privacy_gate.report.summary import run_outcome_console

RUN = "0123abcd" * 4
GROUP = "race=Asian Pac & 'Islander'"
PLACEHOLDERS = ("RUN_ID", "NAME", "WORKDIR", "'why'", "GROUP", "URI")


def _parses(command: str) -> dict:
    """``command`` as the shell splits it (the reviewer filled in), parsed by the real CLI: its
    options exist and take these values."""
    argv = shlex.split(command.replace(REVIEWER, "ana"))
    assert argv[0] == "privacy-gate"
    group = typer.main.get_command(app)
    sub = group.get_command(
        group.make_context("privacy-gate", argv[1:], resilient_parsing=True), argv[1]
    )
    return sub.make_context(argv[1], argv[2:]).params


def _verdict(decision: str, flagged=(GROUP,)) -> Verdict:
    return Verdict.from_dict(
        {
            "verdict": decision,
            "status": "ok",
            "reasons": [],
            "metrics": {},
            "flagged_subgroups": list(flagged),
            "run_id": RUN,
        }
    )


def test_decision_commands_are_complete_and_parse_with_the_real_options(tmp_path):
    workdir = tmp_path / "work dir's"  # a space and a quote: shell-quoted
    uri = f"sqlite:///{(workdir / 'mlflow.db').resolve()}"
    commands = decision_commands(RUN, tracking_uri=uri, workdir=workdir, flagged=[GROUP])
    assert [c.split()[1] for c in commands] == ["review", "approve", "approve", "reject"]
    for command in commands:
        assert not any(p in command for p in PLACEHOLDERS), command
        params = _parses(command)
        assert params["run_id"] == RUN and params["workdir"] == workdir.resolve()
        assert params.get("tracking_uri") is None  # the workdir's own store: --workdir finds it
        if "reviewer" in params:
            assert params["reviewer"] == "ana"
    assert _parses(commands[2])["suppress"] == [GROUP]


def test_a_store_elsewhere_is_named_and_a_password_never(tmp_path):
    opts = store_options(tracking_uri="http://mlflow:5000", workdir=tmp_path / "wd")
    assert opts == f"--tracking-uri http://mlflow:5000 --workdir {tmp_path / 'wd'}"
    params = _parses(
        review_command(RUN, tracking_uri="http://mlflow:5000", workdir=tmp_path / "wd")
    )
    assert params["tracking_uri"] == "http://mlflow:5000" and params["workdir"] == tmp_path / "wd"
    for secret in ("postgresql://gate:s3cret@db/mlflow", "http://mlflow:5000/?token=s3cret"):
        for command in decision_commands(RUN, tracking_uri=secret, workdir=tmp_path, flagged=[]):
            assert "s3cret" not in command and f"--workdir {tmp_path}" in command
            # read from the environment, never the workdir's own store by default
            assert '--tracking-uri "${MLFLOW_TRACKING_URI:?' in command


def _shell_words(command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The words a POSIX shell that treats an unset variable as an error (``set -u``) makes of
    ``command``'s arguments, in ``env`` only."""
    script = "set -u; printf '%s\\n' " + command.removeprefix("privacy-gate ")
    return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=30)


def test_a_pasted_command_depends_on_no_unset_variable(tmp_path):
    """Pasted where USER (and every other variable but PATH) is unset, as in many containers and
    cron jobs, each command expands to the login name and the run's options; a store whose URI
    holds a credential is read from MLFLOW_TRACKING_URI, and without it the shell refuses the
    command saying what to set, instead of reaching the workdir's own store."""
    bare = {"PATH": os.environ["PATH"]}
    login = subprocess.run(["id", "-un"], capture_output=True, text=True, check=True).stdout.strip()
    assert login
    for command in decision_commands(RUN, tracking_uri=None, workdir=tmp_path, flagged=[GROUP])[1:]:
        out = _shell_words(command, bare)
        assert out.returncode == 0, (command, out.stderr)
        words = out.stdout.splitlines()
        assert words[words.index("--reviewer") + 1] == login
        assert words[words.index("--workdir") + 1] == str(tmp_path.resolve())
    secret = "postgresql://gate:s3cret@db/mlflow"
    (command,) = [
        c
        for c in decision_commands(RUN, tracking_uri=secret, workdir=tmp_path, flagged=[])
        if c.startswith("privacy-gate reject")
    ]
    out = _shell_words(command, bare)
    assert (
        out.returncode != 0
        and "MLFLOW_TRACKING_URI" in out.stderr
        and "set it to the store URI" in out.stderr
    )
    out = _shell_words(command, {**bare, "MLFLOW_TRACKING_URI": secret})
    words = out.stdout.splitlines()
    assert out.returncode == 0 and words[words.index("--tracking-uri") + 1] == secret


def test_review_ends_with_the_commands_that_decide_it(tmp_path):
    workdir = tmp_path / "my work"
    outcome = RunOutcome(
        verdict=_verdict("REVIEW"),
        run_id=RUN,
        tracking_uri=f"sqlite:///{workdir}/mlflow.db",
        dataset="adult",
        quarantined=str(workdir / "quarantine" / "ab" / "synthetic.parquet"),
    )
    text = run_outcome_console(outcome, workdir=str(workdir), report_file="/r/index.html")
    lines = text.splitlines()
    assert "report:      /r/index.html" in lines
    commands = [line.strip() for line in lines if line.startswith("  privacy-gate ")]
    assert commands == decision_commands(
        RUN, tracking_uri=outcome.tracking_uri, workdir=workdir, flagged=[GROUP]
    )
    assert f"--workdir {shlex.quote(str(workdir))}" in commands[0]
    assert not any(p in text for p in ("RUN_ID", "WORKDIR", "NAME"))


def test_block_says_where_the_quarantined_release_and_the_report_are(tmp_path):
    q = str(tmp_path / "quarantine" / "ab" / "synthetic.parquet")
    outcome = RunOutcome(
        verdict=_verdict("BLOCK", flagged=()),
        run_id=RUN,
        tracking_uri="http://mlflow:5000",
        dataset="adult",
        quarantined=q,
    )
    text = run_outcome_console(outcome, workdir=str(tmp_path))
    assert f"quarantined: {q} (not published)" in text
    assert f"report:      artifact report/index.html of run {RUN}" in text
    assert "nothing was published" in text and "privacy-gate approve" not in text


@pytest.mark.parametrize("decision", ["APPROVE"])
def test_approve_prints_no_next_step(decision, tmp_path):
    outcome = RunOutcome(
        verdict=_verdict(decision, flagged=()),
        run_id=RUN,
        tracking_uri="http://mlflow:5000",
        dataset="adult",
        published=str(tmp_path / "published" / "x"),
    )
    text = run_outcome_console(outcome, workdir=str(tmp_path))
    assert "next:" not in text and "report:" not in text and "published:" in text


def test_a_run_decided_in_its_flow_prints_no_decision_commands(tmp_path):
    outcome = RunOutcome(
        verdict=_verdict("REVIEW"),
        run_id=RUN,
        tracking_uri="http://mlflow:5000",
        dataset="adult",
        review="approve",
        published=str(Path(tmp_path) / "p"),
    )
    assert "privacy-gate approve" not in run_outcome_console(outcome, workdir=str(tmp_path))


class _Tracker:
    """The Tracker calls a sink makes to record the quarantine and the description."""

    uri = "http://mlflow:5000"

    def __init__(self):
        self.tags, self.notes = {}, {}

    def set_tags(self, run_id, tags):
        self.tags.update(tags)

    def artifact_exists(self, run_id, path):
        return False

    def set_description(self, run_id, markdown):
        self.notes[run_id] = markdown


def test_the_run_records_its_workdir_and_its_description_and_report_name_it(tmp_path):
    """A server store: the MLflow description and the report point the commands at the store and
    at the workdir the run recorded (it used to print a WORKDIR placeholder)."""
    from types import SimpleNamespace

    from privacy_gate import names
    from privacy_gate.report.html import ReportInputs, render_report
    from privacy_gate.runs.mlflow_sink import MlflowSink

    tracker, workdir = _Tracker(), tmp_path / "wd"
    sink = MlflowSink(tracker, RUN)
    sink.record_quarantine(
        SimpleNamespace(sha256="ab" * 32, location="/q/synthetic.parquet"),
        target="/pub",
        workdir=workdir,
    )
    assert tracker.tags[names.TAG_WORKDIR] == str(workdir.resolve())
    sink.record_description(_verdict("REVIEW"), "# summary")
    where = f"--tracking-uri http://mlflow:5000 --workdir {workdir.resolve()}"
    assert f"privacy-gate reject {RUN} --reviewer {REVIEWER} {where}" in tracker.notes[RUN]
    assert "WORKDIR" not in tracker.notes[RUN]
    page = render_report(
        ReportInputs(
            verdict=_verdict("REVIEW").to_dict(),
            run_id=RUN,
            tracking_uri=tracker.uri,
            workdir=tracker.tags[names.TAG_WORKDIR],
        )
    )
    assert f"privacy-gate reject {RUN} --reviewer {html.escape(REVIEWER)} {where}" in page
