"""Fixed-seed gate scenarios whose verdicts and metrics must not change under refactoring.

``python -m tests.golden.scenarios --write`` records them in ``tests/golden/verdicts.json``
(done once, on the code before the pipeline redesign); ``tests/pipeline/test_golden.py`` runs the
same scenarios on today's code and compares every metric, check and decision.

Each scenario is a real run of the public entry points (release flow / gate flow) on small
seeded Adult samples; only run-specific values (timings, run ids, timestamps) are left out.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT / "data" / "adult" / "adult.csv.gz"
# the release config the golden verdicts were recorded with (frozen: examples/ may evolve)
EXAMPLE = Path(__file__).with_name("adult.yaml")
GOLDEN = Path(__file__).with_name("verdicts.json")


def _flows():
    """The release and gate flow entry points (their module moved in the pipeline redesign)."""
    try:
        from privacy_gate.flows import gate_flow, release_flow
    except ImportError:  # before the redesign
        from flows.release import gate_flow, release_flow
    return release_flow, gate_flow


def _small_adult(folder: Path) -> None:
    adult = pd.read_csv(ADULT)
    order = np.random.default_rng(7).permutation(len(adult))
    adult.iloc[order[:3000]].reset_index(drop=True).to_csv(folder / "real.csv", index=False)
    adult.iloc[order[3000:5000]].reset_index(drop=True).to_csv(
        folder / "independent.csv", index=False
    )


def _config(folder: Path, name: str, generator: dict, **overrides: Any) -> Path:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["dataset"]["path"] = str(folder / "real.csv")
    raw["generator"] = generator
    raw.update(overrides)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _release(folder: Path, name: str, generator: dict, **overrides: Any) -> dict:
    release_flow, _ = _flows()
    cfg = _config(folder, name, generator, **overrides)
    return release_flow(config_path=str(cfg), workdir=str(folder / f"wd-{name}")).verdict.to_dict()


def _gate_only(folder: Path) -> dict:
    """Gate-only mode: train / holdout / reference files and a synthetic file made elsewhere."""
    _, gate_flow = _flows()
    real = pd.read_csv(folder / "real.csv")
    real.iloc[:1800].to_csv(folder / "g-train.csv", index=False)
    real.iloc[1800:2400].to_csv(folder / "g-holdout.csv", index=False)
    real.iloc[2400:].to_csv(folder / "g-reference.csv", index=False)
    syn = pd.concat([pd.read_csv(folder / "independent.csv").iloc[:1700], real.iloc[:100]])
    syn.to_csv(folder / "g-synthetic.csv", index=False)
    return gate_flow(
        train=str(folder / "g-train.csv"),
        holdout=str(folder / "g-holdout.csv"),
        reference=str(folder / "g-reference.csv"),
        synthetic=str(folder / "g-synthetic.csv"),
        spec_path=str(EXAMPLE),
        rules_path=str(EXAMPLE),  # the rules of that day (= its defaults)
        workdir=str(folder / "wd-gate"),
        targets_seed=3,
    ).verdict.to_dict()


def household_release(folder: Path, example: Path = EXAMPLE) -> Path:
    """A release config of households (1-3 Adult records each, the entities) at three sites (the
    source): an independent sample plus verbatim copies of site s1's training records."""
    from privacy_gate.config import load_release_config
    from privacy_gate.data import conform, split_by_entity

    adult = pd.read_csv(ADULT)
    rng = np.random.default_rng(5)
    rows = adult.sample(frac=1.0, random_state=3).reset_index(drop=True)
    real, outside = rows.iloc[:4000].copy(), rows.iloc[4000:8000].copy()
    sizes = rng.integers(1, 4, size=4000)
    real["household"] = np.repeat([f"h{i}" for i in range(len(sizes))], sizes)[:4000]
    real["site"] = real["household"].map(lambda h: f"s{int(h[1:]) % 3 + 1}")
    outside["household"] = [f"x{i}" for i in range(len(outside))]
    outside["site"] = rng.choice(["s1", "s2", "s3"], len(outside))
    real.to_csv(folder / "hh-real.csv", index=False)
    raw = yaml.safe_load(example.read_text())
    spec = raw["dataset"]["spec"]
    spec["columns"]["household"] = {"kind": "categorical", "nullable": False}
    spec["columns"]["site"] = {
        "kind": "categorical",
        "categories": ["s1", "s2", "s3"],
        "nullable": False,
    }
    spec.update(entity_id="household", source="site")
    raw["dataset"]["path"] = str(folder / "hh-real.csv")
    raw["generator"] = {"name": "file", "path": str(folder / "hh-synthetic.csv")}
    raw["audit"] = {"dependency_test": True, "intersections": []}
    cfg_path = folder / "households.yaml"
    cfg_path.write_text(yaml.safe_dump(raw, sort_keys=False))
    cfg = load_release_config(cfg_path)
    train = split_by_entity(
        conform(real, cfg.dataset.spec, source="r"), cfg.dataset.spec, cfg.split
    ).train
    copies = real.loc[train.index[train["site"] == "s1"]]
    pd.concat([outside, copies]).to_csv(folder / "hh-synthetic.csv", index=False)
    return cfg_path


