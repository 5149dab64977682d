"""Tightness and cost of the DP audit (issue #23). Prints each figure, records
benchmarks/results/dp_audit.json after every row (a cut-off run keeps what it measured).

1. Headline: MST at (epsilon, delta) = (1, 1e-2) on the Adult train split and domain (the dpmm
   audit's setting: empirical mu 0.43 against the implied 0.45), worst-case target, white-box
   score, 2,000 fits per side; goal: within 1.25x of the claimed mu; cost: under 10 minutes.
2. Grid: MST, PrivBayes and Private-GSD at epsilon in {1, 4, 10}, delta 1e-5, worst-case target,
   white-box and black-box scores (Private-GSD on a 2,000-row sample with a 200-generation
   search: its white-box score reads the measurements, which the search does not change).

3. Cost (``--cost``): the gate's default audit (200 fits per side) of MST at epsilon 1 on Adult.

    MLFLOW_DISABLE_TELEMETRY=true .venv/bin/python benchmarks/bench_dp_audit.py [--quick | --cost]
"""

from __future__ import annotations

import json
import sys
import time

from _common import RESULTS, adult_splits, record

from privacy_gate.estimators.dp_audit import gdp_mu_for_dp
from privacy_gate.pipeline.dp_audit import DPAuditSettings, audit_dp


def _row(name, params, data, spec, reference, settings):
    t = time.perf_counter()
    r = audit_dp(generator=name, params=params, data=data, spec=spec, reference=reference, settings=settings,
                 progress=lambda line: print("   ", line, flush=True))
    seconds = time.perf_counter() - t
    wb = [a for a in r.audits if a.score == "whitebox"]
    shift = wb[0].mu_shift if wb else None
    best = r.best.bound
    row = {"generator": name, "params": params, "rows": len(data), "runs_per_side": settings.runs,
           "epsilon": r.epsilon, "delta": r.delta, "claimed_mu": r.claimed_mu, "mu_basis": r.mu_basis,
           "gdp_mu_of_claim": gdp_mu_for_dp(r.epsilon, r.delta) if r.delta > 0 else None,
           "epsilon_lower": best.epsilon_lower, "best_score": r.best.score,
           "mu_lower_cp": best.mu_lower, "mu_estimate_threshold": best.mu_estimate,
           "mu_shift": shift, "max_certifiable_epsilon": r.max_certifiable_epsilon, "exceeds_claim": r.exceeds(),
           "claimed_over_empirical_mu": (r.claimed_mu / shift[0]) if shift and shift[0] > 0 else None,
           "scores": {a.score: a.bound.to_dict() for a in r.audits}, "seconds": seconds}
    print(f"{name} eps={r.epsilon:g} delta={r.delta:g}: eps_lower={best.epsilon_lower:.3f} "
          f"(max certifiable {r.max_certifiable_epsilon:.2f}), mu claimed {r.claimed_mu:.3f}, "
          f"mu (mean shift, white-box) {shift[0] if shift else float('nan'):.3f} "
          f"[{shift[1] if shift else float('nan'):.3f}, {shift[2] if shift else float('nan'):.3f}], "
          f"mu CP lower {best.mu_lower:.3f}; {seconds:.0f} s", flush=True)
    return row


def cost() -> None:
    """The gate's default audit (200 fits per side) of MST at epsilon 1 on Adult's domain and train
    split, both scores, the worst-case target: wall time (goal < 10 minutes), merged into the JSON."""
    spec, splits = adult_splits()
    row = _row("mst", {"epsilon": 1.0, "delta": 1e-9}, splits.train, spec, splits.reference,
               DPAuditSettings(runs=200, targets=("worst_case",)))
    path = RESULTS / "dp_audit.json"
    payload = json.loads(path.read_text()) if path.exists() else {}
    payload.pop("when", None), payload.pop("machine", None)
    payload["cost"] = {"what": "MST eps 1, delta 1e-9, Adult train split and domain, 200 fits per side, "
                               "worst-case target, white-box + black-box scores", "seconds": row["seconds"],
                       "goal_seconds": 600, "fits": 400, "row": row}
    record("dp_audit", payload)


def main() -> None:
    if "--cost" in sys.argv:
        cost()
        return
    quick = "--quick" in sys.argv
    spec, splits = adult_splits()
    out = RESULTS / "dp_audit.json"
    rows = []
    payload = {"benchmark": "DP audit tightness and cost (issue #23), Adult, 2 cores",
               "n_train": len(splits.train), "rows": rows}
    runs = 50 if quick else 1500
    rows.append(_row("mst", {"epsilon": 1.0, "delta": 1e-2}, splits.train, spec, splits.reference,
                     DPAuditSettings(runs=runs, targets=("worst_case",), scores=("whitebox",))))
    payload["headline"] = {"mst_eps1_delta1e-2_seconds": rows[0]["seconds"], "goal_seconds": 600,
                           "claimed_mu": rows[0]["claimed_mu"], "empirical_mu": rows[0]["mu_shift"],
                           "ratio_goal": 1.25, "ratio": rows[0]["claimed_over_empirical_mu"],
                           "dpmm_reference": {"empirical_mu": 0.43, "implied_mu": 0.45}}
    record("dp_audit", payload)
    small = splits.train.sample(2000, random_state=0)
    grid_runs = 20 if quick else 150
    for eps in (1.0, 4.0, 10.0):
        for name, params, data, runs_ in (
                ("mst", {"epsilon": eps, "delta": 1e-5}, splits.train, grid_runs),
                ("privbayes", {"epsilon": eps}, splits.train, grid_runs),
                ("private_gsd", {"epsilon": eps, "delta": 1e-5, "max_generations": 200, "n_syn": 500}, small,
                 max(10, grid_runs // 3))):
            rows.append(_row(name, params, data, spec, splits.reference,
                             DPAuditSettings(runs=runs_, targets=("worst_case",))))
            record("dp_audit", payload)
    print(json.dumps(payload.get("headline"), default=float))
    _ = out


if __name__ == "__main__":
    main()
