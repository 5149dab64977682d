"""Speed of the DP marginal generators on 2 cores (issue: DP generators). Prints each figure.

- MST select_focal_points on 1,000 rows x 15 columns (goal: well under 1 s)
- full fit + sample of MST and PrivBayes on the Adult train split (goal: under 60 s each)
- Private-GSD fit + sample on 1,000 rows at default settings (goal: under 5 minutes)

    .venv/bin/python benchmarks/bench_dp_speed.py
"""

from __future__ import annotations

import time

import numpy as np
from _common import adult_splits, record


def main() -> None:
    from privacy_gate.generators import create_generator

    spec, splits = adult_splits()
    small = splits.train.sample(1000, random_state=0)
    figures = {}

    mst = create_generator("mst", epsilon=1.0).configure(spec, reference=splits.reference)
    rng = np.random.default_rng(0)
    mst.select_focal_points(small, rng)  # warm-up (imports, caches)
    reps = 20
    t = time.perf_counter()
    for _ in range(reps):
        mst.select_focal_points(small, rng)
    figures["mst_select_focal_points_1000x15_s"] = (time.perf_counter() - t) / reps
    print(
        "MST select_focal_points, 1,000 x 15:       "
        f"{figures['mst_select_focal_points_1000x15_s']:.3f} s"
        " (goal < 1 s)",
        flush=True,
    )

    for name in ("mst", "privbayes"):
        t = time.perf_counter()
        gen = create_generator(name, epsilon=1.0, seed=0).fit(
            splits.train, spec, reference=splits.reference
        )
        gen.sample(len(splits.train))
        figures[f"{name}_fit_sample_adult_train_s"] = time.perf_counter() - t
        print(
            f"{name} fit+sample on {len(splits.train)} rows:   "
            f"{figures[f'{name}_fit_sample_adult_train_s']:.1f} s"
            " (goal < 60 s)",
            flush=True,
        )

    t = time.perf_counter()
    gen = create_generator("private_gsd", epsilon=1.0, seed=0).fit(
        small, spec, reference=splits.reference
    )
    gen.sample(1000)
    figures["private_gsd_fit_sample_1000_s"] = time.perf_counter() - t
    print(
        f"Private-GSD fit+sample on 1,000 rows:     {figures['private_gsd_fit_sample_1000_s']:.1f} "
        "s"
        " (goal < 300 s)",
        flush=True,
    )
    record(
        "dp_speed",
        {
            "benchmark": "DP generator speed, Adult, 2 cores",
            "n_train": len(splits.train),
            "figures_seconds": figures,
            "goals_seconds": {
                "mst_select_focal_points_1000x15_s": 1.0,
                "mst_fit_sample_adult_train_s": 60,
                "privbayes_fit_sample_adult_train_s": 60,
                "private_gsd_fit_sample_1000_s": 300,
            },
        },
    )


if __name__ == "__main__":
    main()
