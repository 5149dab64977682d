import numpy as np
import pandas as pd
import pytest

from privacy_gate.config import SplitConfig
from privacy_gate.data import conform, split_by_entity
from privacy_gate.errors import DataError, InsufficientDataError
from privacy_gate.spec import DatasetSpec


def _spec(entity=True):
    cols = {"x": {"kind": "numeric"}, "g": {"kind": "categorical"}}
    if entity:
        cols["person"] = {"kind": "categorical"}
    return DatasetSpec.model_validate(
        {"name": "t", "columns": cols, "entity_id": "person" if entity else None}
    )


def _frame(n_entities=50, per=3, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "x": rng.normal(size=n_entities * per),
            "g": rng.choice(["a", "b"], n_entities * per),
            "person": np.repeat([f"p{i}" for i in range(n_entities)], per),
        }
    )


def test_entities_stay_whole_and_fractions_hold():
    spec = _spec()
    df = conform(_frame(), spec, source="t")
    s = split_by_entity(df, spec, SplitConfig(seed=3))
    parts = [set(p["person"]) for p in (s.train, s.holdout, s.reference)]
    assert not (parts[0] & parts[1]) and not (parts[0] & parts[2]) and not (parts[1] & parts[2])
    assert [len(p) for p in parts] == [30, 10, 10]
    assert sum(s.sizes().values()) == len(df)
    # row ids (index) are preserved and disjoint
    assert set(s.train.index).isdisjoint(s.holdout.index)


def test_split_is_seeded_and_reproducible():
    spec2 = DatasetSpec.model_validate(
        {"name": "t", "columns": {"x": {"kind": "numeric"}, "g": {"kind": "categorical"}}}
    )
    df = conform(_frame()[["x", "g"]], spec2, source="t")
    a = split_by_entity(df, spec2, SplitConfig(seed=1))
    b = split_by_entity(df, spec2, SplitConfig(seed=1))
    c = split_by_entity(df, spec2, SplitConfig(seed=2))
    assert a.train.index.equals(b.train.index)
    assert not a.train.index.equals(c.train.index)


def test_public_reference_replaces_reference_split():
    spec = _spec()
    df = conform(_frame(), spec, source="t")
    ref = df.iloc[:5]
    s = split_by_entity(df, spec, SplitConfig(), reference=ref)
    assert s.reference is ref
    assert len(s.train) + len(s.holdout) == len(df)
    assert len(s.train) == 3 * 38  # 0.6/(0.8) of 50 entities, rounding to train


def test_too_few_entities():
    spec = _spec()
    with pytest.raises(InsufficientDataError, match="too few"):
        split_by_entity(conform(_frame(n_entities=2), spec, source="t"), spec, SplitConfig())


@pytest.mark.parametrize(
    "frame, message",
    [
        (lambda d: d.drop(columns=["g"]), r"column\(s\) \['g'\] of spec 't' are missing"),
        (lambda d: d.assign(extra=1), r"column\(s\) \['extra'\] are not in spec"),
        (lambda d: d.iloc[:0], "has no rows"),
        (lambda d: d.assign(x=np.nan), "column 'x' has only missing values"),
        (lambda d: d.assign(x=["SECRET"] + list(d.x[1:])), "column 'x' is numeric but 1 value"),
    ],
)
def test_conform_errors_name_column_without_values(frame, message):
    spec = _spec()
    with pytest.raises(DataError, match=message) as info:
        conform(frame(_frame()), spec, source="file.csv")
    assert "SECRET" not in str(info.value) and "file.csv" in str(info.value)
