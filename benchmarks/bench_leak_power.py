"""Power of the gate against leaks drawn from a grammar, on tables it was not tuned on.

Per (table, n_train, seed): ``--draws`` leaks from ``benchmarks/leak_grammar.py`` plus one null
(an independent population sample), each judged by ``privacy_gate.evaluate(...)`` with its
defaults. Quasi-identifiers, subgroups, the sensitive columns and linkability are UNDECLARED by
default (a data owner who declares nothing); ``--declared`` keeps the spec's declarations.

One JSON line per gate in ``benchmarks/results/<out>.jsonl`` (decision, reasons, p-values, the
drawn grammar, the information label, the share leaked, timings; never a record value), resumable:
a rerun skips the keys already there (``--fresh`` starts over). The summary ``<out>.json`` has
power (share not approved, Wilson 95 % interval) by bins of the information beyond natural twins
and by share leaked, for the DEVELOPMENT and REPORTED halves (``LEAK_DEVELOPMENT`` /
``LEAK_REPORTED`` in ``benchmarks/calibration_tables.py``) and per table, and the null approval
rate per table.

    python benchmarks/bench_leak_power.py --tables cps1988 flchain --n-train 2000 --seeds 0 1 2
    --draws 4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import RESULTS, ROOT, record
from benchmarks.bench_calibration import distinct_sizes, git_head, signal_reasons, wilson
from benchmarks.calibration_tables import LEAK_DEVELOPMENT, LEAK_REPORTED, TABLES
from benchmarks.leak_grammar import NAMED_SHAPES

#: bins of the median information beyond natural twins (bits per leaked record)
INFO_BINS = (float("-inf"), 0.0, 2.0, 5.0, 10.0, 20.0, float("inf"))
SHARE_BINS = (0.0, 0.01, 0.02, 0.05, 1.0)
#: the power criterion: leaks copying at least this share of the training records and telling at
#: least T bits beyond the natural twin per leaked record (median), for each T here
CRITERION_SHARE = 0.01
CRITERION_BITS = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0)
#: the criterion is also given apart for releases with at least this many training rows
CRITERION_LARGER = 5000
#: the power the criterion asks for (the share of such leaks not approved)
CRITERION_POWER = 0.9
SHAPE = "shape:"


def undeclared(spec):
    """The spec with nothing declared about the attacker or the groups to audit."""
    from privacy_gate.spec import DatasetSpec

    return DatasetSpec.model_validate(
        spec.model_dump()
        | {"quasi_identifiers": None, "subgroups": [], "sensitive": None, "linkability": None}
    )


def key(table: str, n_train: int, seed: int, draw: str) -> str:
    return f"{table}|{n_train}|{seed}|{draw}"


def release_for(table: str, n_train: int, seed: int, draw: str):
    """The release a key names: the null, a named shape or the ``draw``-th random leak."""
    from benchmarks.leak_grammar import make_leak, make_null

    if draw == "null":
        return make_null(table, seed, n_train)
    if draw.startswith(SHAPE):
        name = draw.removeprefix(SHAPE)
        # each shape its own seed stream, apart from the random draws' (0 .. draws - 1)
        stream = 1000 + list(NAMED_SHAPES).index(name)
        return make_leak(table, seed, n_train, stream, grammar=NAMED_SHAPES[name])
    return make_leak(table, seed, n_train, int(draw))


def run_one(table: str, n_train: int, seed: int, draw: str, declared: bool, run_git: dict) -> dict:
    from benchmarks.leak_grammar import NotDrawable

    row = {
        "key": key(table, n_train, seed, draw),
        "table": table,
        "n_train_requested": n_train,
        "seed": seed,
        "draw": draw,
        "kind": "null" if draw == "null" else "leak",
        "declared": declared,
        "git": run_git,
        "half": "development"
        if table in LEAK_DEVELOPMENT
        else "reported"
        if table in LEAK_REPORTED
        else "other",
    }
    t0 = time.perf_counter()
    try:
        rel = release_for(table, n_train, seed, draw)
    except NotDrawable as exc:
        return row | {"decision": None, "status": "not_drawable", "note": str(exc)}
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
        "cell": rel.cell,
        "grammar": rel.info["grammar"],
        "label": rel.info["label"],
        "release_seconds": round(time.perf_counter() - t0, 2),
    }
    from privacy_gate import evaluate

    t1 = time.perf_counter()
    try:
        result = evaluate(
            train=rel.train,
            holdout=rel.holdout,
            reference=rel.reference,
            synthetic=rel.synthetic,
            spec=rel.spec if declared else undeclared(rel.spec),
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
    return row | {
        "decision": v.decision,
        "status": v.status,
        "seconds": round(time.perf_counter() - t1, 2),
        "reasons": [
            {"key": c.key, "action": c.action, "observed": c.observed, "threshold": c.threshold}
            for c in v.reasons
        ],
        "pvalues": {t["name"]: t["pvalue"] for t in (v.budget or {}).get("tests", [])},
    }


def plan(args) -> list[tuple[str, int, int, str]]:
    draws = (
        [f"{SHAPE}{name}" for name in args.shapes]
        if args.shapes
        else [str(d) for d in range(args.draws)] + ["null"]
    )
    jobs = []
    for table in args.tables:
        for n in distinct_sizes(table, args.n_train):
            for s in args.seeds:
                jobs += [(table, n, s, d) for d in draws]
    return jobs


def relabel(jsonl: Path) -> int:
    """Bring every judged leak's label in ``jsonl`` to ``LABEL_VERSION``, in place (atomically).

    The label is a function of the release alone (no gate runs): the release is re-drawn from its
    key and checked against the row (cell, sizes, share) before its label is replaced. Leaks whose
    label the newer versions leave as it was (``label_changed``) are only stamped. Run it
    when no run is appending to ``jsonl``. Returns the number of labels recomputed.
    """
    from benchmarks.leak_grammar import LABEL_VERSION, label_changed

    rows = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
    redone = 0
    for r in rows:
        lab = r.get("label")
        if not r.get("decision") or r["kind"] != "leak" or lab.get("version", 1) >= LABEL_VERSION:
            continue
        if not label_changed(r["grammar"], lab.get("version", 1)):
            lab["version"] = LABEL_VERSION
            lab.setdefault("read_through", None)
            continue
        rel = release_for(r["table"], r["n_train_requested"], r["seed"], r["draw"])
        new = rel.info["label"]
        same = (rel.cell, rel.n_train, len(rel.synthetic), new["share"]) == (
            r["cell"],
            r["n_train"],
            r["n_synthetic"],
            lab["share"],
        )
        if not same:
            raise RuntimeError(
                f"{jsonl.name}: {r['key']} does not re-draw the release it was judged on "
                f"(cell {rel.cell} vs {r['cell']}); its label cannot be recomputed"
            )
        r["label"] = new
        redone += 1
        print(f"relabelled {r['key']}: {lab['info_median']:.1f} -> {new['info_median']:.1f} bits")
    tmp = jsonl.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(r, default=float) + "\n" for r in rows))
    tmp.replace(jsonl)
    return redone


# ---------------------------------------------------------------------------------------- summary


def _bin(x: float | None, edges) -> str | None:
    if x is None:
        return None
    for lo, hi in zip(edges[:-1], edges[1:]):
        if lo <= x < hi:
            return f"[{lo:g}, {hi:g})"
    return f">= {edges[-1]:g}"


def _power(rows: list[dict]) -> dict:
    n = len(rows)
    held = sum(r["decision"] != "APPROVE" for r in rows)
    return {
        "n": n,
        "not_approved": held,
        "power": held / n if n else None,
        "power_ci": wilson(held, n),
        "block": sum(r["decision"] == "BLOCK" for r in rows),
    }


def grouped(rows: list[dict], key) -> dict:
    """``rows`` by ``key(row)``, the groups in the order of their keys' text."""
    out: dict = defaultdict(list)
    for r in rows:
        out[key(r)].append(r)
    return dict(sorted(out.items(), key=lambda kv: str(kv[0])))


