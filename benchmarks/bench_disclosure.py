"""Our disclosure evaluators side by side with anonymeter 1.1.0 (Giomi et al., PETS 2023) on the
same Adult splits and releases, in one run: agreement (each risk inside the other's interval) and
wall time per evaluator.

anonymeter pins numpy < 1.27, so it is installed into a throwaway virtual environment (never the
project's; not part of ``make test``) from the package registry, and run there as a subprocess on
the same CSV files (numbers read as floats in every frame). Releases: an independent sample (the
reference split: real records the generator never saw), noisy copies of the training records
(numbers + N(0, (5% of the column's sd)^2), 5% of the category cells resampled), a full copy, and
one generator of ours (GaussianCopula fitted on the training split, sampled to its size).
Training: the Adult training split (29,306 rows); control: the holdout split (9,768 rows).
Evaluators: singling out (univariate and multivariate, 3 columns, 5,000 attempts), linkability
(the columns split in two halves in spec order), inference of ``income``, ``age`` and
``occupation`` from every other column; ``n_attacks`` attacks each; every seed of ``--seeds``
is one full pass of both tools.

What is made equal, so that differences are the methods':

- Linkability and inference: both tools attack the SAME target records. anonymeter gets ``ori``
  and ``control`` frames that are exactly our training and control targets, with ``n_attacks``
  their length: its ``DataFrame.sample(n_attacks, replace=False)`` then attacks each record once.
  The synthetic record each tool's inference used is recorded (anonymeter's own KNN predictor,
  subclassed only to keep the indices), and per target the rows say where the two part
  (``targets``: same record chosen, hits only one tool has, ambiguous targets whose exact
  auxiliary values synthetic records hold with more than one secret, for copies the targets whose
  own record was used). Counts only, never values.
- Numeric secrets: anonymeter's ``InferenceEvaluator`` defaults to ``regression=False`` (its type
  detection only runs for ``regression=None``), i.e. a number is right only when *equal* to the
  secret: a noisy copy's age never is (the former 0.00 on noisy copies). Here
  ``regression=True`` for numeric secrets: right within 5%, anonymeter relative to the guess
  (``|g - t| / g <= 0.05``), ours relative to the truth (``|g - t| <= 0.05 |t|``, the usual
  relative error; anonymeter's criterion counts every negative guess as right). Ours is also
  reported under anonymeter's criterion (``ours_by_anonymeter_criterion``).
- Singling out is seeded in both (anonymeter's ``seed``; its univariate candidates come from an
  unordered polars ``group_by``, so even seeded they differ between runs: 114 and 140 training
  successes of 500 in two runs on the same data and seed); the predicates are each tool's own
  (written from the synthetic data), so two tools' singling-out figures are two independent
  draws. anonymeter's control-size correction does not measure what it fits: in
  ``singling_out_evaluator._measure_queries_success`` it appends
  ``len(_evaluate_queries(...))`` -- the number of queries, not of queries that single out -- so
  the fitted curve is flat and its factor is ``n_control / n_train`` (0.334 here) whatever the
  data: control successes are scaled *down* threefold (recorded per row: ``correction``, with the
  successes it measured). On the independent sample the empirical factor (the same predicates on
  training subsamples of the control's size: the truth, since training and control records are
  exchangeable there) is about 1.5. Hence the ``<release>@equal_size`` cases: the training split
  subsampled to the control's size (9,768), singling out only, so that neither tool corrects.
- Multivariate singling out is compared with anonymeter's denominator, the predicates
  *requested* (``n_attacks``); ours divides by the predicates written, kept as ``native``.

anonymeter bounds every risk to [0, 1]; our point estimate is compared after the same clipping.
anonymeter's point estimate of a rate is the Wilson centre ``(k + z^2/2) / (n + z^2)`` with a
symmetric error, so 500 successes of 500 give 0.996 and its interval of a perfect attack may end
below 1. Our evaluators share one encoding of the three tables per release (as in the gate); its
time is split evenly over them. Speed is per pass over the four releases (the equal-size cases
are extra).

``python benchmarks/bench_disclosure.py [--n-attacks 500] [--seeds 0 1] [--venv PATH]``; results
in ``benchmarks/results/disclosure.json``.
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
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import adult_splits, record
from privacy_gate.estimators.disclosure import disclosure_risk

SECRETS = ("income", "age", "occupation")
MULTI_ATTEMPTS = 5000  # multivariate singling-out attempts, both tools
# a numeric secret guessed within 5%: ours DisclosureConfig.tolerance, anonymeter's default
TOLERANCE = 0.05

WORKER = r"""
import json, sys, time, warnings
import numpy as np, pandas as pd, polars as pl
warnings.simplefilter("ignore")
import logging; logging.disable(logging.WARNING)
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
from anonymeter.evaluators import singling_out_evaluator as so
from anonymeter.neighbors.mixed_types_kneighbors import KNNInferencePredictor
args = json.loads(sys.argv[1])
folder = args["folder"]
def read(name):  # numbers as floats in every frame: anonymeter detects column types per frame
    df = pd.read_csv(f"{folder}/{name}.csv")
    return df.astype({c: "float64" for c in args["numeric"]})
