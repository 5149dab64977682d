"""Start-up time of the commands that only read: this checkout against the commit it
branched from, side by side in one run, alternating, ``--repeats`` each, every run a fresh
process (``python -m privacy_gate.cli ...``, wall time of the whole process).

The commands: ``--version``, ``--help``, ``review --help``, ``review --pending`` on an empty
folder (refused: no store there) and on an empty MLflow store (no runs awaiting review). Both
checkouts read the same folders; the baseline is checked out with ``git worktree`` into a
temporary folder (removed afterwards) and run with ``PYTHONPATH`` pointing at it, in this virtual
environment. One unmeasured warm-up run per command and checkout first, so both are timed with
their bytecode compiled. A command the baseline does not have (``--version``) is timed all the
same (its usage error) and its exit code recorded.

``python benchmarks/bench_cli_startup.py [--repeats 5] [--baseline COMMIT]`` (default: the
merge-base of HEAD and main); results in ``benchmarks/results/cli_startup.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, record

#: The command line of one timed process; the file it ran is printed last on stderr, to check
#: that the checkout's code ran (not the installed package's).
CHILD = (
    "import atexit, runpy, sys\natexit.register(lambda: print('\\nRAN ' + "
    "sys.modules['privacy_gate'].__file__, file=sys.stderr))\nsys.argv = ['privacy-gate', "
    "*sys.argv[1:]]\nrunpy.run_module('privacy_gate.cli', run_name='__main__')\n"
)


def _time(checkout: Path, args: list[str]) -> dict:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "MLFLOW_TRACKING"))
    }
    env.update(PYTHONPATH=str(checkout), MLFLOW_DISABLE_TELEMETRY="true", DO_NOT_TRACK="true")
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    seconds = time.perf_counter() - start
    ran = out.stderr.strip().splitlines()[-1].removeprefix("RAN ")
    assert ran.startswith(str(checkout)), (ran, out.stderr[-2000:])  # the checkout's code ran
    return {"seconds": seconds, "exit": out.returncode}


def _commit(ref: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--baseline", default=None, help="a commit (default: the merge-base of HEAD and main)"
    )
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    baseline = (
        args.baseline
        or subprocess.run(
            ["git", "merge-base", "HEAD", "main"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    head, base_commit = _commit("HEAD"), _commit(baseline)
    dirty = bool(
        subprocess.run(
            ["git", "status", "--porcelain", "privacy_gate"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    from privacy_gate import tracking

    with tempfile.TemporaryDirectory() as tmp:
        empty, store, base = Path(tmp) / "empty", Path(tmp) / "store", Path(tmp) / "baseline"
        empty.mkdir()
        tracking.Tracker(
            uri=tracking.default_tracking_uri(store), experiment=None
        )  # an MLflow store, no runs
        commands = {
            "--version": ["--version"],
            "--help": ["--help"],
            "review --help": ["review", "--help"],
            "review --pending (empty folder)": ["review", "--pending", "--workdir", str(empty)],
            "review --pending (empty store)": ["review", "--pending", "--workdir", str(store)],
        }
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(base), baseline],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        try:
            checkouts = {"baseline": base, "this": ROOT}
            runs: dict[str, dict[str, list[dict]]] = {
                c: {"baseline": [], "this": []} for c in commands
            }
            for label, argv in commands.items():
                for checkout in checkouts.values():
                    _time(checkout, argv)  # warm-up: bytecode compiled, files cached
                for i in range(args.repeats):
                    for name, checkout in checkouts.items():
                        r = _time(checkout, argv)
                        runs[label][name].append(r)
                        print(
                            f"[{i + 1}/{args.repeats}] {label:<32} {name:<8} {r['seconds']:6.2f} "
                            f"s  exit {r['exit']}",
                            flush=True,
                        )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True
            )
    summary = {}
    print(
        f"\nmedian of {args.repeats} (baseline {base_commit} -> this "
        f"{head}{' + uncommitted' if dirty else ''}):"
    )
    for label, by in runs.items():
        med = {k: statistics.median(r["seconds"] for r in v) for k, v in by.items()}
        exits = {k: sorted({r["exit"] for r in v}) for k, v in by.items()}
        summary[label] = {
            "median_seconds": med,
            "ratio": med["this"] / med["baseline"],
            "speedup": med["baseline"] / med["this"],
            "exit_codes": exits,
        }
        print(
            f"  {label:<32} baseline {med['baseline']:5.2f} s (exit {exits['baseline']})  this "
            f"{med['this']:5.2f} s (exit {exits['this']})  -> {med['this'] / med['baseline']:.2f}x"
        )
    record(
        "cli_startup",
        {
            "commit": head,
            "uncommitted_changes": dirty,
            "baseline_commit": base_commit,
            "repeats": args.repeats,
            "commands": {
                k: " ".join(v)
                .replace(str(empty), "EMPTY_FOLDER")
                .replace(str(store), "EMPTY_STORE")
                for k, v in commands.items()
            },
            "summary": summary,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