def summarise(rows: list[dict]) -> dict:
    judged = [r for r in rows if r.get("decision")]
    leaks = [r for r in judged if r["kind"] == "leak"]
    labelled = [r for r in leaks if r["label"].get("info_median") is not None]
    avoided = [r for r in leaks if r["label"].get("info_median") is None]

    def by(rs, f):
        return {k: _power(v) for k, v in grouped(rs, f).items()}

    def order_info(d):
        keys = [_bin(lo, INFO_BINS) for lo in INFO_BINS[:-1]]
        return {k: d[k] for k in keys if k in d}

    def criterion(rs: list[dict]) -> dict:
        out = {
            f">= {bits:g} bits": _power(
                [
                    r
                    for r in rs
                    if r["label"]["share"] >= CRITERION_SHARE and r["label"]["info_median"] >= bits
                ]
            )
            for bits in CRITERION_BITS
        }
        # the least threshold from which on every one holds CRITERION_POWER (point estimate; a
        # threshold no leak reaches neither holds nor breaks it)
        reached = None
        for bits in reversed(CRITERION_BITS):
            p = out[f">= {bits:g} bits"]
            if not p["n"]:
                continue
            if p["power"] < CRITERION_POWER:
                break
            reached = bits
        return out | {"threshold_reached": reached}

    shapes = [r for r in leaks if r["draw"].startswith(SHAPE)]
    out = {
        "leaks": _power(leaks),
        "criterion": {
            "share_at_least": CRITERION_SHARE,
            "power_asked": CRITERION_POWER,
            "all": criterion(labelled),
            "development": criterion([r for r in labelled if r["half"] == "development"]),
            "reported": criterion([r for r in labelled if r["half"] == "reported"]),
            # a table smaller than the size asked gives what it has: power at 12,000 rows asked is
            # partly power at 1,400-3,300 rows, so the criterion is also given by the size given
            "min_train_larger": CRITERION_LARGER,
            "larger": criterion([r for r in labelled if r["n_train"] >= CRITERION_LARGER]),
            "smaller": criterion([r for r in labelled if r["n_train"] < CRITERION_LARGER]),
        },
        "shapes": {
            name: _power(rs)
            | {
                "info_medians": sorted(
                    round(r["label"]["info_median"], 2)
                    for r in rs
                    if r["label"].get("info_median") is not None
                ),
                "shares": sorted(round(r["label"]["share"], 4) for r in rs),
                "tables": by(rs, lambda r: r["table"]),
            }
            for name, rs in grouped(shapes, lambda r: r["draw"].removeprefix(SHAPE)).items()
        },
        "avoided": _power(avoided),
        "power_by_info": order_info(
            by(labelled, lambda r: _bin(r["label"]["info_median"], INFO_BINS))
        ),
        "power_by_share": by(labelled, lambda r: _bin(r["label"]["share"], SHARE_BINS)),
        "power_by_change": by(leaks, lambda r: r["grammar"]["change"]),
        "power_by_which": by(
            [r for r in leaks if "which" in r["grammar"]], lambda r: r["grammar"]["which"]
        ),
        "power_by_keep": by(
            [r for r in leaks if "keep" in r["grammar"]], lambda r: r["grammar"]["keep"]
        ),
        "halves": {},
        "tables": {},
    }
    for half in ("development", "reported"):
        hl = [r for r in labelled if r["half"] == half]
        out["halves"][half] = {
            "leaks": _power([r for r in leaks if r["half"] == half]),
            "power_by_info": order_info(
                by(hl, lambda r: _bin(r["label"]["info_median"], INFO_BINS))
            ),
        }
    for t in sorted({r["table"] for r in rows}):
        nulls = [r for r in judged if r["table"] == t and r["kind"] == "null"]
        a = sum(r["decision"] == "APPROVE" for r in nulls)
        tl = [r for r in leaks if r["table"] == t]
        out["tables"][t] = {
            "half": next(r["half"] for r in rows if r["table"] == t),
            "nulls": len(nulls),
            "null_approved": a,
            "null_approval": a / len(nulls) if nulls else None,
            "null_approval_ci": wilson(a, len(nulls)),
            "null_leak_signal": sum(bool(signal_reasons(r)) for r in nulls),
            "null_info_median": [round(r["label"]["info_median"], 3) for r in nulls],
            "leaks": _power(tl),
            "power_by_info": order_info(
                by(
                    [r for r in tl if r["label"].get("info_median") is not None],
                    lambda r: _bin(r["label"]["info_median"], INFO_BINS),
                )
            ),
            "not_drawable": sum(r.get("status") == "not_drawable" for r in rows if r["table"] == t),
            "harness_errors": sum(
                r.get("status") == "harness_error" for r in rows if r["table"] == t
            ),
            "seconds_mean": (
                sum(r["seconds"] for r in judged if r["table"] == t)
                / max(1, sum(1 for r in judged if r["table"] == t))
            ),
        }
    out["approved_leaks"] = [
        {
            "table": r["table"],
            "seed": r["seed"],
            "draw": r["draw"],
            "cell": r["cell"],
            "grammar": r["grammar"],
            "info_median": r["label"].get("info_median"),
            "share": r["label"].get("share"),
        }
        for r in leaks
        if r["decision"] == "APPROVE"
    ]
    return out


