"""The member scan's scale-invariant view: exact invariance, power on scaled copies that the
standardised encoding misses, and the scan's level kept with its three views combined — also on a
table of few distinct values, where natural twins are everywhere and the views that leave out
verbatim copies score most records from their second-best match."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privacy_gate.data import Splits
from privacy_gate.data.encoding import MixedEncoder
from privacy_gate.estimators.tail_test import tail_excess_pvalue
from privacy_gate.experiment.member_scan import pool_copy_scores, scan_members
from privacy_gate.experiment.scale_view import ScaleInvariantView, centred_log_magnitudes
from privacy_gate.spec import DatasetSpec

SPEC = DatasetSpec.model_validate(
    {
        "name": "ratios",
        "columns": {
            "year": {"kind": "numeric"},
            "income": {"kind": "numeric"},
            "balance": {"kind": "numeric", "nullable": True},
            "hours": {"kind": "numeric"},
            "region": {"kind": "categorical", "categories": ["n", "s", "e", "w"]},
        },
    }
)


def people(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Records whose year sits far from zero (a 2 % factor moves it 40 years: far in standardised
    units), a signed balance with zeros and missing values, integer hours."""
    balance = np.round(rng.normal(0, 500, n)).astype(float)
    balance[rng.random(n) < 0.2] = 0.0
    balance[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame(
        {
            "year": rng.integers(1990, 2010, n).astype(float),
            "income": np.round(rng.lognormal(10, 0.6, n), 2),
            "balance": balance,
            "hours": rng.integers(10, 60, n).astype(float),
            "region": rng.choice(["n", "s", "e", "w"], n),
        }
    )


def test_view_is_invariant_to_one_factor_and_not_to_others():
    rng = np.random.default_rng(0)
    pool = people(300, rng)
    enc = MixedEncoder(spec=SPEC).fit(pool)
    view = ScaleInvariantView(encoder=enc).fit(pool)
    base = view.transform(pool, enc.transform(pool))
    for factor in (0.5, 1.02, 3.0):
        scaled = pool.copy()
        for c in ("year", "income", "balance", "hours"):
            scaled[c] = scaled[c] * factor
        np.testing.assert_allclose(view.transform(scaled, enc.transform(scaled)), base, atol=1e-9)
    moved = pool.copy()
    moved["income"] = moved["income"] * 1.02  # one column only: a ratio changed
    assert not np.allclose(view.transform(moved, enc.transform(moved)), base)


def test_zero_and_missing_values_stay_out_of_the_centre():
    enc = MixedEncoder(spec=SPEC).fit(people(50, np.random.default_rng(1)))
    frame = pd.DataFrame(
        {"year": [2000.0], "income": [2000.0], "balance": [np.nan], "hours": [0.0], "region": ["n"]}
    )
    centred, sign = centred_log_magnitudes(frame, enc, ["year", "income", "balance", "hours"])
    assert centred.tolist() == [[0.0, 0.0, 0.0, 0.0]]
    assert sign.tolist() == [[1.0, 1.0, 0.0, 0.0]]


def _release(seed: int, copies: int, factor: float = 1.02):
    rng = np.random.default_rng(seed)
    train, holdout, reference, synthetic = (people(n, rng) for n in (500, 1000, 300, 500))
    if copies:
        rows = rng.choice(len(train), copies, replace=False)
        scaled = train.iloc[rows].copy()
        for c in ("year", "income", "balance", "hours"):
            scaled[c] = scaled[c] * factor
        synthetic.iloc[:copies] = scaled.to_numpy()
        synthetic = synthetic.astype({c: float for c in ("year", "income", "balance", "hours")})
    return Splits(train=train, holdout=holdout, reference=reference), synthetic


def test_scaled_copies_are_found_through_the_view_where_the_standard_encoding_misses_them():
    splits, synthetic = _release(3, copies=24)
    result = scan_members(splits, synthetic, SPEC, q=0.05, seed=0, exact=True)
    assert result.views == 3  # the standardised encoding, it without verbatim copies, the view
    assert result.tail_pvalue < 0.001
    # the standardised encoding alone: the same statistic without the view
    enc = MixedEncoder(spec=SPEC).fit(pd.concat([splits.train, splits.holdout], ignore_index=True))
    P = np.vstack([enc.transform(splits.train), enc.transform(splits.holdout)])
    base = pool_copy_scores(P, enc.transform(synthetic), exact=True)
    labels = np.r_[np.ones(len(splits.train)), np.zeros(len(splits.holdout))]
    assert tail_excess_pvalue(base, labels, seed=1)[0] > 0.01


def test_view_is_skipped_with_fewer_than_two_numbers():
    spec = DatasetSpec.model_validate(
        {
            "name": "one",
            "columns": {
                "x": {"kind": "numeric"},
                "g": {"kind": "categorical", "categories": ["a", "b"]},
            },
        }
    )
    rng = np.random.default_rng(2)
    frame = lambda n: pd.DataFrame({"x": rng.normal(size=n), "g": rng.choice(["a", "b"], n)})  # noqa: E731
    result = scan_members(
        Splits(train=frame(200), holdout=frame(100), reference=frame(100)),
        frame(200),
        spec,
        q=0.05,
        seed=0,
        exact=True,
    )
    assert result.views == 2  # the standardised encoding, with and without verbatim copies


@pytest.mark.slow
def test_scan_keeps_its_level_with_three_views():
    """No signal (an independent release), 120 seeds: the tail test's rejections at 5 % stay
    within the binomial's 99.9 % range of its level."""
    from scipy import stats

    pvalues = [
        scan_members(*_release(seed, copies=0), SPEC, q=0.05, seed=seed, exact=True).tail_pvalue
        for seed in range(120)
    ]
    rejections = int(np.sum(np.array(pvalues) <= 0.05))
    assert rejections <= stats.binom.ppf(0.999, 120, 0.05), rejections


def counts(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Small counts and a category: about 600 distinct combinations, so most records have exact
    twins in the pool and in the release."""
    return pd.DataFrame(
        {
            "a": rng.poisson(2, n).astype(float),
            "b": rng.poisson(3, n).astype(float),
            "c": rng.integers(1, 4, n).astype(float),
            "region": rng.choice(["n", "s"], n),
        }
    )


COUNTS = DatasetSpec.model_validate(
    {
        "name": "counts",
        "columns": {
            **{c: {"kind": "numeric"} for c in "abc"},
            "region": {"kind": "categorical", "categories": ["n", "s"]},
        },
    }
)


@pytest.mark.slow
def test_scan_keeps_its_level_where_natural_twins_are_everywhere():
    """No signal, 120 seeds of an independent release of a table of few distinct values: the tail
    test's rejections at 5 %, and the record p-values at 5 %, stay within the binomial's 99.9 %
    range of their level."""
    from scipy import stats

    tails, records = [], []
    for seed in range(120):
        rng = np.random.default_rng(1000 + seed)
        train, holdout, reference, synthetic = (counts(n, rng) for n in (600, 600, 300, 600))
        res = scan_members(
            Splits(train=train, holdout=holdout, reference=reference),
            synthetic,
            COUNTS,
            q=0.05,
            seed=seed,
            exact=True,
        )
        assert res.views == 3
        tails.append(res.tail_pvalue)
        records.append(
            res.records["p_value"].to_numpy()[rng.integers(0, 600)]
        )  # one record per seed
    assert int(np.sum(np.array(tails) <= 0.05)) <= stats.binom.ppf(0.999, 120, 0.05)
    assert int(np.sum(np.array(records) <= 0.05)) <= stats.binom.ppf(0.999, 120, 0.05)
