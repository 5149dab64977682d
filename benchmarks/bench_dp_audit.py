"""Tightness and cost of the DP audit. Prints each figure, records
benchmarks/results/dp_audit.json after every row (a cut-off run keeps what it measured).

1. Headline: MST at (epsilon, delta) = (1, 1e-2) on the Adult train split and domain (the dpmm
   audit's setting: empirical mu 0.43 against the implied 0.45), worst-case target, white-box
   score, 2,000 fits per side; goal: within 1.25x of the claimed mu; cost: under 10 minutes.
2. Grid: MST, PrivBayes and Private-GSD at epsilon in {1, 4, 10}, delta 1e-5, worst-case target,
   white-box and black-box scores, 150 fits per side (Private-GSD on a 2,000-row sample with a
   200-generation search: its white-box score reads the measurements, which the search does not
   change).

3. Cost (``--cost``): the gate's default audit (200 fits per side) of MST at epsilon 1 on Adult.
4. Teeth over seeds (``--teeth``, ``benchmarks/results/dp_audit_teeth.json``): on the tests' small
   domain (``tests/dp_audit/domain.py``), the honest MST, PrivBayes and Private-GSD and the two
   known-broken variants (``tests/dp_audit/broken.py``: MST noise / 10, PrivBayes bins from the
   training split), every one with the same settings (epsilon 1, delta 1e-5 where it has one, 200
   fits per side, worst-case target, both scores, alpha 0.05), audit seeds 0-9 (``--seeds N``):
   how many audits report ``exceeds_claim``. Recorded after every audit.
5. Missing grid rows only (``--grid-rows gen:eps,...``): runs the named rows of the grid (2.) and
   merges them into ``dp_audit.json`` (replacing a row of the same generator and epsilon).

    MLFLOW_DISABLE_TELEMETRY=true .venv/bin/python benchmarks/bench_dp_audit.py [--quick | --cost |
    --teeth [--seeds N]
        | --grid-rows privbayes:10,private_gsd:10 [--runs N]]
"""

from __future__ import annotations

import json
import sys
import time

from _common import RESULTS, ROOT, adult_splits, record

sys.path.insert(0, str(ROOT))  # this checkout's privacy_gate and tests/, not an installed copy

from privacy_gate.estimators.dp_audit import gdp_mu_for_dp
from privacy_gate.studies.dp_audit import DPAuditSettings, audit_dp


def _row(name, params, data, spec, reference, settings):
    t = time.perf_counter()
    r = audit_dp(
        generator=name,
        params=params,
        data=data,
        spec=spec,
        reference=reference,
        settings=settings,
        progress=lambda line: print("   ", line, flush=True),
    )
    seconds = time.perf_counter() - t
    wb = [a for a in r.audits if a.score == "whitebox"]
    shift = wb[0].mu_shift if wb else None
    best = r.best.bound
    row = {
        "generator": name,
        "params": params,
        "rows": len(data),
        "runs_per_side": settings.runs,
        "epsilon": r.epsilon,
        "delta": r.delta,
        "claimed_mu": r.claimed_mu,
        "mu_basis": r.mu_basis,
        "gdp_mu_of_claim": gdp_mu_for_dp(r.epsilon, r.delta) if r.delta > 0 else None,
        "epsilon_lower": best.epsilon_lower,
        "best_score": r.best.score,
        "mu_lower_cp": best.mu_lower,
        "mu_estimate_threshold": best.mu_estimate,
        "mu_shift": shift,
        "max_certifiable_epsilon": r.max_certifiable_epsilon,
        "exceeds_claim": r.exceeds(),
        "claimed_over_empirical_mu": (r.claimed_mu / shift[0]) if shift and shift[0] > 0 else None,
        "scores": {a.score: a.bound.to_dict() for a in r.audits},
        "seconds": seconds,
    }
    print(
        f"{name} eps={r.epsilon:g} delta={r.delta:g}: eps_lower={best.epsilon_lower:.3f} "
        f"(max certifiable {r.max_certifiable_epsilon:.2f}), mu claimed {r.claimed_mu:.3f}, "
        f"mu (mean shift, white-box) {shift[0] if shift else float('nan'):.3f} "
        f"[{shift[1] if shift else float('nan'):.3f}, {shift[2] if shift else float('nan'):.3f}], "
        f"mu CP lower {best.mu_lower:.3f}; {seconds:.0f} s",
        flush=True,
    )
    return row


