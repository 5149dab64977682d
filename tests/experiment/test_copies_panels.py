"""The verbatim-copy test of a panel counted per person, on simulations whose truth is known.

People of a thousand types (two categorical attributes that stay fixed over a person's years)
with seven years each: a synthetic person of a type reproduces every year of every real person of
that type at once, so the rows' matches come in blocks of seven.

- no signal (the release an independent sample of people of the same population): per person the
  test rejects at most its level; the rows' sign test (the same frames without the entity id)
  rejects far more often (the check can fail);
- power: the release with all the rows of 15 training people added (fresh ids) is found in a
  richer table (the test compares equal numbers of people, so about 10 copied people are in its
  sample).
"""

import numpy as np
import pandas as pd

from privacy_gate.experiment.copies import copy_test
from privacy_gate.spec import DatasetSpec

YEARS, TYPES, DRAWS, ALPHA = 7, 4000, 100, 0.05
COLUMNS = {
    "pid": {"kind": "categorical"},
    "a": {"kind": "categorical"},
    "b": {"kind": "categorical"},
    "year": {"kind": "categorical"},
}
PANEL = DatasetSpec.model_validate({"name": "panel", "entity_id": "pid", "columns": COLUMNS})
# the same table with rows as units (the id no attribute: a copy under a fresh id is a copy)
ROWS = DatasetSpec.model_validate(
    {"name": "rows", "columns": {c: k for c, k in COLUMNS.items() if c != "pid"}}
)


# a richer table: one more fixed attribute of 50 values, so twins are rarer and copies findable
RICH = DatasetSpec.model_validate(
    {"name": "rich", "entity_id": "pid", "columns": {**COLUMNS, "c": {"kind": "categorical"}}}
)


def _people(rng, n, prefix, *, rich=False):
    """``n`` people, each of a type drawn from a skewed law over :data:`TYPES`, with all years."""
    weights = 1.0 / np.sqrt(np.arange(1, TYPES + 1))
    kind = rng.choice(TYPES, n, p=weights / weights.sum())
    extra = {"c": np.repeat(rng.integers(0, 50, n).astype(str), YEARS)} if rich else {}
    return pd.DataFrame(
        {
            **extra,
            "pid": np.repeat([f"{prefix}{i}" for i in range(n)], YEARS),
            "a": np.repeat([f"a{k % 80}" for k in kind], YEARS),
            "b": np.repeat([f"b{k // 80:02d}" for k in kind], YEARS),
            "year": np.tile([f"y{y}" for y in range(YEARS)], n),
        }
    )


def test_no_signal_per_person_holds_its_level_and_per_row_does_not():
    per_person = per_row = 0
    for seed in range(DRAWS):
        rng = np.random.default_rng(seed)
        train, holdout, synthetic = (
            _people(rng, 200, "t"),
            _people(rng, 200, "h"),
            _people(rng, 300, "s"),
        )
        per_person += copy_test(synthetic, train, holdout, PANEL, seed=seed).pvalue <= ALPHA
        per_row += copy_test(synthetic, train, holdout, ROWS, seed=seed).pvalue <= ALPHA
    # exact (hypergeometric) per person: about two binomial standard errors of allowance at 100
    # draws
    assert per_person / DRAWS <= ALPHA + 0.045, per_person
    assert per_row / DRAWS >= 3 * ALPHA, per_row  # seven matched years read as seven coincidences


def test_copied_people_are_found():
    found = 0
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        train, holdout, synthetic = (
            _people(rng, n, p, rich=True) for n, p in ((300, "t"), (200, "h"), (300, "s"))
        )
        # 15 training people, every year, under fresh ids: about 10 of them among the 200 training
        # people the test compares with the holdout's 200
        copied = train["pid"].drop_duplicates().to_numpy()[:15]
        copies = train[train["pid"].isin(copied)].assign(pid=lambda d: "copy-" + d["pid"])
        t = copy_test(pd.concat([synthetic, copies]), train, holdout, RICH, seed=seed)
        assert t.compared == 200 and t.n_pool == 300  # people per side, training people
        found += t.pvalue <= ALPHA
    assert found >= 8, (
        found
    )  # (the rows' sign test, at its anti-conservative level, finds them too)
