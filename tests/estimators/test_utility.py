"""Marginal utility: identical frames score 1, broken dependence lowers the 2-way score,
missing/unseen cells count, no data values leak into the result, and it is fast."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from privacy_gate.data import conform
from privacy_gate.errors import ConfigError, DataError, InsufficientDataError
from privacy_gate.estimators import marginal_quality
from privacy_gate.spec import DatasetSpec

SPEC = DatasetSpec.model_validate(
    {
        "name": "toy",
        "columns": {
            "pid": {"kind": "categorical"},
            "age": {"kind": "numeric"},
            "gain": {"kind": "numeric"},
            "score": {"kind": "numeric", "bins": [0, 10, 20, 30]},
            "when": {"kind": "datetime"},
            "sex": {"kind": "categorical", "categories": ["F", "M"]},
            "job": {"kind": "categorical"},
        },
        "entity_id": "pid",
    }
)


def frame(n: int = 2000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.normal(40, 10, n)
    sex = np.where(age + rng.normal(0, 5, n) > 40, "M", "F")  # dependent on age
    raw = pd.DataFrame(
        {
            "pid": np.arange(n),
            "age": age.round(),
            "gain": np.where(rng.random(n) < 0.9, 0.0, rng.exponential(5000, n)),  # heavy ties
            "score": np.clip(age / 2 + rng.normal(0, 3, n), 0, 30),
            "when": pd.Timestamp("2022-01-01") + pd.to_timedelta((age * 5).astype(int), unit="D"),
            "sex": sex,
            "job": np.where(
                age > 45, "Secret-Job-A", rng.choice(["Secret-Job-B", "Secret-Job-C"], n)
            ),
        }
    )
    raw.loc[rng.random(n) < 0.05, "job"] = np.nan
    return conform(raw, SPEC, source="toy")


def test_identical_frames_score_one():
    df = frame()
    q = marginal_quality(df, df, spec=SPEC)
    assert q["quality"] == 1.0 and q["tvd_1way"] == 0.0 and q["tvd_2way"] == 0.0
    assert q["n_columns"] == 6 and q["n_pairs"] == 15  # the entity id is not an attribute
    assert "pid" not in q["tvd_1way_by_column"]


def test_independent_columns_lose_on_2way_only():
    real = frame(seed=0)
    rng = np.random.default_rng(1)
    shuffled = real.copy()
    for name in shuffled.columns:  # same 1-way marginals, dependence destroyed
        shuffled[name] = real[name].to_numpy()[rng.permutation(len(real))]
    q = marginal_quality(shuffled, real, spec=SPEC)
    assert q["tvd_1way"] == pytest.approx(0.0, abs=1e-12)
    assert q["tvd_2way"] > 0.05
    assert q["quality"] < 1.0 - 0.025
    assert set(q["worst_2way_pair"]) <= {"age", "score", "when", "sex", "job"}


def test_fresh_sample_scores_high_and_real_reference_is_the_binning_source():
    q = marginal_quality(frame(seed=5), frame(seed=0), spec=SPEC)
    assert 0.9 < q["quality"] < 1.0


def test_missing_and_unseen_values_are_cells_of_their_own():
    real = frame()
    syn = real.copy()
    syn.loc[syn.index[:200], "age"] = np.nan  # 10% missing where real has none
    syn.loc[syn.index[200:400], "sex"] = "X"  # a category the real data never had
    q = marginal_quality(syn, real, spec=SPEC)
    assert q["tvd_1way_by_column"]["age"] == pytest.approx(0.1, abs=0.02)
    assert q["tvd_1way_by_column"]["sex"] == pytest.approx(0.1, abs=1e-9)
    assert q["worst_1way_column"] in {"age", "sex"}


def test_result_holds_no_data_values():
    real = frame()
    syn = frame(seed=3)
    q = marginal_quality(syn, real, spec=SPEC)
    text = json.dumps(q)  # JSON-serialisable, for MLflow and the report
    assert "Secret-Job" not in text


def test_single_column_has_no_pairs():
    spec = DatasetSpec.model_validate({"name": "one", "columns": {"x": {"kind": "numeric"}}})
    real = pd.DataFrame({"x": np.arange(100.0)})
    q = marginal_quality(real.iloc[:50], real, spec=spec)
    assert q["tvd_2way"] is None and q["worst_2way_pair"] is None and q["n_pairs"] == 0
    assert q["quality"] == pytest.approx(1.0 - q["tvd_1way"])
    assert q["tvd_1way"] == pytest.approx(0.5, abs=0.06)  # half the bins are empty


def test_errors():
    df = frame(100)
    with pytest.raises(ConfigError, match="n_bins"):
        marginal_quality(df, df, spec=SPEC, n_bins=1)
    with pytest.raises(DataError, match=r"\['job'\].*synthetic"):
        marginal_quality(df.drop(columns=["job"]), df, spec=SPEC)
    with pytest.raises(InsufficientDataError, match="real data has no rows"):
        marginal_quality(df, df.iloc[:0], spec=SPEC)


def test_fast_on_30k_rows_15_columns():
    rng = np.random.default_rng(0)
    n = 30_000
    cols = {f"c{i}": {"kind": "categorical"} for i in range(8)} | {
        f"n{i}": {"kind": "numeric"} for i in range(7)
    }
    spec = DatasetSpec.model_validate({"name": "big", "columns": cols})
    data = {f"c{i}": rng.choice([f"v{k}" for k in range(3 + 5 * i)], n) for i in range(8)}
    data |= {f"n{i}": rng.lognormal(size=n) for i in range(7)}
    real = conform(pd.DataFrame(data), spec, source="big")
    syn = real.sample(frac=1.0, replace=True, random_state=1)
    t0 = time.perf_counter()
    q = marginal_quality(syn, real, spec=spec)
    elapsed = time.perf_counter() - t0
    assert q["n_pairs"] == 105
    assert elapsed < 3.0, f"marginal_quality took {elapsed:.2f} s"
