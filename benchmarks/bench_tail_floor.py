"""The tail-excess test's Monte-Carlo calibration under the gate's fixed seed: is its floor honest?

The tail test (``privacy_gate.estimators.tail_test``) calibrates its statistic by 4,000 draws of
the null label order, and the gate seeds those draws with its own seed: every gate on a pool of
the same size and member count reads the *same* 4,000 draws. Averaged over seeds a Monte-Carlo
p-value is exact; for one fixed set of draws, ``P(p <= j / 4001)`` under an exact null is the true
null probability of a statistic below the ``j``-th smallest fixed draw, which may be larger than
``j / 4001``. When the member scan reaches the floor (``p = 1 / 4001``, times its three views) in
more clean gates than the floor promises, this is the first suspect.

For a pool (``--pool N --members M``) and each label-blind gap level, this compares the gate's
fixed draws (seed ``--seed``, after the tie-breaking draws ``tail_excess_pvalue`` makes first)
with ``--fresh-draws`` fresh draws of the statistic, and reports ``P(p = 1 / 4001)`` and
``P(p <= 3 / 4001)`` under the exact null, as multiples of their nominal values.

``python benchmarks/bench_tail_floor.py [--pool 4000 --members 2000] [--seed 0]
[--fresh-draws 1000000]``; results in ``benchmarks/results/tail_floor.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record

#: fresh draws per batch (memory: batch x top positions booleans)
BATCH = 200_000


def floor_rates(pool: int, members: int, gap: int, *, seed: int, fresh: int) -> tuple[float, float]:
    """(P(p = 1/(S+1)), P(p <= 3/(S+1))) under the exact null for the gate's fixed draws at
    ``seed``, estimated from ``fresh`` new draws of the statistic."""
    from privacy_gate.estimators.tail_test import (
        TAIL_SIMULATIONS,
        null_tail_statistics,
        seeded_null_statistics,
    )

    fixed = np.sort(seeded_null_statistics(pool, members, gap, seed=seed))
    below_min = below_third = 0
    for b in range(0, fresh, BATCH):
        draws = null_tail_statistics(
            pool,
            members,
            gap,
            rng=np.random.default_rng([seed, 7, b]),
            simulations=min(BATCH, fresh - b),
        )
        # p = (1 + #{fixed <= observed}) / (S + 1): p = 1/(S+1) when the observed statistic is
        # below every fixed draw, p <= 3/(S+1) when at most two fixed draws are at or below it
        below_min += int(np.sum(draws < fixed[0] * (1 - 1e-12)))
        below_third += int(np.sum(draws < fixed[2] * (1 - 1e-12)))
    scale = TAIL_SIMULATIONS + 1
    return below_min / fresh * scale, below_third / fresh * scale / 3


def main() -> None:
    from privacy_gate.estimators.tail_test import TAIL_MIN_TOP, TAIL_SIMULATIONS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", type=int, default=4000)
    ap.add_argument("--members", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-share", type=float, default=0.01)
    ap.add_argument("--fresh-draws", type=int, default=1_000_000)
    ap.add_argument("--out", default="tail_floor")
    args = ap.parse_args()
    if not 0 < args.members < args.pool:
        ap.error("--members must be between 0 and --pool")
    n_top = int(min(max(TAIL_MIN_TOP, np.ceil(args.max_share * args.pool)), args.pool))
    started, rows = time.perf_counter(), []
    for gap in range(1, n_top + 1):
        at_floor, at_three = floor_rates(
            args.pool, args.members, gap, seed=args.seed, fresh=args.fresh_draws
        )
        rows.append({"gap": gap, "floor_x_nominal": at_floor, "three_x_nominal": at_three})
        print(
            f"gap {gap:3d}: P(p = 1/{TAIL_SIMULATIONS + 1}) {at_floor:.2f} x nominal, "
            f"P(p <= 3/{TAIL_SIMULATIONS + 1}) {at_three:.2f} x nominal",
            flush=True,
        )
    worst_floor = max(r["floor_x_nominal"] for r in rows)
    worst_three = max(r["three_x_nominal"] for r in rows)
    print(f"largest over gap levels: floor {worst_floor:.2f} x, p <= 3/S {worst_three:.2f} x")
    record(
        args.out,
        {
            "command": " ".join(sys.argv),
            "settings": vars(args),
            "top_positions": n_top,
            "worst_floor_x_nominal": worst_floor,
            "worst_three_x_nominal": worst_three,
            "seconds": round(time.perf_counter() - started, 1),
            "gaps": rows,
        },
    )


if __name__ == "__main__":
    main()
