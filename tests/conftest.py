"""Shared fixtures: quiet telemetry, one Prefect test server per session, small seeded Adult data.

The small tables are seeded samples of the bundled Adult data; the "independent" release is drawn
from Adult rows that are in none of train / holdout / reference (same population, no members).
"""

from __future__ import annotations

import os
import signal
import threading

for _k, _v in (("MLFLOW_DISABLE_TELEMETRY", "true"), ("DO_NOT_TRACK", "true"),
               ("PREFECT_SERVER_ANALYTICS_ENABLED", "false"), ("GX_ANALYTICS_ENABLED", "false"),
               ("PREFECT_LOGGING_LEVEL", "WARNING"), ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")):
    os.environ.setdefault(_k, _v)

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult" / "adult.csv.gz"
EXAMPLE = ROOT / "examples" / "adult.yaml"


def _interrupt_on_sigterm(signum, frame):
    """SIGTERM (a CI timeout, ``kill``) ends the session like Ctrl-C: fixtures' finalizers run and
    stop the services they started. A second SIGTERM kills pytest at once (tests/reaper.py's
    launchers still stop every service then)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise KeyboardInterrupt(f"signal {signum} (SIGTERM)")


def pytest_configure(config):
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt_on_sigterm)


@pytest.fixture(scope="session")
def adult_full() -> pd.DataFrame:
    return pd.read_csv(ADULT)


@pytest.fixture(scope="session")
def adult_spec():
    from privacy_gate.config import load_spec

    return load_spec(EXAMPLE)


@pytest.fixture(scope="session")
def small_adult(adult_full, tmp_path_factory):
    """3,000 real rows (the private table) and 2,000 disjoint rows of the same population."""
    rng = np.random.default_rng(7)
    order = rng.permutation(len(adult_full))
    real = adult_full.iloc[order[:3000]].reset_index(drop=True)
    outside = adult_full.iloc[order[3000:5000]].reset_index(drop=True)
    folder = tmp_path_factory.mktemp("adult-small")
    real.to_csv(folder / "real.csv", index=False)
    outside.to_csv(folder / "independent.csv", index=False)
    return folder


def review_rules() -> list[dict]:
    """The example's rules without the global exposed-share block rule.

    Tests of the review mechanics need a REVIEW run with one flagged subgroup; copying a whole
    group exposes more than 0.5% of all training records, which that rule blocks (see the
    README's per-sample limits).
    """
    return [r for r in yaml.safe_load(EXAMPLE.read_text())["gate"]["rules"] if r["metric"] != "exposed.share_lower"]


def write_release_config(folder: Path, generator: dict, *, name: str = "release.yaml", **overrides) -> Path:
    """A release config for the small Adult table, based on examples/adult.yaml."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["dataset"]["path"] = str(folder / "real.csv")
    raw["generator"] = generator
    for key, value in overrides.items():
        raw[key] = value
    path = folder / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def prefect_server():
    """One Prefect test server for the whole session (starting one takes several seconds); its
    process is started through tests/reaper.py, so it cannot outlive pytest."""
    from .stack import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield
