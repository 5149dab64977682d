"""A generator fit is not silent: a start line, a line every few seconds with the elapsed time and
the generator's epoch or step when it reports one, a done line; MLflow's artifact progress bars off
wherever MLflow is used (fast: a fake fit of a fraction of a second)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from types import SimpleNamespace

from privacy_gate import names
from privacy_gate.generators import progress
from privacy_gate.pipeline.executor import LocalExecutor
from privacy_gate.pipeline.stages import StageClock, run_stages
from privacy_gate.runs import release

from ..conftest import LogLines


def _slow_fit(config, train, reference, progress_key=None):
    with progress.tracking(progress_key):
        for epoch in range(1, 5):
            progress.step(epoch, 4, "epoch")
            time.sleep(0.15)
    return "generator"


def test_fit_prints_start_periodic_lines_with_epochs_and_done(monkeypatch):
    monkeypatch.setenv(names.ENV_PROGRESS_SECONDS, "0.1")
    monkeypatch.setattr(release, "fit_generator", _slow_fit)
    logger = logging.getLogger("test-fit-progress")
    handler = LogLines()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    state = SimpleNamespace(
        config=SimpleNamespace(generator=SimpleNamespace(name="privgan")),
        splits=SimpleNamespace(train=[1, 2, 3], reference=None),
        generator=None,
    )
    stage = next(s for s in release.RELEASE_STAGES if s.name == "fit")  # its declared writes
    run_stages((stage,), state, executor=LocalExecutor(), clock=StageClock(logger=logger))
    lines = handler.lines
    assert lines[0].startswith("▶ fitting generator 'privgan'") and lines[-1].startswith(
        "✔ fitting generator"
    )
    ticks = [x for x in lines[1:-1] if x.startswith("  fitting generator 'privgan': ")]
    assert len(ticks) >= 3, lines
    assert "s elapsed" in ticks[0] and any(" of 4" in x and "epoch " in x for x in ticks), ticks
    assert state.generator == "generator"
    n = len(handler.lines)
    time.sleep(0.3)
    assert len(handler.lines) == n  # the heartbeat stopped with the fit


def test_fit_generator_keeps_the_steps_under_its_key(monkeypatch):
    class Gen:
        def fit(self, train, spec, *, reference=None):
            progress.step(7, 10, "generation")
            return self

    monkeypatch.setattr(release, "create_generator", lambda name, **kw: Gen())
    config = SimpleNamespace(
        generator=SimpleNamespace(params={}, seed=None, name="x"),
        dataset=SimpleNamespace(spec=None),
    )
    release.fit_generator(config, None, None, "k-test")
    assert progress.latest("k-test") == (7, 10, "generation")
    progress.forget("k-test")
    release.fit_generator(config, None, None)  # no key: nothing kept
    assert progress.latest("k-test") is None


def test_mlflow_artifact_progress_bars_are_off_wherever_tracking_is_imported():
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"}
    code = (
        "import privacy_gate.tracking; from mlflow.environment_variables import "
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR as v; print(v.get())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "False", out.stderr[-2000:]
