"""How the whole gate scales with the number of rows, one process per size (peak memory per size).

Data: Adult-like rows made by resampling the bundled Adult table with replacement and jittering
the numerics (Gaussian noise of 5% of each column's standard deviation, clipped to the spec's
public ranges); categoricals are resampled as they are. A table of ``rows`` rows is split 60/20/20
into train / holdout / reference; the candidate release is an *independent* draw of the same
process (as many rows as train), i.e. a release that should be approved. The gate runs in
process (``privacy_gate.evaluate``, the library pipeline with the default settings and attacks)
and reports its wall time per stage; the peak resident memory of the child process is read
from ``getrusage``.

``python benchmarks/bench_scale.py [--sizes 10000 30000 100000] [--timeout 1800] [--fresh]``; results
in ``benchmarks/results/scale.json`` with the log-log slope of total time over rows. Sizes run in
earlier invocations are kept (with the time each was measured) unless ``--fresh``.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import RESULTS, ROOT, record  # noqa: E402

SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)


def adult_like(rows: int, seed: int):
    """``rows`` Adult-like rows (see the module docstring)."""
    import numpy as np

    from privacy_gate.config import load_spec
    from privacy_gate.data import conform, read_table
    from privacy_gate.generators.base import clip_to_spec

    spec = load_spec(ROOT / "examples" / "adult.yaml")
    adult = conform(read_table(ROOT / "data" / "adult" / "adult.csv.gz"), spec, source="adult")
    rng = np.random.default_rng(seed)
    out = adult.iloc[rng.integers(len(adult), size=rows)].reset_index(drop=True)
    for name, col in spec.columns.items():
        if col.is_numeric:
            sd = float(adult[name].std())
            out[name] = out[name] + rng.normal(0, 0.05 * sd, size=rows)
    return spec, clip_to_spec(out, spec)


def child(rows: int, seed: int) -> dict:
    """One size in this process: build the data, run the gate, report stage times."""
    import logging

    from privacy_gate import evaluate

    logging.getLogger("privacy_gate").setLevel(logging.WARNING)
    started = time.perf_counter()
    spec, table = adult_like(rows, seed)
    n_train, n_hold = int(0.6 * rows), int(0.2 * rows)
    _, release = adult_like(n_train, seed + 1)
    data_seconds = time.perf_counter() - started
    started = time.perf_counter()
    result = evaluate(train=table.iloc[:n_train], holdout=table.iloc[n_train:n_train + n_hold],
                      reference=table.iloc[n_train + n_hold:], synthetic=release, spec=spec)
    gate_seconds = time.perf_counter() - started
    m = result.metrics
    return {"rows": rows, "data_seconds": round(data_seconds, 1), "gate_seconds": round(gate_seconds, 1),
            "stages": {k: round(v, 2) for k, v in result.timings.items()}, "decision": result.decision,
            "targets_per_class": int(m.get("domias.n_non_members", 0)),
            "strongest_auc": round(m.get("strongest.auc", float("nan")), 4),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed per size")
    ap.add_argument("--fresh", action="store_true", help="drop the sizes recorded by earlier invocations")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.seed)))
        return
    rows = []
    for n in args.sizes:
        started = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, __file__, "--child", str(n), "--seed", str(args.seed)],
                                 capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            rows.append({"rows": n, "error": f"did not finish within {args.timeout:.0f} s"})
            print(f"{n:>9,} rows: did not finish within {args.timeout:.0f} s", flush=True)
            break
        if out.returncode != 0:
            rows.append({"rows": n, "error": out.stderr.strip().splitlines()[-1][:300]})
            print(f"{n:>9,} rows: failed: {rows[-1]['error']}", flush=True)
            break
        r = json.loads(out.stdout.strip().splitlines()[-1])
        r["wall_seconds"] = round(time.perf_counter() - started, 1)
        r["measured"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        rows.append(r)
        slow = sorted(r["stages"].items(), key=lambda kv: -kv[1])[:4]
        print(f"{n:>9,} rows: gate {r['gate_seconds']:7.1f} s  peak {r['peak_rss_gb']:.2f} GB  {r['decision']}  "
              f"targets/class {r['targets_per_class']}  slowest: "
              + ", ".join(f"{k} {v:.1f}s" for k, v in slow), flush=True)
    # sizes measured in earlier invocations are kept (each row carries when it was measured), so
    # the large sizes can be run on their own; a size run again replaces its old row
    previous = RESULTS / "scale.json"
    if previous.exists() and not args.fresh:
        old = json.loads(previous.read_text())
        measured = {r["rows"] for r in rows}
        rows = sorted([r for r in old.get("runs", []) if r["rows"] not in measured] + rows, key=lambda r: r["rows"])
    done = [r for r in rows if "gate_seconds" in r]
    slope = None
    if len(done) >= 2:
        xs = [math.log(r["rows"]) for r in done]
        ys = [math.log(r["gate_seconds"]) for r in done]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        print(f"log-log slope of gate time over rows: {slope:.2f}")
    record("scale", {"settings": vars(args), "runs": rows, "loglog_slope": slope})


if __name__ == "__main__":
    main()
