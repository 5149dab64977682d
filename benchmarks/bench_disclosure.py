"""Our disclosure evaluators side by side with anonymeter 1.1.0 (Giomi et al., PETS 2023) on the
same Adult splits and releases, in one run: agreement (each risk inside the other's interval) and
wall time per evaluator.

anonymeter pins numpy < 1.27, so it is installed into a throwaway virtual environment (never the
project's; not part of ``make test``) from the package registry, and run there as a subprocess on
the same CSV files (numbers read as floats in every frame). Releases: an independent sample (the reference split: real records the
generator never saw), noisy copies of the training records, a full copy, and one generator of
ours (GaussianCopula fitted on the training split, sampled to its size). Training: the Adult
training split (29,306 rows); control: the holdout split (9,768 rows). Evaluators: singling out
(univariate; multivariate reported for information, see below), linkability (the columns split in
two halves in spec order), inference of ``income``, ``age`` and ``occupation`` from every other
column; ``n_attacks`` attacks each.

Multivariate singling out is timed but not compared for agreement: anonymeter divides its
successes by the number of predicates *requested*, ours by the number it could write (on Adult few
3-column predicates isolate one record, so the two rates differ by design when the attempt budget
runs out). anonymeter bounds every risk to [0, 1]; our point estimate is compared after the same
clipping. Our evaluators share one encoding of the three tables per release (as in the gate); its
time is split evenly over them.

``python benchmarks/bench_disclosure.py [--n-attacks 500] [--venv PATH]``; results in
``benchmarks/results/disclosure.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import adult_splits, record  # noqa: E402

SECRETS = ("income", "age", "occupation")
MULTI_ATTEMPTS = 5000  # multivariate singling-out attempts, both tools

WORKER = r'''
import json, sys, time, warnings
import numpy as np, pandas as pd
warnings.simplefilter("ignore")
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
args = json.loads(sys.argv[1])
folder = args["folder"]
def read(name):  # numbers as floats in every frame: anonymeter detects column types per frame
    df = pd.read_csv(f"{folder}/{name}.csv")
    return df.astype({c: "float64" for c in args["numeric"]})
train, control = read("train"), read("control")
def risk(ev):
    r = ev.risk()
    return {"risk": float(r.value), "risk_lower": float(r.ci[0]), "risk_upper": float(r.ci[1])}
# warm-up: numba compiles the neighbour search once per process (not timed)
InferenceEvaluator(ori=train.head(50), syn=train.head(50), control=control.head(50), aux_cols=list(train.columns[:3]),
                   secret=train.columns[3], n_attacks=20).evaluate(n_jobs=1)
out = {}
for case in args["cases"]:
    syn = read(case)
    res = {}
    for mode in ("univariate", "multivariate"):
        np.random.seed(0)
        t = time.perf_counter()
        ev = SinglingOutEvaluator(ori=train, syn=syn, control=control, n_attacks=args["n"], n_cols=3,
                                  max_attempts=args["attempts"]).evaluate(mode=mode)
        res[f"singling_out.{mode}"] = {**risk(ev), "seconds": time.perf_counter() - t}
    t = time.perf_counter()
    ev = LinkabilityEvaluator(ori=train, syn=syn, control=control, n_attacks=args["n"], n_neighbors=1,
                              aux_cols=(args["link_a"], args["link_b"])).evaluate(n_jobs=1)
    res["linkability"] = {**risk(ev), "seconds": time.perf_counter() - t}
    for secret in args["secrets"]:
        t = time.perf_counter()
        ev = InferenceEvaluator(ori=train, syn=syn, control=control, n_attacks=args["n"], secret=secret,
                                aux_cols=[c for c in train.columns if c != secret]).evaluate(n_jobs=1)
        res[f"inference.{secret}"] = {**risk(ev), "seconds": time.perf_counter() - t}
    out[case] = res
    print(case, "done", flush=True, file=sys.stderr)
print(json.dumps(out))
'''


def anonymeter_python(venv: Path | None) -> Path:
    """The python of a virtual environment with anonymeter 1.1.0 (made here unless ``venv`` given)."""
    if venv is not None:
        return venv / "bin" / "python"
    venv = Path(tempfile.mkdtemp(prefix="anonymeter-venv-")) / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "anonymeter==1.1.0"], check=True)
    return venv / "bin" / "python"


def releases(spec, splits, seed: int = 0) -> dict:
    from privacy_gate.generators import create_generator

    rng = np.random.default_rng(seed)
    train = splits.train
    noisy = train.copy()
    for c, col in spec.columns.items():
        if col.is_numeric:
            noisy[c] = noisy[c] + rng.normal(scale=0.05 * float(noisy[c].std()), size=len(noisy))
        else:  # 5% of the cells resampled from the column's training marginal
            swap = rng.random(len(noisy)) < 0.05
            noisy.loc[swap, c] = rng.choice(train[c].dropna().to_numpy(), size=int(swap.sum()))
    generator = create_generator("gaussian_copula", seed=0).fit(train, spec, reference=splits.reference)
    return {"independent": splits.reference, "noisy_copies": noisy, "full_copy": train,
            "gaussian_copula": generator.sample(len(train))}


def ours(spec, train, control, syn, *, n: int, link, seed: int = 0) -> dict:
    from privacy_gate.experiment.disclosure_codes import Codes
    from privacy_gate.experiment.linkability import inference, linkability
    from privacy_gate.experiment.singling_out import singling_out

    numeric = {c for c, col in spec.columns.items() if col.is_numeric}
    res = {}
    t = time.perf_counter()
    shared = Codes.of([syn, train, control], columns=list(spec.columns), numeric=numeric)
    res["codes"] = time.perf_counter() - t  # built once per release and shared, as in the gate

    def codes():
        return shared

    def put(key, r, t):
        res[key] = {"risk": r.risk, "risk_lower": r.risk_lower, "risk_upper": r.risk_upper,
                    "seconds": time.perf_counter() - t}

    for mode, n_cols in (("univariate", 1), ("multivariate", 3)):
        t = time.perf_counter()
        put(f"singling_out.{mode}", singling_out(codes(), n_attacks=n, n_cols=n_cols, seed=seed,
                                                 max_attempts=MULTI_ATTEMPTS).risk, t)
    rng = np.random.default_rng(seed)
    t_idx, c_idx = rng.choice(len(train), n, replace=False), rng.choice(len(control), n, replace=False)
    t = time.perf_counter()
    put("linkability", linkability(codes(), tuple(link[0]), tuple(link[1]), train_idx=t_idx, control_idx=c_idx,
                                   n_neighbors=1, seed=seed).risk, t)
    for secret in SECRETS:
        t = time.perf_counter()
        aux = tuple(c for c in spec.columns if c != secret)
        put(f"inference.{secret}", inference(codes(), secret, aux, train_idx=t_idx, control_idx=c_idx,
                                             seed=seed).risk, t)
    return res


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-attacks", type=int, default=500)
    parser.add_argument("--venv", type=Path, default=None, help="reuse a venv that has anonymeter 1.1.0")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    spec, splits = adult_splits()
    cols = list(spec.columns)
    half = (len(cols) + 1) // 2
    link = (cols[:half], cols[half:])
    cases = releases(spec, splits)
    folder = Path(tempfile.mkdtemp(prefix="bench-disclosure-"))
    splits.train.to_csv(folder / "train.csv", index=False)
    splits.holdout.to_csv(folder / "control.csv", index=False)
    for name, df in cases.items():
        df[cols].to_csv(folder / f"{name}.csv", index=False)
    python = anonymeter_python(args.venv)
    t = time.perf_counter()
    job = {"folder": str(folder), "cases": list(cases), "n": args.n_attacks, "attempts": MULTI_ATTEMPTS,
           "link_a": link[0], "link_b": link[1], "secrets": list(SECRETS),
           "numeric": [c for c, col in spec.columns.items() if col.is_numeric]}
    done = subprocess.run([str(python), "-c", WORKER, json.dumps(job)], check=True, capture_output=True, text=True,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"anonymeter: {time.perf_counter() - t:.0f} s in all")
    rows, agree_all = [], True
    for case, syn in cases.items():
        # the same CSV round trip anonymeter read, so both judge identical values
        import pandas as pd

        syn_r = pd.read_csv(folder / f"{case}.csv")
        mine = ours(spec, splits.train, splits.holdout, syn_r, n=args.n_attacks, link=link)
        shared_s = mine.pop("codes")
        for key, m in mine.items():
            a = theirs[case][key]
            # anonymeter bounds every risk and interval to [0, 1]; ours may be negative (control
            # records guessed better), so our point estimate is compared after the same clipping
            ours_clipped = min(max(m["risk"], 0.0), 1.0)
            agree = (a["risk_lower"] - 1e-9 <= ours_clipped <= a["risk_upper"] + 1e-9
                     and m["risk_lower"] - 1e-9 <= a["risk"] <= m["risk_upper"] + 1e-9)
            m["seconds"] += shared_s / len(mine)  # the shared encoding, split evenly
            compared = key != "singling_out.multivariate"
            agree_all &= agree or not compared
            rows.append({"release": case, "evaluator": key, "ours": m, "anonymeter": a, "agree": agree,
                         "compared": compared, "speedup": a["seconds"] / max(m["seconds"], 1e-9)})
    print(f"{'release':<16}{'evaluator':<26}{'ours risk [interval]':<28}{'anonymeter risk [interval]':<28}"
          f"{'agree':<7}{'ours s':>8}{'anon s':>9}{'x':>7}")
    for r in rows:
        o, a = r["ours"], r["anonymeter"]
        print(f"{r['release']:<16}{r['evaluator']:<26}{o['risk']:6.3f} [{o['risk_lower']:6.3f},{o['risk_upper']:6.3f}]"
              f"    {a['risk']:6.3f} [{a['risk_lower']:6.3f},{a['risk_upper']:6.3f}]    "
              f"{('yes' if r['agree'] else 'NO') + ('' if r['compared'] else '*'):<7}{o['seconds']:8.2f}"
              f"{a['seconds']:9.2f}{r['speedup']:7.1f}")
    per_eval = {}
    for r in rows:
        fam = r["evaluator"]
        per_eval.setdefault(fam, [0.0, 0.0])
        per_eval[fam][0] += r["ours"]["seconds"]
        per_eval[fam][1] += r["anonymeter"]["seconds"]
    speed = {k: {"ours_s": v[0], "anonymeter_s": v[1], "speedup": v[1] / max(v[0], 1e-9)} for k, v in per_eval.items()}
    tot_o, tot_a = sum(v[0] for v in per_eval.values()), sum(v[1] for v in per_eval.values())
    print(f"total: ours {tot_o:.1f} s, anonymeter {tot_a:.1f} s, {tot_a / tot_o:.1f}x; agreement on every compared "
          f"case: {agree_all} (* = not compared, see the docstring)")
    record("disclosure", {"benchmark": __doc__.splitlines()[0], "n_attacks": args.n_attacks,
                          "multivariate_attempts": MULTI_ATTEMPTS, "rows": {k: len(v) for k, v in
                                                                             {"train": splits.train,
                                                                              "control": splits.holdout}.items()},
                          "releases": list(cases), "secrets": list(SECRETS), "link": link, "results": rows,
                          "seconds_per_evaluator": speed, "total_seconds": {"ours": tot_o, "anonymeter": tot_a},
                          "speedup": tot_a / tot_o, "agree_all_compared": agree_all})


if __name__ == "__main__":
    main()
