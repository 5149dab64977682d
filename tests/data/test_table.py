"""conform(): the identifier guard — a categorical column that is really a per-row identifier is
refused when the real data is checked against the spec, before anything encodes it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privacy_gate.data import conform
from privacy_gate.errors import DataError
from privacy_gate.spec import DatasetSpec


def _spec(**settings) -> DatasetSpec:
    return DatasetSpec.model_validate(
        {
            "name": "people",
            "columns": {
                "record": {"kind": "categorical"},
                "colour": {"kind": "categorical"},
                "x": {"kind": "numeric"},
            },
            **settings,
        }
    )


def _frame(n: int, record) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {"record": record, "colour": rng.choice(["r", "g", "b"], n), "x": rng.normal(size=n)}
    )


def test_a_per_row_identifier_declared_categorical_is_refused_without_values():
    n = 12_000
    ids = [f"id-{i:05d}" for i in range(n)]
    with pytest.raises(DataError) as err:
        conform(_frame(n, ids), _spec(), source="data/people.csv")
    msg = str(err.value)
    for needle in (
        "data/people.csv",
        "column 'record'",
        "12000 distinct values",
        "entity_id",
        "drop the column",
    ):
        assert needle in msg, msg
    assert "id-0" not in msg  # no data values
    # declared as the entity id it is an identifier, never encoded: accepted
    conform(_frame(n, ids), _spec(entity_id="record"), source="data/people.csv")


def test_unique_per_row_is_refused_in_a_small_table_too():
    with pytest.raises(DataError, match="different value in every row"):
        conform(_frame(50, [f"p{i}" for i in range(50)]), _spec(), source="s.csv")
    conform(
        _frame(10, [f"p{i}" for i in range(10)]), _spec(), source="s.csv"
    )  # too few rows to tell


@pytest.mark.parametrize(
    "n, distinct, refused, why",
    [
        (3000, 1001, True, "max_categories (1000)"),  # more distinct values than the bound
        (1000, 600, True, "max_category_share (0.5)"),  # most values distinct
        (3000, 1000, False, None),  # at the bound, a third distinct: a real category
        (199, 150, False, None),  # share rule only from 200 values on
    ],
)
def test_distinct_value_thresholds(n, distinct, refused, why):
    values = [f"v{i % distinct}" for i in range(n)]
    if refused:
        with pytest.raises(DataError, match=why.replace("(", r"\(").replace(")", r"\)")):
            conform(_frame(n, values), _spec(), source="s.csv")
    else:
        conform(_frame(n, values), _spec(), source="s.csv")


def test_thresholds_are_spec_settings():
    values = [f"v{i % 1500}" for i in range(6000)]
    conform(_frame(6000, values), _spec(max_categories=2000), source="s.csv")
    with pytest.raises(DataError, match="max_category_share"):
        conform(
            _frame(1000, [f"v{i % 300}" for i in range(1000)]),
            _spec(max_category_share=0.2),
            source="s.csv",
        )
    # a release is not held to it (its categories are the real data's; the encoder bounds its width)
    conform(
        _frame(1000, [f"p{i}" for i in range(1000)]),
        _spec(),
        source="synthetic",
        check_identifiers=False,
    )


def test_example_adult_spec_is_unaffected(adult_full, adult_spec):
    out = conform(adult_full, adult_spec, source="adult.csv")
    assert out["native_country"].nunique() > 40 and out["fnlwgt"].dtype == "float64"
