"""Per-sample detection: how often the gate stops a release with k% of its rows replaced by noisy
copies of training records, old aggregate rules vs the new per-sample rules, side by side.

Set-up (``tests/exposure_scenarios.py``): Adult, 8,000 training rows, 4,000 holdout (all of it as
non-member targets, 4,000 members), 4,000 reference; the release is 8,000 independent rows of the
same population with ``share`` of them replaced by noisy copies (``noise`` standard deviations
on numerics, no verbatim row). Each release is judged once with the default settings; the same
metrics are then decided with

- ``aggregate``: the rules before the per-sample gates (AUC, TPR at 1% / 0.1% FPR, MACE bounds,
  utility, subgroup AUC), and
- ``per_sample``: today's defaults (the aggregate rules plus ``exposed.*`` and the subgroup rank
  test).

"Detected" = the decision is not APPROVE. Shares 0 (independent: the false-alarm rate) to 20%,
and noise levels at 5%; several seeds each. ``python benchmarks/bench_exposure.py [--seeds N]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record  # noqa: E402
from privacy_gate import evaluate  # noqa: E402
from privacy_gate.config import DEFAULT_RULES  # noqa: E402
from privacy_gate.gate import decide  # noqa: E402
from tests.exposure_scenarios import SPEC, make_scenario  # noqa: E402

PER_SAMPLE_METRICS = ("exposed.", "membership_test.")
AGGREGATE_RULES = [r for r in DEFAULT_RULES if not r.metric.startswith(PER_SAMPLE_METRICS)]
SHARES = (0.0, 0.005, 0.01, 0.02, 0.05, 0.10, 0.20)
NOISES = (0.02, 0.10, 0.20)


def judge(seed: int, *, share: float, noise: float = 0.05) -> dict:
    s = make_scenario(seed, share=share, noise=noise)
    start = time.perf_counter()
    r = evaluate(train=s.train, holdout=s.holdout, reference=s.reference, synthetic=s.synthetic, spec=SPEC)
    seconds = time.perf_counter() - start
    attacks = r.settings.gated_attacks
    old = decide(AGGREGATE_RULES, r.metrics, attacks=attacks, groups=r.audit.groups if r.audit else None)
    m = r.metrics
    return {"seed": seed, "share": share, "noise": noise, "per_sample": r.decision, "aggregate": old.decision,
            "seconds": round(seconds, 2), **{k: round(m[k], 5) for k in
                                             ("exposed.count", "exposed.share", "exposed.share_lower",
                                              "exposed.share_upper", "strongest.tpr_at_fpr_0.01",
                                              "strongest.auc")},
            "per_sample_reasons": sorted({c.key for c in r.verdict.reasons})[:6]}


def rate(rows: list[dict], which: str) -> float:
    return sum(r[which] != "APPROVE" for r in rows) / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds per leaky setting")
    parser.add_argument("--null-seeds", type=int, default=10, help="seeds of independent releases")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    runs: list[dict] = []
    print(f"{'share':>6} {'noise':>6} {'seeds':>5}  {'aggregate':>9} {'per-sample':>10}   exposed share [lower, upper]")
    for share in SHARES:
        seeds = range(args.null_seeds if share == 0 else args.seeds)
        rows = [judge(100 + s, share=share) for s in seeds]
        runs += rows
        print(f"{share:>6.3f} {0.05:>6.2f} {len(rows):>5}  {rate(rows, 'aggregate'):>9.2f} {rate(rows, 'per_sample'):>10.2f}"
              f"   {sum(r['exposed.share'] for r in rows) / len(rows):.4f} "
              f"[{sum(r['exposed.share_lower'] for r in rows) / len(rows):.4f}, "
              f"{sum(r['exposed.share_upper'] for r in rows) / len(rows):.4f}]")
    for noise in NOISES:
        rows = [judge(100 + s, share=0.05, noise=noise) for s in range(args.seeds)]
        runs += rows
        print(f"{0.05:>6.3f} {noise:>6.2f} {len(rows):>5}  {rate(rows, 'aggregate'):>9.2f} {rate(rows, 'per_sample'):>10.2f}"
              f"   {sum(r['exposed.share'] for r in rows) / len(rows):.4f}")
    summary = []
    for share in SHARES:
        rows = [r for r in runs if r["share"] == share and r["noise"] == 0.05]
        summary.append({"share": share, "noise": 0.05, "n": len(rows), "aggregate_detection": rate(rows, "aggregate"),
                        "per_sample_detection": rate(rows, "per_sample")})
    for noise in NOISES:
        rows = [r for r in runs if r["share"] == 0.05 and r["noise"] == noise]
        summary.append({"share": 0.05, "noise": noise, "n": len(rows), "aggregate_detection": rate(rows, "aggregate"),
                        "per_sample_detection": rate(rows, "per_sample")})
    limit = next((s["share"] for s in summary if s["noise"] == 0.05 and s["share"] > 0
                  and s["per_sample_detection"] == 1.0), None)
    print(f"per-sample detection limit (every seed detected, noise 0.05): {limit}")
    record("exposure_adult", {"benchmark": __doc__.splitlines()[0], "setup": "tests/exposure_scenarios.py",
                              "aggregate_rules": [r.describe() for r in AGGREGATE_RULES],
                              "summary": summary, "detection_limit_share": limit, "runs": runs})


if __name__ == "__main__":
    main()
