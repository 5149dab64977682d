"""The commands that only read start fast (decision commands once took 8-21 s to start): they
import what they use. ``--version`` and ``--help`` load neither MLflow nor pandas; ``review`` loads
MLflow (the store) but never the attacks (scikit-learn), the figures (matplotlib), the generators
(SDV, torch), Great Expectations or Prefect. Each command runs in a fresh interpreter, which
reports the packages it loaded. (benchmarks/bench_cli_startup.py measures the time.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from privacy_gate import names, tracking

#: never needed to read a verdict or list pending runs
HEAVY = ("torch", "sdv", "great_expectations", "prefect", "sklearn", "matplotlib", "faiss", "dask")
PROBE = (
    "import json, sys, runpy\nsys.argv = ['privacy-gate', *sys.argv[1:]]\ntry:\n    "
    "runpy.run_module('privacy_gate.cli', run_name='__main__')\n    code = 0\nexcept "
    "SystemExit as e:\n    code = e.code\nprint(json.dumps({'exit': code, 'loaded': sorted(m "
    "for m in %r if m in sys.modules)}))"
)


def _run(*args: str) -> tuple[int, list[str], str]:
    """``privacy-gate ARGS`` in a fresh interpreter: its exit code, the packages of interest it
    loaded, and its output."""
    watched = (*HEAVY, "mlflow", "pandas")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("PREFECT_API") and k != names.ENV_SIGNING_KEY
    }
    out = subprocess.run(
        [sys.executable, "-c", PROBE % (watched,), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["exit"], result["loaded"], out.stdout + out.stderr


def test_importing_the_cli_loads_nothing_heavy():
    code = (
        "import sys, privacy_gate.cli; "
        f"print([m for m in {(*HEAVY, 'mlflow', 'pandas')!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "args", [("--version",), ("review", "--help"), ("gate", "--help"), ("--help",)]
)
def test_version_and_help_load_neither_mlflow_nor_the_gate(args):
    code, loaded, output = _run(*args)
    assert code == 0, output
    assert loaded == [], loaded


def test_review_pending_loads_mlflow_and_nothing_of_the_gate(tmp_path):
    tracking.Tracker(uri=tracking.default_tracking_uri(tmp_path), experiment=None)  # an empty store
    code, loaded, output = _run("review", "--pending", "--workdir", str(tmp_path))
    assert code == 0 and "no runs awaiting review" in output, output
    assert "mlflow" in loaded and not set(loaded) & set(HEAVY), loaded
    code, loaded, output = _run("review", "--pending", "--workdir", str(tmp_path / "none"))
    assert code == 2 and "no MLflow store there" in output and loaded == [], (loaded, output)


def test_review_of_a_run_loads_nothing_of_the_gate(tmp_path):
    from tests.review.test_rerun_decisions import GROUP, _parent

    run_id, _ = _parent(tmp_path)  # a REVIEW run, recorded the way the gate records one
    code, loaded, output = _run("review", run_id, "--workdir", str(tmp_path))
    assert code == 0 and "PENDING REVIEW" in output and GROUP in output, output
    assert not set(loaded) & set(HEAVY), loaded
