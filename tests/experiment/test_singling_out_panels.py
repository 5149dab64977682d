"""Singling out on a panel counted per person, on simulations whose truth is known.

People of a few thousand types (categorical attributes fixed over their seven years) with an income
that drifts 2 % a year: a person's years are near-identical, so a predicate written from the
synthetic data matches a person in all their years or in none.

- "exactly one person": the per-person counting agrees with a direct count of the people each
  predicate matches (one- and multi-column predicates, tables large enough for the pre-filter);
- no signal (the release an independent sample of people; the training split three times the
  control's people, as in the gate): per person the equal-size sign test holds its level; the
  same matrices counted per row reject far more often (the row subsample leaves training people
  a third of their years, so a predicate matching one person isolates a row there and none on the
  control side, whose people keep all seven; the check can fail);
- power: a release holding every year of a fifth of the training people (fresh ids) singles out
  training people more often than control people.
"""

import numpy as np
import pandas as pd

from privacy_gate.config import DisclosureConfig
from privacy_gate.data.split import unit_codes
from privacy_gate.estimators.disclosure import wilson_interval
from privacy_gate.experiment.disclosure import measure_disclosure
from privacy_gate.experiment.disclosure_codes import Codes
from privacy_gate.experiment.singling_out import (
    EQ,
    GE,
    ISNA,
    LE,
    Predicates,
    attack_predicates,
    equal_size_pvalue,
    isolating,
    singling_out,
    size_correction,
)
from privacy_gate.spec import DatasetSpec

YEARS, TYPES, DRAWS, ALPHA = 7, 4000, 200, 0.05
ATTRIBUTES = ["a", "b", "c", "d", "income"]
PANEL = DatasetSpec.model_validate(
    {
        "name": "panel",
        "entity_id": "pid",
        "columns": {
            "pid": {"kind": "categorical"},
            **{c: {"kind": "categorical"} for c in "abcd"},
            "income": {"kind": "numeric"},
        },
    }
)


def _people(rng, n, prefix):
    """``n`` people of types drawn from a skewed law, each with all years and a drifting income."""
    weights = 1.0 / np.sqrt(np.arange(1, TYPES + 1))
    kind = rng.choice(TYPES, n, p=weights / weights.sum())
    base = rng.lognormal(10, 0.5, n)
    return pd.DataFrame(
        {
            "pid": np.repeat([f"{prefix}{i}" for i in range(n)], YEARS),
            "a": np.repeat([f"a{k % 20}" for k in kind], YEARS),
            "b": np.repeat([f"b{k // 20 % 20}" for k in kind], YEARS),
            "c": np.repeat([f"c{k // 400}" for k in kind], YEARS),
            "d": np.repeat(rng.integers(0, 50, n).astype(str), YEARS),
            "income": np.repeat(base, YEARS) * np.exp(0.02 * rng.normal(size=n * YEARS)),
        }
    )


def _codes(synthetic, train, control):
    codes = Codes.of([synthetic, train, control], columns=ATTRIBUTES, numeric={"income"})
    return codes, (unit_codes(train, "pid"), unit_codes(control, "pid"))


def _people_matched(data, preds, units):
    """How many people each predicate matches, one predicate at a time (the slow, plain count)."""
    out = []
    for cols, ops, vals in zip(preds.cols, preds.ops, preds.vals):
        hit = np.ones(len(data), dtype=bool)
        for j, op, v in zip(cols, ops, vals):
            x = data[:, j]
            with np.errstate(invalid="ignore"):
                hit &= {EQ: x == v, LE: x <= v, GE: x >= v, ISNA: np.isnan(x)}[int(op)]
        out.append(np.unique(units[hit]).size)
    return np.array(out)