train, control = read("train"), read("control")
def risk(ev):
    r, res = ev.risk(), ev.results()
    return {"risk": float(r.value), "risk_lower": float(r.ci[0]), "risk_upper": float(r.ci[1]),
            "k_train": float(res.n_success), "n_train": int(res.n_attacks_ori),
            "k_control": float(res.n_control), "n_control": int(res.n_attacks_control)}
# what anonymeter's control-size correction saw (recorded, not changed): the queries, the successes
# it measured on subsamples of the control set, and the factor it applied
seen = {}
_measure, _fit = so._measure_queries_success, so.fit_correction_term
def measure(df, queries, n_repeat, n_meas):
    sizes, succ = _measure(df, queries, n_repeat, n_meas)
    seen["measured"] = sorted({int(x) for x in succ}); return sizes, succ
def fit(df, queries):
    f = _fit(df, queries); seen["queries"], seen["n_control"] = queries, len(df); return f
so._measure_queries_success, so.fit_correction_term = measure, fit
class Recording(KNNInferencePredictor):  # the default KNN predictor; keeps which synthetic record it chose
    calls = []  # one {target position: synthetic position} per predict(): the training targets, then the control
    def predict(self, x):
        idx = self._nn.kneighbors(queries=x[self._columns])
        Recording.calls.append(dict(zip((int(i) for i in x.index), (int(j) for j in idx.flatten()))))
        guesses = self._target_series.iloc[idx.flatten()]
        guesses.index = x.index
        return guesses
# warm-up: numba compiles the neighbour search once per process (not timed)
InferenceEvaluator(ori=train.head(50), syn=train.head(50), control=control.head(50), aux_cols=list(train.columns[:3]),
                   secret=train.columns[3], n_attacks=20).evaluate(n_jobs=1)
out = {}
for seed_s, targets in args["targets"].items():
    seed = int(seed_s)
    # every record given is attacked once: n_attacks = len(frame) and DataFrame.sample(n, replace=False)
    t_tg, c_tg = train.iloc[targets["train"]], control.iloc[targets["control"]]
    n_t, n_c = len(t_tg), len(c_tg)
    for case, cfg in args["cases"].items():
        np.random.seed(seed)  # pandas' sample() draws from numpy's global state
        syn = read(cfg["syn"])
        ori = read(cfg["train"]) if cfg["train"] != "train" else train
        res = {}
        for mode in ("univariate", "multivariate"):
            seen.clear()
            t = time.perf_counter()
            ev = SinglingOutEvaluator(ori=ori, syn=syn, control=control, n_attacks=args["n"], n_cols=3,
                                      max_attempts=args["attempts"], seed=seed).evaluate(mode=mode)
            res[f"singling_out.{mode}"] = r = {**risk(ev), "seconds": time.perf_counter() - t}
            if "queries" in seen:
                q = seen["queries"]
                raw = sum(c == 1 for c in so._evaluate_queries(ev._control, q))
                r["correction"] = {"queries_written": len(q), "control_successes_raw": int(raw),
                                   "factor": r["k_control"] / raw if raw else None,
                                   "successes_measured_on_control_subsamples": seen["measured"]}
                if cfg.get("empirical_factor"):
                    # truth of the size effect: the same queries on training subsamples of the control's size
                    rng = np.random.default_rng(1000 + seed)
                    at_c = [sum(c == 1 for c in so._evaluate_queries(
                        ev._ori[np.sort(rng.choice(len(ev._ori), seen["n_control"], replace=False)).tolist()], q))
                        for _ in range(10)]
                    at_t = sum(c == 1 for c in so._evaluate_queries(ev._ori, q))
                    r["correction"]["empirical_factor"] = at_t / max(np.mean(at_c), 1e-9)
            else:
                r["correction"] = {"queries_written": None, "factor": 1.0}
        if not cfg.get("only_singling_out"):
            t = time.perf_counter()
            ev = LinkabilityEvaluator(ori=t_tg, syn=syn, control=c_tg, n_attacks=n_t, n_neighbors=1,
                                      aux_cols=(args["link_a"], args["link_b"])).evaluate(n_jobs=1)
            res["linkability"] = {**risk(ev), "seconds": time.perf_counter() - t}
            for secret in args["secrets"]:
                Recording.calls = []
                aux = [c for c in train.columns if c != secret]
                t = time.perf_counter()
                ev = InferenceEvaluator(ori=t_tg, syn=syn, control=c_tg, n_attacks=n_t, secret=secret, aux_cols=aux,
                                        regression=secret in args["numeric"],
                                        inference_model=Recording(data=syn, columns=aux, target_col=secret, n_jobs=1)
                                        ).evaluate(n_jobs=1)
                r = {**risk(ev), "seconds": time.perf_counter() - t}
                r["chosen_train"] = [Recording.calls[0][int(i)] for i in targets["train"]]
                r["chosen_control"] = [Recording.calls[1][int(i)] for i in targets["control"]]
                res[f"inference.{secret}"] = r
        out.setdefault(seed_s, {})[case] = res
        print(seed, case, "done", flush=True, file=sys.stderr)
