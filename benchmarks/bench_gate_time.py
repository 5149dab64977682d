"""Whole-gate wall time on full Adult: the new defaults (five attacks incl. ``copy_count``, the
member scan, the tail-excess tests, the rare-values family, group blame) against settings that
reproduce the gate before the sparse-exposure work (the four attacks of the time, no scan, no
rare values, the rules of the time), side by side in one run, alternating, ``--repeats`` each.

The release: a GaussianCopula fitted once on the training split (the demo's generator), sampled
to the training-set size. ``python benchmarks/bench_gate_time.py [--repeats 3]``; results in
``benchmarks/results/gate_time_adult.json``.

``--mode disclosure``: today's default gate without the disclosure stage (``disclosure.enabled:
false`` and the default rules without the disclosure rules) against the same gate with it (the
defaults), side by side in one run (goal <= 1.3x); results in
``benchmarks/results/gate_time_disclosure.json``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

for k, v in (("MLFLOW_DISABLE_TELEMETRY", "true"), ("DO_NOT_TRACK", "true")):
    os.environ.setdefault(k, v)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import adult_splits, record  # noqa: E402
from benchmarks._legacy_exposure import LEGACY_ATTACKS, LEGACY_RULES  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mode", choices=["exposure", "disclosure"], default="exposure")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    from privacy_gate import evaluate
    from privacy_gate.config import (
        DEFAULT_RULES,
        AuditConfig,
        DisclosureConfig,
        ExposureConfig,
        GateConfig,
    )
    from privacy_gate.generators import create_generator
    from privacy_gate.names import DISCLOSURE_FAMILIES

    spec, splits = adult_splits()
    generator = create_generator("gaussian_copula", seed=0).fit(
        splits.train, spec, reference=splits.reference
    )
    synthetic = generator.sample(len(splits.train))
    parts = dict(
        train=splits.train,
        holdout=splits.holdout,
        reference=splits.reference,
        synthetic=synthetic,
        spec=spec,
    )
    settings = {
        "today": dict(
            attacks=[{"name": a} for a in LEGACY_ATTACKS],
            gate=GateConfig(rules=LEGACY_RULES),
            exposure=ExposureConfig(scan_members=False),
            audit=AuditConfig(rare_value_max_count=0),
        ),
        "new": {},
    }
    goal, out_name = 1.5, "gate_time_adult"
    if args.mode == "disclosure":
        without = [
            r for r in DEFAULT_RULES if r.metric.partition(".")[0] not in DISCLOSURE_FAMILIES
        ]
        settings = {
            "today": dict(
                gate=GateConfig(rules=without), disclosure=DisclosureConfig(enabled=False)
            ),
            "new": {},
        }
        goal, out_name = 1.3, "gate_time_disclosure"
    seconds: dict[str, list[float]] = {k: [] for k in settings}
    decisions: dict[str, str] = {}
    print(
        f"full Adult: {len(splits.train):,} train, {len(splits.holdout):,} holdout, "
        f"{len(splits.reference):,} reference, {len(synthetic):,} synthetic rows",
        flush=True,
    )
    for i in range(args.repeats):
        for name, kw in settings.items():
            start = time.perf_counter()
            r = evaluate(**parts, **kw)
            seconds[name].append(time.perf_counter() - start)
            decisions[name] = r.decision
            print(
                f"  repeat {i + 1}: {name:<5} {seconds[name][-1]:6.1f} s  {r.decision}", flush=True
            )
    medians = {k: statistics.median(v) for k, v in seconds.items()}
    ratio = medians["new"] / medians["today"]
    print(
        f"median: today {medians['today']:.1f} s, new {medians['new']:.1f} s, ratio {ratio:.2f} "
        f"(goal <= {goal})"
    )
    record(
        out_name,
        {
            "benchmark": __doc__.splitlines()[0],
            "mode": args.mode,
            "repeats": args.repeats,
            "seconds": seconds,
            "median_seconds": medians,
            "ratio_new_over_today": ratio,
            "decisions": decisions,
            "rows": {
                "train": len(splits.train),
                "holdout": len(splits.holdout),
                "reference": len(splits.reference),
                "synthetic": len(synthetic),
            },
        },
    )


if __name__ == "__main__":
    main()