def cost() -> None:
    """The gate's default audit (200 fits per side) of MST at epsilon 1 on Adult's domain and train
    split, both scores, the worst-case target: wall time (goal < 10 minutes), merged into the
    JSON."""
    spec, splits = adult_splits()
    row = _row(
        "mst",
        {"epsilon": 1.0, "delta": 1e-9},
        splits.train,
        spec,
        splits.reference,
        DPAuditSettings(runs=200, targets=("worst_case",)),
    )
    path = RESULTS / "dp_audit.json"
    payload = json.loads(path.read_text()) if path.exists() else {}
    payload.pop("when", None), payload.pop("machine", None)
    payload["cost"] = {
        "what": "MST eps 1, delta 1e-9, Adult train split and domain, 200 fits per side, "
        "worst-case target, white-box + black-box scores",
        "seconds": row["seconds"],
        "goal_seconds": 600,
        "fits": 400,
        "row": row,
    }
    record("dp_audit", payload)


def _grid_case(name: str, eps: float, splits, grid_runs: int):
    """(params, data, runs) of one grid row: Private-GSD on a 2,000-row sample, 200 generations."""
    if name == "mst":
        return {"epsilon": eps, "delta": 1e-5}, splits.train, grid_runs
    if name == "privbayes":
        return {"epsilon": eps}, splits.train, grid_runs
    small = splits.train.sample(2000, random_state=0)
    return {"epsilon": eps, "delta": 1e-5, "max_generations": 200, "n_syn": 500}, small, grid_runs


def grid_rows(
    which: list[tuple[str, float]], grid_runs: int = 150, runs: int | None = None
) -> None:
    """Run only the named grid rows and merge them into dp_audit.json (same settings as ``main``;
    ``runs`` fits per side for every named row instead of the grid's)."""
    spec, splits = adult_splits()
    path = RESULTS / "dp_audit.json"
    payload = json.loads(path.read_text())
    payload.pop("when", None), payload.pop("machine", None)
    for name, eps in which:
        params, data, runs_ = _grid_case(name, eps, splits, grid_runs)
        row = _row(
            name,
            params,
            data,
            spec,
            splits.reference,
            DPAuditSettings(runs=runs or runs_, targets=("worst_case",)),
        )
        payload["rows"] = [
            r
            for r in payload["rows"]
            if not (r["generator"] == name and r["epsilon"] == eps and r["delta"] == row["delta"])
        ]
        payload["rows"].append(row)
        record("dp_audit", payload)


