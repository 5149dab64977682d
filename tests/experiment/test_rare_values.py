"""The rare-values family: records carrying category values few training rows hold, tested alone
where a value has the power and pooled per column where it does not, in the subgroups' Holm family.

Known truths: with exchangeable scores the family flags a group at most ``alpha`` of the time;
a pooled group whose members score high is flagged and named; undeclared values are hashed, and
``--suppress`` by a pooled or hashed label removes exactly the rows carrying those values."""

from __future__ import annotations

import numpy as np
import pandas as pd

from privacy_gate.estimators.group_tests import group_pvalue, holm_adjust
from privacy_gate.experiment.grouping import group_mask, rare_value_groups, rare_values, value_token
from privacy_gate.label_key import LabelKey

KEY = LabelKey(bytes(range(32)))  # a store's label key (fixed: the labels below are reproducible)


def _targets(rng, n=2000):
    common = rng.choice(["a", "b"], size=n)
    rare = np.repeat(["r1", "r2", "r3", "r4"], 10)
    col = np.r_[common[: n - 40], rare]
    labels = rng.permutation(np.r_[np.ones(n // 2), np.zeros(n // 2)]).astype(bool)
    return pd.DataFrame({"c": col}), labels


def test_rare_values_come_from_the_training_counts():
    train = pd.DataFrame({"c": ["a"] * 30 + ["b"] * 3 + ["z"], "d": ["x"] * 34})
    assert rare_values(train, ["c", "d"], max_count=5) == {"c": ["b", "z"]}


def test_the_family_holds_its_level_under_no_signal():
    rng = np.random.default_rng(0)
    flagged = 0
    draws = 200
    for i in range(draws):
        targets, labels = _targets(rng)
        groups = rare_value_groups(
            targets,
            labels,
            {"c": ["r1", "r2", "r3", "r4"]},
            public={"c": None},
            alpha=0.01,
            family_size=1,
            key=KEY,
        )
        p = np.array(
            [
                group_pvalue({"s": rng.normal(size=len(labels))}, g.mask, labels, seed=i)[0]
                for g in groups
            ]
        )
        flagged += (holm_adjust(p) < 0.05).any()
    assert flagged / draws <= 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / draws)


def test_a_pooled_rare_group_whose_members_score_high_is_flagged_and_named():
    rng = np.random.default_rng(1)
    targets, labels = _targets(rng)
    rare = {"c": ["r1", "r2", "r3", "r4"]}
    groups = rare_value_groups(
        targets,
        labels,
        rare,
        public={"c": frozenset({"a", "b", "r1", "r2", "r3", "r4"})},
        alpha=0.01,
        family_size=50,
    )
    # 10 targets per value: the best p-value one can reach, 1 / C(10, 5) = 0.004, is above 0.01 / 50
    assert [g.label for g in groups] == ["c=r1|r2|r3|r4"]
    scores = rng.normal(size=len(labels))
    scores[np.isin(targets["c"], ["r1", "r2", "r3", "r4"]) & labels] += 5.0
    p, _ = group_pvalue({"s": scores}, groups[0].mask, labels, seed=0)
    assert p < 1e-5


def test_a_value_with_power_is_tested_alone_unless_its_column_is_audited_per_value():
    rng = np.random.default_rng(2)
    n = 2000
    col = np.r_[rng.choice(["a", "b"], size=n - 60), ["big"] * 50, ["tiny"] * 10]
    labels = rng.permutation(np.r_[np.ones(n // 2), np.zeros(n // 2)]).astype(bool)
    targets = pd.DataFrame({"c": col})
    kw = dict(public={"c": None}, alpha=0.01, family_size=20, key=KEY)
    groups = rare_value_groups(targets, labels, {"c": ["big", "tiny"]}, **kw)
    assert [g.label for g in groups] == [
        f"c={value_token('big', None, key=KEY)}",
        f"c={value_token('tiny', None, key=KEY)}",
    ]
    assert [
        g.label
        for g in rare_value_groups(targets, labels, {"c": ["big", "tiny"]}, separate=["c"], **kw)
    ] == [f"c={value_token('big', None, key=KEY)}|{value_token('tiny', None, key=KEY)}"]


def test_undeclared_values_are_hashed_and_suppression_reads_pooled_and_hashed_labels():
    df = pd.DataFrame(
        {"c": ["a", "Jane Roe", "b", "Trinadad&Tobago", "a"], "sex": ["F", "M", "F", "F", "M"]}
    )
    token = value_token("Jane Roe", None, key=KEY)
    assert token.startswith("#") and "Jane" not in token
    assert group_mask(df, f"c={token}", key=KEY).tolist() == [False, True, False, False, False]
    assert group_mask(df, "c=b|Trinadad&Tobago").tolist() == [False, False, True, True, False]
    assert group_mask(df, "c=b|Trinadad&Tobago&sex=F").tolist() == [False, False, True, True, False]


def test_a_leak_of_the_rare_countries_records_is_flagged_on_adult(adult_full):
    from privacy_gate import evaluate
    from tests.exposure_scenarios import SPEC, Leak, make_leak

    s = make_leak(100, Leak("rare", k=8, column="native_country"), adult=adult_full)
    r = evaluate(
        train=s.train,
        holdout=s.holdout,
        reference=s.reference,
        synthetic=s.synthetic,
        spec=SPEC,
        mace={"n_permutations": 20},
        attacks=[{"name": "dcr"}, {"name": "dcr_ratio"}, {"name": "copy_count"}],
    )
    assert r.decision != "APPROVE"
    assert any(g.startswith("native_country=") and "|" in g for g in r.verdict.flagged_subgroups)


def test_a_label_mixing_shown_and_hashed_values_selects_both():
    """A pooled label shows public values and hashes the others; suppression must find both."""
    from privacy_gate.experiment.grouping import (
        group_mask,
        label_values,
        subgroup_groups,
        value_token,
    )

    df = pd.DataFrame({"c": ["pub", "secret", "other", "pub"]})
    label = f"c=pub|{value_token('secret', None, key=KEY)}"
    assert group_mask(df, label, key=KEY).tolist() == [True, True, False, True]
    shown = label_values(["c"], {"c": ["pub"]}, [pd.DataFrame({"c": ["other"] * 10})], min_count=10)
    labels = [
        g.label
        for g in subgroup_groups(df, np.array([1, 1, 0, 0]), columns=[["c"]], public=shown, key=KEY)
    ]
    assert labels == ["c=other", "c=pub", f"c={value_token('secret', None, key=KEY)}"]
