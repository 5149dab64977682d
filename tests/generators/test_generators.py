import pandas as pd
import pytest

from privacy_gate.data import conform
from privacy_gate.errors import ConfigError
from privacy_gate.generators import available_generators, create_generator
from privacy_gate.generators.sdv import sdv_metadata


@pytest.fixture(scope="module")
def train(adult_full, adult_spec):
    return conform(
        adult_full.sample(400, random_state=1).reset_index(drop=True), adult_spec, source="t"
    )


def test_registry_and_errors():
    assert {"gaussian_copula", "ctgan", "tvae", "file", "copy_train", "noisy_copy"} <= set(
        available_generators()
    )
    with pytest.raises(ConfigError, match="unknown generator 'nope'; available"):
        create_generator("nope")
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['epochz'\]"):
        create_generator("ctgan", epochz=3)
    with pytest.raises(ConfigError, match="multiple of pac"):
        create_generator("ctgan", batch_size=55)


def test_metadata_comes_from_spec_not_data(adult_spec):
    md = sdv_metadata(adult_spec).to_dict()
    cols = md["tables"]["table"]["columns"]
    assert cols["age"] == {"sdtype": "numerical"} and cols["sex"] == {"sdtype": "categorical"}
    assert "min" not in str(md) and "Female" not in str(md)


def test_gaussian_copula_seeded_and_within_public_ranges(train, adult_spec):
    g = create_generator("gaussian_copula", seed=3).fit(train, adult_spec)
    a, b = g.sample(300), g.sample(300)
    pd.testing.assert_frame_equal(a, b)
    c = create_generator("gaussian_copula", seed=4).fit(train, adult_spec).sample(300)
    assert not a.equals(c)
    assert list(a.columns) == adult_spec.column_names
    assert a["age"].between(17, 90).all()
    conform(a, adult_spec, source="synthetic")  # same schema


def test_ctgan_runs_on_cpu(train, adult_spec):
    g = create_generator("ctgan", epochs=1, batch_size=100, seed=0).fit(train, adult_spec)
    out = g.sample(50)
    assert out.shape == (50, len(adult_spec.columns))


def test_canaries(train, adult_spec, tmp_path):
    copies = create_generator("copy_train", seed=0).fit(train, adult_spec).sample(len(train))
    assert set(map(tuple, copies.fillna(-1).to_numpy())) == set(
        map(tuple, train.fillna(-1).to_numpy())
    )
    noisy = create_generator("noisy_copy", seed=0, noise=0.05).fit(train, adult_spec).sample(200)
    assert not noisy.fillna(-1).isin(train.fillna(-1)).all(axis=None)
    path = tmp_path / "syn.csv"
    train.iloc[:50].to_csv(path, index=False)
    filed = create_generator("file", path=str(path)).fit(train, adult_spec)
    assert len(filed.sample(None)) == 50 and len(filed.sample(10, seed=1)) == 50
    part = create_generator("file", path=str(path), whole_file=False).fit(train, adult_spec)
    assert len(part.sample(10, seed=1)) == 10
