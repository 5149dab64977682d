"""Canaries through the real release flow (Prefect + MLflow + GE) on 3,000 Adult rows.

copies of training rows -> BLOCK; copies with small noise -> BLOCK; an independent sample of the
same population -> APPROVE. The noisy copies, the one canary near the gate's edge, on several
seeds; verbatim copies and the independent sample (far from it) on one. How reliably the defaults
hold over many seeds and tables is measured by benchmarks/bench_calibration.py, not here.
"""

import pytest

from privacy_gate.flows import release_flow

from ..conftest import write_release_config

SEEDS = [0, 1, 2]
#: the canaries far from the gate's edge: one seed tests the flow as well as three
ONE_SEED = [0]


def _run(folder, workdir, generator, seed):
    cfg = write_release_config(
        folder,
        generator,
        name=f"canary-{generator['name']}-{seed}.yaml",
        split={"train": 0.6, "holdout": 0.2, "reference": 0.2, "seed": seed},
        targets={"seed": seed},
    )
    return release_flow(config_path=str(cfg), workdir=str(workdir)).verdict.to_dict()


@pytest.mark.parametrize("seed", ONE_SEED)
def test_copy_canary_is_blocked(prefect_server, small_adult, tmp_path_factory, seed):
    v = _run(small_adult, tmp_path_factory.mktemp("wd"), {"name": "copy_train", "seed": seed}, seed)
    assert v["verdict"] == "BLOCK" and v["status"] == "ok"
    assert v["metrics"]["dcr.auc"] > 0.9
    # the copy test: verbatim copies far beyond the holdout's twins at the same size, and above the
    # bar
    assert any(r["key"] == "copies.excess_share" and r["action"] == "block" for r in v["reasons"])
    # MACE: confident the advantage is large (lower bound above the 0.10 block threshold)
    assert v["metrics"]["dcr.mace.advantage_lower"] > 0.10
    assert v["metrics"]["combined.mace.advantage_lower"] > 0.10


@pytest.mark.parametrize("seed", SEEDS)
def test_noisy_copy_canary_is_blocked(prefect_server, small_adult, tmp_path_factory, seed):
    v = _run(small_adult, tmp_path_factory.mktemp("wd"), {"name": "noisy_copy", "seed": seed}, seed)
    assert v["verdict"] == "BLOCK" and v["status"] == "ok"
    assert (
        v["metrics"]["validation.synthetic.copy_share"] <= 0.01
    )  # not caught by the copy check: the attacks catch it
    assert max(v["metrics"]["dcr.auc"], v["metrics"]["domias.auc"]) > 0.6


@pytest.mark.parametrize("seed", ONE_SEED)
def test_independent_sample_is_approved(prefect_server, small_adult, tmp_path_factory, seed):
    gen = {"name": "file", "path": str(small_adult / "independent.csv"), "seed": seed}
    v = _run(small_adult, tmp_path_factory.mktemp("wd"), gen, seed)
    assert v["verdict"] == "APPROVE", v["reasons"]
    for attack in ("domias", "dcr", "mama_mia"):
        assert abs(v["metrics"][f"{attack}.auc"] - 0.5) < 0.06
        # MACE: confident the advantage is small (upper bound below the 0.20 approve threshold)
        assert v["metrics"][f"{attack}.mace.advantage_upper"] < 0.20
        assert v["metrics"][f"{attack}.mace.advantage_lower"] <= 0.10
