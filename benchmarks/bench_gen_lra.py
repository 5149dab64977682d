"""Gen-LRA side by side with DOMIAS on Adult: AUC, TPR at 1% FPR and time, over seeds.

Releases from the calibration benchmark (``benchmarks/calibration_scenarios.py``,
``make_release("adult", cell, seed, n_train)``): ``near-copy-5%`` (5% of an independent release
replaced by near copies of distinct training records: 0.01 training standard deviations of noise on
the numeric columns) and ``null-independent`` (a sample of the population: nothing leaks). Targets:
every training record (members) and every holdout record (non-members); the attacker knows the
release and the reference split. "AUC copied" is the AUC of the copied members alone against the
non-members (the records that actually leaked; ground truth from the scenario).

Attacks, all at their defaults unless labelled: ``gen_lra`` (k = 200, Silverman's bandwidth),
``gen_lra`` with k = 10, ``domias`` (KDE, Scott's bandwidth) and, for context, ``dcr_ratio`` (the
gate's per-record attack). Seconds = fit + score of one attack, one process (the machine may be
shared: the load average is recorded).

``python benchmarks/bench_gen_lra.py [--seeds 10] [--n-train 2000]``; results in
``benchmarks/results/gen_lra_adult.json``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record

CELLS = ("near-copy-5%", "null-independent")
ATTACKS = (
    ("gen_lra", "gen_lra", {}),
    ("gen_lra (k=10)", "gen_lra", {"neighbours": 10}),
    ("domias", "domias", {}),
    ("dcr_ratio", "dcr_ratio", {}),
)


def null_auc_sd(n1: int, n0: int) -> float:
    """Standard deviation of the AUC when members and non-members are exchangeable
    (Mann-Whitney)."""
    return math.sqrt((n1 + n0 + 1) / (12 * n1 * n0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--n-train", type=int, default=2000)
    args = ap.parse_args()

    import numpy as np
    import pandas as pd

    from benchmarks.calibration_scenarios import make_release
    from privacy_gate.attacks import ThreatModel, create_attack
    from privacy_gate.estimators import roc_metrics

    started_all = time.perf_counter()
    runs = []
    for cell in CELLS:
        for seed in range(args.seeds):
            rel = make_release("adult", cell, seed, args.n_train)
            targets = pd.concat([rel.train, rel.holdout], ignore_index=True)
            labels = np.r_[np.ones(len(rel.train), int), np.zeros(len(rel.holdout), int)]
            copied = np.zeros(len(targets), bool)
            if rel.copied is not None:
                copied[rel.copied] = True
            threat = ThreatModel(
                synthetic=rel.synthetic,
                reference=rel.reference,
                spec=rel.spec,
                n_train=len(rel.train),
            )
            for label, name, params in ATTACKS:
                t0 = time.perf_counter()
                scores = create_attack(name, **params).fit(threat).score(targets)
                seconds = time.perf_counter() - t0
                m = roc_metrics(scores, labels)
                row = {
                    "cell": cell,
                    "seed": seed,
                    "attack": label,
                    "auc": m["auc"],
                    "tpr_at_fpr_0.01": m["tpr_at_fpr_0.01"],
                    "advantage": m["advantage"],
                    "seconds": round(seconds, 3),
                    "n_members": m["n_members"],
                    "n_non_members": m["n_non_members"],
                    "n_synthetic": len(rel.synthetic),
                    "n_reference": len(rel.reference),
                }
                if copied.any():
                    keep = copied | (labels == 0)
                    row["auc_copied"] = roc_metrics(scores[keep], labels[keep])["auc"]
                    row["n_copied"] = int(copied.sum())
                runs.append(row)
            print(
                f"  {cell} seed {seed}: "
                + ", ".join(f"{r['attack']} {r['auc']:.3f}" for r in runs[-len(ATTACKS) :]),
                flush=True,
            )

    table = []
    print(
        f"\n{'cell':>17} {'attack':>15} {'AUC mean (sd)':>16} {'AUC copied':>11} {'TPR@1%':>7} "
        f"{'adv.':>6} {'s':>6}"
    )
    for cell in CELLS:
        for label, _, _ in ATTACKS:
            sel = [r for r in runs if r["cell"] == cell and r["attack"] == label]
            auc = np.array([r["auc"] for r in sel])
            row = {
                "cell": cell,
                "attack": label,
                "seeds": len(sel),
                "auc_mean": float(auc.mean()),
                "auc_sd": float(auc.std(ddof=1)) if len(sel) > 1 else None,
                "auc_min": float(auc.min()),
                "auc_max": float(auc.max()),
                "tpr_at_fpr_0.01_mean": float(np.mean([r["tpr_at_fpr_0.01"] for r in sel])),
                "advantage_mean": float(np.mean([r["advantage"] for r in sel])),
                "seconds_mean": float(np.mean([r["seconds"] for r in sel])),
                "auc_copied_mean": (
                    float(np.mean([r["auc_copied"] for r in sel]))
                    if "auc_copied" in sel[0]
                    else None
                ),
                "null_auc_sd": null_auc_sd(sel[0]["n_members"], sel[0]["n_non_members"]),
            }
            table.append(row)
            cop = "-" if row["auc_copied_mean"] is None else f"{row['auc_copied_mean']:.3f}"
            sd = "" if row["auc_sd"] is None else f" ({row['auc_sd']:.3f})"
            print(
                f"{cell:>17} {label:>15} {row['auc_mean']:>9.3f}{sd:>7} {cop:>11} "
                f"{row['tpr_at_fpr_0.01_mean']:>7.3f} {row['advantage_mean']:>6.3f} "
                f"{row['seconds_mean']:>6.2f}"
            )
    total = time.perf_counter() - started_all
    print(f"\ntotal {total:.0f} s; null AUC sd per seed {table[0]['null_auc_sd']:.4f}")
    record(
        "gen_lra_adult",
        {
            "settings": {
                **vars(args),
                "cells": list(CELLS),
                "attacks": [{"label": lab, "name": n, "params": p} for lab, n, p in ATTACKS],
            },
            "load_average": os.getloadavg(),
            "total_seconds": round(total, 1),
            "table": table,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
