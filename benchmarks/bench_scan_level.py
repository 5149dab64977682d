"""The member scan's tail test alone on exact null releases, many seeds: does it hold its level?

On the nine-table nulls (``bench_calibration.py --cells nulls``) the scan held back 5 of 306 gates
at its review share (0.4 %): 1.6 %. Each gate runs the scan once, so 306 gates say little about a
0.4 % level. This runs only the scan (seconds each) on the calibration tables' generated releases
(``calibration_scenarios.make_release``: train, holdout, reference and population a random split;
the release drawn from the population, so it is independent of who is in the training set) and
counts how often its tail p-value reaches 0.4 %, 1 % and 5 %, per table with Wilson intervals.

Beside each release, the same pool and release with the pool's labels permuted once at random
(``--permuted``): the test's level by construction, whatever the data. A gap between the two means
the benchmark's own labels are not a random relabelling of the pool.

``python benchmarks/bench_scan_level.py --tables flchain cps1988 --seeds $(seq 0 99) [--permuted]``;
results in ``benchmarks/results/scan_level.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmarks._common import record
from benchmarks.bench_exposure import wilson

LEVELS = (0.01, 0.05)


def _scan_p(train, holdout, reference, synthetic, spec) -> float:
    from privacy_gate.data import Splits
    from privacy_gate.experiment.member_scan import scan_members

    splits = Splits(train=train, holdout=holdout, reference=reference)
    # the gate's settings for a split of the real table: the reference joins the calibration
    result = scan_members(splits, synthetic, spec, q=0.05, seed=0, calibration_reference=True)
    return float(result.tail_pvalue)


def _permuted(train, holdout, reference, seed: int):
    pool = pd.concat([train, holdout, reference], ignore_index=True)
    order = np.random.default_rng([seed, 20261128]).permutation(len(pool))
    cuts = np.cumsum([len(train), len(holdout)])
    return [pool.iloc[part].reset_index(drop=True) for part in np.split(order, cuts)]


def main() -> None:
    from calibration_scenarios import make_release
    from calibration_tables import TABLES

    from privacy_gate.config import BudgetConfig
    from privacy_gate.config.rules import budget_tests
    from privacy_gate.gate.budget import test_levels

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", default=["flchain"], choices=sorted(TABLES))
    ap.add_argument("--cells", nargs="+", default=["null-independent"])
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(20)))
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--permuted", action="store_true", help="also the pool's labels permuted")
    ap.add_argument("--out", default="scan_level")
    args = ap.parse_args()
    logging.getLogger("privacy_gate").setLevel(logging.ERROR)
    share = test_levels(BudgetConfig(), budget_tests({}))["scan"][0]
    levels = (share, *LEVELS)
    rows, started = [], time.perf_counter()
    total = len(args.tables) * len(args.cells) * len(args.seeds)
    for table in args.tables:
        for cell in args.cells:
            for seed in args.seeds:
                rel = make_release(table, cell, seed, args.n_train)
                parts = (rel.train, rel.holdout, rel.reference)
                row = {
                    "table": table,
                    "cell": cell,
                    "seed": seed,
                    "p": _scan_p(*parts, rel.synthetic, rel.spec),
                }
                if args.permuted:
                    row["p_permuted"] = _scan_p(*_permuted(*parts, seed), rel.synthetic, rel.spec)
                rows.append(row)
                print(
                    f"[{len(rows)}/{total}] {table} {cell} seed {seed}: tail p {row['p']:.4g}"
                    + (f", labels permuted {row['p_permuted']:.4g}" if args.permuted else ""),
                    flush=True,
                )
    frame = pd.DataFrame(rows)
    summary = []
    for name, group in [("all", frame), *frame.groupby("table")]:
        for column in ("p", "p_permuted") if args.permuted else ("p",):
            entry = {"table": str(name), "labels": "permuted" if column != "p" else "benchmark"}
            n, cells = len(group), []
            for level in levels:
                k = int((group[column] <= level).sum())
                entry[f"<= {level:.4g}"] = {"count": k, "of": n, "wilson": wilson(k, n)}
                cells.append(f"p <= {level:.4g}: {k}/{n}")
            summary.append(entry)
            print(f"{entry['table']:<17} {entry['labels']:<9} {'  '.join(cells)}")
    record(
        args.out,
        {
            "command": " ".join(sys.argv),
            "scan_review_share": share,
            "seconds": round(time.perf_counter() - started, 1),
            "summary": summary,
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
