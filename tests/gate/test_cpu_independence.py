"""The decision does not depend on the CPU: the same seeded gate run under other OpenBLAS kernels
(``OPENBLAS_CORETYPE``: the BLAS that numpy, scipy and torch call) gives the same verdict, the same
checks and counts, and the same p-values of every budget test, so a CPU difference shows on the
developers' machine rather than on the next user's.

The agreement scan's matrix products use integer weights below 2^24 (exact in float32 whatever the
summation order), the copy test hashes rows, and the rank and tail tests break ties by a seeded
random order: selection steps take no float sum's order."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The run: an Adult release with 2% partial copies (one column re-drawn), so every budget test
#: computes something non-trivial; small enough for a few seconds per kernel.
CHILD = r"""
import json, sys
import numpy as np, pandas as pd
sys.path.insert(0, sys.argv[1])
import privacy_gate
from privacy_gate.config import AttackConfig, DisclosureConfig, MaceConfig, load_spec
spec = load_spec(sys.argv[1] + "/examples/adult.yaml")
adult = pd.read_csv(sys.argv[1] + "/data/adult/adult.csv.gz")
rng = np.random.default_rng(3)
o = rng.permutation(len(adult))
tr, ho, rf, syn = (adult.iloc[o[a:b]].reset_index(drop=True) for a, b in ((0, 1500), (1500, 2250), (2250, 3000), (3000, 4500)))
rows = tr.iloc[:30].copy()
rows["occupation"] = adult["occupation"].iloc[o[5000:5030]].to_numpy()
syn.iloc[:30] = rows.to_numpy()
r = privacy_gate.evaluate(train=tr, holdout=ho, reference=rf, synthetic=syn, spec=spec,
                          attacks=[AttackConfig(name="dcr"), AttackConfig(name="domias")],
                          mace=MaceConfig(n_permutations=20), disclosure=DisclosureConfig(n_attacks=100))
v = r.verdict
print(json.dumps({"decision": v.decision, "status": v.status, "reasons": sorted(c.key for c in v.reasons),
                  "checks": sorted((c.key, c.passed, c.action) for c in v.checks),
                  "flagged": list(v.flagged_subgroups), "tests": [(t["name"], t["pvalue"]) for t in v.budget["tests"]],
                  "counts": {k: v.metrics[k] for k in sorted(v.metrics) if k.endswith(("count", "train_only", "holdout_only"))}}))
"""


def _run(coretype: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_verdict_is_the_same_under_other_blas_kernels():
    base = _run(None)
    assert base["status"] == "ok"
    for coretype in ("Prescott", "Nehalem", "Haswell"):
        other = _run(coretype)
        for key in ("decision", "reasons", "checks", "flagged", "counts"):
            assert other[key] == base[key], (coretype, key)
        for (name, p), (name_o, p_o) in zip(base["tests"], other["tests"]):
            # p-values: equal up to rounding of the last digits (ranks and counts are identical)
            assert name == name_o and (p is None) == (p_o is None) and (p is None or abs(p - p_o) <= 1e-9 * max(1, p)), (
                coretype, name, p, p_o)
