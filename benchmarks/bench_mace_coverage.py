"""Coverage, bias and speed of the MACE advantage estimators where the truth is known.

Cases (each setting is simulated ``DRAWS`` times with fresh data):

- Gaussian shift: member scores N(mu, 1), non-member N(0, 1), mu in {0, 0.5, 1, 2}; truth
  integral |p phi(x - mu) - (1-p) phi(x)| dx (closed form, cross-checked by quadrature), which is
  2 Phi(mu/2) - 1 at p = 0.5 and |2p - 1| at mu = 0.
- Discrete pmf: members ~ (.1, .2, .3, .4), non-members ~ (.4, .3, .2, .1) on 4 values; truth
  sum_j |p P1_j - (1-p) P0_j|.
- priors 0.5 and 0.2 with *balanced* targets (N1 = N0 = N/2, the gate's default); N in
  {500, 2000, 10000}; methods discrete and kde.

Extras (fewer draws): the effect of the bin count and of the bandwidth rule, the paper's
sampling design N1 = pN, and combined queries of 2 and 4 correlated attacks (rho = 0.5, each
attack alone shifted by 1; truth 2 Phi(Delta/2) - 1 with Delta the Mahalanobis shift).

Recorded per setting: mean estimate, truth, bias (mean - truth), RMSE, coverage of
[lower, upper] (``lower`` = the default split bound) and of each side alone, coverage with the
permutation-debiased lower bound instead, mean widths, the permutation-null bias, runtime.
The benchmark uses ``N_PERMUTATIONS`` = 50 label permutations (the library default is 200) to
keep the run short; only ``bias``/``lower_permutation`` depend on it.

Run from the repository root:  .venv/bin/python benchmarks/bench_mace_coverage.py [--draws 500]
Writes benchmarks/results/mace_coverage.json.
"""

from __future__ import annotations

import os

# one BLAS thread per worker: the workers already use both cores
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import math
import multiprocessing as mp
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import integrate
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from privacy_gate.estimators.mace.advantage import estimate_advantage  # noqa: E402

DELTA = 0.05
N_PERMUTATIONS = 50
PMF1 = np.array([0.1, 0.2, 0.3, 0.4])
PMF0 = np.array([0.4, 0.3, 0.2, 0.1])
RHO = 0.5  # correlation of the combined attacks' scores


def cov_mu(d: int) -> tuple[np.ndarray, np.ndarray]:
    return (1 - RHO) * np.eye(d) + RHO, np.ones(d)


def truth_gauss(mu: float, p: float) -> float:
    if mu == 0:
        return abs(2 * p - 1)
    x = mu / 2 - math.log(p / (1 - p)) / mu  # where p phi(x - mu) = (1-p) phi(x)
    pos = p * norm.sf(x - mu) - (1 - p) * norm.sf(x)  # integral of the positive part
    return 2 * pos - (2 * p - 1)


def truth_quad(mu: float, p: float) -> float:
    g = lambda x: abs(p * norm.pdf(x - mu) - (1 - p) * norm.pdf(x))  # noqa: E731
    return integrate.quad(g, -12, 12 + mu, limit=200)[0]


def truth_of(case: dict) -> float:
    p = case["prior"]
    if case["dist"] == "gauss":
        return truth_gauss(case["mu"], p)
    if case["dist"] == "pmf":
        return float(np.abs(p * PMF1 - (1 - p) * PMF0).sum())
    cov, mu = cov_mu(case["d"])
    maha = math.sqrt(mu @ np.linalg.solve(cov, mu))
    return 2 * norm.cdf(maha / 2) - 1  # d-dim shift with common covariance, p = 0.5


