"""The gate's stages on a 2-worker Dask ``LocalCluster`` vs one process, side by side in one run:
wall time of the attack stage and of the whole gate, and whether every figure is identical.

Data: the scale benchmark's Adult-like rows (``bench_scale.adult_like``), ``--rows`` in total,
60/20/20 split, an independent release. The library gate (``privacy_gate.evaluate``) runs twice
with the same inputs: with its in-process thread pool, and with an executor that sends each
stage's independent work (every attack, the utility score, MAMA-MIA's shadow runs) to a
``distributed`` LocalCluster of two single-threaded worker processes — the granularity the
Prefect DaskTaskRunner uses — with each attack's scoring of the targets split into
``--score-chunks`` tasks (``runner.score_chunks``; 1 = one task per attack).

``python benchmarks/bench_dask_attacks.py [--rows 100000] [--score-chunks 4]``; results in
``benchmarks/results/dask_attacks.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import record
from benchmarks.bench_scale import adult_like


class DaskClientExecutor:
    """The library's Executor protocol over a ``distributed`` client (benchmark only). It travels
    to the workers inside submitted work (an attack's shadow-run mapper), without its client: on
    a worker, ``map`` submits the sub-runs through ``worker_client`` (seceding while it waits)."""

    def __init__(self, client=None):
        self._client = client

    def __getstate__(self):
        return {"_client": None}

    def run(self, name, fn, /, *args, **kwargs):
        return fn(*args, **kwargs)

    def submit(self, name, fn, /, *args, **kwargs):
        return self._client.submit(
            fn, *args, key=f"{name}-{time.perf_counter_ns()}", pure=False, **kwargs
        )

    def map(self, name, fn, items, /):
        if self._client is not None:
            return self._client.gather(
                [self._client.submit(fn, item, pure=False) for item in items]
            )
        from distributed import worker_client

        with worker_client() as client:
            return client.gather([client.submit(fn, item, pure=False) for item in items])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--score-chunks",
        type=int,
        default=4,
        help="parts each attack's scoring is split into on the cluster",
    )
    args = ap.parse_args()

    import logging
    import math

    from distributed import Client, LocalCluster

    from privacy_gate import evaluate

    logging.getLogger("privacy_gate").setLevel(logging.WARNING)
    spec, table = adult_like(args.rows, args.seed)
    n_train, n_hold = int(0.6 * args.rows), int(0.2 * args.rows)
    _, release = adult_like(n_train, args.seed + 1)
    inputs = dict(
        train=table.iloc[:n_train],
        holdout=table.iloc[n_train : n_train + n_hold],
        reference=table.iloc[n_train + n_hold :],
        synthetic=release,
        spec=spec,
    )

    started = time.perf_counter()
    local = evaluate(**inputs)
    local_seconds = time.perf_counter() - started
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        started = time.perf_counter()
        dask = evaluate(
            **inputs, executor=DaskClientExecutor(client), score_chunks=args.score_chunks
        )
        dask_seconds = time.perf_counter() - started
    if "attacks" not in dask.timings:
        raise SystemExit(
            f"the run on the cluster failed: {[c.message for c in dask.verdict.reasons]}"
        )
    a, b = local.metrics, dask.metrics
    differing = sorted(
        k
        for k in set(a) | set(b)
        if k not in a or k not in b or not math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12)
    )
    out = {
        "rows": args.rows,
        "local": {
            "gate_seconds": round(local_seconds, 1),
            "attacks_seconds": round(local.timings["attacks"], 1),
            "decision": local.decision,
        },
        "dask_2_workers": {
            "gate_seconds": round(dask_seconds, 1),
            "attacks_seconds": round(dask.timings["attacks"], 1),
            "decision": dask.decision,
        },
        "attack_stage_speedup": round(local.timings["attacks"] / dask.timings["attacks"], 2),
        "identical_figures": not differing,
        "differing": differing[:20],
        "n_metrics": len(a),
    }
    print(
        f"{args.rows:,} rows  attacks: one process {out['local']['attacks_seconds']} s, 2-worker "
        "LocalCluster "
        f"({args.score_chunks} scoring task(s) per attack) "
        f"{out['dask_2_workers']['attacks_seconds']} s (speed-up {out['attack_stage_speedup']}x); "
        "gate "
        f"{out['local']['gate_seconds']} vs {out['dask_2_workers']['gate_seconds']} s; "
        f"{'identical' if not differing else f'{len(differing)} differing'} figures ({len(a)} "
        "metrics)"
    )
    record("dask_attacks", {"settings": vars(args), **out})


if __name__ == "__main__":
    main()
