"""Speed and memory of the DOMIAS and DCR attacks (and marginal utility) at Adult scale.

Sizes follow the default 0.6 / 0.2 / 0.2 split of the bundled Adult data (48,842 rows):
synthetic 29,000 rows, reference ~9,770, targets 19,500 (half members, half holdout). The
"synthetic" data is a resample of the train split with small noise — a stand-in for a generator
that leaks (noisy copies), good for timing and a rough sanity figure for AUC, nothing more.

Run from the repository root:  .venv/bin/python benchmarks/bench_attacks.py
Writes benchmarks/results/attacks_adult.json.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from privacy_gate.attacks import ThreatModel, create_attack  # noqa: E402
from privacy_gate.config import SplitConfig, load_release_config  # noqa: E402
from privacy_gate.data import conform, read_table, split_by_entity  # noqa: E402
from privacy_gate.estimators import marginal_quality, roc_metrics  # noqa: E402

N_SYNTHETIC = 29_000
N_TARGETS_PER_CLASS = 9_750
NOISE = 0.05  # numeric noise in standard deviations; categories flipped with this probability
SEED = 0


def peak_rss_mib() -> float:
    # ru_maxrss is in KiB on Linux (bytes on macOS)
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def noisy_resample(train: pd.DataFrame, spec, n: int, rng: np.random.Generator) -> pd.DataFrame:
    out = train.iloc[rng.integers(0, len(train), n)].reset_index(drop=True).copy()
    for name, col in spec.columns.items():
        if col.is_numeric:
            std = float(out[name].std())
            out[name] = out[name] + rng.normal(0.0, NOISE * std, n)
        else:
            flip = rng.random(n) < NOISE
            values = train[name].dropna().to_numpy()
            out.loc[flip, name] = values[rng.integers(0, len(values), int(flip.sum()))]
    return out


def run_attack(name: str, threat: ThreatModel, targets: pd.DataFrame, labels: np.ndarray) -> dict:
    attack = create_attack(name)
    tracemalloc.start()
    t0 = time.perf_counter()
    attack.fit(threat)
    t1 = time.perf_counter()
    scores = attack.score(targets)
    t2 = time.perf_counter()
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    metrics = roc_metrics(scores, labels)
    return {
        "fit_s": round(t1 - t0, 3),
        "score_s": round(t2 - t1, 3),
        "total_s": round(t2 - t0, 3),
        "traced_peak_mib": round(traced_peak / 2**20, 1),
        "peak_rss_mib_after": round(peak_rss_mib(), 1),
        "auc_noisy_copies": round(metrics["auc"], 4),
        "tpr_at_fpr_0.01_noisy_copies": round(metrics["tpr_at_fpr_0.01"], 4),
    }


def main() -> None:
    rng = np.random.default_rng(SEED)
    spec = load_release_config(ROOT / "examples/adult.yaml").dataset.spec
    df = conform(read_table(ROOT / "data/adult/adult.csv.gz"), spec, source="adult")
    splits = split_by_entity(df, spec, SplitConfig(seed=SEED))
    synthetic = noisy_resample(splits.train, spec, N_SYNTHETIC, rng)
    members = splits.train.sample(N_TARGETS_PER_CLASS, random_state=SEED)
    non_members = splits.holdout.sample(N_TARGETS_PER_CLASS, random_state=SEED)
    targets = pd.concat([members, non_members])
    labels = np.r_[np.ones(len(members)), np.zeros(len(non_members))]
    threat = ThreatModel(
        synthetic=synthetic, reference=splits.reference, spec=spec, n_train=len(splits.train)
    )
    results = {
        "sizes": {
            "synthetic": len(synthetic),
            "reference": len(splits.reference),
            "targets": len(targets),
            "columns": len(spec.columns),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
        },
        "peak_rss_mib_before_attacks": round(peak_rss_mib(), 1),
        "attacks": {},
    }
    t_all = time.perf_counter()
    for name in ("domias", "dcr"):
        results["attacks"][name] = run_attack(name, threat, targets, labels)
        print(f"{name:7s} {results['attacks'][name]}", flush=True)
    results["attacks_total_s"] = round(time.perf_counter() - t_all, 3)

    t0 = time.perf_counter()
    utility = marginal_quality(synthetic, splits.holdout, spec=spec)
    results["utility"] = {
        "seconds": round(time.perf_counter() - t0, 3),
        "quality": round(utility["quality"], 4),
        "n_pairs": utility["n_pairs"],
    }
    results["peak_rss_mib"] = round(peak_rss_mib(), 1)

    print(
        f"attacks total {results['attacks_total_s']} s; utility {results['utility']}; peak RSS "
        f"{results['peak_rss_mib']} MiB"
    )
    out = ROOT / "benchmarks/results/attacks_adult.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
