"""Whole-gate wall time on full Adult: this checkout's gate (the error budget, the copy test and
the agreement scan) against the gate of an earlier commit (default ``1465111``, before the
budget), side by side in one run, alternating, ``--repeats`` each, every run in a fresh process.

Both gates judge the same release: a GaussianCopula fitted once on the training split of the
example config's split (the demo's generator), sampled to the training-set size. The earlier
commit is checked out with ``git worktree`` into a temporary folder (removed afterwards); both
processes use this virtual environment. ``python benchmarks/bench_budget_time.py [--repeats 3]
[--baseline COMMIT] [--out NAME]``; results in ``benchmarks/results/gate_time_budget.json`` (or
``NAME.json``). ``--baseline df7a959 --out gate_time_versions --goal 1.3`` measures today's gate
against the one before the detectors that need no declarations (goal: at most 1.3x).
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

from benchmarks._common import ROOT, adult_splits, record

#: Run inside each checkout: time privacy_gate.evaluate on the saved splits and release.
CHILD = r"""
import json, sys, time, warnings, pandas as pd
warnings.simplefilter("ignore")
folder = sys.argv[1]
import privacy_gate
from privacy_gate.config import load_release_config
spec = load_release_config(sys.argv[2]).dataset.spec
parts = {k: pd.read_parquet(f"{folder}/{k}.parquet") for k in ("train", "holdout", "reference", "synthetic")}
t = time.perf_counter()
r = privacy_gate.evaluate(**parts, spec=spec)
print(json.dumps({"seconds": time.perf_counter() - t, "decision": r.verdict.decision, "status": r.verdict.status,
                  "file": privacy_gate.__file__}))
"""  # noqa: E501 - a script for a child process, kept as one would type it


def _run(checkout: Path, folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "MLFLOW_DISABLE_TELEMETRY": "true"}
    # each checkout with its own example spec (the new one declares quasi-identifiers)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(checkout / "examples" / "adult.yaml")],
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
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", default="1465111")
    parser.add_argument(
        "--out", default="gate_time_budget", help="results name under benchmarks/results/"
    )
    parser.add_argument(
        "--goal",
        type=float,
        default=1.2,
        help="the largest ratio the goal allows (printed, recorded)",
    )
    args = parser.parse_args()
    from privacy_gate.generators import create_generator

    spec, splits = adult_splits(seed=0)
    generator = create_generator("gaussian_copula", seed=0).fit(
        splits.train, spec, reference=splits.reference
    )
    synthetic = generator.sample(len(splits.train))
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        folder, base = Path(tmp) / "data", Path(tmp) / "baseline"
        folder.mkdir()
        for k, df in (
            ("train", splits.train),
            ("holdout", splits.holdout),
            ("reference", splits.reference),
            ("synthetic", synthetic),
        ):
            df.to_parquet(folder / f"{k}.parquet")
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), args.baseline],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            runs: dict[str, list[dict]] = {"baseline": [], "budget": []}
            for i in range(args.repeats):
                for name, checkout in (("baseline", base), ("budget", ROOT)):
                    r = _run(checkout, folder)
                    runs[name].append(r)
                    print(
                        f"[{i + 1}/{args.repeats}] {name:<8} {r['seconds']:6.1f} s  "
                        f"{r['decision']} ({r['status']})",
                        flush=True,
                    )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True
            )
    med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    ratio = med["budget"] / med["baseline"]
    print(
        f"median: baseline {med['baseline']:.1f} s, budget {med['budget']:.1f} s -> {ratio:.2f}x "
        f"(goal <= {args.goal}x)"
    )
    record(
        args.out,
        {
            "commit": head,
            "baseline_commit": args.baseline,
            "rows": {
                k: len(v)
                for k, v in (
                    ("train", splits.train),
                    ("holdout", splits.holdout),
                    ("reference", splits.reference),
                )
            },
            "runs": runs,
            "median_seconds": med,
            "ratio": ratio,
            "goal": args.goal,
        },
    )


if __name__ == "__main__":
    main()
