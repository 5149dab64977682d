"""Sparse-exposure detection: per leak type, how often the gate stops the release, today's rules
(before the sparse-exposure work) and the new defaults side by side, with Wilson intervals.

Set-up (``tests/exposure_scenarios.py``): Adult, 8,000 training rows, 4,000 holdout (all of it as
non-member targets, 4,000 members), 4,000 reference; the release is 8,000 independent population
rows with a leak put into it (``Leak``): k people x m near-copies, the most outlying training
records, the records of rare native countries, a share of noisy or verbatim copies — or nothing
(the false-alarm rate). Each release is judged ONCE with the default settings; the same run is then
decided two ways:

- ``today``: the rules and exposure figures of commit bc3f293 (``benchmarks/_legacy_exposure.py``:
  Bonferroni across the four attacks of the time, a Clopper–Pearson share bound at a fixed level,
  no member scan, no tail test), on the metrics of those four attacks;
- ``new``: the run's own decision (the new defaults).

"Detected" = the decision is not APPROVE. Naming: the records the run names (member-target
discoveries and the member scan's), how often a true one is among them and the false discovery
proportion. ``python benchmarks/bench_exposure.py [--seeds 10] [--null-seeds 100] [--workers 2]
[--only people] [--quick]``; results in ``benchmarks/results/exposure_adult.json``.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record
from tests.exposure_scenarios import Leak

LEAKS: tuple[Leak, ...] = (
    *(Leak("people", k=k, m=m) for k in (2, 10, 30) for m in (1, 8, 40)),
    Leak("outliers", share=0.005),
    Leak("outliers", share=0.01),
    Leak("rare", k=8, column="native_country"),
    *(Leak("noisy", share=s, noise=n) for s in (0.005, 0.01, 0.02, 0.05) for n in (0.05, 0.1, 0.2)),
    Leak("verbatim", share=0.01),
)
NULL = Leak("null")
#: first seed of the leak cells and of the null releases (100 / 1000 were used to choose the tail
#: rules' levels; the recorded figures come from fresh seeds)
LEAK_SEEDS, NULL_SEEDS = 200, 2000

_ADULT = None


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval (95%) of a proportion k / n.

    >>> [round(x, 3) for x in wilson(9, 10)]
    [0.596, 0.982]
    >>> wilson(0, 0)
    (0.0, 1.0)
    """
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def judge(job: tuple[Leak, int]) -> dict:
    """One release: judged once, decided today's way and the new way."""
    global _ADULT
    import logging

    import numpy as np
    import pandas as pd

    from benchmarks._legacy_exposure import LEGACY_ATTACKS, LEGACY_RULES, legacy_exposure
    from privacy_gate import evaluate
    from privacy_gate.gate import decide
    from tests.exposure_scenarios import ADULT, SPEC, make_leak

    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    leak, seed = job
    if _ADULT is None:
        _ADULT = pd.read_csv(ADULT)
    s = make_leak(seed, leak, adult=_ADULT)
    start = time.perf_counter()
    r = evaluate(
        train=s.train, holdout=s.holdout, reference=s.reference, synthetic=s.synthetic, spec=SPEC
    )
    seconds = time.perf_counter() - start
    m = dict(r.metrics)
    legacy_scores = {o.name: o.scores for o in r.outcomes if o.name in LEGACY_ATTACKS}
    old = legacy_exposure(legacy_scores, r.targets.labels)
    old_named = set(np.asarray(r.targets.row_ids)[old.pop("_discoveries")].tolist())
    # the groups the audit had then: the spec's subgroups and their intersections, no rare values
    audited = set(r.settings.spec.subgroups)
    old_groups = {
        g: v
        for g, v in (r.audit.groups if r.audit else {}).items()
        if "|" not in g and {part.split("=", 1)[0] for part in g.split("&")} <= audited
    }
    today = decide(
        LEGACY_RULES, {**m, **old}, attacks=list(legacy_scores), groups=old_groups
    ).decision
    named = set(r.exposure.discoveries.tolist()) | (
        set(r.scan.discoveries.tolist()) if r.scan else set()
    )
    truth = set(np.asarray(s.exposed_rows).tolist())

    def naming(found: set) -> dict:
        return {
            "named": len(found),
            "true_named": len(found & truth),
            "fdp": (len(found - truth) / len(found)) if found else 0.0,
        }

    return {
        "leak": leak.label,
        **asdict(leak),
        "seed": seed,
        "exposed": len(truth),
        "today": today,
        "new": r.decision,
        "seconds": round(seconds, 2),
        "new_naming": naming(named),
        "today_naming": naming(old_named),
        "reasons": sorted({c.key for c in r.verdict.reasons})[:6],
        **{
            k: round(float(m[k]), 6)
            for k in (
                "exposed.tail_pvalue",
                "exposed.scan_tail_pvalue",
                "exposed.scan_tail_top",
                "exposed.scan_count",
                "exposed.count",
                "exposed.share_lower",
                "exposed.scan_naming_needs",
            )
        },
        "today_share_lower": round(old["exposed.share_lower"], 6),
    }


