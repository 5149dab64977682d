"""How the whole gate scales with the number of rows, one process per size (peak memory per size).

Data: Adult-like rows made by resampling the bundled Adult table with replacement, jittering the
numerics (Gaussian noise of 25% of each column's standard deviation, clipped to the spec's public
ranges) and redrawing each categorical value from its column's marginal with probability 0.1
(see ``JITTER``, ``REDRAW``). A table of ``rows`` rows is split 60/20/20
into train / holdout / reference; the candidate release is an *independent* draw of the same
process (as many rows as train), i.e. a release that should be approved. The gate runs in
process (``privacy_gate.evaluate``, the library pipeline with the default settings and attacks)
and reports its wall time per stage; the peak resident memory of the child process is read
from ``getrusage``.

``--path cli`` runs the gate-only CLI instead (``privacy-gate gate --orchestrator local`` on Parquet
files: input validation, the MLflow record and the report included), ``--path release`` a whole
MST release (``privacy-gate run``: split, generate, validate, gate, record, publish).
``--release noisy-copies [--share 0.05]`` replaces that share of the release by noisy copies of
training rows (5% of a standard deviation on the numerics): the canary that must BLOCK.

``python benchmarks/bench_scale.py [--sizes 10000 30000 100000] [--path library|cli|release]
[--release independent|noisy-copies] [--timeout 1800] [--fresh]``; results in
``benchmarks/results/scale.json`` (library, independent) or ``scale_<path>_<release>.json``, with
the log-log slope of total time over rows. Sizes run in earlier invocations are kept (with the
time each was measured) unless ``--fresh``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import RESULTS, ROOT, record

SIZES = (10_000, 30_000, 100_000, 300_000, 1_000_000)
#: Adult-like rows: numeric jitter in standard deviations, and the chance that a categorical value
#: is redrawn from its column's marginal. Large enough that two draws of the same Adult row are
#: no closer than a near-copy (noise 0.05 sd) is to its original: at 1M rows each Adult row is
#: drawn ~20 times, and with less jitter those siblings in train, holdout and release would look
#: like copies of one another and drown the noisy-copy canary.
JITTER = 0.25
REDRAW = 0.1
#: the pipeline's progress lines: "✔ <stage> done in <seconds> s"
STAGE_DONE = re.compile(r"✔ (.+?) done in ([0-9.]+) s")


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
            out[name] = out[name] + rng.normal(0, JITTER * sd, size=rows)
        else:  # a share of each categorical redrawn from its marginal
            redraw = rng.random(rows) < REDRAW
            out.loc[redraw, name] = (
                adult[name].sample(int(redraw.sum()), replace=True, random_state=rng).to_numpy()
            )
    return spec, clip_to_spec(out, spec)


def noisy_copies(release, train, spec, *, share: float, noise: float, seed: int):
    """``release`` with ``share`` of its rows replaced by noisy copies of distinct training rows
    (Gaussian noise of ``noise`` standard deviations on every numeric column, clipped to the spec;
    the canary of ``tests/exposure_scenarios.py`` at any size)."""
    import numpy as np

    from privacy_gate.generators.base import clip_to_spec
    from tests.exposure_scenarios import noisy_rows

    rng = np.random.default_rng(seed + 17)
    numeric = [name for name, col in spec.columns.items() if col.is_numeric]
    k = int(round(share * len(release)))
    copies = noisy_rows(
        train.iloc[rng.choice(len(train), size=k, replace=False)], train, numeric, noise, rng
    )
    out = release.astype({c: float for c in numeric})
    out.iloc[rng.choice(len(release), size=k, replace=False)] = copies.to_numpy()
    return clip_to_spec(out, spec)


def _data(rows: int, seed: int, release_kind: str, share: float):
    spec, table = adult_like(rows, seed)
    n_train, n_hold = int(0.6 * rows), int(0.2 * rows)
    splits = {
        "train": table.iloc[:n_train],
        "holdout": table.iloc[n_train : n_train + n_hold],
        "reference": table.iloc[n_train + n_hold :],
    }
    _, release = adult_like(n_train, seed + 1)
    if release_kind == "noisy-copies":
        release = noisy_copies(release, splits["train"], spec, share=share, noise=0.05, seed=seed)
    return spec, table, splits, release


def _outcome(verdict: dict) -> dict:
    """The recorded figures of a verdict (``Verdict.to_dict()`` or the CLI's ``--json`` line)."""
    m = verdict.get("metrics", {})
    return {
        "decision": verdict.get("verdict"),
        "targets_per_class": int(m.get("domias.n_non_members", 0)),
        "strongest_auc": round(m.get("strongest.auc", float("nan")), 4),
        "exposed_share_lower": round(m.get("exposed.share_lower", float("nan")), 4),
        "reasons": [r.get("message") for r in verdict.get("reasons", [])][:6],
    }


def _peak_gb(who) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024**2, 2)


