"""One decision per release (privacy_gate/review/prior_decision.py): a deployment's run of an
unchanged release reuses the decision taken on it — an unchanged release served three times
creates one REVIEW — and a changed file or setting is a new release.

The deployment is Prefect's own test hook for runtime values (``PREFECT__RUNTIME__DEPLOYMENT__ID``):
the release flow runs here, on the session's Prefect test server, as a deployment's run would.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.config import load_release_config
from privacy_gate.flows import release_flow
from privacy_gate.review.prior_decision import PriorDecision, prior_decision, release_key

from ..conftest import write_release_config

#: a rule every release violates (utility.quality is at most 1): a REVIEW without any leak, at the
#: cost of a small gate
ALWAYS_REVIEW = {"rules": [{"metric": "utility.quality", "min": 0.9999, "action": "review"}]}


def _served(monkeypatch) -> str:
    deployment = str(uuid.uuid4())
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", deployment)
    return deployment


def _release_runs(workdir, dataset="adult"):
    tracker = tracking.Tracker.for_workdir(workdir=workdir, dataset=dataset)
    return [
        r
        for r in tracker.find_runs(experiment_ids=[tracker.experiment_id])
        if r.data.tags.get(names.TAG_KIND) == "release"
    ]


def test_an_unchanged_release_served_three_times_creates_one_review(
    prefect_server, small_adult, tmp_path, monkeypatch
):
    _served(monkeypatch)
    config = write_release_config(
        small_adult,
        {"name": "file", "path": str(small_adult / "independent.csv")},
        name="once.yaml",
        fast=True,
        gate=ALWAYS_REVIEW,
    )
    states = [
        release_flow(config_path=str(config), workdir=str(tmp_path), return_state=True)
        for _ in range(3)
    ]
    assert [s.name for s in states] == ["Review pending", "Skipped", "Skipped"], [
        (s.name, s.message) for s in states
    ]
    first = states[0].result(raise_on_failure=False).run_id
    for s in states[1:]:
        assert f"awaits its review in MLflow run {first}" in s.message, s.message
        assert f"privacy-gate approve {first}" in s.message
    runs = _release_runs(tmp_path)
    assert [r.info.run_id for r in runs] == [
        first
    ]  # one MLflow run, one REVIEW in the officer's queue
    assert runs[0].data.tags[names.TAG_RELEASE_KEY] == release_key(load_release_config(config))

    # rejected: the decision stands for the same release; nothing is gated or queued again
    r = CliRunner().invoke(
        app,
        ["reject", first, "--reviewer", "officer", "--comment", "no", "--workdir", str(tmp_path)],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    again = release_flow(config_path=str(config), workdir=str(tmp_path), return_state=True)
    assert (
        again.name == "Skipped"
        and f"already decided in MLflow run {first} (REVIEW, rejected)" in again.message
    )
    assert len(_release_runs(tmp_path)) == 1


def test_the_key_changes_with_the_data_bytes_and_every_setting(small_adult, tmp_path):
    data = tmp_path / "real.csv"
    data.write_bytes((small_adult / "real.csv").read_bytes())
    path = write_release_config(tmp_path, {"name": "copy_train"}, name="k.yaml")
    base = release_key(load_release_config(path))
    assert release_key(load_release_config(path)) == base  # the same files: the same release
    original = path.read_text()
    raw = yaml.safe_load(original)
    raw["generator"]["seed"] = 12345
    path.write_text(yaml.safe_dump(raw))
    assert release_key(load_release_config(path)) != base  # a setting
    path.write_text(original)
    assert release_key(load_release_config(path)) == base
    lines = data.read_text().splitlines(keepends=True)
    data.write_text("".join(lines[:-1]))  # one record fewer
    assert release_key(load_release_config(path)) != base


class _Run(SimpleNamespace):
    pass


def _run(run_id, start, **tags):
    return _Run(
        info=SimpleNamespace(run_id=run_id, start_time=start), data=SimpleNamespace(tags=tags)
    )


class _Store:
    experiment_id = "1"

    def __init__(self, runs):
        self.runs = runs

    def find_runs(self, filter_string, *, experiment_ids):
        assert experiment_ids == ["1"] and names.TAG_RELEASE_KEY in filter_string
        return self.runs


V, S, A, K = names.TAG_VERDICT, names.TAG_STATUS, names.TAG_APPROVAL_STATUS, names.TAG_KIND


@pytest.mark.parametrize(
    ("runs", "expected"),
    [
        ([], None),
        # a run that did not complete decided nothing: the next run gates
        ([_run("e", 1, **{V: "BLOCK", S: "error", K: "release"})], None),
        # a pending review is named before a later decision (it is what the officer must decide)
        (
            [
                _run("p", 1, **{V: "REVIEW", S: "ok", A: "pending", K: "release"}),
                _run("b", 2, **{V: "BLOCK", S: "ok", A: "not_required", K: "release"}),
            ],
            PriorDecision("p", "REVIEW", "pending"),
        ),
        # the latest decision, a top-level run before a nested attempt of it
        (
            [
                _run("a1", 3, **{V: "BLOCK", S: "ok", K: "release", "mlflow.parentRunId": "lad"}),
                _run("lad", 1, **{V: "APPROVE", S: "ok", A: "not_required", K: "ladder"}),
            ],
            PriorDecision("lad", "APPROVE", "not_required"),
        ),
        # a suppressed re-gate is decided with its parent, never on its own
        (
            [
                _run("rr", 5, **{V: "REVIEW", S: "ok", A: "pending", K: names.KIND_REVIEW_RERUN}),
                _run("r", 1, **{V: "REVIEW", S: "ok", A: "approved", K: "release"}),
            ],
            PriorDecision("r", "REVIEW", "approved"),
        ),
    ],
)
def test_which_run_decides_a_release(runs, expected):
    assert prior_decision(_Store(runs), "k") == expected