def _fmt(p: dict) -> str:
    if not p["n"]:
        return "–"
    lo, hi = p["power_ci"]
    return f"{p['not_approved']}/{p['n']} {100 * p['power']:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]"


def print_summary(s: dict) -> None:
    print(
        "\npower (share not approved, Wilson 95 %) by information beyond natural twins (median "
        "bits per record):"
    )
    for b, p in s["power_by_info"].items():
        dev = s["halves"]["development"]["power_by_info"].get(b)
        rep = s["halves"]["reported"]["power_by_info"].get(b)
        print(
            f"  {b:<14} all {_fmt(p):<24} development {_fmt(dev) if dev else '–':<24} "
            f"reported {_fmt(rep) if rep else '–'}"
        )
    print(f"  avoided (absence) {_fmt(s['avoided'])}")
    c = s["criterion"]
    print(f"leaks copying >= {100 * c['share_at_least']:g} % of the training records, by bits:")
    for b in (f">= {bits:g} bits" for bits in CRITERION_BITS):
        p = c["all"][b]
        print(
            f"  {b:<14} all {_fmt(p):<24} development {_fmt(c['development'][b]):<24} "
            f"reported {_fmt(c['reported'][b]):<24} >= {c['min_train_larger']} rows "
            f"{_fmt(c['larger'][b]):<24} fewer {_fmt(c['smaller'][b])}"
        )
    print(
        f"  threshold reached at {100 * c['power_asked']:g} %: "
        + ", ".join(
            f"{part} {c[part]['threshold_reached']}"
            for part in ("all", "development", "reported", "larger", "smaller")
        )
        + " bits (None: at no threshold)"
    )
    for name, p in s["shapes"].items():
        infos = p["info_medians"]
        low = f"{infos[0]:.1f}" if infos else "–"
        print(f"  shape {name:<18} {_fmt(p):<24} smallest label {low} bits")
    print("power by share leaked:")
    for b, p in s["power_by_share"].items():
        print(f"  {b:<14} {_fmt(p)}")
    for name in ("change", "which", "keep"):
        print(
            f"power by {name}: "
            + ", ".join(f"{k} {_fmt(p)}" for k, p in s[f"power_by_{name}"].items())
        )
    print(f"\n{'table':<17}{'half':<13}{'null approved':<18}{'leaks held back':<26}{'s/gate':>7}")
    for t, d in s["tables"].items():
        print(
            f"{t:<17}{d['half']:<13}{d['null_approved']}/{d['nulls']:<16}{_fmt(d['leaks']):<26}"
            f"{d['seconds_mean']:>7.1f}"
        )
    if s["approved_leaks"]:
        print(f"\n{len(s['approved_leaks'])} leak(s) approved:")
        for r in s["approved_leaks"]:
            info = "–" if r["info_median"] is None else f"{r['info_median']:.1f}"
            print(
                f"  {r['table']} seed {r['seed']} draw {r['draw']}: {r['cell']} info {info} bits, "
                f"share {100 * (r['share'] or 0):.1f}%"
            )


