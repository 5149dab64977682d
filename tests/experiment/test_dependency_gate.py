"""The gate on dependent training data: is the training split plausibly dependent (its sources vs
the reference's), and a DP release whose advantage with members from one source exceeds the IID
DP bound goes to REVIEW."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privacy_gate.config import AttackConfig, AuditConfig, GateConfig, Rule
from privacy_gate.experiment.dependency import dependence_note, source_shift
from privacy_gate.experiment.inputs import GateInputs, splits_from_frames
from privacy_gate.experiment.settings import GateSettings
from privacy_gate.gate.findings import dependence_clause
from privacy_gate.pipeline.gate_run import run_gate
from privacy_gate.spec import DatasetSpec

SPEC = DatasetSpec.model_validate(
    {
        "name": "sites",
        "source": "site",
        "columns": {
            "site": {"kind": "categorical", "categories": ["a", "b", "c"]},
            "x": {"kind": "numeric"},
            "z": {"kind": "numeric"},
        },
    }
)


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
    assert "no evidence" in dependence_note(
        calm, source="site", alpha=0.01, epsilon=None, dp_bound=None
    )


def test_sparse_sources_are_pooled_and_missing_is_a_category():
    train = pd.Series(["a"] * 100 + [None] * 100 + ["rare"], name="site")
    reference = pd.Series(["a"] * 100 + [None] * 100 + ["rare2"], name="site")
    shift = source_shift(train, reference)
    assert shift.categories == 4 and shift.pvalue > 0.5  # rare ones pooled: no difference left


def test_monte_carlo_where_pooling_cannot_make_chi_square_valid():
    # 8 training rows, all from a source the reference has 5 of 100: every training cell is sparse
    reference = pd.Series(["a"] * 60 + ["b"] * 35 + ["c"] * 5, name="site")
    one = source_shift(pd.Series(["c"] * 8), reference)
    assert one.method == "monte_carlo" and one.tv == pytest.approx(0.95)
    assert one.pvalue < 1e-3 and one.dependent(
        0.01
    )  # exact: C(13,8)/C(108,8) ~ 1e-8, the MC floor is 1e-4
    alike = source_shift(pd.Series(["a"] * 5 + ["b"] * 3), reference)
    assert alike.method == "monte_carlo" and alike.pvalue > 0.3


def test_the_dp_bound_clause_says_whether_training_looks_dependent():
    reference = pd.Series(["a", "b", "c"] * 200)
    dependent = dependence_clause(
        source_shift(pd.Series(["a"] * 300), reference), source="site", alpha=0.01
    )
    assert "assumes independent records" in dependent and "looks dependent" in dependent
    calm = dependence_clause(
        source_shift(pd.Series(["a", "b", "c"] * 100), reference), source="site", alpha=0.01
    )
    assert "assumes independent records" in calm and "no evidence" in calm
    assert "cannot tell" in dependence_clause(None, source=None, alpha=0.01)


SITES = ["a", "b", "c"]
OFFSETS = {"a": 0.0, "b": 4.0, "c": -4.0}  # x tells the sites apart


def _table(rng, n, sites, offsets=OFFSETS):
    site = rng.choice(sites, n)
    x = rng.normal(0, 1, n) + np.array([offsets[s] for s in site])
    return pd.DataFrame({"site": site, "x": x, "z": rng.normal(0, 1, n)})


def _frames(train_sites=SITES):
    rng = np.random.default_rng(1)
    return rng, (_table(rng, 600, train_sites), _table(rng, 600, SITES), _table(rng, 600, SITES))


def _judge(
    synthetic: str,
    *,
    train_sites=SITES,
    epsilon: float | None = 1.0,
    dp_review: bool = True,
    rules=(),
):
    """Members of the dependency test come from site a (train), non-members from sites b and c
    (holdout). ``synthetic``: "copies" (noisy copies of train: leaks under any protocol),
    "site_a" (a fresh draw from site a only: no IID leakage, but the dependency targets are
    separable: what a generator that learned its sources gives away), "population" (a fresh draw
    of the whole population: no leakage)."""
    rng, (train, holdout, reference) = _frames(train_sites)
    if synthetic == "copies":
        synthetic_df = train.assign(
            x=train.x + rng.normal(0, 0.01, len(train)), z=train.z + rng.normal(0, 0.01, len(train))
        )
    else:
        synthetic_df = _table(rng, 600, ["a"] if synthetic == "site_a" else SITES)
    settings = GateSettings(
        spec=SPEC,
        gate=GateConfig.only(
            list(rules), reason="the dependency findings alone", allow_no_rules=not rules
        ),
        attacks=(AttackConfig(name="dcr"),),
        # the AUC-gap warning out of the way: the DP-bound comparison alone
        # decides
        audit=AuditConfig(
            dependency_test=True,
            dependency_source_value="a",
            dependency_max_auc_gap=0.99,
            dependency_dp_review=dp_review,
        ),
        privacy=None if epsilon is None else {"epsilon": epsilon, "delta": 1e-9},
    )
    inputs = GateInputs(
        splits=splits_from_frames({"train": train, "holdout": holdout, "reference": reference}),
        synthetic=synthetic_df,
    )
    return run_gate(inputs, settings)


def _dependency_dp_checks(v):
    return [c for c in v.reasons if c.metric == "dependency.dp_bound_excess"]


def test_dependency_advantage_above_the_iid_dp_bound_alone_sends_a_dp_release_to_review():
    result = _judge("site_a")
    v = result.verdict
    assert v.status == "ok", v.reasons
    bound = np.tanh(0.5)  # IID DP bound at epsilon 1, prior 0.5
    assert (
        v.metrics["dcr.mace.advantage_lower"] < bound
    )  # nothing to see under the IID protocol ...
    assert (
        v.metrics["dcr.dependency.mace.advantage_lower"] > bound
    )  # ... much with members from one source
    assert v.metrics["dependency.dp_bound_excess"] == pytest.approx(
        v.metrics["dcr.dependency.mace.advantage_lower"] - bound
    )
    found = _dependency_dp_checks(v)
    assert len(found) == 1 and found[0].action == "review" and not found[0].passed
    assert "IID DP bound" in found[0].message and "assumes independent records" in found[0].message
    assert "site='a'" in found[0].message
    assert v.decision == "REVIEW", v.reasons
    assert list(v.reasons) == found  # this warning is the only finding
    assert not [c for c in v.reasons if c.metric == "mace.advantage_lower"]
    # the training split was drawn like the reference: the note says so
    assert any("no evidence" in n for n in result.audit.notes)
    assert v.metrics["dependency.plausibly_dependent"] == 0.0


def test_dependency_dp_review_off_keeps_the_figure_and_a_user_rule_can_use_it():
    quiet = _judge("site_a", dp_review=False).verdict
    assert quiet.metrics["dependency.dp_bound_excess"] > 0 and not _dependency_dp_checks(quiet)
    assert quiet.decision == "APPROVE", quiet.reasons
    ruled = _judge(
        "site_a",
        dp_review=False,
        rules=[Rule(metric="dependency.dp_bound_excess", max=0.0, action="review")],
    ).verdict
    failing = [
        c for c in ruled.reasons if c.metric == "dependency.dp_bound_excess" and not c.passed
    ]
    assert failing and ruled.decision == "REVIEW"


def test_no_warning_without_leakage():
    v = _judge("population").verdict
    assert v.metrics["dependency.dp_bound_excess"] < 0
    assert not _dependency_dp_checks(v)
    assert v.metrics["dependency.plausibly_dependent"] == 0.0
    assert v.decision == "APPROVE", v.reasons


def test_training_from_one_source_is_called_dependent_in_the_notes_and_the_iid_dp_check():
    result = _judge("copies", train_sites=["a"])
    v = result.verdict
    # TV between "all a" and the reference's empirical shares: 1 - the reference's share of a
    reference = _frames(["a"])[1][2]
    assert v.metrics["dependency.source_tv"] == pytest.approx(1 - (reference.site == "a").mean())
    assert (
        v.metrics["dependency.source_shift_pvalue"] < 1e-12
        and v.metrics["dependency.plausibly_dependent"] == 1.0
    )
    assert any("plausibly dependent" in n and "may not hold" in n for n in result.audit.notes)
    iid = [c for c in v.reasons if c.metric == "mace.advantage_lower" and "DP bound" in c.rule]
    assert iid and all(
        "assumes independent records" in c.message and "looks dependent" in c.message for c in iid
    )
    assert v.decision == "REVIEW"


def test_non_dp_release_records_the_shift_but_no_dp_comparison():
    v = _judge("population", epsilon=None).verdict
    assert "dependency.dp_bound_excess" not in v.metrics
    assert (
        0 <= v.metrics["dependency.source_tv"] <= 1
        and "dependency.source_shift_pvalue" in v.metrics
    )
