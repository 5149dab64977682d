"""What recording a verdict costs and logs: ``MlflowSink.record_verdict`` of this checkout against
an earlier commit's (default ``03c329b``, where every figure was an MLflow metric), on the golden
``gate_only`` verdict (742 figures, 5 attacks), side by side, alternating, ``--repeats`` runs each
in a fresh process and a fresh sqlite store.

Each run first writes what a gate run holds before its verdict (a subgroup audit, per-record
scores), since the verdict's seal hashes every artifact; the stage timings are a gate-only run's (20
stages and attacks). Prints and records the wall time, the MLflow metrics the run got and its
longest key. ``python benchmarks/bench_record_verdict.py [--repeats 5] [--baseline COMMIT]``;
results in ``benchmarks/results/record_verdict_lean.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, record

#: Run inside each checkout: one record_verdict on a fresh run of a fresh store.
CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
import pandas as pd
import privacy_gate
from privacy_gate import names, tracking
from privacy_gate.gate import Verdict
from privacy_gate.runs.mlflow_sink import MlflowSink

golden = json.loads(Path(sys.argv[1]).read_text())["gate_only"]
tests = ("membership", "targets", "scan", "agreement", "copies", "disclosure", "subgroups")
verdict = Verdict(decision=golden["verdict"], status="ok", reasons=(), metrics=golden["metrics"],
                  flagged_subgroups=tuple(golden["flagged_subgroups"]),
                  budget={"review": 0.02, "block": 0.001, "tests": [{"name": t, "pvalue": 0.5} for t in tests]})
stages = ("load", "validate_input", "load_synthetic", "validate_synthetic", "targets", "attacks", "mace", "exposure",
          "scan", "copies", "agreement", "disclosure", "audit", "decide", "logging")
timings = {**{s: 1.0 for s in stages},
           **{f"attack.{a}": 0.5 for a in ("copy_count", "dcr", "dcr_ratio", "domias", "mama_mia")}}
with tempfile.TemporaryDirectory() as tmp:
    tracker = tracking.Tracker.for_workdir(workdir=Path(tmp), dataset="adult")
    sink = MlflowSink.start(tracker, name="gate-adult", kind="gate_only", dataset="adult")
    tracker.log_json(sink.run_id, [{"group": f"g{i}", "auc": 0.5} for i in range(500)], names.ART_SUBGROUPS)
    tracker.log_frame(sink.run_id, pd.DataFrame({"row_id": range(1200), "score": 0.1}), names.ART_SCORES)
    t = time.perf_counter()
    sink.record_verdict(verdict, timings=timings)
    seconds = time.perf_counter() - t
    logged = tracker.client.get_run(sink.run_id).data.metrics
print(json.dumps({"seconds": seconds, "metrics": len(logged), "longest_key": max(map(len, logged)),
                  "file": privacy_gate.__file__}))
"""  # noqa: E501 - a script for a child process, kept as one would type it


def _run(checkout: Path, golden: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "MLFLOW_DISABLE_TELEMETRY": "true"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(golden)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["file"].startswith(str(checkout)), result[
        "file"
    ]  # the checkout's code ran, not another
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", default="03c329b")
    args = parser.parse_args()
    golden = ROOT / "tests" / "golden" / "verdicts.json"
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), args.baseline],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            runs: dict[str, list[dict]] = {"baseline": [], "lean": []}
            for i in range(args.repeats):
                for name, checkout in (("baseline", base), ("lean", ROOT)):
                    r = _run(checkout, golden)
                    runs[name].append(r)
                    print(
                        f"[{i + 1}/{args.repeats}] {name:<8} {r['seconds']:6.3f} s  {r['metrics']} "
                        "metrics, "
                        f"longest key {r['longest_key']}",
                        flush=True,
                    )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True
            )
    med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    print(
        f"median record_verdict: baseline {med['baseline']:.3f} s "
        f"({runs['baseline'][0]['metrics']} metrics), "
        f"lean {med['lean']:.3f} s ({runs['lean'][0]['metrics']} metrics)"
    )
    record(
        "record_verdict_lean",
        {"commit": head, "baseline_commit": args.baseline, "runs": runs, "median_seconds": med},
    )


if __name__ == "__main__":
    main()
