"""Fidelity of the DP marginal generators on the bundled Adult data (issue: DP generators).

Average total-variation distance of all 1-way and 2-way marginals between synthetic data (as many
rows as the train split) and the holdout split, for MST, PrivBayes and Private-GSD at epsilon in
{0.1, 1, 10, 1000}, next to SDV GaussianCopula and an independent-marginals baseline (each train
column shuffled independently: perfect 1-way marginals, no dependence), all in one run.

    .venv/bin/python benchmarks/bench_dp_fidelity.py [--epsilons 0.1 1 10 1000] [--repeats 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _common import adult_splits, record

DP_GENERATORS = ("mst", "privbayes", "private_gsd")


def independent_marginals(train: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame(
        {c: train[c].to_numpy()[rng.integers(0, len(train), n)] for c in train.columns}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 10.0, 1000.0])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()

    from privacy_gate.estimators.utility import marginal_quality
    from privacy_gate.generators import create_generator

    spec, splits = adult_splits()
    n = len(splits.train)
    rows = []

    def evaluate(
        name: str, eps: float | None, synth: pd.DataFrame, seconds: float, rep: int
    ) -> None:
        q = marginal_quality(synth, splits.holdout, spec=spec)
        rows.append(
            {
                "generator": name,
                "epsilon": eps,
                "repeat": rep,
                "tvd_1way": q["tvd_1way"],
                "tvd_2way": q["tvd_2way"],
                "seconds": seconds,
            }
        )
        print(
            f"{name:<22}{'-' if eps is None else eps:>8}  tvd1 {q['tvd_1way']:.4f}  tvd2 "
            f"{q['tvd_2way']:.4f}  ({seconds:.1f} s)",
            flush=True,
        )

    for rep in range(args.repeats):
        rng = np.random.default_rng(rep)
        t = time.perf_counter()
        evaluate(
            "independent_marginals",
            None,
            independent_marginals(splits.train, n, rng),
            time.perf_counter() - t,
            rep,
        )
        t = time.perf_counter()
        gc = create_generator("gaussian_copula", seed=rep).fit(splits.train, spec)
        evaluate("gaussian_copula", None, gc.sample(n), time.perf_counter() - t, rep)
        for eps in args.epsilons:
            for name in DP_GENERATORS:
                t = time.perf_counter()
                gen = create_generator(name, epsilon=eps, seed=rep).fit(
                    splits.train, spec, reference=splits.reference
                )
                evaluate(name, eps, gen.sample(n), time.perf_counter() - t, rep)

    df = pd.DataFrame(rows)
    summary = (
        df.groupby(["generator", "epsilon"], dropna=False)[["tvd_1way", "tvd_2way", "seconds"]]
        .mean()
        .reset_index()
    )
    print("\n" + summary.to_string(index=False))
    base2 = summary.loc[summary.generator == "independent_marginals", "tvd_2way"].iloc[0]
    top = summary[
        (summary.epsilon == max(args.epsilons)) & summary.generator.isin(["mst", "privbayes"])
    ]
    beats = {r.generator: bool(r.tvd_2way < base2) for r in top.itertuples()}
    print(
        f"\nat epsilon {max(args.epsilons):g}, 2-way TVD below the independent baseline "
        f"({base2:.4f}): {beats}"
    )
    record(
        "dp_fidelity_adult",
        {
            "benchmark": "1-way/2-way marginal TVD vs holdout, Adult (train split -> synthetic of "
            "train size)",
            "n_train": n,
            "n_holdout": len(splits.holdout),
            "repeats": args.repeats,
            "rows": rows,
            "summary": summary.to_dict(orient="records"),
            "mst_privbayes_beat_independent_2way_at_max_epsilon": beats,
        },
    )


if __name__ == "__main__":
    main()
