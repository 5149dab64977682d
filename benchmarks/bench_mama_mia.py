"""MAMA-MIA vs DOMIAS on MST and PrivBayes synthetic Adult data (Golob et al., experiment A),
plus the speed of the whole attack with a 2-worker process pool vs serial shadow runs.

Set-up per repetition r (different training sample, targets, reference sample and generator
seeds; the same ones for every generator and epsilon within a repetition, as in the paper):

- training set: 1,000 rows drawn from the train split of the bundled Adult data (15 columns);
- targets: 200 members drawn from those 1,000 rows and 200 non-members from the holdout split;
- reference (the attacker's auxiliary data): 5,000 rows drawn from the reference split, so it is
  disjoint from the training set and the targets. The generator is fitted with
  ``reference=`` this sample, as the release flow fits DP generators with the reference split:
  the public discretiser is the same for the real run and the shadow runs;
- synthetic data: 1,000 rows (the paper's synthetic size = training size);
- epsilon in {0.1, 1, 10, 100, 1000}; MST with delta 1e-9, PrivBayes pure DP.

Attacks side by side: MAMA-MIA (shadow variant, 50 shadow runs, tau(epsilon) rule), MAMA-MIA
oracle (the generator's real focal points, weight 1), MAMA-MIA generic (no generator knowledge:
the maximum-MI spanning tree of the reference), DOMIAS with Gaussian KDE. AUC over the 400
targets, mean and std over the repetitions. We also record how well the shadow runs recovered
the real focal points (precision / recall of F* against ``focal_points_``).

Speed: fit + score of MAMA-MIA (50 shadow runs + scoring) on MST, 1,000 training rows, 15
columns, with ``n_jobs=2`` (process pool) and ``n_jobs=1`` (serial), alternating, median of 5
(after one untimed warm-up run).

Run from benchmarks/:  ../.venv/bin/python bench_mama_mia.py [--reps N]   (default 20 repetitions)
Writes benchmarks/results/mama_mia_adult.json.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import adult_splits, record

import privacy_gate.attacks.mama_mia  # noqa: F401  (registers "mama_mia")
from privacy_gate.attacks import OracleKnowledge, ThreatModel, create_attack, fit_attack
from privacy_gate.estimators.metrics import roc_metrics
from privacy_gate.generators import create_generator

N_TRAIN = 1000
N_SYNTHETIC = 1000  # = training size, as in the paper
N_REFERENCE = 5000
N_TARGETS = 200  # per class
EPSILONS = (0.1, 1.0, 10.0, 100.0, 1000.0)
GENERATORS = {"mst": {"delta": 1e-9}, "privbayes": {}}
N_SHADOW = 50
ATTACKS = {
    "mama_mia": dict(name="mama_mia", variant="shadow", n_shadow=N_SHADOW, n_jobs=2),
    "mama_mia_oracle": dict(name="mama_mia", variant="oracle"),
    "mama_mia_generic": dict(name="mama_mia", variant="generic"),
    "domias_kde": dict(name="domias", density="kde"),
}


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the process-pool workers)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def repetition_data(splits, rep: int):
    rng = np.random.default_rng(10_000 + rep)
    train = splits.train.iloc[np.sort(rng.choice(len(splits.train), N_TRAIN, replace=False))]
    members = train.iloc[np.sort(rng.choice(N_TRAIN, N_TARGETS, replace=False))]
    non_members = splits.holdout.iloc[
        np.sort(rng.choice(len(splits.holdout), N_TARGETS, replace=False))
    ]
    reference = splits.reference.iloc[
        np.sort(rng.choice(len(splits.reference), N_REFERENCE, replace=False))
    ]
    targets = pd.concat([members, non_members])
    labels = np.r_[np.ones(N_TARGETS), np.zeros(N_TARGETS)]
    return train, reference, targets, labels


def run_accuracy(spec, splits, reps: int) -> tuple[dict, dict, list]:
    aucs: dict = {g: {str(e): {a: [] for a in ATTACKS} for e in EPSILONS} for g in GENERATORS}
    recovery: dict = {
        g: {str(e): {"kept": [], "precision": [], "recall": [], "shadow_s": []} for e in EPSILONS}
        for g in GENERATORS
    }
    runs = []
    for rep in range(reps):
        t_rep = time.perf_counter()
        train, reference, targets, labels = repetition_data(splits, rep)
        for gi, (gname, extra) in enumerate(GENERATORS.items()):
            for ei, eps in enumerate(EPSILONS):
                gen_seed = 1_000 * rep + 100 * gi + ei
                params = {"epsilon": eps, **extra, "seed": gen_seed}
                gen = create_generator(gname, **params).fit(train, spec, reference=reference)
                synthetic = gen.sample(N_SYNTHETIC)
                threat = ThreatModel(
                    synthetic=synthetic,
                    reference=reference,
                    spec=spec,
                    generator=gname,
                    generator_params=params,
                    n_train=N_TRAIN,
                )
                oracle = OracleKnowledge(tuple(gen.focal_points_))
                row = {"rep": rep, "generator": gname, "epsilon": eps}
                for label, cfg in ATTACKS.items():
                    cfg = dict(cfg)
                    name = cfg.pop("name")
                    if name == "mama_mia" and cfg.get("variant") == "shadow":
                        cfg["seed"] = 7 * rep + ei
                    t0 = time.perf_counter()
                    attack = fit_attack(create_attack(name, **cfg), threat, oracle=oracle)
                    auc = roc_metrics(attack.score(targets), labels)["auc"]
                    row[label] = round(auc, 4)
                    row[f"{label}_s"] = round(time.perf_counter() - t0, 3)
                    aucs[gname][str(eps)][label].append(auc)
                    if label == "mama_mia":
                        kept, real = set(attack.kept_focal_points_), set(gen.focal_points_)
                        rec = recovery[gname][str(eps)]
                        rec["kept"].append(len(kept))
                        rec["precision"].append(len(kept & real) / len(kept))
                        rec["recall"].append(len(kept & real) / len(real))
                        rec["shadow_s"].append(attack.shadow_seconds_)
                runs.append(row)
        print(
            f"repetition {rep + 1}/{reps} done in {time.perf_counter() - t_rep:.1f} s (load "
            f"{load()})",
            flush=True,
        )
    return aucs, recovery, runs


def run_speed(spec, splits, repeats: int = 5) -> dict:
    train, reference, targets, _ = repetition_data(splits, 0)
    params = {"epsilon": 1.0, "delta": 1e-9, "seed": 0}
    gen = create_generator("mst", **params).fit(train, spec, reference=reference)
    threat = ThreatModel(
        synthetic=gen.sample(N_SYNTHETIC),
        reference=reference,
        spec=spec,
        generator="mst",
        generator_params=params,
        n_train=N_TRAIN,
    )
    # warm-up (not timed): the first fit imports every generator module (~1 s, SDV included)
    create_attack("mama_mia", n_shadow=2, n_jobs=2, seed=0).fit(threat).score(targets)
    times: dict[str, list[float]] = {"n_jobs=2": [], "n_jobs=1": []}
    shadow_times: dict[str, list[float]] = {"n_jobs=2": [], "n_jobs=1": []}
    cpu: dict[str, list[float]] = {"n_jobs=2": [], "n_jobs=1": []}
    weights = {}
    for _ in range(repeats):  # alternate, so both see the same (shared) machine load
        for key, n_jobs in (("n_jobs=2", 2), ("n_jobs=1", 1)):
            t0, cpu0 = time.perf_counter(), cpu_seconds()
            attack = create_attack("mama_mia", n_shadow=N_SHADOW, n_jobs=n_jobs, seed=0).fit(threat)
            attack.score(targets)
            times[key].append(time.perf_counter() - t0)
            cpu[key].append(cpu_seconds() - cpu0)
            shadow_times[key].append(attack.shadow_seconds_)
            weights[key] = attack.focal_weights_
    assert weights["n_jobs=2"] == weights["n_jobs=1"], "shadow frequencies depend on the mapper"
    par, ser = float(np.median(times["n_jobs=2"])), float(np.median(times["n_jobs=1"]))
    best_par, best_ser = min(times["n_jobs=2"]), min(times["n_jobs=1"])
    return {
        "setup": f"MST epsilon 1, {N_TRAIN} training rows, {len(spec.attribute_columns)} columns, "
        f"{N_SHADOW} shadow "
        f"runs, reference {N_REFERENCE} rows, {2 * N_TARGETS} targets; fit + score, median of "
        f"{repeats} "
        "alternating runs after one warm-up",
        "seconds_n_jobs_2": round(par, 3),
        "seconds_n_jobs_1": round(ser, 3),
        "speedup": round(ser / par, 2),
        "best_seconds_n_jobs_2": round(best_par, 3),
        "best_seconds_n_jobs_1": round(best_ser, 3),
        "best_speedup": round(best_ser / best_par, 2),
        "all_seconds": {k: [round(t, 3) for t in v] for k, v in times.items()},
        "shadow_seconds": {k: [round(t, 3) for t in v] for k, v in shadow_times.items()},
        # CPU of this process + its (pool) children: equal for both when the pool adds no work, so
        # a wall-time speed-up below 2 only means the second core was busy with other jobs
        "cpu_seconds": {k: [round(t, 3) for t in v] for k, v in cpu.items()},
        "cpus": os.cpu_count(),
        "load_average_after": load(),
    }


def summarise(aucs: dict) -> dict:
    return {
        g: {
            e: {
                a: {
                    "mean": round(float(np.mean(v)), 4),
                    "std": round(float(np.std(v, ddof=1)) if len(v) > 1 else 0.0, 4),
                    "n": len(v),
                }
                for a, v in per_eps.items()
            }
            for e, per_eps in per_gen.items()
        }
        for g, per_gen in aucs.items()
    }


def print_table(summary: dict, recovery: dict) -> None:
    labels = list(ATTACKS)
    print(
        f"\n{'generator':10s} {'epsilon':>8s} "
        + " ".join(f"{a:>17s}" for a in labels)
        + f" {'F* kept':>8s} {'prec':>5s} {'recall':>6s}"
    )
    for g, per_gen in summary.items():
        for e, per_eps in per_gen.items():
            cells = " ".join(
                f"{per_eps[a]['mean']:.3f} ± {per_eps[a]['std']:.3f}".rjust(17) for a in labels
            )
            rec = recovery[g][e]
            print(
                f"{g:10s} {float(e):>8g} {cells} {rec['kept']:>8.1f} {rec['precision']:>5.2f} "
                f"{rec['recall']:>6.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20, help="repetitions per (generator, epsilon)")
    parser.add_argument(
        "--speed-only",
        action="store_true",
        help="re-measure only the speed section and update it in the existing results file",
    )
    args = parser.parse_args()
    t_all = time.perf_counter()
    load_start = load()
    spec, splits = adult_splits(0)
    if args.speed_only:
        import json

        from _common import RESULTS

        previous = json.loads((RESULTS / "mama_mia_adult.json").read_text())
        speed = run_speed(spec, splits)
        speed["load_average_before"] = load_start
        accuracy_when = previous.get("accuracy_when", previous.get("when"))
        speed["note"] = (
            f"re-measured alone with --speed-only; the accuracy runs are from {accuracy_when}, "
            "'in_full_run' is the speed section of that run"
        )
        speed["in_full_run"] = previous["speed"].get("in_full_run", previous["speed"])
        print(
            f"speed: n_jobs=2 {speed['seconds_n_jobs_2']} s, n_jobs=1 {speed['seconds_n_jobs_1']} "
            "s, speed-up "
            f"{speed['speedup']}x (best of 5: {speed['best_seconds_n_jobs_2']} s vs "
            f"{speed['best_seconds_n_jobs_1']}"
            f" s, {speed['best_speedup']}x); load average before {load_start}, after "
            f"{speed['load_average_after']}"
        )
        record(
            "mama_mia_adult",
            {
                **{k: v for k, v in previous.items() if k not in ("when", "machine")},
                "accuracy_when": accuracy_when,
                "speed": speed,
            },
        )
        return
    print(
        f"Adult splits: train {len(splits.train)}, holdout {len(splits.holdout)}, reference "
        f"{len(splits.reference)}; load average {load_start}",
        flush=True,
    )

    t0 = time.perf_counter()
    speed = run_speed(spec, splits)
    print(
        f"speed: n_jobs=2 {speed['seconds_n_jobs_2']} s, n_jobs=1 {speed['seconds_n_jobs_1']} s, "
        f"speed-up {speed['speedup']}x (best of 5: {speed['best_speedup']}x; "
        f"{time.perf_counter() - t0:.1f} s)",
        flush=True,
    )

    aucs, recovery, runs = run_accuracy(spec, splits, args.reps)
    summary = summarise(aucs)
    rec_summary = {
        g: {e: {k: round(float(np.mean(v)), 3) for k, v in r.items()} for e, r in per.items()}
        for g, per in recovery.items()
    }
    print_table(summary, rec_summary)
    print(
        f"\nspeed (fit + score, {N_SHADOW} shadow runs, MST, {N_TRAIN} rows x 15 columns): "
        f"n_jobs=2 {speed['seconds_n_jobs_2']:.2f} s, serial {speed['seconds_n_jobs_1']:.2f} s, "
        f"speed-up {speed['speedup']:.2f}x (medians; best of 5: "
        f"{speed['best_seconds_n_jobs_2']:.2f} s vs "
        f"{speed['best_seconds_n_jobs_1']:.2f} s, {speed['best_speedup']:.2f}x)"
    )
    total = time.perf_counter() - t_all
    load_end = load()
    print(f"total {total:.0f} s; load average at start {load_start}, at end {load_end}")
    record(
        "mama_mia_adult",
        {
            "setup": {
                "data": "bundled Adult (15 columns), split 0.6/0.2/0.2 seed 0",
                "n_train": N_TRAIN,
                "n_synthetic": N_SYNTHETIC,
                "n_reference": N_REFERENCE,
                "targets_per_class": N_TARGETS,
                "epsilons": list(EPSILONS),
                "repetitions": args.reps,
                "n_shadow": N_SHADOW,
                "generators": {g: {"epsilon": "varied", **x} for g, x in GENERATORS.items()},
                "attacks": {k: {p: v for p, v in cfg.items()} for k, cfg in ATTACKS.items()},
                "notes": [
                    "synthetic size = training size (paper); "
                    "reference = 5,000 rows of the reference "
                    "split, also used as the generator's public discretisation reference (as the "
                    "release flow does)",
                    "members: 200 of the 1,000 training rows; non-members: 200 holdout rows",
                    "AUC std is the sample std over repetitions",
                ],
            },
            "auc": summary,
            "focal_point_recovery": rec_summary,
            "speed": speed,
            "runs": runs,
            "total_seconds": round(total, 1),
            "load_average": {"start": load_start, "end": load_end},
        },
    )


if __name__ == "__main__":
    main()