def child(
    rows: int,
    seed: int,
    *,
    path: str = "library",
    release_kind: str = "independent",
    share: float = 0.05,
) -> dict:
    """One size in this process: build the data, run the gate, report stage times.

    ``path``: ``library`` (``evaluate`` in this process), ``cli`` (``privacy-gate gate`` on
    Parquet files, a fresh process with ``--orchestrator local``) or ``release`` (``privacy-gate
    run`` of an MST release config on the whole table as one Parquet file: split, generate,
    validate, gate, record, publish). For the two CLI paths the peak memory is the CLI process's."""
    import logging

    logging.getLogger("privacy_gate").setLevel(logging.WARNING)
    started = time.perf_counter()
    spec, table, splits, release = _data(rows, seed, release_kind, share)
    data_seconds = time.perf_counter() - started
    base = {
        "rows": rows,
        "path": path,
        "release": release_kind,
        "share": share if release_kind != "independent" else 0.0,
    }
    if path == "library":
        from privacy_gate import evaluate

        started = time.perf_counter()
        result = evaluate(**splits, synthetic=release, spec=spec)
        gate_seconds = time.perf_counter() - started
        return {
            **base,
            "data_seconds": round(data_seconds, 1),
            "gate_seconds": round(gate_seconds, 1),
            "stages": {k: round(v, 2) for k, v in result.timings.items()},
            **_outcome(result.verdict.to_dict()),
            "peak_rss_gb": _peak_gb(resource.RUSAGE_SELF),
        }
    import tempfile

    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        tmp = Path(tmp)
        started = time.perf_counter()
        if path == "cli":
            files = {
                k: tmp / f"{k}.parquet" for k in ("train", "holdout", "reference", "synthetic")
            }
            for k, df in {**splits, "synthetic": release}.items():
                df.to_parquet(files[k], index=False)
            cmd = [
                "gate",
                *[x for k, f in files.items() for x in (f"--{k}", str(f))],
                "--spec",
                str(ROOT / "examples" / "adult.yaml"),
            ]
        else:
            data = tmp / "table.parquet"
            table.to_parquet(data, index=False)
            config = tmp / "release.yaml"
            config.write_text(
                f"dataset:\n  path: {data}\n  spec: {ROOT / 'examples' / 'adult.yaml'}\n"
                "generator: {name: mst, epsilon: 1.0, delta: 1.0e-9}\n"
                "split: {train: 0.6, holdout: 0.2, reference: 0.2, seed: 0}\n"
            )
            cmd = ["run", str(config)]
        write_seconds = time.perf_counter() - started
        del table, splits, release
        started = time.perf_counter()
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "privacy_gate.cli",
                *cmd,
                "--workdir",
                str(tmp / "work"),
                "--orchestrator",
                "local",
                "--json",
            ],
            capture_output=True,
            text=True,
        )
        gate_seconds = time.perf_counter() - started
    if out.returncode not in (0, 1, 3) or not out.stdout.strip():
        raise RuntimeError(
            f"privacy-gate {cmd[0]} failed ({out.returncode}): {out.stderr.strip()[-800:]}"
        )
    stages = {m.group(1): float(m.group(2)) for m in STAGE_DONE.finditer(out.stderr + out.stdout)}
    return {
        **base,
        "data_seconds": round(data_seconds + write_seconds, 1),
        "gate_seconds": round(gate_seconds, 1),
        "stages": stages,
        **_outcome(json.loads(out.stdout.strip().splitlines()[-1])),
        "peak_rss_gb": _peak_gb(resource.RUSAGE_CHILDREN),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds allowed per size")
    ap.add_argument(
        "--fresh", action="store_true", help="drop the sizes recorded by earlier invocations"
    )
    ap.add_argument(
        "--path",
        choices=["library", "cli", "release"],
        default="library",
        help="library: evaluate() in process; cli: 'privacy-gate gate' on Parquet files; "
        "release: 'privacy-gate run' with MST on the whole table",
    )
    ap.add_argument(
        "--release",
        choices=["independent", "noisy-copies"],
        default="independent",
        help="the candidate release: an independent draw, or one with --share noisy copies of "
        "training rows",
    )
    ap.add_argument(
        "--share", type=float, default=0.05, help="share of noisy copies (--release noisy-copies)"
    )
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.path == "release" and args.release != "independent":
        ap.error(
            "--path release generates its own release with MST; --release applies to library and "
            "cli"
        )
    if args.child:
        print(
            json.dumps(
                child(
                    args.child,
                    args.seed,
                    path=args.path,
                    release_kind=args.release,
                    share=args.share,
                )
            )
        )
        return
    variant = (
        ""
        if (args.path, args.release) == ("library", "independent")
        else f"_{args.path}_{args.release.replace('-', '_')}"
    )
    rows = []
    for n in args.sizes:
        started = time.perf_counter()
        try:
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    str(n),
                    "--seed",
                    str(args.seed),
                    "--path",
                    args.path,
                    "--release",
                    args.release,
                    "--share",
                    str(args.share),
                ],
                capture_output=True,
                text=True,
                timeout=args.timeout,
            )
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
        r["measured"] = datetime.now(UTC).isoformat(timespec="seconds")
        rows.append(r)
        slow = sorted(r["stages"].items(), key=lambda kv: -kv[1])[:4]
        print(
            f"{n:>9,} rows: gate {r['gate_seconds']:7.1f} s  peak {r['peak_rss_gb']:.2f} GB  "
            f"{r['decision']}  targets/class {r['targets_per_class']}  slowest: "
            + ", ".join(f"{k} {v:.1f}s" for k, v in slow),
            flush=True,
        )
        if r["decision"] != "APPROVE":
            print("           reasons: " + "; ".join(r["reasons"]), flush=True)
    # sizes measured in earlier invocations are kept (each row carries when it was measured), so
    # the large sizes can be run on their own; a size run again replaces its old row
    previous = RESULTS / f"scale{variant}.json"
    if previous.exists() and not args.fresh:
        old = json.loads(previous.read_text())
        measured = {r["rows"] for r in rows}
        rows = sorted(
            [r for r in old.get("runs", []) if r["rows"] not in measured] + rows,
            key=lambda r: r["rows"],
        )
    done = [r for r in rows if "gate_seconds" in r]
    slope = None
    if len(done) >= 2:
        xs = [math.log(r["rows"]) for r in done]
        ys = [math.log(r["gate_seconds"]) for r in done]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        print(f"log-log slope of gate time over rows: {slope:.2f}")
    record(f"scale{variant}", {"settings": vars(args), "runs": rows, "loglog_slope": slope})


if __name__ == "__main__":
    main()