def teeth(n_seeds: int = 10, runs: int = 200) -> None:
    """Honest vs known-broken audits over seeds 0..n_seeds-1, same settings for all (see module
    doc)."""
    from privacy_gate.generators.mst import MSTGenerator
    from privacy_gate.generators.private_gsd import PrivateGSDGenerator
    from privacy_gate.generators.privbayes import PrivBayesGenerator
    from tests.dp_audit.broken import TenthNoiseMST, TrainBinsPrivBayes
    from tests.dp_audit.domain import small_domain

    spec, data, reference = small_domain()
    cases = {  # name -> (factory of seed, honest?)
        "mst": (lambda s: MSTGenerator(epsilon=1.0, delta=1e-5, seed=s), True),
        "privbayes": (lambda s: PrivBayesGenerator(epsilon=1.0, seed=s), True),
        "private_gsd": (
            lambda s: PrivateGSDGenerator(
                epsilon=1.0, delta=1e-5, max_generations=200, n_syn=200, seed=s
            ),
            True,
        ),
        "mst_tenth_noise (broken)": (
            lambda s: TenthNoiseMST(epsilon=1.0, delta=1e-5, seed=s),
            False,
        ),
        "privbayes_train_bins (broken)": (lambda s: TrainBinsPrivBayes(epsilon=1.0, seed=s), False),
    }
    seeds = list(range(n_seeds))
    audits: list[dict] = []
    summary: dict[str, dict] = {}
    payload = {
        "benchmark": "DP audit teeth over seeds: honest vs known-broken generators",
        "domain": "tests/dp_audit/domain.py: 200 private rows, 3 columns (2 x 3 x 4 cells + "
        "1 public-only colour)",
        "settings": {
            "runs_per_side": runs,
            "targets": ["worst_case"],
            "scores": ["whitebox", "blackbox"],
            "alpha": 0.05,
            "epsilon": 1.0,
            "delta": "1e-5 (MST, Private-GSD); PrivBayes pure DP",
            "private_gsd": {"max_generations": 200, "n_syn": 200},
        },
        "seeds": seeds,
        "summary": summary,
        "audits": audits,
    }
    for name, (factory, honest) in cases.items():
        for seed in seeds:
            t = time.perf_counter()
            r = audit_dp(
                generator=factory,
                data=data,
                spec=spec,
                reference=reference,
                progress=None,
                settings=DPAuditSettings(runs=runs, seed=seed, targets=("worst_case",)),
            )
            b = r.best
            audits.append(
                {
                    "generator": name,
                    "honest": honest,
                    "seed": seed,
                    "exceeds_claim": r.exceeds(),
                    "epsilon": r.epsilon,
                    "delta": r.delta,
                    "epsilon_lower": r.epsilon_lower,
                    "best_score": b.score,
                    "mu_lower": b.bound.mu_lower,
                    "max_certifiable_epsilon": r.max_certifiable_epsilon,
                    "scores": {
                        a.score: {
                            "epsilon_lower": a.bound.epsilon_lower,
                            "false_positives": a.bound.false_positives,
                            "false_negatives": a.bound.false_negatives,
                        }
                        for a in r.audits
                    },
                    "seconds": time.perf_counter() - t,
                }
            )
            mine = [a for a in audits if a["generator"] == name]
            lows = [a["epsilon_lower"] for a in mine]
            summary[name] = {
                "honest": honest,
                "audits": len(mine),
                "exceeds_claim": sum(a["exceeds_claim"] for a in mine),
                "epsilon_lower_min": min(lows),
                "epsilon_lower_max": max(lows),
                "seeds_exceeding": [a["seed"] for a in mine if a["exceeds_claim"]],
            }
            print(
                f"{name} seed {seed}: eps_lower {r.epsilon_lower:.3f} ({b.score}) vs claim "
                f"{r.epsilon:g}: "
                f"{'EXCEEDS' if r.exceeds() else 'within'}; {audits[-1]['seconds']:.0f} s",
                flush=True,
            )
            record("dp_audit_teeth", payload)
    print(json.dumps(summary, indent=1))


def main() -> None:
    if "--cost" in sys.argv:
        cost()
        return
    if "--teeth" in sys.argv:
        n = int(sys.argv[sys.argv.index("--seeds") + 1]) if "--seeds" in sys.argv else 10
        teeth(n)
        return
    if "--grid-rows" in sys.argv:
        spec_ = sys.argv[sys.argv.index("--grid-rows") + 1]
        runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else None
        grid_rows(
            [(g, float(e)) for g, e in (item.split(":") for item in spec_.split(","))], runs=runs
        )
        return
    quick = "--quick" in sys.argv
    spec, splits = adult_splits()
    out = RESULTS / "dp_audit.json"
    rows = []
    payload = {
        "benchmark": "DP audit tightness and cost, Adult, 2 cores",
        "n_train": len(splits.train),
        "rows": rows,
    }
    runs = 50 if quick else 1500
    rows.append(
        _row(
            "mst",
            {"epsilon": 1.0, "delta": 1e-2},
            splits.train,
            spec,
            splits.reference,
            DPAuditSettings(runs=runs, targets=("worst_case",), scores=("whitebox",)),
        )
    )
    payload["headline"] = {
        "mst_eps1_delta1e-2_seconds": rows[0]["seconds"],
        "goal_seconds": 600,
        "claimed_mu": rows[0]["claimed_mu"],
        "empirical_mu": rows[0]["mu_shift"],
        "ratio_goal": 1.25,
        "ratio": rows[0]["claimed_over_empirical_mu"],
        "dpmm_reference": {"empirical_mu": 0.43, "implied_mu": 0.45},
    }
    record("dp_audit", payload)
    grid_runs = 20 if quick else 150
    for eps in (1.0, 4.0, 10.0):
        for name in ("mst", "privbayes", "private_gsd"):
            params, data, runs_ = _grid_case(name, eps, splits, grid_runs)
            rows.append(
                _row(
                    name,
                    params,
                    data,
                    spec,
                    splits.reference,
                    DPAuditSettings(runs=runs_, targets=("worst_case",)),
                )
            )
            record("dp_audit", payload)
    print(json.dumps(payload.get("headline"), default=float))
    _ = out


if __name__ == "__main__":
    main()
