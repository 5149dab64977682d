"""Fault-injection table (faults through ``tests/faults.py: FaultyExecutor``, one per named step of
today's stages): every stage of a release run x fault kind -> verdict, what the MLflow
record says, and what is visible in the publish target. Goal: 100% fail closed, 0 partial or
unmanifested files.

    .venv/bin/python benchmarks/bench_faults.py      # ~3 min on 2 cores; writes
    results/fault_injection.json

Base case: 3,000 Adult rows, an independent sample as the release (APPROVE when nothing breaks).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

for k, v in (
    ("MLFLOW_DISABLE_TELEMETRY", "true"),
    ("DO_NOT_TRACK", "true"),
    ("GX_ANALYTICS_ENABLED", "false"),
):
    os.environ.setdefault(k, v)

from _common import ROOT, record  # noqa: E402

sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from tests.faults import all_cases, as_rows, run_case  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        adult = pd.read_csv(ROOT / "data/adult/adult.csv.gz")
        order = np.random.default_rng(7).permutation(len(adult))
        adult.iloc[order[:3000]].to_csv(folder / "real.csv", index=False)
        adult.iloc[order[3000:5000]].to_csv(folder / "independent.csv", index=False)
        raw = yaml.safe_load((ROOT / "examples/adult.yaml").read_text())
        raw["dataset"]["path"] = str(folder / "real.csv")
        raw["generator"] = {"name": "file", "path": str(folder / "independent.csv")}
        raw["attacks"] = [{"name": "dcr"}, {"name": "domias"}]
        raw["audit"] = {"intersections": []}
        config = folder / "release.yaml"
        config.write_text(yaml.safe_dump(raw, sort_keys=False))
        outcomes = []
        start = time.perf_counter()
        for i, (stage, kind) in enumerate(all_cases()):
            outcome = run_case(config, folder / f"wd-{i}", stage, kind)
            outcomes.append(outcome)
            print(
                f"{stage:<20} {kind:<11} -> {outcome.verdict:<7} {outcome.status:<13} "
                f"visible={outcome.visible_releases} "
                f"stray={outcome.stray_entries} recorded={outcome.recorded_verdict} "
                f"{'OK' if outcome.fail_closed else 'NOT FAIL-CLOSED'}"
                f"{'' if outcome.fired else ' (fault never fired)'}",
                flush=True,
            )
    closed = sum(
        o.fail_closed and o.fired for o in outcomes
    )  # a fault that never fired proves nothing
    stray = sum(o.stray_entries for o in outcomes)
    print(
        f"\n{closed}/{len(outcomes)} fired and failed closed; {stray} partial or unmanifested "
        "entries in publish targets"
    )
    record(
        "fault_injection",
        {
            "cases": len(outcomes),
            "fail_closed": closed,
            "stray_entries": stray,
            "seconds": round(time.perf_counter() - start, 1),
            "table": as_rows(outcomes),
        },
    )


if __name__ == "__main__":
    main()
