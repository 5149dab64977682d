"""The generator-aware test: its level, its power, its speed and the time of a whole gate.

Three parts (``--part``), each appending one JSON line per gate to
``benchmarks/results/shadow_gate_runs.jsonl`` and rewriting the summary
``benchmarks/results/shadow_gate.json`` (Wilson 95 % intervals per cell):

- ``validity``: releases of generators that cannot single anyone out (MST at epsilon 0.1 and 1)
  and GaussianCopula / TVAE at their defaults, at 150, 500 and 2,000 training rows (holdout and
  reference a third of that each, as the default split), judged by the whole default gate with
  the recipe known and ``shadow.enabled: true``. Per cell: how often the generator-aware test
  alone rejects at its review share and at 5 % (its p-value), how often the gate approves.
- ``level``: the same releases judged by the generator-aware test alone (at the share of the
  review budget it has in the gate): its own rejection rate, cheaper than whole gates.
- ``power``: memorising generators (``smote``: every row between two neighbouring training
  records; ``noisy_copy`` at 0.3 sd) at 500 and 2,000 rows, each release judged twice: with the
  recipe known and by the holdout-calibrated gate alone; the named records' false discovery
  proportion against the records the generator really started rows from.
- ``speed``: shadow fits per second on CPU (and on CUDA when torch sees one) for MST and
  GaussianCopula, and the wall time of a 1,000-row MST release gated with K = 64 fits on two
  processes (``--jobs 2``).

``python benchmarks/bench_shadow_gate.py --part validity --tables adult flchain pbc --rows 150 500
--generators mst:0.1 mst:1 --seeds 0 19 --jobs 1``
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, machine  # noqa: E402

RUNS = ROOT / "benchmarks" / "results" / "shadow_gate_runs.jsonl"
#: reasons that say nothing about what a release reveals: its worth, and a small table's floors
NOT_A_PRIVACY_FINDING = ("utility.", "insufficient_evidence.", "power.")
SUMMARY = ROOT / "benchmarks" / "results" / "shadow_gate.json"


def recipe(token: str) -> tuple[str, dict]:
    """``mst:1`` -> ("mst", {"epsilon": 1.0}); ``noisy_copy:0.3`` -> noise 0.3; others: defaults."""
    name, _, value = token.partition(":")
    if name == "mst":
        return name, {"epsilon": float(value or 1.0)}
    if name == "noisy_copy":
        return name, {"noise": float(value or 0.3), "flip": float(value or 0.3)}
    if name == "tvae" and value:
        return name, {"epochs": int(value)}
    return name, {}


def splits_of(table: str, n: int, seed: int):
    from benchmarks.calibration_tables import load
    from privacy_gate.data import Splits

    df, spec = load(table)
    h = n // 3
    if n + 2 * h > len(df):
        raise ValueError(f"{table} has {len(df)} rows, {n + 2 * h} needed")
    order = np.random.default_rng(10_000 + seed).permutation(len(df))
    train, holdout, ref = (df.iloc[order[a:b]] for a, b in ((0, n), (n, n + h), (n + h, n + 2 * h)))
    return Splits(train=train, holdout=holdout, reference=ref), spec


def one_gate(
    table: str, n: int, token: str, seed: int, *, jobs: int, max_fits: int, beside: bool
) -> dict:
    from privacy_gate.config import ShadowConfig
    from privacy_gate.errors import DataError
    from privacy_gate.generators import create_generator
    from privacy_gate.pipeline.evaluate import evaluate

    splits, spec = splits_of(table, n, seed)
    name, params = recipe(token)
    gen = create_generator(name, **params, seed=seed).fit(
        splits.train, spec, reference=splits.reference
    )
    synthetic = gen.sample(n, seed=seed)
    kw = dict(
        train=splits.train,
        holdout=splits.holdout,
        reference=splits.reference,
        synthetic=synthetic,
        spec=spec,
    )
    cell = {"table": table, "n_train": n, "generator": token, "seed": seed}
    started = time.perf_counter()
    try:
        result = evaluate(
            **kw,
            generator=name,
            generator_params=params,
            shadow=ShadowConfig(enabled=True, max_fits=max_fits, jobs=jobs),
        )
    except DataError as exc:  # the gate refuses the inputs (the splits, the release): a BLOCK
        return {
            **cell,
            "decision": "BLOCK",
            "reasons": ["refused"],
            "refused": str(exc),
            "seconds": round(time.perf_counter() - started, 1),
            "shadow": {},
            "shadow_review_level": None,
            "shadow_rejects": False,
            "insufficient_only": False,
        }
    v = result.verdict
    seconds = time.perf_counter() - started
    tests = {t["name"]: t for t in v.budget.get("tests", [])}
    shadow = tests.get("shadow", {})
    row = {
        **cell,
        "decision": v.decision,
        "reasons": sorted({c.key for c in v.reasons}),
        "seconds": round(seconds, 1),
        "shadow": {
            k.removeprefix("shadow."): val
            for k, val in v.metrics.items()
            if k.startswith("shadow.")
        },
        "shadow_review_level": shadow.get("review_level"),
        "shadow_rejects": bool(shadow)
        and shadow.get("pvalue") is not None
        and shadow["pvalue"] <= shadow["review_level"],
        "insufficient_only": v.decision == "REVIEW"
        and all(
            "insufficient_evidence" in c.key or c.metric == "power.detectable_auc"
            for c in v.reasons
        ),
    }
    sources = getattr(gen, "sampled_from_", None)  # training positions the release's rows copy
    if sources is not None and result.shadow is not None:
        named = set(result.shadow.records.loc[result.shadow.records["named"], "row_id"].astype(int))
        # row ids are positions in train (train first)
        copied = {int(i) for i in np.unique(sources)}
        # a SMOTE row also lies near the record it moves towards: that record is reproduced too
        near = copied | {int(i) for i in np.unique(getattr(gen, "towards_", []))}
        row["named_fdp_start_only"] = len(named - copied) / len(named) if named else None
        row["named_fdp"] = len(named - near) / len(named) if named else None
        row["copied"] = len(copied)
    if beside:
        alone = evaluate(**kw).verdict
        row["holdout_only_decision"] = alone.decision
        row["holdout_only_reasons"] = sorted({c.key for c in alone.reasons})
    return row


def test_alone(table: str, n: int, token: str, seed: int, *, jobs: int, max_fits: int) -> dict:
    """The generator-aware test alone on one release, at the share of the review budget it has in
    a default gate (the whole gate's other stages skipped: the test's own level is what is
    asked)."""
    from privacy_gate.config import BUDGET_TESTS, BudgetConfig, ShadowConfig
    from privacy_gate.experiment.shadow_gate import run_shadow_test
    from privacy_gate.gate.budget import test_levels
    from privacy_gate.generators import create_generator, generator_capabilities

    splits, spec = splits_of(table, n, seed)
    name, params = recipe(token)
    gen = create_generator(name, **params, seed=seed).fit(
        splits.train, spec, reference=splits.reference
    )
    synthetic = gen.sample(n, seed=seed)
    # as the gate's stage: the reference joins the pool only when the recipe does not read it
    with_reference = not generator_capabilities(name).uses_reference
    share = test_levels(BudgetConfig(), list(BUDGET_TESTS))["shadow"][0]
    started = time.perf_counter()
    r = run_shadow_test(
        splits,
        synthetic,
        spec,
        generator=name,
        params=params,
        config=ShadowConfig(max_fits=max_fits, jobs=jobs),
        review_level=share,
        power=0.9,
        q=0.05,
        seed=seed,
        calibration_reference=with_reference,
        draw_reference=True,
    )
    return {
        "table": table,
        "n_train": n,
        "generator": token,
        "seed": seed,
        "decision": None,
        "reasons": [],
        "seconds": round(time.perf_counter() - started, 1),
        "shadow": r.metrics(),
        "shadow_review_level": share,
        "shadow_rejects": bool(r.pvalue <= share),
        "insufficient_only": False,
    }


def wilson(k: int, n: int) -> list[float]:
    from benchmarks.bench_calibration import wilson as interval

    lo, hi = interval(k, n)
    return [round(float(lo), 3), round(float(hi), 3)]


def summarise() -> dict:
    rows = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
    cells: dict[tuple, list[dict]] = {}
    seen = set()
    for r in rows:
        key = (r["part"], r["table"], r["n_train"], r["generator"], r["seed"])
        if key in seen:  # a seed run twice (two processes on one part) counts once
            continue
        seen.add(key)
        cells.setdefault((r["part"], r["table"], r["n_train"], r["generator"]), []).append(r)
    out = []
    for (part, table, n, gen), rs in sorted(cells.items()):
        k = len(rs)
        approve = sum(r["decision"] == "APPROVE" for r in rs) if part != "level" else None
        rej = sum(r["shadow_rejects"] for r in rs)
        privacy = sum(
            r["decision"] != "APPROVE"
            and "refused" not in r
            and any(not key.startswith(NOT_A_PRIVACY_FINDING) for key in r["reasons"])
            for r in rs
        )
        rej05 = sum((r["shadow"].get("pvalue", 1.0) or 1.0) <= 0.05 for r in rs)
        cell = {
            "part": part,
            "table": table,
            "n_train": n,
            "generator": gen,
            "seeds": k,
            "approved": approve,
            "approved_wilson": wilson(approve, k) if approve is not None else None,
            "insufficient_only": sum(r["insufficient_only"] for r in rs),
            "blocked": sum(r["decision"] == "BLOCK" for r in rs),
            "shadow_rejects_at_share": rej,
            "shadow_rejects_at_share_wilson": wilson(rej, k),
            "shadow_rejects_at_0.05": rej05,
            "shadow_rejects_at_0.05_wilson": wilson(rej05, k),
            "not_approved": None if approve is None else k - approve,
            "not_approved_wilson": None if approve is None else wilson(k - approve, k),
            # held back for what the release reveals: a reason beyond the utility bar (DP noise
            # on a few hundred rows can leave the marginals below it, a finding about the
            # release's worth) and beyond insufficient evidence (a small table's floors)
            "held_back_for_privacy": None if approve is None else privacy,
            "held_back_for_privacy_wilson": None if approve is None else wilson(privacy, k),
            # inputs the gate refuses before judging (say a release column left all missing)
            "refused": sum("refused" in r for r in rs),
            "utility_only": None
            if approve is None
            else sum(
                r["decision"] != "APPROVE"
                and all(key.startswith("utility.") for key in r["reasons"])
                for r in rs
            ),
            "median_fits": float(np.median([r["shadow"].get("fits", 0) for r in rs])),
            "median_seconds": float(np.median([r["seconds"] for r in rs])),
            "seed_range": [min(r["seed"] for r in rs), max(r["seed"] for r in rs)],
        }
        if any("holdout_only_decision" in r for r in rs):
            alone = sum(r.get("holdout_only_decision") != "APPROVE" for r in rs)
            cell["holdout_only_not_approved"] = alone
            cell["holdout_only_not_approved_wilson"] = wilson(alone, k)
        fdp = [r["named_fdp"] for r in rs if r.get("named_fdp") is not None]
        if fdp:
            cell["named_mean"] = float(np.mean([r["shadow"].get("named", 0) for r in rs]))
            cell["named_fdp_mean"] = float(np.mean(fdp))
        out.append(cell)
    payload = {"machine": machine(), "cells": out}
    SUMMARY.write_text(json.dumps(payload, indent=1) + "\n")
    return payload


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--part", choices=["validity", "level", "power", "speed", "summary"], required=True
    )
    parser.add_argument("--tables", nargs="+", default=["adult"])
    parser.add_argument("--rows", nargs="+", type=int, default=[500])
    parser.add_argument("--generators", nargs="+", default=["mst:1"])
    parser.add_argument("--seeds", nargs=2, type=int, default=[0, 9], help="first and last seed")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--max-fits", type=int, default=256)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    if args.part == "summary":
        print(json.dumps(summarise()["cells"], indent=1))
        return
    if args.part == "speed":
        print(json.dumps(speed(args), indent=1))
        return
    RUNS.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if RUNS.exists():
        done = {
            (r["part"], r["table"], r["n_train"], r["generator"], r["seed"])
            for r in map(json.loads, filter(str.strip, RUNS.read_text().splitlines()))
        }
    for table in args.tables:
        for n in args.rows:
            for token in args.generators:
                for seed in range(args.seeds[0], args.seeds[1] + 1):
                    if (args.part, table, n, token, seed) in done:
                        continue
                    if args.part == "level":
                        row = {
                            "part": "level",
                            **test_alone(
                                table, n, token, seed, jobs=args.jobs, max_fits=args.max_fits
                            ),
                        }
                    else:
                        row = {
                            "part": args.part,
                            **one_gate(
                                table,
                                n,
                                token,
                                seed,
                                jobs=args.jobs,
                                max_fits=args.max_fits,
                                beside=args.part == "power",
                            ),
                        }
                    with RUNS.open("a") as fh:
                        fh.write(json.dumps(row) + "\n")
                    print(
                        f"{table} {n} {token} seed {seed}: {row['decision']} shadow p "
                        f"{row['shadow'].get('pvalue')} fits {row['shadow'].get('fits')} "
                        f"({row['seconds']} s) {row.get('holdout_only_decision', '')}",
                        flush=True,
                    )
    summarise()


def speed(args) -> dict:
    """Fits per second of the shadow fits on this machine, and a whole 1,000-row MST gate with
    K = 64."""
    import torch

    from privacy_gate.config import ShadowConfig
    from privacy_gate.experiment.shadow_gate import run_shadow_test
    from privacy_gate.generators import create_generator
    from privacy_gate.pipeline.evaluate import evaluate

    out = {"machine": machine(), "cuda": torch.cuda.is_available(), "rates": []}
    for token, n in (("mst:1", 1000), ("gaussian_copula", 1000)):
        splits, spec = splits_of("adult", n, 0)
        name, params = recipe(token)
        syn = (
            create_generator(name, **params, seed=0)
            .fit(splits.train, spec, reference=splits.reference)
            .sample(n)
        )
        r = run_shadow_test(
            splits,
            syn,
            spec,
            generator=name,
            params=params,
            config=ShadowConfig(max_fits=32, jobs=args.jobs),
            review_level=0.0,
            power=0.9,
            q=0.05,
            seed=0,
            calibration_reference=True,
        )
        out["rates"].append(
            {
                "generator": token,
                "n_train": n,
                "fits": r.fits,
                "seconds": round(r.seconds, 1),
                "fits_per_second": round(r.fits / r.seconds, 2),
                "device": "cpu",
                "jobs": args.jobs,
            }
        )
    splits, spec = splits_of("adult", 1000, 1)
    syn = (
        create_generator("mst", epsilon=1.0, seed=1)
        .fit(splits.train, spec, reference=splits.reference)
        .sample(1000)
    )
    started = time.perf_counter()
    v = evaluate(
        train=splits.train,
        holdout=splits.holdout,
        reference=splits.reference,
        synthetic=syn,
        spec=spec,
        generator="mst",
        generator_params={"epsilon": 1.0},
        shadow=ShadowConfig(enabled=True, max_fits=64, jobs=2, stop_early=False),
    ).verdict
    out["gate_1000_mst_k64"] = {
        "seconds": round(time.perf_counter() - started, 1),
        "decision": v.decision,
        "fits": v.metrics.get("shadow.fits"),
        "jobs": 2,
    }
    path = ROOT / "benchmarks" / "results" / "shadow_speed.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