def summarise(leak: Leak, rows: list[dict]) -> dict:
    n = len(rows)
    out: dict = {"leak": leak.label, **asdict(leak), "n": n, "seeds": [r["seed"] for r in rows]}
    for which in ("today", "new"):
        k = sum(r[which] != "APPROVE" for r in rows)
        out[f"{which}_detected"] = k
        out[f"{which}_rate"] = k / n
        out[f"{which}_wilson"] = [round(x, 3) for x in wilson(k, n)]
        named = [r[f"{which}_naming"] for r in rows]
        out[f"{which}_named_mean"] = sum(x["named"] for x in named) / n
        out[f"{which}_true_named_share"] = sum(x["true_named"] > 0 for x in named) / n
        out[f"{which}_fdp_mean"] = sum(x["fdp"] for x in named) / n
    return out


def markdown_table(summary: list[dict]) -> str:
    """The detection table (docs/per-sample.md): detection rate per leak type, today's rules and the
    new defaults, with Wilson intervals, and what the new defaults name."""
    lines = [
        "| leak (Adult, 8,000 training rows) | releases | today: not approved | new: not approved "
        "| new: records named (mean) | seeds where a true one is named | mean FDP of the named |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in summary:
        seeds = c["seeds"]
        span = f"{seeds[0]}–{seeds[-1]}" if seeds else "-"
        lines.append(
            f"| {c['leak']} (seeds {span}) | {c['n']} "
            f"| {c['today_detected']}/{c['n']} [{c['today_wilson'][0]:.2f}, "
            f"{c['today_wilson'][1]:.2f}] "
            f"| {c['new_detected']}/{c['n']} [{c['new_wilson'][0]:.2f}, {c['new_wilson'][1]:.2f}] "
            f"| {c['new_named_mean']:.1f} | {round(c['new_true_named_share'] * c['n'])}/{c['n']} "
            f"| {c['new_fdp_mean']:.3f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--table",
        action="store_true",
        help="print the recorded results (benchmarks/results/exposure_adult.json) as the README's "
        "table",
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds per leak cell")
    parser.add_argument(
        "--null-seeds", type=int, default=100, help="independent releases (false alarms)"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--only",
        choices=sorted({leak.kind for leak in LEAKS} | {"null"}),
        action="append",
        help="run only these leak kinds (repeatable)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="2 seeds per cell, 4 null releases (a smoke run)"
    )
    args = parser.parse_args()
    if args.table:
        import json

        results = Path(__file__).resolve().parent / "results" / "exposure_adult.json"
        print(markdown_table(json.loads(results.read_text())["summary"]))
        return
    seeds, null_seeds = (2, 4) if args.quick else (args.seeds, args.null_seeds)
    cells = [(NULL, [NULL_SEEDS + i for i in range(null_seeds)])] + [
        (leak, [LEAK_SEEDS + i for i in range(seeds)]) for leak in LEAKS
    ]
    cells = [(leak, ss) for leak, ss in cells if not args.only or leak.kind in args.only]
    jobs = [(leak, s) for leak, ss in cells for s in ss]
    print(f"{len(jobs)} releases in {len(cells)} cells on {args.workers} workers", flush=True)
    start = time.perf_counter()
    rows: list[dict] = []
    with mp.get_context("spawn").Pool(args.workers) as pool:
        for i, row in enumerate(pool.imap_unordered(judge, jobs), 1):
            rows.append(row)
            elapsed = time.perf_counter() - start
            print(
                f"[{i}/{len(jobs)}] {row['leak']} seed {row['seed']}: today {row['today']}, new "
                f"{row['new']} "
                f"({row['seconds']:.1f} s; ETA {elapsed / i * (len(jobs) - i) / 60:.1f} min)",
                flush=True,
            )
    summary = [
        summarise(
            leak, sorted((r for r in rows if r["leak"] == leak.label), key=lambda r: r["seed"])
        )
        for leak, _ in cells
    ]
    print(f"\n{'leak':<52} {'n':>4}  {'today':>17}  {'new':>17}  named (true share, FDP)")
    for c in summary:
        print(
            f"{c['leak']:<52} {c['n']:>4}  {c['today_rate']:>5.2f} "
            f"[{c['today_wilson'][0]:.2f},{c['today_wilson'][1]:.2f}]"
            f"  {c['new_rate']:>5.2f} [{c['new_wilson'][0]:.2f},{c['new_wilson'][1]:.2f}]"
            f"  {c['new_named_mean']:.1f} ({c['new_true_named_share']:.2f}, "
            f"{c['new_fdp_mean']:.3f})"
        )
    record(
        "exposure_adult",
        {
            "benchmark": __doc__.splitlines()[0],
            "setup": "tests/exposure_scenarios.py (Leak)",
            "today": "commit bc3f293 rules and exposure figures (benchmarks/_legacy_exposure.py)",
            "wall_seconds": round(time.perf_counter() - start, 1),
            "summary": summary,
            "runs": sorted(rows, key=lambda r: (r["leak"], r["seed"])),
        },
    )


if __name__ == "__main__":
    main()