def test_exactly_one_person_agrees_with_a_plain_count():
    rng = np.random.default_rng(3)
    train, synthetic = (
        _people(rng, 400, "t"),
        _people(rng, 300, "s"),
    )  # 2,800 rows: past the pre-filter's 1,024
    train.loc[rng.random(len(train)) < 0.01, "c"] = None  # a few missing values for "is missing"
    train.loc[train["pid"] == "t0", "d"] = "only t0"  # seven rows, one person
    codes, (units, _) = _codes(synthetic, train, train)
    data = codes.matrices[1]
    for n_cols in (1, 3):
        preds = attack_predicates(
            codes.matrices[0], codes.numeric, n_attacks=300, n_cols=n_cols, seed=1
        )
        if (
            n_cols == 1
        ):  # with "is missing", a threshold met by many people, and the one person's value
            extra = Predicates(
                np.array([[2], [4], [4], [3]]),
                np.array([[ISNA], [LE], [GE], [EQ]], np.int8),
                np.array(
                    [[np.nan], [np.median(data[:, 4])], [data[:, 4].max()], [data[0, 3]]],
                    np.float32,
                ),
            )
            preds = Predicates(
                *(
                    np.concatenate([getattr(preds, f), getattr(extra, f)])
                    for f in ("cols", "ops", "vals")
                )
            )
        people = _people_matched(data, preds, units)
        assert (isolating(data, preds, seed=0, units=units) == (people == 1)).all(), n_cols
        assert (people == 1).sum() > (isolating(data, preds, seed=0) & (people == 1)).sum(), (
            n_cols
        )  # rows miss some
    assert (
        size_correction(data, preds, target_size=400, seed=0, units=units) == 1.0
    )  # 400 people already


def test_no_signal_per_person_holds_its_level_and_per_row_does_not():
    per_person, per_row = [], []
    for seed in range(DRAWS):
        rng = np.random.default_rng(seed)
        codes, units = _codes(
            _people(rng, 300, "s"), _people(rng, 300, "t"), _people(rng, 100, "c")
        )
        synthetic, train, control = codes.matrices
        person, row = [], []
        for n_cols in (1, 3):
            preds = attack_predicates(
                synthetic, codes.numeric, n_attacks=200, n_cols=n_cols, seed=seed
            )
            person.append(equal_size_pvalue(train, control, preds, seed=seed, units=units) <= ALPHA)
            row.append(equal_size_pvalue(train, control, preds, seed=seed) <= ALPHA)
        per_person.append(person)
        per_row.append(row)
    person_rate, row_rate = np.sum(per_person, axis=0), np.sum(per_row, axis=0)
    # measured (seeds 0-199; univariate, multivariate): per person 0 and 6 of 200 rejections (3.0 %,
    # Wilson 95 % [1.4, 6.4]), per row 0 and 68 (34 %, [27.8, 40.8]). The univariate predicates here
    # are mostly a synthetic income matching nobody, so they rarely disagree either way
    for k in person_rate:
        assert wilson_interval(int(k), DRAWS, alpha=0.05)[0] <= ALPHA, (
            person_rate
        )  # not above the level
        assert k / DRAWS <= ALPHA + 0.03, (
            person_rate
        )  # about two binomial standard errors at 200 draws
    assert row_rate[1] / DRAWS >= 4 * ALPHA, row_rate


def test_copied_people_are_singled_out_more_on_the_training_side():
    found = 0
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        train, control, synthetic = (
            _people(rng, 200, "t"),
            _people(rng, 200, "c"),
            _people(rng, 200, "s"),
        )
        copied = (
            train["pid"].drop_duplicates().to_numpy()[:40]
        )  # a fifth of the training people, every year
        synthetic = pd.concat(
            [synthetic, train[train["pid"].isin(copied)].assign(pid=lambda d: "copy-" + d["pid"])]
        )
        codes, units = _codes(synthetic, train, control)
        r = singling_out(codes, n_attacks=400, n_cols=3, seed=seed, units=units)
        assert r.per_person and r.control_correction == 1.0  # as many people on each side
        found += r.pvalue <= ALPHA and r.risk.train_rate > r.risk.control_rate
    assert found >= 8, found  # measured: 10 of 10 (the largest p-value 0.0044)


def test_measure_disclosure_counts_people_on_a_panel():
    rng = np.random.default_rng(1)
    train, control, synthetic = (
        _people(rng, 300, "t"),
        _people(rng, 100, "c"),
        _people(rng, 200, "s"),
    )
    cfg = DisclosureConfig(n_attacks=100)
    d = measure_disclosure(synthetic, train, control, PANEL, cfg, seed=0)
    codes, units = _codes(synthetic, train, control)
    for r, n_cols in zip(d.singling_out, (1, cfg.n_cols)):
        again = singling_out(codes, n_attacks=cfg.n_attacks, n_cols=n_cols, seed=0, units=units)
        assert r.per_person and (r.pvalue, r.risk) == (again.pvalue, again.risk)
    rows = DatasetSpec.model_validate({**PANEL.model_dump(), "entity_id": None})
    assert not any(
        r.per_person
        for r in measure_disclosure(synthetic, train, control, rows, cfg, seed=0).singling_out
    )
