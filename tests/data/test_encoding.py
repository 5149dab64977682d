"""MixedEncoder: standardisation, one-hot scale, missing handling, dropped columns, speed."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest

from privacy_gate.data import conform
from privacy_gate.data.encoding import ONEHOT_SCALE, MixedEncoder
from privacy_gate.errors import ConfigError, DataError
from privacy_gate.spec import DatasetSpec

SPEC = DatasetSpec.model_validate(
    {
        "name": "toy",
        "columns": {
            "pid": {"kind": "categorical"},
            "x": {"kind": "numeric", "nullable": False},
            "y": {"kind": "numeric"},
            "const": {"kind": "numeric", "nullable": False},
            "when": {"kind": "datetime", "nullable": False},
            "level": {"kind": "ordinal", "nullable": False},
            "colour": {"kind": "categorical", "categories": ["red", "green", "blue"]},
            "size": {"kind": "ordinal", "categories": [1, 2, 3]},
            "free": {"kind": "categorical"},
        },
        "entity_id": "pid",
    }
)


def toy_frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.normal(10.0, 2.0, n)
    y[rng.random(n) < 0.1] = np.nan
    raw = pd.DataFrame(
        {
            "pid": rng.integers(0, n // 2, n),
            "x": rng.normal(5.0, 3.0, n),
            "y": y,
            "const": np.full(n, 7.0),
            "when": pd.Timestamp("2020-01-01")
            + pd.to_timedelta(rng.integers(0, 1000, n), unit="D"),
            "level": rng.integers(1, 6, n),
            "colour": rng.choice(["red", "green", "blue"], n),
            "size": rng.choice([1, 2, 3], n),
            "free": rng.choice(["a", "b", "c", "d"], n),
        }
    )
    return conform(raw, SPEC, source="toy")


@pytest.fixture(scope="module")
def fitted() -> tuple[MixedEncoder, pd.DataFrame, np.ndarray]:
    df = toy_frame()
    enc = MixedEncoder(spec=SPEC)
    return enc, df, enc.fit_transform(df)


def cols(enc: MixedEncoder, prefix: str) -> list[int]:
    return [
        i for i, n in enumerate(enc.feature_names_out_) if n == prefix or n.startswith(prefix + "[")
    ]


def test_feature_layout_excludes_entity_and_drops_constant(fitted):
    enc, _, X = fitted
    assert enc.feature_names_out_ == [
        "x",
        "y",
        "y[missing]",
        "when",
        "level",
        "colour[0]",
        "colour[1]",
        "colour[2]",
        "colour[missing]",
        "size[0]",
        "size[1]",
        "size[2]",
        "size[missing]",
        "free[0]",
        "free[1]",
        "free[2]",
        "free[3]",
        "free[missing]",
    ]
    assert not any(n.startswith("pid") for n in enc.feature_names_out_)
    assert enc.dropped_columns_ == ["const"]
    assert enc.n_effective_dims_ == 7  # x, y, when, level, colour, size, free
    assert X.shape == (200, enc.n_features_out_) and X.dtype == np.float64
    assert np.isfinite(X).all()
    # public categories keep the spec's order; learned ones are sorted
    assert enc.categories_["colour"] == ["red", "green", "blue"]
    assert enc.categories_["size"] == ["1", "2", "3"]
    assert enc.categories_["free"] == ["a", "b", "c", "d"]


def test_numerics_are_standardised_and_missing_is_imputed_with_indicator(fitted):
    enc, df, X = fitted
    for name in ("x", "when", "level"):
        j = enc.feature_names_out_.index(name)
        assert X[:, j].mean() == pytest.approx(0.0, abs=1e-9)
        assert X[:, j].std() == pytest.approx(1.0, rel=1e-9)
    j, k = enc.feature_names_out_.index("y"), enc.feature_names_out_.index("y[missing]")
    missing = df["y"].isna().to_numpy()
    assert missing.any()
    np.testing.assert_array_equal(X[:, k], missing.astype(float))
    np.testing.assert_array_equal(X[missing, j], 0.0)  # imputed with the fit mean
    assert X[~missing, j].std() == pytest.approx(1.0, rel=1e-9)
    assert "when" in enc.means_ and enc.scales_["when"] > 86400  # seconds


def test_nullable_column_gets_an_indicator_even_without_missing_values():
    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "columns": {"a": {"kind": "numeric"}, "b": {"kind": "numeric", "nullable": False}},
        }
    )
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1.0, 2.0, 4.0]})
    enc = MixedEncoder(spec=spec).fit(df)
    assert enc.feature_names_out_ == ["a", "a[missing]", "b"]
    X = enc.transform(pd.DataFrame({"a": [np.nan], "b": [np.nan]}))
    # a missing value in a non-nullable column is still imputed (no NaN leaks), just unflagged
    np.testing.assert_allclose(X, [[0.0, 1.0, 0.0]], atol=1e-12)


def test_onehot_categories_are_at_distance_one_and_unseen_maps_to_missing_slot(fitted):
    enc, _, _ = fitted
    base = toy_frame(4, seed=1).reset_index(drop=True)
    frame = pd.concat([base.iloc[[0]]] * 4, ignore_index=True)
    frame["colour"] = ["red", "green", "purple", np.nan]
    X = enc.transform(frame)
    c = cols(enc, "colour")
    block = X[:, c]
    assert np.linalg.norm(X[0] - X[1]) == pytest.approx(1.0)  # red vs green, all else equal
    np.testing.assert_allclose(block[2], [0, 0, 0, ONEHOT_SCALE])  # unseen
    np.testing.assert_allclose(block[3], [0, 0, 0, ONEHOT_SCALE])  # missing
    assert np.linalg.norm(X[0] - X[3]) == pytest.approx(1.0)


def test_numeric_category_lists_match_conformed_strings():
    spec = DatasetSpec.model_validate(
        {"name": "t", "columns": {"k": {"kind": "categorical", "categories": [1.0, 2, "z"]}}}
    )
    df = conform(pd.DataFrame({"k": [1, 2.0, "z", 2]}), spec, source="t")
    X = MixedEncoder(spec=spec).fit_transform(df)
    np.testing.assert_allclose(
        X / ONEHOT_SCALE, [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0]]
    )


def test_ordinal_mode_standardises_category_positions():
    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "columns": {
                "k": {"kind": "ordinal", "categories": ["lo", "mid", "hi"], "nullable": False}
            },
        }
    )
    df = pd.DataFrame({"k": ["lo", "mid", "hi", "mid"]})
    enc = MixedEncoder(spec=spec, categorical="ordinal").fit(df)
    X = enc.transform(df)
    assert enc.feature_names_out_ == ["k"]
    codes = np.array([0.0, 1.0, 2.0, 1.0])
    np.testing.assert_allclose(X[:, 0], (codes - codes.mean()) / codes.std())


def test_ordinal_mode_for_every_categorical_column_on_the_full_spec():
    df = toy_frame()
    enc = MixedEncoder(spec=SPEC, categorical="ordinal").fit(df)
    # one standardised feature per categorical column (no one-hot), in spec order, nothing dropped
    assert enc.feature_names_out_ == [
        "x",
        "y",
        "y[missing]",
        "when",
        "level",
        "colour",
        "colour[missing]",
        "size",
        "size[missing]",
        "free",
        "free[missing]",
    ]
    X = enc.transform(df)
    assert X.shape == (200, 11) and np.isfinite(X).all()
    j = enc.feature_names_out_.index("colour")
    codes = df["colour"].map({"red": 0, "green": 1, "blue": 2}).to_numpy(dtype=float)
    np.testing.assert_allclose(X[:, j], (codes - codes.mean()) / codes.std())
    # a value outside the category list: imputed with the mean, flagged like a missing value
    odd = df.iloc[[0]].copy()
    odd["colour"] = "purple"
    row = enc.transform(odd)[0]
    assert row[j] == 0.0 and row[enc.feature_names_out_.index("colour[missing]")] == 1.0
    assert enc.n_effective_dims_ == 7


def test_notes_say_what_was_dropped_without_data_values(fitted):
    enc, _, _ = fitted
    assert enc.notes_ == [
        "column 'const' is constant in the fit data and was dropped from the encoding"
    ]
    df = toy_frame()
    df["colour"] = df["colour"].astype(object)
    df.loc[df.index[:4], "colour"] = "mauve"  # outside the public list
    df["y"] = np.nan  # nothing observed
    enc = MixedEncoder(spec=SPEC, data_name="reference data").fit(df)
    assert enc.notes_ == [
        "column 'y' has no observed values in the reference data and was dropped from the "
        "encoding; only its missing indicator is kept",
        "column 'const' is constant in the reference data and was dropped from the encoding",
        "column 'colour': 4 row(s) of the reference data hold a value outside the spec's category "
        "list; they are encoded like missing values",
    ]
    assert not any("7.0" in n or "mauve" in n for n in enc.notes_)  # names and counts, never values
    assert enc.dropped_columns_ == ["y", "const"]
    # the ordinal mode notes unlisted values too
    ordinal = MixedEncoder(spec=SPEC, categorical="ordinal", data_name="reference data").fit(df)
    assert any("column 'colour': 4 row(s)" in n for n in ordinal.notes_)
    with pytest.raises(ConfigError, match="data_name"):
        MixedEncoder(spec=SPEC, data_name="")


def test_errors_name_the_problem(fitted):
    enc, df, _ = fitted
    with pytest.raises(ConfigError, match="categorical"):
        MixedEncoder(spec=SPEC, categorical="hash")
    with pytest.raises(DataError, match=r"\['colour'\]"):
        enc.transform(df.drop(columns=["colour"]))
    bad = df.copy()
    bad["x"] = np.inf
    with pytest.raises(DataError, match="'x'.*infinite"):
        enc.transform(bad)
    with pytest.raises(DataError, match="no rows"):
        MixedEncoder(spec=SPEC).fit(df.iloc[:0])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MixedEncoder(spec=SPEC).transform(df)


def test_entity_column_may_be_absent_from_targets(fitted):
    enc, df, X = fitted
    np.testing.assert_array_equal(enc.transform(df.drop(columns=["pid"])), X)


def test_fast_on_50k_rows():
    df = toy_frame(50_000, seed=3)
    enc = MixedEncoder(spec=SPEC)
    t0 = time.perf_counter()
    X = enc.fit_transform(df)
    elapsed = time.perf_counter() - t0
    assert X.shape[0] == 50_000
    assert elapsed < 2.0, f"fit_transform on 50k rows took {elapsed:.2f} s"


def test_onehot_scale_constant():
    assert math.isclose(2 * ONEHOT_SCALE**2, 1.0)


def test_encoder_refuses_an_unbounded_one_hot_column_before_allocating():
    spec = DatasetSpec.model_validate(
        {"name": "t", "columns": {"record": {"kind": "categorical"}, "x": {"kind": "numeric"}}}
    )
    n = 12_000
    df = pd.DataFrame({"record": [f"id-{i}" for i in range(n)], "x": np.arange(n, dtype=float)})
    start = time.perf_counter()
    with pytest.raises(DataError) as err:
        MixedEncoder(spec=spec, data_name="reference data").fit(df)
    assert time.perf_counter() - start < 5
    msg = str(err.value)
    for needle in (
        "column 'record'",
        "12000 distinct values",
        "reference data",
        "max_categories (1000)",
        "entity_id",
        "drop the column",
    ):
        assert needle in msg, msg
    assert "id-1" not in msg
    # the total width is bounded too, whatever the spec allows per column
    wide = DatasetSpec.model_validate(
        {
            "name": "t",
            "max_categories": 5000,
            "columns": {"a": {"kind": "categorical"}, "b": {"kind": "categorical"}},
        }
    )
    frame = pd.DataFrame(
        {"a": [f"a{i % 3000}" for i in range(n)], "b": [f"b{i % 2999}" for i in range(n)]}
    )
    with pytest.raises(
        DataError, match=r"6001 features, more than its maximum width \(5000\).*'a' \(3000"
    ):
        MixedEncoder(spec=wide, max_width=5000).fit(frame)
    # ordinal mode is two features a column: no bound needed
    assert MixedEncoder(spec=spec, categorical="ordinal").fit(df).n_features_out_ <= 4
