"""False alarms of the whole gate on independent releases of Adult-like rows, over many seeds.

The scale benchmark (``bench_scale.py``) judges one seed per size; this runs the library gate
(``privacy_gate.evaluate``, default settings) on ``--seeds`` independent releases of one size —
the same data process, each seed a fresh table and release — and records every decision, the
strongest AUC and the smallest Holm-adjusted subgroup rank-test p-value. With no leakage, the
subgroup rule (review when an adjusted p-value is below 0.01) should fire in at most about 1% of
the seeds.

``python benchmarks/bench_scale_nulls.py [--rows 30000] [--seeds 20]``; results in
``benchmarks/results/scale_nulls_<rows>.json``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record
from benchmarks.bench_scale import _data


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=30_000)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=0)
    args = ap.parse_args()

    from privacy_gate import evaluate

    logging.getLogger("privacy_gate").setLevel(logging.ERROR)
    runs = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        spec, _, splits, release = _data(args.rows, seed, "independent", 0.0)
        result = evaluate(**splits, synthetic=release, spec=spec)
        m = result.metrics
        p, group = min((v, k) for k, v in m.items() if k.endswith("membership_test.p_adjusted"))
        runs.append(
            {
                "seed": seed,
                "decision": result.decision,
                "strongest_auc": round(m["strongest.auc"], 4),
                "min_p_adjusted": p,
                "group": group.split("/membership_test")[0],
                "reasons": [c.message for c in result.verdict.reasons][:4],
            }
        )
        print(
            f"seed {seed:>3}: {result.decision:<7} strongest AUC {m['strongest.auc']:.4f}  "
            "smallest adjusted "
            f"subgroup p {p:.3g} ({runs[-1]['group']})",
            flush=True,
        )
    approved = sum(r["decision"] == "APPROVE" for r in runs)
    print(f"{approved} of {len(runs)} independent releases approved")
    record(f"scale_nulls_{args.rows}", {"settings": vars(args), "approved": approved, "runs": runs})


if __name__ == "__main__":
    main()
