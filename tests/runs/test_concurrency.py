"""Concurrent first runs on one fresh workdir: MLflow's sqlite store is created once (under a file
lock), every run records its own verdict, and the store stays usable afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from privacy_gate import tracking

from ..conftest import EXAMPLE, lighten
from ..reaper import popen

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_files(small_adult, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    real = pd.read_csv(small_adult / "real.csv")
    for name, part in (
        ("train", real.iloc[:400]),
        ("holdout", real.iloc[400:600]),
        ("reference", real.iloc[600:800]),
        ("synthetic", pd.read_csv(small_adult / "independent.csv").iloc[:400]),
    ):
        part.to_csv(folder / f"{name}.csv", index=False)
    example = yaml.safe_load(EXAMPLE.read_text())
    (folder / "spec.yaml").write_text(yaml.safe_dump(example["dataset"]["spec"]))
    # plumbing weight: what races here is the store's creation, not the attacks
    judging = lighten({k: example[k] for k in ("attacks", "mace") if k in example})
    (folder / "judging.yaml").write_text(yaml.safe_dump(judging))
    return folder


def _start(folder: Path, workdir: Path) -> subprocess.Popen:
    args = [
        "gate",
        "--train",
        str(folder / "train.csv"),
        "--holdout",
        str(folder / "holdout.csv"),
        "--reference",
        str(folder / "reference.csv"),
        "--synthetic",
        str(folder / "synthetic.csv"),
        "--spec",
        str(folder / "spec.yaml"),
        "--config",
        str(folder / "judging.yaml"),
        "--workdir",
        str(workdir),
        "--json",
        "--orchestrator",
        "local",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PYTHONPATH"] = str(ROOT)
    return popen(
        [sys.executable, "-m", "privacy_gate.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


# 8 processes on 2 cores is the hardest case (the 4-process case it subsumes cost 90 s of suite
# time)
@pytest.mark.parametrize("n", [8])
def test_concurrent_first_runs_on_one_workdir_all_succeed(tiny_files, tmp_path, n):
    workdir = tmp_path / "wd"  # does not exist yet: every process races to create the store
    procs = [_start(tiny_files, workdir) for _ in range(n)]
    outs = [p.communicate(timeout=900) for p in procs]
    verdicts = []
    for p, (out, err) in zip(procs, outs):
        assert p.returncode in (0, 3, 4), err[-2000:]
        verdicts.append(json.loads(out.strip().splitlines()[-1]))
    assert all(v["status"] == "ok" for v in verdicts), [
        v["reasons"] for v in verdicts if v["status"] != "ok"
    ]
    assert len({v["run_id"] for v in verdicts}) == n
    # one store, every run recorded, and still usable by the next run
    client = tracking.Tracker(uri=tracking.default_tracking_uri(workdir), experiment=None).client
    for v in verdicts:
        assert client.get_run(v["run_id"]).data.tags["gate.verdict"] == v["verdict"]
    again = _start(tiny_files, workdir)
    out, err = again.communicate(timeout=600)
    assert (
        again.returncode in (0, 3, 4) and json.loads(out.strip().splitlines()[-1])["status"] == "ok"
    ), err[-2000:]
