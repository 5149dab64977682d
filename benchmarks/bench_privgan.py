"""privGAN vs the plain GAN on a small Adult training set, where a GAN overfits.

Set-up: per seed, Adult rows drawn at random: ``--rows`` training rows (default 1,000), as many
holdout rows (non-member targets), 2,000 reference rows. Each generator is trained on the
training rows with the same budget (``--epochs``) and releases as many rows. The release is
judged with the gate's default attacks (``privacy_gate.evaluate``): strongest-attack AUC, the
MACE advantage bounds of the strongest attack, ``utility.quality`` and the decision. The paper's
white-box attack (the highest discriminator output over the generator/discriminator pairs, an
attacker who holds the discriminators) is reported beside it as AUC on the same targets.

Generators: the plain GAN (privGAN's code with N = 1, lambda = 0) and privGAN at lambda in
{0.1, 1, 10} x N in {2, 4}. Reported as found.
``python benchmarks/bench_privgan.py [--seeds 3] [--rows 1000] [--epochs 400]``.
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

from benchmarks._common import ROOT, record
from privacy_gate import evaluate
from privacy_gate.config import load_spec
from privacy_gate.data import conform, read_table
from privacy_gate.estimators.metrics import roc_metrics
from privacy_gate.generators import create_generator
from privacy_gate.names import STRONGEST

SETTINGS = [("gan", {})] + [
    ("privgan", {"n_generators": n, "privacy_weight": lam})
    for n in (2, 4)
    for lam in (0.1, 1.0, 10.0)
]


def one(
    seed: int, name: str, params: dict, *, rows: int, epochs: int, data: pd.DataFrame, spec
) -> dict:
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(data))
    train, holdout = data.iloc[order[:rows]], data.iloc[order[rows : 2 * rows]]
    reference = data.iloc[order[2 * rows : 2 * rows + 2000]]
    start = time.perf_counter()
    gen = create_generator(name, seed=seed, epochs=epochs, log_every=10**6, **params).fit(
        train, spec, reference=reference
    )
    fit_seconds = time.perf_counter() - start
    synthetic = gen.sample(rows, seed=seed + 1)
    result = evaluate(
        train=train, holdout=holdout, reference=reference, synthetic=synthetic, spec=spec
    )
    m = result.metrics
    strongest = result.strongest.get("auc")
    white = np.concatenate([gen.discriminator_scores(train), gen.discriminator_scores(holdout)])
    labels = np.concatenate([np.ones(len(train)), np.zeros(len(holdout))])
    return {
        "generator": name,
        **params,
        "seed": seed,
        "fit_seconds": round(fit_seconds, 1),
        "decision": result.decision,
        "strongest_attack": strongest,
        "auc": round(m[f"{STRONGEST}.auc"], 4),
        "tpr_at_fpr_0.01": round(m[f"{STRONGEST}.tpr_at_fpr_0.01"], 4),
        "mace_lower": round(m.get(f"{strongest}.mace.advantage_lower", float("nan")), 4),
        "mace_upper": round(m.get(f"{strongest}.mace.advantage_upper", float("nan")), 4),
        "utility_quality": round(m.get("utility.quality", float("nan")), 4),
        "white_box_auc": round(roc_metrics(white, labels)["auc"], 4),
        "privacy_pretrain_accuracy": gen.privacy_pretrain_accuracy_,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=400)
    args = ap.parse_args()
    logging.getLogger("privacy_gate").setLevel(logging.WARNING)
    spec = load_spec(ROOT / "examples" / "adult.yaml")
    data = conform(read_table(ROOT / "data" / "adult" / "adult.csv.gz"), spec, source="adult")
    rows = []
    for name, params in SETTINGS:
        for seed in range(args.seeds):
            r = one(seed, name, params, rows=args.rows, epochs=args.epochs, data=data, spec=spec)
            rows.append(r)
            print(
                f"{name:8s} N={params.get('n_generators', 1)} "
                f"lambda={params.get('privacy_weight', 0):<4} seed {seed}: {r['decision']:7s} "
                f"AUC {r['auc']:.3f} ({r['strongest_attack']}) MACE [{r['mace_lower']:.3f}, "
                f"{r['mace_upper']:.3f}] white-box AUC {r['white_box_auc']:.3f} quality "
                f"{r['utility_quality']:.3f} fit {r['fit_seconds']:.0f} s",
                flush=True,
            )
    table = (
        pd.DataFrame(rows)
        .fillna({"n_generators": 1, "privacy_weight": 0.0})
        .groupby(["generator", "n_generators", "privacy_weight"], sort=False)[
            [
                "auc",
                "tpr_at_fpr_0.01",
                "mace_lower",
                "mace_upper",
                "white_box_auc",
                "utility_quality",
                "fit_seconds",
            ]
        ]
        .agg(["mean", "std"])
        .round(4)
    )
    print(table.to_string())
    summary = [
        {
            "generator": g,
            "n_generators": int(n),
            "privacy_weight": float(lam),
            **{f"{col}_{stat}": float(v) for (col, stat), v in row.items()},
        }
        for (g, n, lam), row in table.iterrows()
    ]
    record("privgan_adult", {"settings": vars(args), "runs": rows, "summary": summary})


if __name__ == "__main__":
    main()
