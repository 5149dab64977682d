"""The fast paths of the large attacks against their exact float64 computation, side by side in
one run: the faiss-indexed nearest-record search (``dcr``, ``dcr_ratio``, exposure scans) and the
float32 KDE (``domias``), both switched on by size in the gate.

1. Speed: ``--targets`` Adult-like target rows against ``--rows`` candidate rows (Adult resampled
   with 5% jitter on the numerics, ``benchmarks/bench_scale.py``; encoded as the attacks encode),
   the plain BLAS search vs the index (same distances?), the float64 vs the float32 KDE (largest
   and median difference of the log densities, Spearman correlation of the two rankings).
2. Agreement on Adult: the per-sample benchmark's scenarios (``tests/exposure_scenarios.py``:
   8,000 training rows, 4,000 + 4,000 targets, an 8,000-row release with a ``share`` of noisy
   copies of training rows) over ``--seeds`` seeds; ``domias``, ``dcr`` and ``dcr_ratio`` scored
   with the fast paths forced on and forced off: AUC, TPR at 1% FPR and MACE bounds, and whether
   the AUC difference is within the exact AUC's standard error.

``python benchmarks/bench_nn_index.py [--rows 200000] [--targets 16000] [--seeds 3]``; results in
``benchmarks/results/nn_index.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record
from benchmarks.bench_kde_subsample import attack_inputs, auc_se


def speed(rows: int, n_targets: int) -> dict:
    import numpy as np
    from scipy.stats import spearmanr

    import privacy_gate.attacks.distance as distance
    from benchmarks.bench_scale import adult_like
    from privacy_gate.attacks.base import DEFAULT_CHUNK_BYTES
    from privacy_gate.attacks.density import GaussianKDE
    from privacy_gate.data.encoding import MixedEncoder

    spec, table = adult_like(rows + n_targets, 0)
    enc = MixedEncoder(spec=spec).fit(table.iloc[:20_000])
    X = np.ascontiguousarray(enc.transform(table), dtype=np.float64)
    T, C = X[:n_targets].copy(), X[n_targets:]
    T[: n_targets // 20] = C[: n_targets // 20]  # 5% verbatim copies: the index must still say 0
    out = {"targets": n_targets, "candidates": rows, "dims": X.shape[1]}
    started = time.perf_counter()
    d0, _ = distance._nearest_blas(T, C, chunk_bytes=DEFAULT_CHUNK_BYTES)
    out["nearest_plain_s"] = round(time.perf_counter() - started, 2)
    redo = []
    started = time.perf_counter()
    from privacy_gate.attacks.nn_index import indexed_nearest

    d1, _ = indexed_nearest(
        T,
        C,
        chunk_bytes=DEFAULT_CHUNK_BYTES,
        exact_search=lambda t, c: (
            redo.append(len(t)) or distance._nearest_blas(t, c, chunk_bytes=DEFAULT_CHUNK_BYTES)
        ),
    )
    out["nearest_index_s"] = round(time.perf_counter() - started, 2)
    out["nearest_speedup"] = round(out["nearest_plain_s"] / out["nearest_index_s"], 2)
    out["nearest_max_abs_diff"] = float(np.abs(d1 - d0).max())
    out["nearest_exact_fallback_targets"] = int(sum(redo))
    kde = GaussianKDE(precision="float64").fit(C, n_effective_dims=enc.n_effective_dims_)
    started = time.perf_counter()
    a = kde.score_samples(T)
    out["kde_float64_s"] = round(time.perf_counter() - started, 2)
    kde.precision = "float32"
    started = time.perf_counter()
    b = kde.score_samples(T)
    out["kde_float32_s"] = round(time.perf_counter() - started, 2)
    out["kde_speedup"] = round(out["kde_float64_s"] / out["kde_float32_s"], 2)
    out["kde_max_abs_diff"] = float(np.abs(a - b).max())
    out["kde_median_abs_diff"] = float(np.median(np.abs(a - b)))
    out["kde_spearman"] = float(spearmanr(a, b).statistic)
    return out


def agreement(seeds: int, shares: list[float]) -> tuple[list[dict], list[dict]]:
    import numpy as np
    import pandas as pd

    import privacy_gate.attacks.density as density
    import privacy_gate.attacks.distance as distance
    from privacy_gate.attacks import create_attack
    from privacy_gate.config import load_spec
    from privacy_gate.estimators.mace.advantage import estimate_advantage
    from privacy_gate.estimators.metrics import roc_metrics
    from tests.exposure_scenarios import SPEC, make_scenario

    spec = load_spec(SPEC)
    adult = pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "adult" / "adult.csv.gz")
    saved = distance.INDEX_PAIRS, density.FLOAT32_ROWS, distance.SHARE_PAIRS
    distance.SHARE_PAIRS = 10**15  # each computation its own: nothing shared between the two modes
    rows = []
    try:
        for share in shares:
            for seed in range(seeds):
                sc = make_scenario(seed, share=share, adult=adult)
                targets, labels, threat = attack_inputs(sc, spec)
                n1 = int(labels.sum())
                for mode, threshold in (("exact", 10**15), ("fast", 1)):
                    distance.INDEX_PAIRS = density.FLOAT32_ROWS = threshold
                    for name in ("domias", "dcr", "dcr_ratio"):
                        started = time.perf_counter()
                        scores = create_attack(name).fit(threat).score(targets)
                        seconds = time.perf_counter() - started
                        m = roc_metrics(scores, labels)
                        est = estimate_advantage(scores, labels, n_permutations=0)
                        rows.append(
                            {
                                "share": share,
                                "seed": seed,
                                "mode": mode,
                                "attack": name,
                                "auc": float(m["auc"]),
                                "tpr_at_fpr_0.01": float(m["tpr_at_fpr_0.01"]),
                                "mace_lower": float(est.lower),
                                "mace_upper": float(est.upper),
                                "auc_se": auc_se(float(m["auc"]), n1, n1),
                                "seconds": round(seconds, 2),
                            }
                        )
    finally:
        distance.INDEX_PAIRS, density.FLOAT32_ROWS, distance.SHARE_PAIRS = saved
    table = []
    for share in shares:
        for name in ("domias", "dcr", "dcr_ratio"):
            ex = {
                r["seed"]: r
                for r in rows
                if (r["share"], r["attack"], r["mode"]) == (share, name, "exact")
            }
            fa = {
                r["seed"]: r
                for r in rows
                if (r["share"], r["attack"], r["mode"]) == (share, name, "fast")
            }
            diffs = {
                k: [fa[s][k] - ex[s][k] for s in ex]
                for k in ("auc", "tpr_at_fpr_0.01", "mace_lower", "mace_upper")
            }
            within = sum(abs(fa[s]["auc"] - ex[s]["auc"]) <= ex[s]["auc_se"] for s in ex)
            table.append(
                {
                    "share": share,
                    "attack": name,
                    "auc_exact": float(np.mean([r["auc"] for r in ex.values()])),
                    "auc_fast": float(np.mean([r["auc"] for r in fa.values()])),
                    **{f"max_abs_diff_{k}": float(np.max(np.abs(v))) for k, v in diffs.items()},
                    "mace_exact": [
                        float(np.mean([r["mace_lower"] for r in ex.values()])),
                        float(np.mean([r["mace_upper"] for r in ex.values()])),
                    ],
                    "mace_fast": [
                        float(np.mean([r["mace_lower"] for r in fa.values()])),
                        float(np.mean([r["mace_upper"] for r in fa.values()])),
                    ],
                    "auc_within_se": f"{within}/{len(ex)}",
                }
            )
    return table, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--targets", type=int, default=16_000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--shares", type=float, nargs="+", default=[0.0, 0.05, 0.5])
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    result: dict = {"settings": vars(args)}
    if not args.skip_speed:
        s = speed(args.rows, args.targets)
        result["speed"] = s
        print(
            f"nearest record, {s['targets']:,} targets x {s['candidates']:,} rows x {s['dims']} "
            "dims: plain "
            f"{s['nearest_plain_s']} s, index {s['nearest_index_s']} s ({s['nearest_speedup']}x); "
            "max |diff| "
            f"{s['nearest_max_abs_diff']:.1e}; exact fallback for "
            f"{s['nearest_exact_fallback_targets']} targets"
        )
        print(
            f"KDE: float64 {s['kde_float64_s']} s, float32 {s['kde_float32_s']} s "
            f"({s['kde_speedup']}x); log-density |diff| max {s['kde_max_abs_diff']:.1e}, median "
            f"{s['kde_median_abs_diff']:.1e}; Spearman {s['kde_spearman']:.10f}"
        )
    table, rows = agreement(args.seeds, args.shares)
    result["agreement"], result["runs"] = table, rows
    print(
        f"{'share':>6} {'attack':>10} {'AUC exact':>10} {'AUC fast':>10} {'max|dAUC|':>10} "
        f"{'max|dTPR1%|':>12} {'MACE exact':>16} {'MACE fast':>16} {'within SE':>9}"
    )
    for r in table:
        print(
            f"{r['share']:>6} {r['attack']:>10} {r['auc_exact']:>10.4f} {r['auc_fast']:>10.4f} "
            f"{r['max_abs_diff_auc']:>10.1e} {r['max_abs_diff_tpr_at_fpr_0.01']:>12.1e} "
            f"[{r['mace_exact'][0]:.3f}, {r['mace_exact'][1]:.3f}] [{r['mace_fast'][0]:.3f}, "
            f"{r['mace_fast'][1]:.3f}] {r['auc_within_se']:>9}"
        )
    record("nn_index", result)


if __name__ == "__main__":
    main()
