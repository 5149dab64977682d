"""Wall time per stage of the demo release (`make demo`: GaussianCopula on the full Adult data).

Runs the real Prefect release flow with a fresh MLflow sqlite store in a temporary workdir and
records the stage timings. The goal: the gate itself (everything after sampling) under 2 minutes
on a 2-core machine.

    .venv/bin/python benchmarks/bench_release.py [--config examples/adult.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

for k, v in (("MLFLOW_DISABLE_TELEMETRY", "true"), ("DO_NOT_TRACK", "true"),
             ("PREFECT_SERVER_ANALYTICS_ENABLED", "false")):
    os.environ.setdefault(k, v)

ROOT = Path(__file__).resolve().parents[1]
GATE_STAGES = ("validate_synthetic", "targets", "attacks", "logging")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(ROOT / "examples" / "adult.yaml"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "release_adult.json"))
    args = parser.parse_args()

    from flows.release import release_flow

    with tempfile.TemporaryDirectory() as workdir:
        start = time.perf_counter()
        result = release_flow(config_path=args.config, workdir=workdir)
        wall = time.perf_counter() - start
    timings = result["timings"]
    gate = sum(timings.get(s, 0.0) for s in GATE_STAGES)
    verdict = result["verdict"]
    record = {
        "benchmark": "release flow on the bundled Adult data (demo settings)",
        "config": str(Path(args.config).relative_to(ROOT)) if args.config.startswith(str(ROOT)) else args.config,
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "stage_seconds": {k: round(v, 3) for k, v in timings.items()},
        "gate_seconds_after_sampling": round(gate, 3),
        "gate_goal_seconds": 120,
        "flow_wall_seconds_incl_prefect_and_mlflow_setup": round(wall, 3),
        "verdict": verdict["verdict"],
        "metrics": {k: round(v, 4) for k, v in verdict["metrics"].items()
                    if k.split(".")[-1] in ("auc", "tpr_at_fpr_0.01", "advantage", "quality")},
    }
    print(f"{'stage':<28}{'seconds':>10}")
    for k, v in timings.items():
        print(f"{k:<28}{v:>10.2f}")
    print(f"{'gate (after sampling)':<28}{gate:>10.2f}   goal < 120 s -> {'OK' if gate < 120 else 'MISSED'}")
    print(f"{'flow wall time':<28}{wall:>10.2f}")
    print(f"verdict: {verdict['verdict']}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    print(f"recorded in {args.out}")


if __name__ == "__main__":
    main()