def draw(case: dict, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = case["n"]
    n1 = int(round(case.get("member_share", 0.5) * n))
    n0 = n - n1
    if case["dist"] == "gauss":
        z = np.r_[rng.normal(case["mu"], 1.0, n1), rng.normal(0.0, 1.0, n0)]
    elif case["dist"] == "pmf":
        z = np.r_[rng.choice(4, n1, p=PMF1), rng.choice(4, n0, p=PMF0)].astype(float)
    else:
        cov, mu = cov_mu(case["d"])
        chol = np.linalg.cholesky(cov)
        d = case["d"]
        z = np.r_[rng.standard_normal((n1, d)) @ chol.T + mu, rng.standard_normal((n0, d)) @ chol.T]
    return z, np.r_[np.ones(n1, np.int8), np.zeros(n0, np.int8)]


def run_task(task: tuple[int, dict, int, int]) -> tuple[int, list[dict]]:
    idx, case, start, count = task
    kw = {k: case[k] for k in ("n_bins", "bandwidth") if k in case}
    out = []
    for i in range(start, start + count):
        rng = np.random.default_rng([idx, i])
        z, m = draw(case, rng)
        t0 = time.perf_counter()
        est = estimate_advantage(
            z,
            m,
            prior=case["prior"],
            delta=DELTA,
            method=case["method"],
            n_permutations=N_PERMUTATIONS,
            seed=i,
            **kw,
        )
        out.append(
            {
                "estimate": est.estimate,
                "lower": est.lower,
                "upper": est.upper,
                "lower_perm": est.lower_permutation,
                "bias": est.bias,
                "seconds": time.perf_counter() - t0,
                "radius": est.radius,
                "settings": dict(est.settings),
            }
        )
    return idx, out


def summarise(case: dict, records: list[dict]) -> dict:
    truth = truth_of(case)
    est = np.array([r["estimate"] for r in records])
    lo = np.array([r["lower"] for r in records])
    up = np.array([r["upper"] for r in records])
    lp = np.array([r["lower_perm"] for r in records])
    tol = 1e-12
    s = records[0]["settings"]
    return {
        **{k: v for k, v in case.items() if k != "draws"},
        "draws": len(records),
        "truth": truth,
        "mean_estimate": float(est.mean()),
        "bias": float(est.mean() - truth),
        "rmse": float(np.sqrt(np.mean((est - truth) ** 2))),
        "coverage": float(np.mean((lo <= truth + tol) & (truth <= up + tol))),
        "coverage_upper": float(np.mean(truth <= up + tol)),
        "coverage_lower": float(np.mean(lo <= truth + tol)),
        "coverage_permutation_lower": float(np.mean((lp <= truth + tol) & (truth <= up + tol))),
        "mean_width": float(np.mean(up - lo)),
        "mean_width_permutation_lower": float(np.mean(up - lp)),
        "mean_lower": float(lo.mean()),
        "mean_lower_permutation": float(lp.mean()),
        "mean_upper": float(up.mean()),
        "radius": float(records[0]["radius"]),
        "null_bias": float(np.mean([r["bias"] for r in records])),
        "ms_per_estimate": 1000 * float(np.mean([r["seconds"] for r in records])),
        "resolved": {
            k: (round(v, 4) if isinstance(v, float) else v)
            for k, v in s.items()
            if k in ("bins_per_dim", "n_cells", "exact_levels", "bandwidth")
        },
    }


def build_cases(draws: int, extra_draws: int) -> list[dict]:
    cases = []
    for method in ("discrete", "kde"):
        for prior in (0.5, 0.2):
            for n in (500, 2000, 10_000):
                for mu in (0.0, 0.5, 1.0, 2.0):
                    cases.append(
                        {
                            "block": "main",
                            "dist": "gauss",
                            "mu": mu,
                            "prior": prior,
                            "n": n,
                            "method": method,
                            "draws": draws,
                        }
                    )
    for prior in (0.5, 0.2):
        for n in (500, 2000, 10_000):
            cases.append(
                {
                    "block": "main",
                    "dist": "pmf",
                    "prior": prior,
                    "n": n,
                    "method": "discrete",
                    "draws": draws,
                }
            )
    # bin count: the default at N = 2000 is 13
    for bins in (4, 8, 13, 30, 60):
        cases.append(
            {
                "block": "bins",
                "dist": "gauss",
                "mu": 1.0,
                "prior": 0.5,
                "n": 2000,
                "method": "discrete",
                "n_bins": bins,
                "draws": extra_draws,
            }
        )
    # bandwidth rule: Scott vs the default n^(-1/3)
    for mu in (2.0, 3.0):
        for bw in ("scott", "undersmoothed"):
            cases.append(
                {
                    "block": "bandwidth",
                    "dist": "gauss",
                    "mu": mu,
                    "prior": 0.5,
                    "n": 10_000,
                    "method": "kde",
                    "bandwidth": bw,
                    "draws": extra_draws,
                }
            )
    # the paper's design: members drawn with the prior (N1 = pN)
    for method in ("discrete", "kde"):
        for mu in (1.0, 2.0):
            cases.append(
                {
                    "block": "design_N1=pN",
                    "dist": "gauss",
                    "mu": mu,
                    "prior": 0.2,
                    "n": 2000,
                    "member_share": 0.2,
                    "method": method,
                    "draws": extra_draws,
                }
            )
    # combined queries of correlated attacks (each attack alone: mu = 1)
    for method in ("discrete", "kde"):
        cases.append(
            {
                "block": "2d",
                "dist": "gaussNd",
                "d": 2,
                "prior": 0.5,
                "n": 2000,
                "method": method,
                "draws": max(50, extra_draws // 2),
            }
        )
        cases.append(
            {
                "block": "4d",
                "dist": "gaussNd",
                "d": 4,
                "prior": 0.5,
                "n": 10_000,
                "method": method,
                "draws": max(50, extra_draws // 4),
            }
        )
    return cases


def print_table(rows: list[dict]) -> None:
    head = (
        f"{'block':<13}{'case':<12}{'method':<9}{'p':>4}{'N':>7}{'truth':>7}{'mean':>7}"
        f"{'bias':>8}{'rmse':>7}{'cov':>6}{'cov_up':>7}{'cov_lo':>7}{'cov_perm':>9}{'width':>7}"
        f"{'w_perm':>7}{'nullb':>7}{'ms':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        case = {"gauss": f"mu={r.get('mu', '')}", "pmf": "pmf4", "gaussNd": f"{r.get('d')}d mu=1"}[
            r["dist"]
        ]
        if "n_bins" in r:
            case += f" k={r['n_bins']}"
        if "bandwidth" in r:
            case += f" {r['bandwidth'][:5]}"
        print(
            f"{r['block']:<13}{case:<12}{r['method']:<9}{r['prior']:>4}{r['n']:>7}"
            f"{r['truth']:>7.3f}{r['mean_estimate']:>7.3f}{r['bias']:>+8.3f}{r['rmse']:>7.3f}"
            f"{r['coverage']:>6.3f}{r['coverage_upper']:>7.3f}{r['coverage_lower']:>7.3f}"
            f"{r['coverage_permutation_lower']:>9.3f}{r['mean_width']:>7.3f}"
            f"{r['mean_width_permutation_lower']:>7.3f}{r['null_bias']:>7.3f}"
            f"{r['ms_per_estimate']:>7.1f}"
        )


def speed_check() -> dict:
    """Estimate + 200 permutations on N = 20,000 1-d scores, BLAS on both cores (run alone)."""
    rng = np.random.default_rng(0)
    z = np.r_[rng.normal(1.0, 1.0, 10_000), rng.normal(0.0, 1.0, 10_000)]
    m = np.r_[np.ones(10_000), np.zeros(10_000)]
    out = {}
    for method in ("discrete", "kde"):
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            estimate_advantage(z, m, method=method, n_permutations=200)
            times.append(time.perf_counter() - t0)
        out[f"{method}_1d_n20000_b200_seconds"] = min(times)
    z2 = np.c_[z, 0.5 * z + rng.normal(size=z.size)]
    t0 = time.perf_counter()
    estimate_advantage(z2, m, method="kde", n_permutations=200)
    out["kde_2d_n20000_b200_seconds"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--extra-draws", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    for mu in (0.5, 1.0, 2.0):
        for p in (0.5, 0.2):
            assert abs(truth_gauss(mu, p) - truth_quad(mu, p)) < 1e-8

    cases = build_cases(args.draws, args.extra_draws)
    chunk = 50
    tasks = [
        (i, c, s, min(chunk, c["draws"] - s))
        for i, c in enumerate(cases)
        for s in range(0, c["draws"], chunk)
    ]
    # largest first so the two workers finish together
    tasks.sort(key=lambda t: -t[1]["n"] * (10 if t[1]["dist"] == "gaussNd" else 1))
    records: dict[int, list[dict]] = {i: [] for i in range(len(cases))}
    t0 = time.perf_counter()
    with mp.get_context("fork").Pool(args.workers) as pool:
        for idx, recs in pool.imap_unordered(run_task, tasks):
            records[idx].extend(recs)
    wall = time.perf_counter() - t0
    rows = [summarise(c, records[i]) for i, c in enumerate(cases)]
    print_table(rows)
    os.environ["OPENBLAS_NUM_THREADS"] = (
        "2"  # (only affects a fresh BLAS; the speed check is 1-d anyway)
    )
    speed = speed_check()
    print(
        f"\nsimulation wall time {wall:.0f} s on {args.workers} workers; speed: "
        + ", ".join(f"{k}={v:.2f}" for k, v in speed.items())
    )

    worst = min((r for r in rows if r["block"] == "main"), key=lambda r: r["coverage"])
    result = {
        "what": "coverage, bias and speed of MACE advantage estimators on simulated scores with "
        "known truth",
        "delta": DELTA,
        "nominal_coverage": 1 - DELTA,
        "n_permutations": N_PERMUTATIONS,
        "note": (
            "the benchmark uses 50 label permutations per estimate (library default 200) to "
            "keep the run short; only bias / lower_permutation depend on it. lower = split "
            "bound (default); coverage_permutation_lower uses max(|2p-1|, estimate - radius - "
            "bias) instead. Balanced targets (N1 = N0) unless member_share is given."
        ),
        "draws_main": args.draws,
        "draws_extra": args.extra_draws,
        "simulation_wall_seconds": wall,
        "workers": args.workers,
        "speed": speed,
        "worst_main_coverage": {
            "coverage": worst["coverage"],
            "setting": {k: worst.get(k) for k in ("dist", "mu", "prior", "n", "method")},
        },
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "numpy": np.__version__,
        },
        "results": rows,
    }
    out = ROOT / "benchmarks" / "results" / "mace_coverage.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
