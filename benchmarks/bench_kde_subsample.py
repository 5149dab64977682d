"""DOMIAS with a subsampled KDE (``max_fit_rows``) against the exact KDE on Adult: agreement of
AUC, TPR at 1% FPR and MACE bounds, side by side in one run, with the time of each.

Data: the per-sample benchmark's Adult scenarios (``tests/exposure_scenarios.py``: 8,000 training
rows, 4,000 + 4,000 targets, 4,000 reference, an 8,000-row release of independent rows with a
``share`` of them replaced by noisy copies of training rows). DOMIAS runs exact and with its two
densities capped at ``--caps`` rows (a quarter and a half of the release by default, so the
subsample is active), over ``--seeds`` seeds (release and subsample). "Agrees" = the difference in
AUC is within the exact AUC's standard error (Hanley & McNeil).

``python benchmarks/bench_kde_subsample.py [--seeds 3] [--caps 2000 4000]``; results in
``benchmarks/results/kde_subsample.json``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record


def auc_se(auc: float, n1: int, n0: int) -> float:
    """Hanley & McNeil (1982) standard error of an AUC."""
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    return math.sqrt(
        (auc * (1 - auc) + (n1 - 1) * (q1 - auc**2) + (n0 - 1) * (q2 - auc**2)) / (n1 * n0)
    )


def attack_inputs(sc, spec):
    """(targets, labels, threat model) of an exposure scenario: as many members as non-members,
    members first; the attacker knows the synthetic and reference data."""
    import numpy as np
    import pandas as pd

    from privacy_gate.attacks.base import ThreatModel

    n1 = min(len(sc.train), len(sc.holdout))
    targets = pd.concat([sc.train.iloc[:n1], sc.holdout.iloc[:n1]])
    labels = np.r_[np.ones(n1, int), np.zeros(n1, int)]
    threat = ThreatModel(
        synthetic=sc.synthetic,
        reference=sc.reference,
        spec=spec,
        generator=None,
        generator_params={},
        n_train=len(sc.train),
    )
    return targets, labels, threat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--caps", type=int, nargs="+", default=[2000, 4000])
    ap.add_argument("--shares", type=float, nargs="+", default=[0.0, 0.05, 0.5])
    args = ap.parse_args()

    import numpy as np
    import pandas as pd

    from privacy_gate.attacks import create_attack
    from privacy_gate.config import load_spec
    from privacy_gate.estimators.mace.advantage import estimate_advantage
    from privacy_gate.estimators.metrics import roc_metrics
    from tests.exposure_scenarios import SPEC, make_scenario

    spec = load_spec(SPEC)
    adult = pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "adult" / "adult.csv.gz")
    rows = []
    for share in args.shares:
        for seed in range(args.seeds):
            sc = make_scenario(seed, share=share, adult=adult)
            targets, labels, threat = attack_inputs(sc, spec)
            n1 = int(labels.sum())
            for cap in [None, *args.caps]:
                started = time.perf_counter()
                attack = create_attack("domias", max_fit_rows=cap, seed=seed).fit(threat)
                scores = attack.score(targets)
                seconds = time.perf_counter() - started
                m = roc_metrics(scores, labels)
                est = estimate_advantage(scores, labels, n_permutations=0)
                rel = getattr(attack.density_synthetic_, "rel_se_", None)
                rows.append(
                    {
                        "share": share,
                        "seed": seed,
                        "cap": cap,
                        "auc": float(m["auc"]),
                        "tpr_at_fpr_0.01": float(m["tpr_at_fpr_0.01"]),
                        "mace_lower": float(est.lower),
                        "mace_upper": float(est.upper),
                        "seconds": round(seconds, 2),
                        "auc_se": auc_se(float(m["auc"]), n1, n1),
                        "median_rel_se_p_syn": None if rel is None else float(np.median(rel)),
                    }
                )
    table = []
    print(
        f"{'share':>6} {'cap':>6} {'AUC':>14} {'diff vs exact':>14} {'within SE':>10} "
        f"{'TPR@1%':>8} {'MACE [lo, up]':>16} {'rel SE':>7} {'s':>5}"
    )
    for share in args.shares:
        exact = {r["seed"]: r for r in rows if r["share"] == share and r["cap"] is None}
        for cap in [None, *args.caps]:
            sel = [r for r in rows if r["share"] == share and r["cap"] == cap]
            diffs = [r["auc"] - exact[r["seed"]]["auc"] for r in sel]
            within = sum(abs(d) <= exact[r["seed"]]["auc_se"] for d, r in zip(diffs, sel))
            row = {
                "share": share,
                "cap": cap,
                "auc": float(np.mean([r["auc"] for r in sel])),
                "auc_diff_mean": float(np.mean(diffs)),
                "auc_diff_max_abs": float(np.max(np.abs(diffs))),
                "within_se": f"{within}/{len(sel)}",
                "tpr_at_fpr_0.01": float(np.mean([r["tpr_at_fpr_0.01"] for r in sel])),
                "mace_lower": float(np.mean([r["mace_lower"] for r in sel])),
                "mace_upper": float(np.mean([r["mace_upper"] for r in sel])),
                "median_rel_se_p_syn": (
                    None
                    if sel[0]["median_rel_se_p_syn"] is None
                    else float(np.mean([r["median_rel_se_p_syn"] for r in sel]))
                ),
                "seconds": float(np.mean([r["seconds"] for r in sel])),
            }
            table.append(row)
            rel = "-" if row["median_rel_se_p_syn"] is None else f"{row['median_rel_se_p_syn']:.1%}"
            print(
                f"{share:>6} {str(cap or 'exact'):>6} {row['auc']:>14.4f} "
                f"{row['auc_diff_mean']:>+14.4f} {row['within_se']:>10} "
                f"{row['tpr_at_fpr_0.01']:>8.4f} [{row['mace_lower']:.3f}, "
                f"{row['mace_upper']:.3f}] {rel:>7} {row['seconds']:>5.1f}"
            )
    record("kde_subsample", {"settings": vars(args), "table": table, "runs": rows})


if __name__ == "__main__":
    main()
