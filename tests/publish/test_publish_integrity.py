"""Publication integrity: names cannot escape the target; data and manifest appear together;
a kill at any instant leaves nothing visible or a complete release; leftovers are cleaned."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import privacy_gate.publication.publish as publish
from privacy_gate.publication.publish import (
    PublishError,
    ReleaseStore,
    list_published,
    verify_published,
)

from ..reaper import popen

WORKER = Path(__file__).resolve().parents[1] / "publish_worker.py"


def _frame(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.choice(["x", "y"], n)})


def _visible(target: Path) -> list[str]:
    return (
        sorted(p.name for p in target.iterdir() if not p.name.startswith("."))
        if target.exists()
        else []
    )


@pytest.mark.parametrize(
    "name",
    [
        "/tmp/evil",
        "../../x",
        "sub/dir/evil",
        "..",
        "",
        ".hidden",
        "ünïcode name",
        "a" * 300,
        "C:\\windows\\x",
        "normal",
    ],
)
def test_dataset_names_cannot_escape_the_target(tmp_path, name):
    store = ReleaseStore(workdir=tmp_path, target=tmp_path / "out")
    out = store.publish(
        store.quarantine(_frame()), dataset=name, verdict="APPROVE", run_id="r", config_hash=None
    )
    root = (tmp_path / "out").resolve()
    assert out.resolve().parent.parent == root  # <target>/<slug>-<sha>/<file>
    assert (
        not out.parent.name.startswith(".")
        and "/" not in out.parent.name
        and len(out.parent.name) <= 77
    )
    assert list_published(root) == [out.parent.resolve()]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "out",
        "quarantine",
    ]  # nothing written elsewhere


def test_a_failed_manifest_leaves_nothing_visible(tmp_path, monkeypatch):
    store = ReleaseStore(workdir=tmp_path, target=tmp_path / "out")
    q = store.quarantine(_frame())

    def broken(path):
        if path.name == publish.MANIFEST:
            raise OSError("disk full")
        return original(path)

    original = publish._fsync_file
    monkeypatch.setattr(publish, "_fsync_file", broken)
    with pytest.raises(OSError):
        store.publish(q, dataset="d", verdict="APPROVE", run_id="r", config_hash=None)
    assert _visible(tmp_path / "out") == [] and list(Path(tmp_path / "out").iterdir()) == []
    monkeypatch.setattr(publish, "_fsync_file", original)
    out = store.publish(
        q, dataset="d", verdict="APPROVE", run_id="r", config_hash=None
    )  # and it recovers
    assert verify_published(out.parent)["sha256"] == q.sha256


def test_republication_is_idempotent_and_a_tampered_release_is_not_listed(tmp_path):
    store = ReleaseStore(workdir=tmp_path, target=tmp_path / "out")
    q = store.quarantine(_frame())
    first = store.publish(q, dataset="d", verdict="APPROVE", run_id="r", config_hash=None)
    assert store.publish(q, dataset="d", verdict="APPROVE", run_id="r2", config_hash=None) == first
    first.write_bytes(first.read_bytes() + b"tamper")
    assert list_published(tmp_path / "out") == []
    with pytest.raises(PublishError, match="does not match"):
        verify_published(first.parent)


def test_stale_staging_of_a_dead_process_is_cleaned(tmp_path):
    target = tmp_path / "out"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    leftover = target / f"{publish.STAGING_PREFIX}{int(dead.stdout)}-abc"
    leftover.mkdir(parents=True)
    (leftover / "partial.parquet").write_bytes(b"partial")
    store = ReleaseStore(workdir=tmp_path, target=target)
    store.publish(
        store.quarantine(_frame()), dataset="d", verdict="APPROVE", run_id="r", config_hash=None
    )
    assert not leftover.exists()


def test_kill_at_any_instant_leaves_nothing_or_a_complete_release(tmp_path):
    """>= 20 SIGKILLs at random instants of a slowed publication (data copy, fsyncs, manifest,
    rename): after each, the target shows nothing or one complete, verified release."""
    store = ReleaseStore(workdir=tmp_path, target=tmp_path / "q")
    q = store.quarantine(_frame(20_000))  # ~0.3 MB: ~80 slowed chunks
    rng = random.Random(11)
    outcomes = {"nothing": 0, "complete": 0}
    for i in range(24):
        target = tmp_path / f"target-{i}"
        proc = popen(
            [sys.executable, str(WORKER), str(tmp_path / "wd"), str(target), str(q.path)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
        assert proc.stdout.readline().strip() == "READY"
        time.sleep(rng.uniform(0.0, 0.6))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        visible = _visible(target)
        if visible:
            assert len(visible) == 1, visible
            assert verify_published(target / visible[0])["sha256"] == q.sha256
            outcomes["complete"] += 1
        else:
            outcomes["nothing"] += 1
        # the next store that publishes there removes the dead process's staging directory
        ReleaseStore(workdir=tmp_path / "wd", target=target).publish(
            q, dataset="adult", verdict="APPROVE", run_id="r", config_hash=None
        )
        assert [p.name for p in target.iterdir() if p.name.startswith(".")] == []
        assert len(list_published(target)) == 1
    assert (
        sum(outcomes.values()) == 24 and outcomes["nothing"] > 0
    )  # the kills did land mid-publication
    (tmp_path / "kill-outcomes.json").write_text(json.dumps(outcomes))
