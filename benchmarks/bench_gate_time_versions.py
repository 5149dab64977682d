"""Whole-gate wall time on full Adult, this checkout against an earlier commit of the gate, side
by side in one run (alternating, ``--repeats`` each), each in a fresh Python process.

The release is made once, by this checkout: the demo's GaussianCopula fitted on the training split
of the example config's split, sampled to the training-set size; the four frames are written to
Parquet in a temporary folder and both versions gate the same files through the public
``privacy_gate.evaluate`` (default settings). The baseline's code is a ``git worktree`` of
``--baseline`` (default ``df7a959``, the gate before the two-sided membership ensemble, the graded
agreement scan and the other detectors that need no declarations), removed afterwards.

    python benchmarks/bench_gate_time_versions.py [--baseline df7a959] [--repeats 3]

Records ``benchmarks/results/gate_time_versions.json``: the seconds of every run, the medians,
the ratio this checkout / baseline, and both decisions.
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

from benchmarks._common import ROOT, adult_splits, record  # noqa: E402

#: what each child process runs: the gate on the four Parquet files, its time and decision as JSON
CHILD = """
import json, logging, sys, time, warnings
warnings.simplefilter("ignore"); logging.disable(logging.WARNING)
import pandas as pd
import privacy_gate
folder = sys.argv[1]
parts = {k: pd.read_parquet(f"{folder}/{k}.parquet") for k in ("train", "holdout", "reference", "synthetic")}
start = time.perf_counter()
r = privacy_gate.evaluate(**parts, spec=sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - start, "decision": r.decision}))
"""


def _gate(code: Path, folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(ROOT / "examples" / "adult.yaml")],
                         cwd=code, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="df7a959")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from privacy_gate.generators import create_generator

    spec, splits = adult_splits()
    generator = create_generator("gaussian_copula", seed=0).fit(splits.train, spec, reference=splits.reference)
    synthetic = generator.sample(len(splits.train))
    with tempfile.TemporaryDirectory() as tmp:
        folder, baseline = Path(tmp) / "data", Path(tmp) / "baseline"
        folder.mkdir()
        for name, frame in (("train", splits.train), ("holdout", splits.holdout), ("reference", splits.reference),
                            ("synthetic", synthetic)):
            frame.to_parquet(folder / f"{name}.parquet")
        subprocess.run(["git", "worktree", "add", "--detach", str(baseline), args.baseline], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            versions = {"baseline": baseline, "this": ROOT}
            seconds: dict[str, list[float]] = {k: [] for k in versions}
            decisions: dict[str, str] = {}
            for i in range(args.repeats):
                for name, code in versions.items():
                    res = _gate(code, folder)
                    seconds[name].append(res["seconds"])
                    decisions[name] = res["decision"]
                    print(f"  repeat {i + 1}: {name:<8} {res['seconds']:6.1f} s  {res['decision']}", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, capture_output=True)
    medians = {k: statistics.median(v) for k, v in seconds.items()}
    ratio = medians["this"] / medians["baseline"]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    print(f"median: baseline {args.baseline} {medians['baseline']:.1f} s, this checkout ({head}) "
          f"{medians['this']:.1f} s, ratio {ratio:.2f} (goal <= 1.3)")
    record("gate_time_versions", {"benchmark": __doc__.splitlines()[0], "baseline": args.baseline, "this": head,
                                  "repeats": args.repeats, "seconds": seconds, "median_seconds": medians,
                                  "ratio_this_over_baseline": ratio, "decisions": decisions,
                                  "rows": {"train": len(splits.train), "holdout": len(splits.holdout),
                                           "reference": len(splits.reference), "synthetic": len(synthetic)}})


if __name__ == "__main__":
    main()