def _households(folder: Path) -> dict:
    cfg_path = household_release(folder)
    release_flow, _ = _flows()
    return release_flow(
        config_path=str(cfg_path), workdir=str(folder / "wd-households")
    ).verdict.to_dict()


SCENARIOS: dict[str, Callable[[Path], dict]] = {
    "copy_train": lambda f: _release(f, "copy", {"name": "copy_train", "seed": 0}),
    "noisy_copy": lambda f: _release(
        f,
        "noisy",
        {"name": "noisy_copy", "seed": 1},
        split={"train": 0.6, "holdout": 0.2, "reference": 0.2, "seed": 1},
        targets={"seed": 1},
    ),
    "independent": lambda f: _release(
        f, "indep", {"name": "file", "path": str(f / "independent.csv")}
    ),
    "mst_eps1": lambda f: _release(
        f,
        "mst",
        {"name": "mst", "epsilon": 1.0, "seed": 0},
        attacks=[{"name": "domias"}, {"name": "dcr"}, {"name": "mama_mia", "n_shadow": 8}],
    ),
    "gate_only": _gate_only,
    "households": _households,
}


def _check(c: dict) -> dict:
    key = c.get("key") or c["metric"]
    return {
        "rule": c["rule"],
        "key": key,
        "observed": c["observed"],
        "threshold": c["threshold"],
        "action": c["action"],
        "passed": c["passed"],
    }


#: DP generators draw fresh noise on every run (a fixed seed would void the guarantee), so for
#: these scenarios only the structure is compared: which metrics, checks, rules and thresholds
#: exist, the real-data hashes, and the decision.
STRUCTURE_ONLY = {"mst_eps1"}


def canonical(verdict: dict) -> dict:
    """What must stay identical: decision, status, flagged groups, hashes, checks and metrics."""
    return {
        "verdict": verdict["verdict"],
        "status": verdict["status"],
        "flagged_subgroups": list(verdict["flagged_subgroups"]),
        "data_hashes": dict(sorted(verdict["data_hashes"].items())),
        "rules_hash": verdict["rules_hash"],
        "reasons": sorted(
            (_check(c) for c in verdict["reasons"]), key=lambda c: (c["key"], c["rule"])
        ),
        "checks": sorted(
            (_check(c) for c in verdict["checks"]), key=lambda c: (c["key"], c["rule"])
        ),
        "metrics": {
            k: v for k, v in sorted(verdict["metrics"].items()) if not k.startswith("time.")
        },
    }


def run_all(names: list[str] | None = None) -> dict[str, dict]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _small_adult(folder)
        for name in names or list(SCENARIOS):
            print(f"[golden] {name} ...", file=sys.stderr, flush=True)
            out[name] = canonical(SCENARIOS[name](folder))
    return out


#: Float tolerance of the value comparison: ``math.isclose(expected, actual, rel_tol=REL_TOL,
#: abs_tol=ABS_TOL)``. Why these numbers (measured, tests/pipeline/test_golden.py on an AVX-512
#: machine against verdicts.json recorded elsewhere):
#:
#: - OpenBLAS picks its kernels by CPU, so summation order differs between machines (~1e-16 per
#:   operation). Every figure of one attack (AUC, TPR, per-attack MACE, utility, exposure) differed
#:   by at most 1.2e-15 relative; the combined query (the 3-d KDE, its logs and the optimiser of
#:   the multi-d MACE estimator) amplifies this to at most 5.4e-8 relative
#:   (noisy_copy ``combined.mace.advantage`` 0.7441092851757787 -> 0.7441092451483369).
#:   REL_TOL = 1e-6 keeps a margin of ~18x over that.
#: - The smallest real change of a rank figure is one target crossing another: 1 / (n_members *
#:   n_non_members) in an AUC, 1.5e-6 at the largest table here (households, 805 x 805; 2.8e-6 at
#:   600 x 600, 6.25e-6 at 400 x 400), and 1 / n_members >= 1.2e-3 in a TPR or a share. Since these
#:   figures are <= 1, rel 1e-6 allows less than one such step: any rank change is reported.
#: - ABS_TOL = 1e-9 only matters for figures near 0 (a lower bound clipped at 0 vs 1e-12), far
#:   below any rank step.
#: Counts (see ``is_count``) and everything that is not a float figure (decisions, statuses, checks'
#: pass/fail, actions and thresholds, flagged groups, hashes) are compared exactly.
REL_TOL = 1e-6
ABS_TOL = 1e-9

