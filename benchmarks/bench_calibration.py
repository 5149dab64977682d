"""Calibration of the whole gate: how often a clean release is held back, how often a leak gets
through, and whether the records it names are the copied ones.

Every release comes from ``benchmarks/calibration_scenarios.py`` (nulls and 14 leak shapes) on the
tables of ``benchmarks/calibration_tables.py`` (Adult plus four R data sets), and is judged by the
public in-process API ``privacy_gate.evaluate(train, holdout, reference, synthetic, spec)`` with
its defaults: whatever decision procedure the checked-out commit has. Per gate it records the
decision, status, failing checks (key, action, observed, threshold), seconds, and for leaks the
records named (the member scan's and the target-level discoveries) against the copied training
rows: count named, true, false-discovery proportion (FDP).

Summary per table x n_train x cell: approved share with a Wilson 95 % interval and the BLOCK
share; for leaks the not-approved share (power) with its interval. ``--baselines`` judges the same
releases with SDMetrics' DCR metrics and a DCR threshold gate in the manner of AWS Clean Rooms ML
(``benchmarks/calibration_baselines.py``: thresholds stated there and in the JSON).

Default grid: nulls 25 seeds, leaks 10 seeds, n_train 2,000 and 12,000 (capped by the table: a
small table is split 2 : 1 : 1 : 2 into train, holdout, reference and population; a request that
caps to the same size as a smaller one is run once). Resumable: every gate is appended to
``benchmarks/results/<out>.jsonl`` as it finishes, and a rerun skips what is there
(``--fresh`` starts over). The JSON (``<out>.json``) has the commit and the command line.

    python benchmarks/bench_calibration.py --tables adult --cells null-independent near-copy-5% \\
        --seeds 0 --n-train 2000 [--baselines] [--jobs 2] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import subprocess
import sys
import time
import traceback
import warnings
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import RESULTS, ROOT, record
from benchmarks.calibration_scenarios import CELLS, LEAK_CELLS, NULL_CELLS
from benchmarks.calibration_tables import CALIBRATION, TABLES

NULL_SEEDS = range(25)
_RUN_GIT: dict | None = None  # set in main() before any gate runs; workers inherit it (fork)
LEAK_SEEDS = range(10)
FDR_TARGET = 0.05


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


#: reasons that are not evidence of a leak: too little data to judge (insufficient evidence, the
#: power check) and requirements outside the error budget (utility, validation)
NOT_SIGNAL_PREFIXES = ("insufficient_evidence.", "power.", "utility.", "validation.")


def signal_reasons(row: dict) -> list[str]:
    """The reasons of a verdict that are evidence of a leak (the error budget's false alarms when
    the release is clean): everything but insufficient evidence and requirements; a gate error
    (empty key) counts, as it fails closed."""
    return sorted(
        {c["key"] for c in row.get("reasons", []) if not c["key"].startswith(NOT_SIGNAL_PREFIXES)}
    )


def _naming(named, copied, n_train: int) -> dict:
    """Named training positions against the copied ones (``copied`` None: a null, all false)."""
    import numpy as np

    named = np.asarray(named, dtype=int)
    named = named[named < n_train]  # row ids: positions in train come first
    true = 0 if copied is None else int(np.isin(named, copied).sum())
    return {
        "named": int(named.size),
        "true": true,
        "fdp": (named.size - true) / named.size if named.size else 0.0,
        "recall": None if copied is None or not len(copied) else true / len(copied),
    }


def run_one(table: str, cell: str, seed: int, n_train: int, baselines: bool) -> dict:
    """One release judged by the gate (and the baselines); never raises."""
    warnings.filterwarnings("ignore")
    logging.getLogger("privacy_gate").setLevel(logging.ERROR)
    from benchmarks.calibration_scenarios import NotApplicable, make_release

    row = {
        "key": key(table, cell, seed, n_train),
        "table": table,
        "cell": cell,
        "seed": seed,
        "n_train_requested": n_train,
        "kind": "null" if cell in NULL_CELLS else "leak",
        "git": _RUN_GIT,
    }  # the code that judged this release (a resumed grid mixes commits)
    t0 = time.perf_counter()
    try:
        rel = make_release(table, cell, seed, n_train)
    except NotApplicable as exc:
        return row | {"decision": None, "status": "not_applicable", "note": str(exc)}
    except Exception as exc:  # noqa: BLE001 - one failed release must not stop the grid
        return row | {
            "decision": None,
            "status": "harness_error",
            "note": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=5),
        }
    row |= {
        "n_train": rel.n_train,
        "n_synthetic": len(rel.synthetic),
        "release_seconds": round(time.perf_counter() - t0, 2),
        "copied": None if rel.copied is None else int(len(rel.copied)),
        "info": {k: v for k, v in rel.info.items() if k != "units"},
    }
    from privacy_gate import evaluate

    t1 = time.perf_counter()
    try:
        result = evaluate(
            train=rel.train,
            holdout=rel.holdout,
            reference=rel.reference,
            synthetic=rel.synthetic,
            spec=rel.spec,
        )
    except Exception as exc:  # noqa: BLE001 - evaluate fails closed itself; this is a harness-side failure
        return row | {
            "decision": None,
            "status": "harness_error",
            "seconds": round(time.perf_counter() - t1, 2),
            "note": f"{type(exc).__name__}: {exc}",
            "traceback": traceback.format_exc(limit=5),
        }
    v = result.verdict
    row |= {
        "decision": v.decision,
        "status": v.status,
        "seconds": round(time.perf_counter() - t1, 2),
        "reasons": [
            {
                "key": c.key,
                "action": c.action,
                "observed": c.observed,
                "threshold": c.threshold,
                "message": c.message[:300],
            }
            for c in v.reasons
        ],
        # every budget test's p-value: how far each release was from its level, not only the
        # decision
        "pvalues": {t["name"]: t["pvalue"] for t in (v.budget or {}).get("tests", [])},
        # the membership test's two-sided ensemble alone: its false-alarm rate measured by
        # itself
        "ensemble": {
            k: result.metrics.get(f"membership.{k}") for k in ("ensemble_pvalue", "ensemble_auc")
        },
    }
    naming = {}
    if result.scan is not None:
        naming["scan"] = _naming(result.scan.discoveries, rel.copied, rel.n_train)
    if result.exposure is not None:
        naming["targets"] = _naming(result.exposure.discoveries, rel.copied, rel.n_train)
        if rel.copied is not None:  # copied records that were member targets at all
            import numpy as np

            tested = result.exposure.records["row_id"].to_numpy()
            naming["targets"]["copied_tested"] = int(np.isin(rel.copied, tested).sum())
    row["naming"] = naming
    if baselines:
        try:
            from benchmarks.calibration_baselines import run_baselines

            row["baselines"] = run_baselines(rel)
        except Exception as exc:  # noqa: BLE001
            row["baselines"] = {"error": f"{type(exc).__name__}: {exc}"}
    return row


def key(table: str, cell: str, seed: int, n_train: int) -> str:
    return f"{table}|{cell}|{seed}|{n_train}"


def effective_n(table: str, n_train: int) -> int:
    from benchmarks.calibration_scenarios import split_sizes
    from benchmarks.calibration_tables import load

    df, spec = load(table)
    if spec.entity_id is None:
        return split_sizes(len(df), n_train)[0]
    units = df[spec.entity_id].nunique()
    return split_sizes(units, int(round(n_train / (len(df) / units))))[0]


def distinct_sizes(table: str, n_trains) -> list[int]:
    """The requested training sizes, less those the table caps to a size already in the list."""
    out, seen = [], set()
    for n in sorted(n_trains):
        eff = effective_n(table, n)
        if eff not in seen:
            seen.add(eff)
            out.append(n)
    return out


def plan(args) -> list[tuple[str, str, int, int]]:
    jobs = []
    for table in args.tables:
        for n in distinct_sizes(table, args.n_train):
            for cell in args.cells:
                seeds = (
                    args.seeds
                    if args.seeds is not None
                    else (NULL_SEEDS if cell in NULL_CELLS else LEAK_SEEDS)
                )
                jobs += [(table, cell, s, n) for s in seeds]
    return jobs


# ---------------------------------------------------------------------------------------- summary


def summarise(rows: list[dict]) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["table"], r["n_train_requested"], r["cell"])].append(r)
    order = {c: i for i, c in enumerate(CELLS)}
    out = []
    for (table, n_req, cell), rs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], order[kv[0][2]])
    ):
        judged = [r for r in rs if r.get("decision")]
        n = len(judged)
        approved = sum(r["decision"] == "APPROVE" for r in judged)
        block = sum(r["decision"] == "BLOCK" for r in judged)
        s = {
            "table": table,
            "n_train_requested": n_req,
            "n_train": judged[0]["n_train"] if judged else None,
            "cell": cell,
            "kind": "null" if cell in NULL_CELLS else "leak",
            "n": n,
            "not_applicable": sum(r["status"] == "not_applicable" for r in rs),
            "harness_errors": sum(r["status"] == "harness_error" for r in rs),
            "gate_errors": sum(r.get("status") in ("error", "invalid_input") for r in judged),
            "approved": approved,
            "approved_share": approved / n if n else None,
            "approved_ci": wilson(approved, n),
            "block": block,
            "block_share": block / n if n else None,
            "seconds_mean": sum(r["seconds"] for r in judged) / n if n else None,
        }
        if s["kind"] == "leak":
            s |= {
                "not_approved_share": (n - approved) / n if n else None,
                "not_approved_ci": wilson(n - approved, n),
            }
            for where in ("scan", "targets"):
                nm = [r["naming"][where] for r in judged if where in r.get("naming", {})]
                if nm:
                    named = sum(x["named"] for x in nm)
                    s[f"{where}_named_mean"] = named / len(nm)
                    s[f"{where}_fdp_mean"] = sum(x["fdp"] for x in nm) / len(nm)
                    s[f"{where}_fdp_pooled"] = (
                        (named - sum(x["true"] for x in nm)) / named if named else 0.0
                    )
                    s[f"{where}_recall_mean"] = sum(x["recall"] or 0 for x in nm) / len(nm)
        elif judged:
            s["scan_named_any"] = sum(
                r.get("naming", {}).get("scan", {}).get("named", 0) > 0 for r in judged
            )
        keys = defaultdict(int)
        for r in judged:
            for k in {c["key"] or "gate-error" for c in r.get("reasons", [])}:
                keys[k] += 1
        s["reason_counts"] = dict(sorted(keys.items(), key=lambda kv: -kv[1]))
        s["leak_signal"] = sum(bool(signal_reasons(r)) for r in judged)
        bl = [r["baselines"] for r in judged if "baselines" in r and "error" not in r["baselines"]]
        if bl:
            s["baselines"] = {
                name: {
                    "n": len(bl),
                    "passed_share": sum(b[name]["passed"] for b in bl) / len(bl),
                    "passed_ci": wilson(sum(b[name]["passed"] for b in bl), len(bl)),
                }
                for name in ("sdm_baseline", "sdm_overfitting", "dcr_gate")
            }
        out.append(s)
    return out


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def _ci(ci) -> str:
    return (
        "" if ci is None or any(map(math.isnan, ci)) else f" [{100 * ci[0]:.0f}, {100 * ci[1]:.0f}]"
    )


def print_summary(summary: list[dict]) -> None:
    print(
        f"\n{'table':<17}{'n_train':>8} {'cell':<17}{'n':>4}  "
        f"{'approved [95% CI]':<20}{'BLOCK':>6}  "
        f"{'not approved [95% CI]':<22}{'named':>6}{'FDP':>6}{'s/gate':>7}  top reasons"
    )
    for s in summary:
        power = (
            f"{_pct(s['not_approved_share'])}{_ci(s['not_approved_ci'])}"
            if s["kind"] == "leak"
            else ""
        )
        named = s.get("scan_named_mean")
        fdp = s.get("scan_fdp_pooled")
        extra = (
            ""
            if not (s["not_applicable"] or s["harness_errors"])
            else f" (n/a {s['not_applicable']}, errors {s['harness_errors']})"
        )
        reasons = ", ".join(f"{k} {v}" for k, v in list(s["reason_counts"].items())[:3])
        secs = "" if s["seconds_mean"] is None else f"{s['seconds_mean']:.1f}"
        print(
            f"{s['table']:<17}{s['n_train'] or 0:>8} {s['cell']:<17}{s['n']:>4}  "
            f"{_pct(s['approved_share']) + _ci(s['approved_ci']):<20}{_pct(s['block_share']):>6}"
            f"  {power:<22}{'' if named is None else f'{named:.0f}':>6}"
            f"{'' if fdp is None else f'{fdp:.2f}':>6}{secs:>7}  {reasons}{extra}"
        )
        if "baselines" in s:
            b = s["baselines"]
            print(
                f"{'':<17}{'':>8} {'  passed by:':<17}{'':>4}  SDMetrics DCRBaselineProtection "
                f"{_pct(b['sdm_baseline']['passed_share'])}, DCROverfittingProtection "
                f"{_pct(b['sdm_overfitting']['passed_share'])}, DCR threshold gate "
                f"{_pct(b['dcr_gate']['passed_share'])}"
            )


def markdown(summary: list[dict]) -> str:
    has_bl = any("baselines" in s for s in summary)
    head = [
        "table",
        "n_train",
        "release",
        "n",
        "approved [95% CI]",
        "BLOCK",
        "not approved [95% CI]",
        "named (scan)",
        "FDP (scan)",
    ]
    if has_bl:
        head += [
            "SDMetrics DCRBaseline passes",
            "SDMetrics DCROverfitting passes",
            "DCR threshold gate passes",
        ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summary:
        leak = s["kind"] == "leak"
        cells = [
            s["table"],
            str(s["n_train"]),
            s["cell"],
            str(s["n"]),
            _pct(s["approved_share"]) + _ci(s["approved_ci"]),
            _pct(s["block_share"]),
            _pct(s["not_approved_share"]) + _ci(s["not_approved_ci"]) if leak else "",
            f"{s['scan_named_mean']:.0f}" if leak and "scan_named_mean" in s else "",
            f"{s['scan_fdp_pooled']:.2f}" if leak and "scan_fdp_pooled" in s else "",
        ]
        if has_bl:
            b = s.get("baselines")
            cells += [
                _pct(b[k]["passed_share"]) if b else ""
                for k in ("sdm_baseline", "sdm_overfitting", "dcr_gate")
            ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def side_by_side(summary: list[dict]) -> str:
    """The gate and the distance-based checks on the same releases: how many each lets through
    (right for a clean release, wrong for a leak)."""
    rows = [s for s in summary if "baselines" in s]
    if not rows:
        return ""
    lines = [
        "| table | rows | release | n | privacy-gate approves | SDMetrics DCRBaselineProtection "
        "passes | "
        "SDMetrics DCROverfittingProtection passes | DCR threshold gate (AWS-style) passes |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for s in rows:
        b, n = s["baselines"], s["n"]
        passes = lambda k, b=b: f"{round(b[k]['passed_share'] * b[k]['n'])}/{b[k]['n']}"  # noqa: E731
        lines.append(
            f"| {s['table']} | {s['n_train']:,} | "
            f"{s['cell']}{' (clean)' if s['kind'] == 'null' else ''} | {n} | "
            f"{s['approved']}/{n} | {passes('sdm_baseline')} | "
            f"{passes('sdm_overfitting')} | {passes('dcr_gate')} |"
        )
    return "\n".join(lines)


def git_head() -> dict:
    def git(*a):
        try:
            return subprocess.run(
                ["git", "-C", str(ROOT), *a], capture_output=True, text=True, check=True
            ).stdout.strip()
        except Exception:  # noqa: BLE001
            return None

    return {
        "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument("--tables", nargs="+", default=list(CALIBRATION), choices=list(TABLES))
    ap.add_argument(
        "--cells",
        nargs="+",
        default=list(CELLS),
        choices=list(CELLS),
        help="releases: " + ", ".join(CELLS).replace("%", "%%") + " (also 'nulls' / 'leaks')",
    )
    ap.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=None,
        help=f"seeds for every cell (default: {len(NULL_SEEDS)} for nulls, {len(LEAK_SEEDS)} for "
        "leaks)",
    )
    ap.add_argument("--n-train", nargs="+", type=int, default=[2000, 12000])
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--out", default="calibration", help="results name under benchmarks/results/")
    ap.add_argument(
        "--baselines",
        action="store_true",
        help="also SDMetrics DCR metrics and a DCR threshold gate",
    )
    ap.add_argument(
        "--sdm-subsample",
        type=int,
        default=2000,
        help="SDMetrics' num_rows_subsample above this many rows (its DCR costs ~1 min per metric "
        "at 2,000)",
    )
    ap.add_argument("--markdown", action="store_true", help="print the summary as a markdown table")
    ap.add_argument(
        "--fresh", action="store_true", help="ignore (and replace) the results of an earlier run"
    )
    argv = sys.argv[1:] if argv is None else argv
    argv = [
        c
        for a in argv
        for c in ({"nulls": list(NULL_CELLS), "leaks": list(LEAK_CELLS)}.get(a, [a]))
    ]
    args = ap.parse_args(argv)

    global _RUN_GIT
    _RUN_GIT = git_head()
    os.environ["CALIB_SDM_SUBSAMPLE"] = str(
        args.sdm_subsample
    )  # read by calibration_baselines (workers inherit it)
    RESULTS.mkdir(parents=True, exist_ok=True)
    jsonl = RESULTS / f"{args.out}.jsonl"
    if args.fresh and jsonl.exists():
        jsonl.unlink()
    done: dict[str, dict] = {}
    if jsonl.exists():
        for line in jsonl.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                # a run without baselines is redone when baselines are asked for
                if not args.baselines or "baselines" in r or r.get("status") == "not_applicable":
                    done[r["key"]] = r
    todo = [j for j in plan(args) if key(*j) not in done]
    wanted = {key(*j) for j in plan(args)}
    print(
        f"{len(wanted)} gates planned, {len(wanted) - len(todo)} already in "
        f"{jsonl.relative_to(ROOT)}, {len(todo)} to run on {args.jobs} process(es)",
        flush=True,
    )

    def report(i: int, r: dict) -> None:
        done[r["key"]] = r
        with jsonl.open("a") as f:
            f.write(json.dumps(r, default=float) + "\n")
        if r.get("decision"):
            reasons = ",".join(sorted({c["key"] or "gate-error" for c in r["reasons"]}))
            if r["status"] != "ok":
                reasons += f" [{r['status']}: {r['reasons'][0]['message'][:120]}]"
            nm = r.get("naming", {}).get("scan")
            named = (
                ""
                if nm is None
                else f" named {nm['named']} (true {nm['true']}, FDP {nm['fdp']:.2f})"
            )
            bl = r.get("baselines")
            bls = (
                ""
                if not bl or "error" in bl
                else (
                    f" | SDM base {bl['sdm_baseline']['score']:.2f} over "
                    f"{bl['sdm_overfitting']['score']:.2f}"
                    f" DCR gate {'pass' if bl['dcr_gate']['passed'] else 'FAIL'} "
                    f"({sum(bl['seconds'].values()):.0f}s)"
                )
            )
            print(
                f"[{i}/{len(todo)}] {r['table']} n={r['n_train']} {r['cell']} seed {r['seed']}: "
                f"{r['decision']} {r['seconds']:.1f}s{named} {reasons[:160]}{bls}",
                flush=True,
            )
        else:
            print(
                f"[{i}/{len(todo)}] {r['table']} {r['cell']} seed {r['seed']}: {r['status']} "
                f"{r.get('note', '')[:200]}",
                flush=True,
            )

    t0 = time.perf_counter()
    if args.jobs <= 1:
        for i, j in enumerate(todo, 1):
            report(i, run_one(*j, args.baselines))
    else:
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core per worker
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(run_one, *j, args.baselines) for j in todo]
            for i, fut in enumerate(as_completed(futures), 1):
                report(i, fut.result())
    wall = time.perf_counter() - t0

    rows = [done[k] for k in done if k in wanted]
    summary = summarise(rows)
    print_summary(summary)
    nulls = [r for r in rows if r["kind"] == "null" and r.get("decision")]
    if nulls:
        a = sum(r["decision"] == "APPROVE" for r in nulls)
        b = sum(r["decision"] == "BLOCK" for r in nulls)
        lo, hi = wilson(a, len(nulls))
        print(
            f"\nnulls: {a} of {len(nulls)} approved ({100 * a / len(nulls):.1f}% [{100 * lo:.1f}, "
            f"{100 * hi:.1f}]), "
            f"{b} BLOCK ({100 * b / len(nulls):.1f}%) over {len({r['table'] for r in nulls})} "
            "table(s)"
        )
        enough = [
            r
            for r in nulls
            if not any(
                c["key"].startswith(("insufficient_evidence.", "power.")) for c in r["reasons"]
            )
        ]
        if len(enough) < len(nulls):
            a, b = (sum(r["decision"] == d for r in enough) for d in ("APPROVE", "BLOCK"))
            lo, hi = wilson(a, len(enough))
            print(
                f"nulls with enough data to judge (no insufficient-evidence reason): {a} of "
                f"{len(enough)} approved "
                f"({100 * a / max(1, len(enough)):.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]), {b} "
                "BLOCK, over "
                f"{len({r['table'] for r in enough})} table(s)"
            )
        alarms = sum(bool(signal_reasons(r)) for r in nulls)
        lo, hi = wilson(alarms, len(nulls))
        print(
            "nulls held back by a leak signal (the budget's false alarms; insufficient evidence "
            "and "
            f"requirements apart): {alarms} of {len(nulls)} ({100 * alarms / len(nulls):.1f}% "
            f"[{100 * lo:.1f}, "
            f"{100 * hi:.1f}])"
        )
    gated = [r["seconds"] for r in rows if r.get("seconds") is not None]
    if gated:
        print(
            f"gate seconds: mean {sum(gated) / len(gated):.1f}, max {max(gated):.1f} over "
            f"{len(gated)} gates; this run's wall time {wall:.0f}s"
        )
    md = markdown(summary)
    sbs = side_by_side(summary)
    if args.markdown:
        print("\n" + md)
        if sbs:
            print("\nSide by side (the same releases):\n\n" + sbs)
    from benchmarks.calibration_baselines import SETTINGS as BASELINE_SETTINGS

    commits = sorted({(r.get("git") or {}).get("commit") or "unrecorded" for r in rows})
    record(
        args.out,
        {
            "git": git_head(),
            "row_commits": commits,
            "command": " ".join([Path(sys.argv[0]).name, *argv]),
            "settings": {k: v for k, v in vars(args).items() if k not in ("fresh",)}
            | {"null_seeds_default": list(NULL_SEEDS), "leak_seeds_default": list(LEAK_SEEDS)},
            "tables": [TABLES[t].attribution() for t in args.tables],
            "baselines": BASELINE_SETTINGS if args.baselines else None,
            "summary": summary,
            "markdown": md,
            "side_by_side": sbs,
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
