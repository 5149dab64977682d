"""The subgroup test's level when no subgroups are declared: every categorical column's values,
and its rare values pooled, form one Holm family, so a release that leaks nothing rejects at most
at the test's level.

Each seed draws an independent small table with four categorical columns, some values rare (a
handful of rows) and one column with many values, splits it at random into members and
non-members (exchangeable: nothing leaks), and scores the targets with two "attacks" that depend
on the records (how rare a record's values are in an independent sample, plus noise) but not on
membership. The audit runs as the gate runs it with a spec that names no subgroups; its smallest
Holm-adjusted p-value is the subgroup test's p-value (``gate/budget.py: test_pvalue``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import binom

from privacy_gate.config import AuditConfig
from privacy_gate.experiment.attack_runs import AttackOutcome
from privacy_gate.experiment.grouping import rare_values
from privacy_gate.experiment.subgroups import audit
from privacy_gate.experiment.targets import Targets
from privacy_gate.label_key import LabelKey
from privacy_gate.spec import DatasetSpec

SEEDS, LEVEL = 200, 0.05
COLUMNS = {  # value frequencies: common values, and rare ones a few rows hold
    "a": [0.55, 0.3, 0.1, 0.03, 0.015, 0.005],
    "b": [0.7, 0.25, 0.04, 0.01],
    "c": [0.5, 0.5],
    "d": list(np.r_[np.full(10, 0.08), np.full(10, 0.02)]),  # twenty values, half of them uncommon
}
SPEC = DatasetSpec(
    name="null", columns={c: {"kind": "categorical"} for c in COLUMNS}
)  # no subgroups, no codebook


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            c: rng.choice([f"{c}{i}" for i in range(len(p))], size=n, p=np.asarray(p) / sum(p))
            for c, p in COLUMNS.items()
        }
    )


def _null_pvalues(seed: int) -> tuple[float, float, int]:
    """The family's smallest Holm-adjusted p-value, its smallest raw p-value, its size."""
    rng = np.random.default_rng(seed)
    real, release = _table(rng, 700), _table(rng, 700)  # the release: an independent sample
    order = rng.permutation(len(real))
    train, holdout = real.iloc[order[:400]], real.iloc[order[400:]]
    members = train.iloc[rng.choice(len(train), 300, replace=False)]
    records = pd.concat([members, holdout])
    labels = np.r_[np.ones(len(members), int), np.zeros(len(holdout), int)]
    # record-dependent scores: the rarer a record's values in the release, the higher (as a
    # density attack scores an outlier); membership plays no part
    rarity = sum(
        -np.log(records[c].map(release[c].value_counts(normalize=True)).fillna(1 / 700).to_numpy())
        for c in COLUMNS
    )
    outcomes = [
        AttackOutcome(
            name=a,
            params={},
            scores=rarity + rng.normal(0, s, len(records)),
            metrics={},
            seconds=0.0,
        )
        for a, s in (("density", 0.5), ("distance", 2.0))
    ]
    cfg = AuditConfig()
    result = audit(
        outcomes,
        Targets(records=records, labels=labels),
        SPEC,
        cfg,
        rare=rare_values(train, list(COLUMNS), max_count=cfg.rare_value_max_count),
        label_key=LabelKey(bytes(32)),
    )
    groups = result.groups.values()
    return (
        min(m["membership_test.p_adjusted"] for m in groups),
        min(m["membership_test.p_value"] for m in groups),
        len(groups),
    )


def test_no_leak_rejects_within_the_level():
    results = [_null_pvalues(seed) for seed in range(SEEDS)]
    assert (
        min(n for _, _, n in results) >= 30
    )  # every value of every column, and the pooled rare values
    rejections = sum(p <= LEVEL for p, _, _ in results)
    # the family-wise level holds: at most the binomial's 99.9 % quantile of SEEDS draws at LEVEL
    assert rejections <= binom.ppf(0.999, SEEDS, LEVEL), rejections
    print(f"rejection rate {rejections / SEEDS:.3f} at level {LEVEL}")


def test_the_simulation_can_reject():
    """Without Holm (the smallest raw p-value of the family), the same tables reject far above the
    level: the check above is not vacuous."""
    raw = [_null_pvalues(seed)[1] <= LEVEL for seed in range(40)]
    assert sum(raw) > binom.ppf(0.999, 40, LEVEL), sum(raw)
