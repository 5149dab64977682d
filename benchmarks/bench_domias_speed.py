"""Speed and peak memory of DOMIAS at 20,000 synthetic rows x 20,000 targets: KDE and flow.

Goals: DOMIAS-KDE fit + score < 30 s with peak memory < 4 GB; the flow (fit + score of p_G and
p_R, DomiasAttack(density="flow") with its default settings) < 3 minutes.

Data: the bundled Adult data split 0.40 / 0.25 / 0.35 (train / holdout / reference, seed 0), so
that every set is large enough: synthetic = 20,000 noisy resamples of the train split (the
stand-in generator of bench_attacks.py), reference = the reference split (~17,100 rows),
targets = 10,000 train rows + 10,000 holdout rows. 15 columns, 122 encoded features.

Each measurement runs in a fresh subprocess, so its peak resident memory is its own: the child
reports ``ru_maxrss`` of itself (RUSAGE_SELF) after data preparation and at the end; the parent
cross-checks with ``RUSAGE_CHILDREN`` (the maximum over the children waited for so far).

Run from the repository root:  .venv/bin/python benchmarks/bench_domias_speed.py
Writes benchmarks/results/domias_speed.json.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

N_SYNTHETIC = 20_000
N_TARGETS_PER_CLASS = 10_000
SPLIT = {"train": 0.40, "holdout": 0.25, "reference": 0.35}
MEASUREMENTS = {
    "domias_kde": {"density": "kde"},
    "domias_flow": {"density": "flow"},
}
GOALS_S = {"domias_kde": 30.0, "domias_flow": 180.0}
GOAL_PEAK_MIB = 4096.0


def max_rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: KiB on Linux, bytes on macOS
    return resource.getrusage(who).ru_maxrss * scale / 2**20


def child(name: str) -> None:
    import numpy as np
    import pandas as pd
    from bench_attacks import noisy_resample

    from privacy_gate.attacks import ThreatModel, create_attack
    from privacy_gate.config import SplitConfig, load_release_config
    from privacy_gate.data import conform, read_table, split_by_entity
    from privacy_gate.estimators import roc_metrics

    cfg = load_release_config(ROOT / "examples" / "adult.yaml")
    spec = cfg.dataset.spec
    df = conform(read_table(cfg.dataset.path), spec, source="adult")
    splits = split_by_entity(df, spec, SplitConfig(**SPLIT, seed=0))
    rng = np.random.default_rng(0)
    synthetic = noisy_resample(splits.train, spec, N_SYNTHETIC, rng)
    members = splits.train.sample(N_TARGETS_PER_CLASS, random_state=0)
    non_members = splits.holdout.sample(N_TARGETS_PER_CLASS, random_state=0)
    targets = pd.concat([members, non_members], ignore_index=True)
    labels = np.r_[np.ones(len(members)), np.zeros(len(non_members))]
    threat = ThreatModel(synthetic=synthetic, reference=splits.reference, spec=spec)
    if name == "domias_flow":
        import torch  # noqa: F401  (imported before the clock starts, like the KDE's numpy)
    rss_before = max_rss_mib()

    attack = create_attack("domias", **MEASUREMENTS[name])
    t0 = time.perf_counter()
    attack.fit(threat)
    t1 = time.perf_counter()
    scores = attack.score(targets)
    t2 = time.perf_counter()
    out = {
        "sizes": {
            "synthetic": len(synthetic),
            "reference": len(splits.reference),
            "targets": len(targets),
            "encoded_features": attack.encoder_.n_features_out_,
        },
        "fit_s": round(t1 - t0, 2),
        "score_s": round(t2 - t1, 2),
        "total_s": round(t2 - t0, 2),
        "peak_rss_mib_before_attack": round(rss_before, 1),
        "peak_rss_mib": round(max_rss_mib(), 1),
        "auc_noisy_copies": round(roc_metrics(scores, labels)["auc"], 4),
    }
    if name == "domias_flow":
        for what, est in (("p_G", attack.density_synthetic_), ("p_R", attack.density_reference_)):
            out[what] = {
                "fit_s": round(est.fit_seconds_, 2),
                "epochs": est.n_epochs_,
                "best_epoch": est.best_epoch_,
                "stopped_by": est.stopped_by_,
            }
    else:
        out["bandwidth"] = {
            "p_G": round(attack.density_synthetic_.bandwidth_, 4),
            "p_R": round(attack.density_reference_.bandwidth_, 4),
        }
    out["notes"] = attack.notes_
    print("RESULT " + json.dumps(out), flush=True)


def main() -> None:
    from _common import record

    results = {}
    for name in MEASUREMENTS:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", name],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        wall = time.perf_counter() - t0
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"{name}: the measurement failed (exit {proc.returncode})")
        res = json.loads(lines[-1][len("RESULT ") :])
        res["subprocess_wall_s"] = round(wall, 1)
        res["peak_rss_mib_children_so_far"] = round(max_rss_mib(resource.RUSAGE_CHILDREN), 1)
        res["goal_s"] = GOALS_S[name]
        res["meets_goal"] = res["total_s"] < GOALS_S[name] and res["peak_rss_mib"] < GOAL_PEAK_MIB
        results[name] = res
        print(
            f"{name:12s} fit {res['fit_s']:7.1f} s  score {res['score_s']:6.1f} s  total "
            f"{res['total_s']:7.1f} s "
            f"(goal < {GOALS_S[name]:.0f} s)  peak RSS {res['peak_rss_mib']:7.1f} MiB "
            f"(after data prep {res['peak_rss_mib_before_attack']:.1f})  AUC(noisy copies) "
            f"{res['auc_noisy_copies']:.3f}",
            flush=True,
        )
        for what in ("p_G", "p_R"):
            if what in res:
                print(f"{'':12s} {what}: {res[what]}")
    record(
        "domias_speed", {"goal_peak_mib": GOAL_PEAK_MIB, "split": SPLIT, "measurements": results}
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main()
