"""The decision does not depend on the CPU: the same seeded gate run under other OpenBLAS kernels
(``OPENBLAS_CORETYPE``: the BLAS that numpy, scipy and torch call) gives the same verdict, the same
checks and counts, and the same p-values of every budget test, so a CPU difference shows on the
developers' machine rather than on the next user's.

The agreement scan's matrix products use integer weights below 2^24 (exact in float32 whatever the
summation order), the copy test hashes rows, and the rank and tail tests break ties by a seeded
random order: selection steps take no float sum's order.

The golden scenarios (tests/pipeline/test_golden.py) also pass under two other OpenBLAS core types:
the oldest kernel (Prescott, SSE3) and Haswell's with numpy's AVX-512 paths switched off
(``NPY_DISABLE_CPU_FEATURES``), the two ends of what a user's CPU may choose. (The whole gate above
also runs on Nehalem's kernel; the golden scenarios there cost CI a minute and a half and tried no
kernel the two ends do not bracket.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

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
"""  # noqa: E501 - a script for a child process, kept as one would type it


#: numpy's AVX-512 dispatch targets (numpy 2.4 names; X86_V4 is AVX-512F/CD/VL/BW/DQ): those this
#: CPU has are switched off (``NPY_DISABLE_CPU_FEATURES``), with OpenBLAS on Haswell kernels: a
#: machine without AVX-512, simulated on this one.
AVX512_TARGETS = ("X86_V4", "AVX512_ICL", "AVX512_SPR")


def _avx512_here() -> list[str]:
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [t for t in AVX512_TARGETS if t in __cpu_dispatch__ and __cpu_features__.get(t)]


def _kernel_env(coretype: str | None, *, no_avx512: bool = False) -> dict[str, str]:
    """This process's environment (without pytest-xdist's worker variables) with OpenBLAS on
    ``coretype`` (None: its own choice) and, with ``no_avx512``, numpy's AVX-512 targets off."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT", "OPENBLAS_CORETYPE", "NPY_DISABLE"))
    }
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    avx512 = _avx512_here() if no_avx512 else []
    if avx512:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(avx512)
    return env


def _run(coretype: str | None, *, no_avx512: bool = False) -> dict:
    env = _kernel_env(coretype, no_avx512=no_avx512)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_verdict_is_the_same_under_other_blas_kernels():
    base = _run(None)
    assert base["status"] == "ok"
    for coretype in ("Prescott", "Nehalem", "Haswell"):
        other = _run(coretype, no_avx512=coretype == "Haswell")
        for key in ("decision", "reasons", "checks", "flagged", "counts"):
            assert other[key] == base[key], (coretype, key)
        for (name, p), (name_o, p_o) in zip(base["tests"], other["tests"]):
            # p-values: equal up to rounding of the last digits (ranks and counts are identical)
            assert (
                name == name_o
                and (p is None) == (p_o is None)
                and (p is None or abs(p - p_o) <= 1e-9 * max(1, p))
            ), (coretype, name, p, p_o)


#: The golden scenarios' environments: the oldest OpenBLAS core type, and Haswell's with numpy's
#: AVX-512 off (this machine's own kernels run them in tests/pipeline/test_golden.py).
GOLDEN_ENVIRONMENTS = {
    "Prescott": ("Prescott", False),
    "Haswell, no AVX-512": ("Haswell", True),
}


def test_the_golden_scenarios_pass_under_other_kernels_and_without_avx512():
    """tests/pipeline/test_golden.py (decisions, checks and counts exact, figures at its tolerance)
    in a fresh pytest process per environment: numpy and OpenBLAS choose their kernels when they
    load, so a kernel can only be changed in a new process."""
    for name, (coretype, no_avx512) in GOLDEN_ENVIRONMENTS.items():
        env = _kernel_env(coretype, no_avx512=no_avx512)
        check = (
            "from numpy._core._multiarray_umath import __cpu_features__ as f; print([t for t "
            "in %r if f.get(t)])"
        )
        on = subprocess.run(
            [sys.executable, "-c", check % (AVX512_TARGETS,)],
            env=env,
            capture_output=True,
            text=True,
        )
        assert on.returncode == 0, on.stderr[-2000:]
        if no_avx512:
            assert on.stdout.strip() == "[]", (
                name,
                on.stdout,
            )  # numpy really runs without AVX-512 there
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-n",
                "0",
                "-p",
                "no:cacheprovider",
                "tests/pipeline/test_golden.py",
                "-k",
                "test_verdicts_and_metrics_unchanged",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
        )
        assert out.returncode == 0, (name, out.stdout[-4000:])
        assert " passed" in out.stdout and "skipped" not in out.stdout, (name, out.stdout[-1000:])