#: Metrics that are integer counts or flags (last name part): targets per class (``n_members``,
#: ``n_non_members``, per attack, subgroup, entity and dependency audit), ``utility.n_columns`` /
#: ``n_pairs``, the exposure scan's ``exposed.count`` / ``tested`` / ``attacks`` (and any
#: ``*count``), GE's ``validation.synthetic.failed`` / ``success`` and
#: ``dependency.plausibly_dependent``. These must match exactly.
_COUNT = re.compile(
    r"(?:^|[./])(?:n_[a-z_]+|[a-z_]*count|tested|attacks|members|failed|success|plausibly_dependent"
    r"|calibration|compared|n_pool|train_only|holdout_only|[a-z_]*tail_top)$"
)


def is_count(key: str) -> bool:
    """``subgroup/sex/Female/dcr.n_members`` and ``exposed.count`` are counts; ``dcr.auc`` is not.

    >>> [is_count(k) for k in ("dcr.n_members", "subgroup/sex/Male/n_non_members", "exposed.count",
    ...                        "exposed.tested", "utility.n_pairs", "dcr.auc",
    ...                        "exposed.share_upper")]
    [True, True, True, True, True, False, False]
    """
    return bool(_COUNT.search(key))


def same_value(key: str, expected: float | None, actual: float | None) -> bool:
    """Equal counts; floats equal up to BLAS rounding (``REL_TOL``, ``ABS_TOL``); None only equals
    None."""
    if expected is None or actual is None:
        return expected is None and actual is None
    if is_count(key):
        return expected == actual
    return math.isclose(expected, actual, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def differences(expected: dict, actual: dict, *, values: bool = True) -> list[str]:
    """Human-readable differences between two canonical verdicts (empty = identical up to the float
    tolerance above). ``values=False``: structure only (see ``STRUCTURE_ONLY``)."""
    diffs = []
    for key in ("verdict", "status", "flagged_subgroups", "data_hashes", "rules_hash"):
        e, a = expected[key], actual[key]
        if (
            key == "data_hashes" and not values
        ):  # the real splits are deterministic, the release is not
            e, a = ({k: v for k, v in d.items() if not k.startswith("synthetic")} for d in (e, a))
        if key == "flagged_subgroups" and not values:
            continue
        if e != a:
            diffs.append(f"{key}: {e!r} -> {a!r}")
    if not values:
        for part in ("metrics",):
            missing, new = (
                set(expected[part]) - set(actual[part]),
                set(actual[part]) - set(expected[part]),
            )
            diffs += [f"metric {k}: missing" for k in sorted(missing)] + [
                f"metric {k}: new" for k in sorted(new)
            ]
        e = {(c["key"], c["rule"], c["threshold"]) for c in expected["checks"]}
        a = {(c["key"], c["rule"], c["threshold"]) for c in actual["checks"]}
        diffs += [f"check {k}: missing" for k in sorted(e - a, key=str)] + [
            f"check {k}: new" for k in sorted(a - e, key=str)
        ]
        return diffs
    em, am = expected["metrics"], actual["metrics"]
    for k in sorted(set(em) | set(am)):
        a, b = em.get(k), am.get(k)
        if not same_value(k, a, b):
            diffs.append(f"metric {k}: {a!r} -> {b!r}")
    for part in ("reasons", "checks"):
        e = {(c["key"], c["rule"]): c for c in expected[part]}
        a = {(c["key"], c["rule"]): c for c in actual[part]}
        for k in sorted(set(e) | set(a)):
            ce, ca = e.get(k), a.get(k)
            if ce is None or ca is None:
                diffs.append(f"{part} {k}: {'missing' if ca is None else 'new'}")
                continue
            for f in ("threshold", "action", "passed"):
                if ce[f] != ca[f]:
                    diffs.append(f"{part} {k} {f}: {ce[f]!r} -> {ca[f]!r}")
            if not same_value(ce["key"], ce["observed"], ca["observed"]):
                diffs.append(f"{part} {k} observed: {ce['observed']!r} -> {ca['observed']!r}")
    return diffs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--write", action="store_true", help=f"record the scenarios in {GOLDEN.name}"
    )
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    from ..stack import prefect_test_harness  # Prefect's, with its server under tests/reaper.py

    with prefect_test_harness(server_startup_timeout=60):
        result = run_all(args.names or None)
    if args.write:
        GOLDEN.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
    else:
        expected = json.loads(GOLDEN.read_text())
        for name, canon in result.items():
            d = differences(expected[name], canon, values=name not in STRUCTURE_ONLY)
            print(f"{name}: {'identical' if not d else str(len(d)) + ' differences'}")
            for line in d[:20]:
                print("   ", line)


if __name__ == "__main__":
    main()
