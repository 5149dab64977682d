"""The fit workers' start method: fork by default, a fresh forkserver once torch is loaded (a
process forked after torch's thread pools have started can deadlock), each worker with its share
of the cores; results do not depend on the start method."""

from __future__ import annotations

import os
import sys
import types

from privacy_gate.attacks import shadow


def test_fork_is_kept_while_torch_is_not_loaded(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert shadow.pool_context() is None


def test_a_forkserver_starts_the_workers_once_torch_is_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    context = shadow.pool_context()
    assert context is not None and context.get_start_method() == "forkserver"
    # the same answers from the fresh workers, in order
    assert shadow.process_mapper(2, fallback=False)(abs, [-3, 1, -2, 5]) == [3, 1, 2, 5]


def test_each_worker_takes_its_share_of_the_cores(monkeypatch):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    shadow._share_cores(2)
    assert os.environ["OMP_NUM_THREADS"] == str(max(1, (os.cpu_count() or 1) // 2))
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    shadow._share_cores(2)
    assert os.environ["OMP_NUM_THREADS"] == "7"  # what the user set is kept
