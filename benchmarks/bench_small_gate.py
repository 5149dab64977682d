"""A small gate-only release through the CLI: how much of the wall time is the gate's own stages?

Data: 4,000 training rows of the bundled Adult table, 2,000 holdout, 2,000 reference, and an
independent 4,000-row "release" (Adult rows in none of them). ``privacy-gate gate`` runs as a
user would run it (a fresh process) with ``--orchestrator local`` (the library pipeline in
process) — in a fresh workdir and again in the same one — and with ``--orchestrator prefect``
(a temporary Prefect server) for comparison, side by side. The stage times are read from the
progress lines ("... done in X s"); the goal is wall time within 2x of their sum.

``python benchmarks/bench_small_gate.py [--train 4000] [--repeat 2]``; results in
``benchmarks/results/small_gate.json``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, record

DONE = re.compile(r"done in ([0-9.]+) s")


def write_data(folder: Path, n_train: int, seed: int = 0) -> dict[str, Path]:
    import numpy as np
    import pandas as pd

    adult = pd.read_csv(ROOT / "data" / "adult" / "adult.csv.gz")
    order = np.random.default_rng(seed).permutation(len(adult))
    sizes = {
        "train": n_train,
        "holdout": n_train // 2,
        "reference": n_train // 2,
        "synthetic": n_train,
    }
    paths, start = {}, 0
    for name, n in sizes.items():
        paths[name] = folder / f"{name}.csv"
        adult.iloc[order[start : start + n]].to_csv(paths[name], index=False)
        start += n
    return paths


def run_cli(paths: dict[str, Path], workdir: Path, orchestrator: str) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "privacy_gate.cli",
        "gate",
        *[
            x
            for k in ("train", "holdout", "reference", "synthetic")
            for x in (f"--{k}", str(paths[k]))
        ],
        "--spec",
        str(ROOT / "examples" / "adult.yaml"),
        "--workdir",
        str(workdir),
        "--orchestrator",
        orchestrator,
    ]
    started = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    stages = sum(float(m) for m in DONE.findall(out.stderr + out.stdout))
    verdict = re.search(r"VERDICT: (\w+)", out.stdout + out.stderr)
    return {
        "orchestrator": orchestrator,
        "wall_seconds": round(wall, 2),
        "stage_seconds": round(stages, 2),
        "ratio": round(wall / stages, 2) if stages else None,
        "exit_code": out.returncode,
        "verdict": verdict.group(1) if verdict else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=2, help="runs per setting (the best is reported)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_data(Path(tmp), args.train)
        for label, orchestrator, fresh in (
            ("local, fresh workdir", "local", True),
            ("local, existing workdir", "local", False),
            ("prefect (temporary server)", "prefect", True),
        ):
            runs = []
            for k in range(args.repeat):
                wd = Path(tmp) / (f"wd-{orchestrator}-{k}" if fresh else "wd-shared")
                runs.append(run_cli(paths, wd, orchestrator))
            best = min(runs, key=lambda r: r["wall_seconds"])
            rows.append({"setting": label, **best, "all_walls": [r["wall_seconds"] for r in runs]})
            print(
                f"{label:<28} wall {best['wall_seconds']:6.1f} s  stages "
                f"{best['stage_seconds']:5.1f} s  "
                f"ratio {best['ratio']}  {best['verdict']}",
                flush=True,
            )
    record(
        "small_gate", {"settings": vars(args), "runs": rows, "goal": "wall <= 2 x sum of stages"}
    )


if __name__ == "__main__":
    main()
