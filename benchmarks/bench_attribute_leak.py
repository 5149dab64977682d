"""An attribute-only leak, gated with the disclosure test at 500 attempts per side (anonymeter's
default, the old setting) and at as many as the targets allow (``disclosure.n_attempts``, 5,000),
side by side on the same releases.

The release: an independent sample of Adult's population (rows in none of the splits) in which
every row's ``income`` is copied from the training record nearest on the six declared
quasi-identifiers (age, sex, race, education, marital status, native country); ``income`` is
declared secret. Membership attacks see nothing (the rows are not the members'); the inference
evaluator sees training records' incomes reproduced more often than control records'. 12,000
training rows, 6,000 holdout, 6,000 reference; seeds 0..9 by default.

    python benchmarks/bench_attribute_leak.py --seeds 0 1 2 3 4 5 6 7 8 9

Records ``benchmarks/results/attribute_leak.json``: per seed and setting the decision, the
inference figures and the gate time; the share not approved per setting with its Wilson interval.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from benchmarks._common import ROOT, record
from benchmarks.bench_calibration import wilson

QI = ["age", "sex", "race", "education", "marital_status", "native_country"]


def release(seed: int, n_train: int = 12_000):
    from sklearn.neighbors import NearestNeighbors

    from privacy_gate.config import load_spec
    from privacy_gate.spec import DatasetSpec

    base = load_spec(ROOT / "examples" / "adult.yaml")
    spec = DatasetSpec.model_validate(
        base.model_dump() | {"quasi_identifiers": QI, "sensitive": ["income"]}
    )
    adult = pd.read_csv(ROOT / "data" / "adult" / "adult.csv.gz")[spec.column_names]
    adult = adult.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    h = n_train // 2
    train, holdout = adult[:n_train], adult[n_train : n_train + h]
    reference, population = adult[n_train + h : n_train + 2 * h], adult[n_train + 2 * h :]
    synthetic = population.iloc[:n_train].copy().reset_index(drop=True)
    columns = pd.get_dummies(adult[QI[1:]].astype(str)).columns

    def encode(d: pd.DataFrame) -> np.ndarray:  # one-hot categories, age in units of 5 years
        return np.c_[
            pd.get_dummies(d[QI[1:]].astype(str))
            .reindex(columns=columns, fill_value=0)
            .to_numpy(float),
            d["age"].to_numpy(float) / 5.0,
        ]

    nearest = (
        NearestNeighbors(n_neighbors=1)
        .fit(encode(train))
        .kneighbors(encode(synthetic), return_distance=False)
    )
    synthetic["income"] = train["income"].to_numpy()[nearest[:, 0]]
    return dict(train=train, holdout=holdout, reference=reference, synthetic=synthetic), spec


def main(argv: list[str] | None = None) -> None:
    import privacy_gate
    from privacy_gate.config import DisclosureConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    ap.add_argument("--attempts", type=int, nargs="+", default=[500, 5000])
    args = ap.parse_args(argv)
    rows = []
    for seed in args.seeds:
        parts, spec = release(seed)
        for attempts in args.attempts:
            started = time.perf_counter()
            r = privacy_gate.evaluate(
                **parts, spec=spec, disclosure=DisclosureConfig(n_attempts=attempts)
            )
            row = {
                "seed": seed,
                "attempts": attempts,
                "decision": r.decision,
                "seconds": round(time.perf_counter() - started, 2),
                **{
                    k.removeprefix("inference.income."): r.metrics[k]
                    for k in r.metrics
                    if k.startswith("inference.income.")
                },
            }
            rows.append(row)
            print(
                f"seed {seed} attempts {attempts:>5}: {r.decision:<7} train "
                f"{row['train_rate']:.3f} control "
                f"{row['control_rate']:.3f} risk lower {row['risk_lower']:.3f}  ({row['seconds']} "
                "s)",
                flush=True,
            )
    summary = {}
    for attempts in args.attempts:
        mine = [r for r in rows if r["attempts"] == attempts]
        held = sum(r["decision"] != "APPROVE" for r in mine)
        lo, hi = wilson(held, len(mine))
        summary[str(attempts)] = {
            "not_approved": held,
            "gates": len(mine),
            "wilson95": [lo, hi],
            "median_seconds": float(np.median([r["seconds"] for r in mine])),
        }
        print(
            f"{attempts:>5} attempts per side: {held}/{len(mine)} not approved [{lo:.2f}, {hi:.2f}]"
        )
    record(
        "attribute_leak",
        {
            "benchmark": __doc__.splitlines()[0],
            "seeds": args.seeds,
            "summary": summary,
            "rows": rows,
        },
    )


if __name__ == "__main__":
    main()
