"""The gate on dependent training data: is the training split plausibly dependent (its sources vs
the reference's), and a DP release whose advantage with members from one source exceeds the IID
DP bound goes to REVIEW."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privacy_gate.config import AttackConfig, AuditConfig, DatasetSpec, GateConfig
from privacy_gate.gate.audit import dependence_note, source_shift
from privacy_gate.pipeline.inputs import GateInputs, splits_from_frames
from privacy_gate.pipeline.run import run_gate
from privacy_gate.pipeline.settings import GateSettings

SPEC = DatasetSpec.model_validate({"name": "sites", "source": "site", "columns": {
    "site": {"kind": "categorical", "categories": ["a", "b", "c"]}, "x": {"kind": "numeric"},
    "z": {"kind": "numeric"}}})


def test_tv_and_test_of_a_training_split_from_one_source():
    rng = np.random.default_rng(0)
    reference = pd.Series(rng.choice(["a", "b", "c"], 3000, p=[0.5, 0.3, 0.2]), name="site")
    same = pd.Series(rng.choice(["a", "b", "c"], 2000, p=[0.5, 0.3, 0.2]), name="site")
    one = pd.Series(["a"] * 2000, name="site")
    shift = source_shift(one, reference)
    # TV between "all a" and the reference's empirical shares: 1 - share of a in the reference
    assert shift.tv == pytest.approx(1 - (reference == "a").mean())
    assert shift.pvalue < 1e-12 and shift.dependent(0.01)
    note = dependence_note(shift, source="site", alpha=0.01, epsilon=1.0, dp_bound=0.462)
    assert "plausibly dependent" in note and "assumes independent records and may not hold" in note
    calm = source_shift(same, reference)
    assert calm.pvalue > 0.01 and calm.tv < 0.05 and not calm.dependent(0.01)
    assert "no evidence" in dependence_note(calm, source="site", alpha=0.01, epsilon=None, dp_bound=None)


def test_sparse_sources_are_pooled_and_missing_is_a_category():
    train = pd.Series(["a"] * 100 + [None] * 100 + ["rare"], name="site")
    reference = pd.Series(["a"] * 100 + [None] * 100 + ["rare2"], name="site")
    shift = source_shift(train, reference)
    assert shift.categories == 4 and shift.pvalue > 0.5  # rare ones pooled: no difference left


def _table(rng, n, sites, shift_by_site):
    site = rng.choice(sites, n)
    x = rng.normal(0, 1, n) + np.array([shift_by_site[s] for s in site])
    return pd.DataFrame({"site": site, "x": x, "z": rng.normal(0, 1, n)})


def _judge(*, shifted: bool, leaky: bool, epsilon: float | None = 1.0, dp_review: bool = True):
    rng = np.random.default_rng(1)
    offsets = {"a": 0.0, "b": 4.0 if shifted else 0.0, "c": -4.0 if shifted else 0.0}
    train = _table(rng, 600, ["a", "b", "c"], offsets)
    holdout = _table(rng, 600, ["a", "b", "c"], offsets)
    reference = _table(rng, 600, ["a", "b", "c"], offsets)
    if leaky:  # noisy copies of the training rows
        synthetic = train.assign(x=train.x + rng.normal(0, 0.01, len(train)), z=train.z + rng.normal(0, 0.01, len(train)))
    else:  # an independent draw of the same population
        synthetic = _table(rng, 600, ["a", "b", "c"], offsets)
    settings = GateSettings(spec=SPEC, gate=GateConfig(rules=[]), attacks=(AttackConfig(name="dcr"),),
                            audit=AuditConfig(dependency_test=True, dependency_source_value="a",
                                              dependency_dp_review=dp_review),
                            privacy=None if epsilon is None else {"epsilon": epsilon, "delta": 1e-9})
    inputs = GateInputs(splits=splits_from_frames({"train": train, "holdout": holdout, "reference": reference}),
                        synthetic=synthetic)
    return run_gate(inputs, settings)


def test_a_dp_release_above_the_iid_bound_under_dependency_is_reviewed():
    result = _judge(shifted=True, leaky=True)
    v = result.verdict
    assert v.status == "ok", v.reasons
    excess = v.metrics["dependency.dp_bound_excess"]
    assert excess > 0 and v.metrics["dcr.dependency.mace.advantage_lower"] > np.tanh(0.5)
    found = [c for c in v.reasons if c.metric == "dependency.dp_bound_excess"]
    assert found and found[0].action == "review" and "assumes independent records" in found[0].message
    assert v.decision == "REVIEW"
    # switched off: the figure is still recorded, the warning is not raised
    quiet = _judge(shifted=True, leaky=True, dp_review=False).verdict
    assert quiet.metrics["dependency.dp_bound_excess"] > 0
    assert not [c for c in quiet.reasons if c.metric == "dependency.dp_bound_excess"]


def test_no_warning_without_leakage_or_dependency():
    v = _judge(shifted=False, leaky=False).verdict
    assert v.metrics["dependency.dp_bound_excess"] < 0
    assert not [c for c in v.reasons if c.metric == "dependency.dp_bound_excess"]
    assert v.metrics["dependency.plausibly_dependent"] == 0.0
    assert v.decision == "APPROVE", v.reasons


def test_non_dp_release_records_the_shift_but_no_dp_comparison():
    v = _judge(shifted=True, leaky=False, epsilon=None).verdict
    assert "dependency.dp_bound_excess" not in v.metrics
    assert 0 <= v.metrics["dependency.source_tv"] <= 1 and "dependency.source_shift_pvalue" in v.metrics