def _shown(reason_key: str) -> str:
    """A reason key for the console: a subgroup's key names a category value (``col=value: ...``),
    which can be rare enough to point at people, so the console shows the column only (the JSON
    line keeps the key, as the gate's own verdict does)."""
    if not reason_key:
        return "gate-error"
    head, sep, rest = reason_key.partition("=")
    return (
        f"{head}=<group>:{rest.partition(':')[2]}"
        if sep and not head.startswith("test")
        else reason_key
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__,
    )
    ap.add_argument(
        "--tables", nargs="+", default=list(LEAK_DEVELOPMENT + LEAK_REPORTED), choices=list(TABLES)
    )
    ap.add_argument("--n-train", nargs="+", type=int, default=[2000, 12000])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument(
        "--draws", type=int, default=4, help="leaks drawn per (table, n_train, seed), plus one null"
    )
    ap.add_argument(
        "--shapes",
        nargs="+",
        default=None,
        choices=list(NAMED_SHAPES),
        help="gate these named shapes (benchmarks/leak_grammar.py NAMED_SHAPES) instead of random "
        "draws and nulls",
    )
    ap.add_argument(
        "--declared",
        action="store_true",
        help="keep the spec's quasi-identifiers, subgroups, sensitive columns and linkability",
    )
    ap.add_argument(
        "--out",
        default=None,
        help="results name under benchmarks/results/ "
        "(default leak_power_undeclared / leak_power_declared)",
    )
    ap.add_argument(
        "--fresh", action="store_true", help="ignore (and replace) the results of an earlier run"
    )
    ap.add_argument(
        "--relabel",
        action="store_true",
        help="bring the stored rows' information labels to the current definition (no gate runs; "
        "not while another run appends to the same results), then summarise",
    )
    argv = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(argv)
    out = args.out or f"leak_power_{'declared' if args.declared else 'undeclared'}"
    if not out.startswith("leak_power"):
        out = f"leak_power_{out}"

    run_git = git_head()
    RESULTS.mkdir(parents=True, exist_ok=True)
    jsonl = RESULTS / f"{out}.jsonl"
    if args.fresh and jsonl.exists():
        jsonl.unlink()
    if args.relabel and jsonl.exists():
        print(f"{relabel(jsonl)} label(s) recomputed in {jsonl.relative_to(ROOT)}", flush=True)
    done: dict[str, dict] = {}
    if jsonl.exists():
        for line in jsonl.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                if r.get("declared") == args.declared:
                    done[r["key"]] = r
    jobs = plan(args)
    wanted = {key(*j) for j in jobs}
    todo = [j for j in jobs if key(*j) not in done]
    print(
        f"{len(wanted)} gates planned, {len(wanted) - len(todo)} already in "
        f"{jsonl.relative_to(ROOT)}, {len(todo)} to run",
        flush=True,
    )
    t0 = time.perf_counter()
    for i, j in enumerate(todo, 1):
        r = run_one(*j, args.declared, run_git)
        done[r["key"]] = r
        with jsonl.open("a") as f:
            f.write(json.dumps(r, default=float) + "\n")
        if r.get("decision"):
            lab = r["label"]
            info = "–" if lab.get("info_median") is None else f"{lab['info_median']:.1f}"
            reasons = ",".join(sorted({_shown(c["key"]) for c in r["reasons"]}))
            print(
                f"[{i}/{len(todo)}] {r['table']} n={r['n_train']} seed {r['seed']} {r['draw']:>4}"
                f" {r['cell']:<36} info {info:>6} bits share {100 * lab['share']:.1f}%: "
                f"{r['decision']} {r['seconds']:.1f}s {reasons[:120]}",
                flush=True,
            )
        else:
            print(
                f"[{i}/{len(todo)}] {r['table']} seed {r['seed']} {r['draw']}: {r['status']} "
                f"{r.get('note', '')[:200]}",
                flush=True,
            )
    wall = time.perf_counter() - t0
    rows = [done[k] for k in done if k in wanted]
    summary = summarise(rows)
    print_summary(summary)
    print(f"this run's wall time {wall:.0f}s")
    record(
        out,
        {
            "git": run_git,
            "row_commits": sorted(
                {(r.get("git") or {}).get("commit") or "unrecorded" for r in rows}
            ),
            "command": " ".join(["bench_leak_power.py", *argv]),
            "settings": {k: v for k, v in vars(args).items() if k != "fresh"} | {"out": out},
            "halves": {"development": list(LEAK_DEVELOPMENT), "reported": list(LEAK_REPORTED)},
            "info_bins": [str(b) for b in INFO_BINS],
            "share_bins": list(SHARE_BINS),
            "tables": [TABLES[t].attribution() for t in args.tables],
            "summary": summary,
        },
    )


if __name__ == "__main__":
    main()
