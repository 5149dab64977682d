"""Target-level naming: equal shares of the FDR level per attack (BH at q/k, the union) against
shares read off the pooled scores (``estimators/exposure.py: naming_weights``), side by side on
the same gates — and what bounds naming at all: the non-member targets that sit among a copied
block (natural twins the release happens to hold).

Each release comes from ``benchmarks/calibration_scenarios.py`` and is judged once by
``privacy_gate.evaluate`` with its defaults; the attack scores, labels and row ids are kept, and
both namings are computed from them (naming is post-processing of the scores, so the comparison
is exact: same scores, same p-values, only the weights differ). Per gate: copied member targets,
named / true / false-discovery proportion (FDP) under each scheme, each attack's weight, and the
*twin floor*: how many non-member targets score at or above the median copied member target in
the attack given the largest weight (a copy is named only where copies outnumber those about
20 : 1 at the top).

    python benchmarks/bench_naming.py --cells verbatim-1% rare-values --seeds 0 1 2 3 4 5 6 7 8 9 \\
        --n-train 12000 [--cache DIR]

``--cache DIR`` keeps each gate's scores as ``DIR/<cell>-<seed>-<n_train>.pkl`` and reuses them
(a rerun with other naming code costs seconds). Results:
``benchmarks/results/naming_<n_train>.json``.
"""

from __future__ import annotations

import argparse
import logging
import math
import pickle
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record
from benchmarks.bench_calibration import git_head

Q = 0.05


def gate_scores(cell: str, seed: int, n_train: int, cache: Path | None) -> dict:
    """{scores, labels, row_ids, copied} of one gate (from the cache when it is there)."""
    path = cache / f"{cell}-{seed}-{n_train}.pkl" if cache else None
    if path is not None and path.exists():
        kept = pickle.loads(path.read_bytes())
        if "scores" in kept:
            return kept
    from benchmarks.calibration_scenarios import make_release
    from privacy_gate import evaluate

    rel = make_release("adult", cell, seed, n_train)
    res = evaluate(
        train=rel.train,
        holdout=rel.holdout,
        reference=rel.reference,
        synthetic=rel.synthetic,
        spec=rel.spec,
    )
    kept = {
        "scores": {o.name: o.scores for o in res.outcomes},
        "labels": res.targets.labels,
        "row_ids": res.targets.row_ids,
        "copied": rel.copied,
    }
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(kept))
    return kept


def naming_row(kept: dict) -> dict:
    from privacy_gate.estimators import exposure as ex

    labels = np.asarray(kept["labels"]).astype(bool)
    row_ids = np.asarray(kept["row_ids"])
    copied = set() if kept["copied"] is None else {int(c) for c in kept["copied"]}
    is_copy = np.array([int(r) in copied for r in row_ids])
    res = ex.discover_exposed(kept["scores"], labels, row_ids, q=Q, level=0.01, delta=0.05)
    per_attack = {a: res.records[f"p_{a}"].to_numpy() for a in kept["scores"]}
    equal, _ = ex._name_per_attack(per_attack, q=Q, method="bh")

    def judged(mask: np.ndarray) -> dict:
        named = row_ids[labels][mask]
        true = int(sum(int(r) in copied for r in named))
        return {
            "named": int(named.size),
            "true": true,
            "fdp": (named.size - true) / named.size if named.size else 0.0,
        }

    favourite = res.favourite
    s = np.asarray(kept["scores"][favourite], dtype=float)
    median_copy = float(np.median(s[is_copy & labels])) if (is_copy & labels).any() else math.inf
    return {
        "copied_tested": int((is_copy & labels).sum()),
        "weighted": judged(res.records["exposed"].to_numpy()),
        "equal": judged(equal),
        "weights": {a: round(w, 4) for a, w in res.weights.items()},
        "favourite": favourite,
        "twins_at_copy_median": int(np.sum(s[~labels] >= median_copy)),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", nargs="+", default=["verbatim-1%", "rare-values"])
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    ap.add_argument("--n-train", type=int, default=12000)
    ap.add_argument("--cache", type=Path, default=None)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    logging.getLogger("privacy_gate").setLevel(logging.ERROR)
    rows = []
    for cell in args.cells:
        for seed in args.seeds:
            t0 = time.perf_counter()
            row = {
                "cell": cell,
                "seed": seed,
                **naming_row(gate_scores(cell, seed, args.n_train, args.cache)),
            }
            rows.append(row)
            w, e = row["weighted"], row["equal"]
            print(
                f"{cell:>14} seed {seed}: {row['copied_tested']:4d} copied targets | weighted "
                f"named {w['named']:4d} "
                f"(FDP {w['fdp']:.3f}) | equal named {e['named']:4d} (FDP {e['fdp']:.3f}) | "
                "favourite "
                f"{row['favourite']} {row['weights'][row['favourite']]:.2f}, twins at the copies' "
                "median "
                f"{row['twins_at_copy_median']} | {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    summary = {}
    for cell in args.cells:
        mine = [r for r in rows if r["cell"] == cell]
        summary[cell] = {
            k: {
                "named_any": sum(r[k]["named"] > 0 for r in mine),
                "gates": len(mine),
                "named_mean": float(np.mean([r[k]["named"] for r in mine])),
                "fdp_max": float(max(r[k]["fdp"] for r in mine)),
                "fdp_mean": float(np.mean([r[k]["fdp"] for r in mine])),
            }
            for k in ("weighted", "equal")
        }
        print(cell, summary[cell])
    record(
        f"naming_{args.n_train}",
        {
            "git": git_head(),
            "command": " ".join(sys.argv),
            "q": Q,
            "summary": summary,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