print(json.dumps(out))
"""  # noqa: E501 - a script for a child process, kept as one would type it


def anonymeter_python(venv: Path | None) -> Path:
    """The python of a virtual environment with anonymeter 1.1.0 (made here unless ``venv``
    given)."""
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
    generator = create_generator("gaussian_copula", seed=0).fit(
        train, spec, reference=splits.reference
    )
    return {
        "independent": splits.reference,
        "noisy_copies": noisy,
        "full_copy": train,
        "gaussian_copula": generator.sample(len(train)),
    }


def ours(
    spec,
    train,
    control,
    syn,
    *,
    n: int,
    link,
    seed: int,
    t_idx,
    c_idx,
    only_singling_out: bool = False,
    empirical_factor: bool = False,
) -> dict:
    from privacy_gate.attacks.nn_index import k_nearest_indices
    from privacy_gate.experiment.disclosure_codes import Codes
    from privacy_gate.experiment.linkability import inference, linkability
    from privacy_gate.experiment.singling_out import (
        attack_predicates,
        isolating,
        singling_out,
    )

    numeric = {c for c, col in spec.columns.items() if col.is_numeric}
    res = {}
    t = time.perf_counter()
    shared = Codes.of([syn, train, control], columns=list(spec.columns), numeric=numeric)
    res["codes"] = time.perf_counter() - t  # built once per release and shared, as in the gate

    def codes():
        return shared

    def figures(r):
        return {
            "risk": r.risk,
            "risk_lower": r.risk_lower,
            "risk_upper": r.risk_upper,
            "k_train": r.k_train,
            "n_train": r.n_train,
            "k_control": r.k_control,
            "n_control": r.n_control,
        }

    for mode, n_cols in (("univariate", 1), ("multivariate", 3)):
        t = time.perf_counter()
        so = singling_out(
            codes(), n_attacks=n, n_cols=n_cols, seed=seed, max_attempts=MULTI_ATTEMPTS
        )
        seconds = time.perf_counter() - t
        # anonymeter's denominator: the predicates requested (our k_control is already
        # size-corrected)
        requested = disclosure_risk(
            k_train=so.risk.k_train, n_train=n, k_control=so.risk.k_control, n_control=n
        )
        out = {
            **figures(requested),
            "seconds": seconds,
            "native": figures(so.risk),
            "correction": {"queries_written": so.n_predicates, "factor": so.control_correction},
        }
        if empirical_factor:  # the same predicates on training subsamples of the control's size
            s_, t_, c_ = shared.matrices
            preds = attack_predicates(
                s_,
                shared.numeric,
                n_attacks=n,
                n_cols=n_cols,
                seed=seed,
                max_attempts=MULTI_ATTEMPTS,
            )
            rng = np.random.default_rng(1000 + seed)
            at_c = [
                isolating(t_[rng.choice(len(t_), len(c_), replace=False)], preds, seed=seed).sum()
                for _ in range(10)
            ]
            out["correction"]["empirical_factor"] = float(
                so.risk.k_train / max(np.mean(at_c), 1e-9)
            )
        res[f"singling_out.{mode}"] = out
    if only_singling_out:
        return res
    t = time.perf_counter()
    r = linkability(
        codes(),
        tuple(link[0]),
        tuple(link[1]),
        train_idx=t_idx,
        control_idx=c_idx,
        n_neighbors=1,
        seed=seed,
    ).risk
    res["linkability"] = {**figures(r), "seconds": time.perf_counter() - t}
    for secret in SECRETS:
        aux = tuple(c for c in spec.columns if c != secret)
        t = time.perf_counter()
        o = inference(
            codes(), secret, aux, train_idx=t_idx, control_idx=c_idx, seed=seed, tolerance=TOLERANCE
        )
        res[f"inference.{secret}"] = {
            **figures(o.risk),
            "seconds": time.perf_counter() - t,
            "hits_train": o.train_hits,
            "hits_control": o.control_hits,
        }
        # which synthetic record the attack used (the evaluator's own search, repeated; not timed)
        syn_v, train_v, control_v = shared.vectors(aux)
        chosen = k_nearest_indices(np.vstack([train_v[t_idx], control_v[c_idx]]), syn_v, 1)[:, 0]
        res[f"inference.{secret}"]["chosen"] = (chosen[: len(t_idx)], chosen[len(t_idx) :])
    return res


def _judged(guess, truth, numeric: bool, criterion: str) -> np.ndarray:
    """Per-target success of guesses of a secret: ``ours`` (|g - t| <= tol |t|) or ``anonymeter``
    (|g - t| / g <= tol, inference_evaluator.evaluate_inference_guesses); categories by equality."""
    guess, truth = np.asarray(guess), np.asarray(truth)
    both_missing = pd.isna(guess) & pd.isna(truth)
    if not numeric:
        return (guess == truth) | both_missing
    g, t = guess.astype(float), truth.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        hit = (
            np.abs(g - t) <= TOLERANCE * np.abs(t)
            if criterion == "ours"
            else np.abs(g - t) / (g + 1e-12) <= TOLERANCE
        )
    return hit | both_missing


def inference_diagnostics(
    secret: str,
    numeric: bool,
    syn,
    train,
    control,
    t_idx,
    c_idx,
    mine: dict,
    a: dict,
    *,
    copies: bool,
) -> dict:
    """Counts (no values) that say where the two tools' inference attacks on the same targets
    part."""
    aux = [c for c in syn.columns if c != secret]
    out = {}
    # ambiguous targets: synthetic records hold their exact auxiliary values with more than one
    # secret
    key = syn[aux].astype(str).agg("\x1f".join, axis=1)
    n_secrets = syn[secret].astype(str).groupby(key).nunique()
    for side, frame, idx, mc, ac, mh in (
        ("train", train, t_idx, mine["chosen"][0], a["chosen_train"], mine["hits_train"]),
        ("control", control, c_idx, mine["chosen"][1], a["chosen_control"], mine["hits_control"]),
    ):
        truth = frame[secret].to_numpy()[idx]
        ac = np.asarray(ac)
        theirs = _judged(syn[secret].to_numpy()[ac], truth, numeric, "anonymeter")
        tkey = frame.iloc[idx][aux].astype(str).agg("\x1f".join, axis=1)
        d = {
            "same_record": int((np.asarray(mc) == ac).sum()),
            "hits_ours": int(np.sum(mh)),
            "hits_anonymeter": int(theirs.sum()),
            "only_ours": int((np.asarray(mh) & ~theirs).sum()),
            "only_anonymeter": int((~np.asarray(mh) & theirs).sum()),
            "ambiguous": int((tkey.map(n_secrets).fillna(0).to_numpy() > 1).sum()),
        }
        if numeric:
            d["hits_ours_by_anonymeter_criterion"] = int(
                _judged(syn[secret].to_numpy()[np.asarray(mc)], truth, True, "anonymeter").sum()
            )
        if (
            side == "train" and copies
        ):  # copies of the training records: is the record used the target's own?
            d["own_record_ours"], d["own_record_anonymeter"] = (
                int((np.asarray(mc) == idx).sum()),
                int((ac == idx).sum()),
            )
        out[side] = d
    return out


def _agree(m: dict, a: dict) -> bool:
    # anonymeter bounds every risk and interval to [0, 1]; ours may be negative (control records
    # guessed better), so our point estimate is compared after the same clipping
    ours_clipped = min(max(m["risk"], 0.0), 1.0)
    return (
        a["risk_lower"] - 1e-9 <= ours_clipped <= a["risk_upper"] + 1e-9
        and m["risk_lower"] - 1e-9 <= a["risk"] <= m["risk_upper"] + 1e-9
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-attacks", type=int, default=500)
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0], help="attack seeds (targets, predicates)"
    )
    parser.add_argument(
        "--venv", type=Path, default=None, help="reuse a venv that has anonymeter 1.1.0"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    spec, splits = adult_splits()
    cols = list(spec.columns)
    numeric = [c for c, col in spec.columns.items() if col.is_numeric]
    half = (len(cols) + 1) // 2
    link = (cols[:half], cols[half:])
    cases = releases(spec, splits)
    folder = Path(tempfile.mkdtemp(prefix="bench-disclosure-"))
    splits.train[cols].to_csv(folder / "train.csv", index=False)
    splits.holdout[cols].to_csv(folder / "control.csv", index=False)
    for name, df in cases.items():
        df[cols].to_csv(folder / f"{name}.csv", index=False)
    n_train, n_control = len(splits.train), len(splits.holdout)
    targets, plan = {}, {name: {"syn": name, "train": "train"} for name in cases}
    equal_cases = [f"{name}@equal_size" for name in cases]
    for seed in args.seeds:
        rng = np.random.default_rng(seed)
        t_idx = rng.choice(n_train, args.n_attacks, replace=False)
        c_idx = rng.choice(n_control, args.n_attacks, replace=False)
        # the equal-size check: training records subsampled to the control's size (no size
        # correction)
        sub = np.sort(
            np.random.default_rng(10_000 + seed).choice(n_train, n_control, replace=False)
        )
        splits.train[cols].iloc[sub].to_csv(folder / f"train_equal_{seed}.csv", index=False)
        targets[str(seed)] = {"train": t_idx.tolist(), "control": c_idx.tolist(), "equal": sub}
    plan["independent"]["empirical_factor"] = True
    python = anonymeter_python(args.venv)
    # the same CSV round trip anonymeter reads, so both judge identical values
    read = {name: pd.read_csv(folder / f"{name}.csv") for name in ("train", "control", *cases)}
    rows, agree_all, theirs, t0 = [], True, {}, time.perf_counter()
    for (
        seed
    ) in args.seeds:  # one anonymeter process per seed (the equal-size training file is per seed)
        seed_plan = {
            **plan,
            **{
                f"{name}@equal_size": {
                    "syn": name,
                    "train": f"train_equal_{seed}",
                    "only_singling_out": True,
                }
                for name in cases
            },
        }
        job = {
            "folder": str(folder),
            "cases": seed_plan,
            "n": args.n_attacks,
            "attempts": MULTI_ATTEMPTS,
            "link_a": link[0],
            "link_b": link[1],
            "secrets": list(SECRETS),
            "numeric": numeric,
            "targets": {str(seed): {k: v for k, v in targets[str(seed)].items() if k != "equal"}},
        }
        done = subprocess.run(
            [str(python), "-c", WORKER, json.dumps(job)],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        theirs.update(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"anonymeter: {time.perf_counter() - t0:.0f} s in all")
    for seed in args.seeds:
        tg = targets[str(seed)]
        t_idx, c_idx = np.asarray(tg["train"]), np.asarray(tg["control"])
        for case in [*cases, *equal_cases]:
            equal = case.endswith("@equal_size")
            syn_r = read[case.split("@")[0]]
            train_r = (
                read["train"].iloc[tg["equal"]].reset_index(drop=True) if equal else read["train"]
            )
            mine = ours(
                spec,
                train_r,
                read["control"],
                syn_r,
                n=args.n_attacks,
                link=link,
                seed=seed,
                t_idx=t_idx,
                c_idx=c_idx,
                only_singling_out=equal,
                empirical_factor=case == "independent",
            )
            shared_s = mine.pop("codes")
            for key, m in mine.items():
                a = theirs[str(seed)][case][key]
                m["seconds"] += shared_s / len(mine)  # the shared encoding, split evenly
                row = {
                    "seed": seed,
                    "release": case,
                    "evaluator": key,
                    "agree": _agree(m, a),
                    "compared": True,
                }
                if key.startswith("inference."):
                    secret = key.split(".", 1)[1]
                    row["targets"] = d = inference_diagnostics(
                        secret,
                        secret in numeric,
                        syn_r,
                        read["train"],
                        read["control"],
                        t_idx,
                        c_idx,
                        m,
                        a,
                        copies=case in ("noisy_copies", "full_copy"),
                    )
                    if (
                        secret in numeric
                    ):  # ours with anonymeter's success criterion (relative to the guess)
                        same = disclosure_risk(
                            k_train=d["train"]["hits_ours_by_anonymeter_criterion"],
                            n_train=len(t_idx),
                            k_control=d["control"]["hits_ours_by_anonymeter_criterion"],
                            n_control=len(c_idx),
                        )
                        row["ours_by_anonymeter_criterion"] = {
                            "risk": same.risk,
                            "risk_lower": same.risk_lower,
                            "risk_upper": same.risk_upper,
                        }
                        row["agree_by_anonymeter_criterion"] = _agree(
                            row["ours_by_anonymeter_criterion"], a
                        )
                    for k in ("hits_train", "hits_control", "chosen"):
                        m.pop(k)
                    a = {k: v for k, v in a.items() if not k.startswith("chosen_")}
                agree_all &= row["agree"]
                row.update(ours=m, anonymeter=a, speedup=a["seconds"] / max(m["seconds"], 1e-9))
                rows.append(row)
    print(
        f"{'seed':<5}{'release':<24}{'evaluator':<26}{'ours risk [interval]':<28}"
        f"{'anonymeter risk [interval]':<28}{'agree':<7}{'ours s':>8}{'anon s':>9}{'x':>7}"
    )
    for r in rows:
        o, a = r["ours"], r["anonymeter"]
        print(
            f"{r['seed']:<5}{r['release']:<24}{r['evaluator']:<26}{o['risk']:6.3f} "
            f"[{o['risk_lower']:6.3f},{o['risk_upper']:6.3f}]    {a['risk']:6.3f} "
            f"[{a['risk_lower']:6.3f},{a['risk_upper']:6.3f}]    "
            f"{'yes' if r['agree'] else 'NO':<7}{o['seconds']:8.2f}{a['seconds']:9.2f}"
            f"{r['speedup']:7.1f}"
        )
    per_eval = {}
    for r in rows:  # speed over the four releases (the equal-size check is extra), per pass
        if r["release"].endswith("@equal_size"):
            continue
        per_eval.setdefault(r["evaluator"], [0.0, 0.0])
        per_eval[r["evaluator"]][0] += r["ours"]["seconds"] / len(args.seeds)
        per_eval[r["evaluator"]][1] += r["anonymeter"]["seconds"] / len(args.seeds)
    speed = {
        k: {"ours_s": v[0], "anonymeter_s": v[1], "speedup": v[1] / max(v[0], 1e-9)}
        for k, v in per_eval.items()
    }
    tot_o, tot_a = sum(v[0] for v in per_eval.values()), sum(v[1] for v in per_eval.values())
    n_agree = sum(r["agree"] for r in rows)
    print(
        f"per pass: ours {tot_o:.1f} s, anonymeter {tot_a:.1f} s, {tot_a / tot_o:.1f}x; "
        f"agreement: {n_agree} of {len(rows)} cases"
    )
    record(
        "disclosure",
        {
            "benchmark": __doc__.splitlines()[0],
            "n_attacks": args.n_attacks,
            "seeds": args.seeds,
            "multivariate_attempts": MULTI_ATTEMPTS,
            "tolerance": TOLERANCE,
            "rows": {"train": n_train, "control": n_control, "train_equal_size": n_control},
            "releases": list(cases),
            "equal_size_cases": equal_cases,
            "secrets": list(SECRETS),
            "link": link,
            "results": rows,
            "seconds_per_evaluator": speed,
            "total_seconds_per_pass": {"ours": tot_o, "anonymeter": tot_a},
            "speedup": tot_a / tot_o,
            "agreeing": n_agree,
            "compared": len(rows),
            "agree_all_compared": agree_all,
        },
    )


if __name__ == "__main__":
    main()
