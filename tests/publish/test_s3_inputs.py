"""An ``s3://`` input is held to the input budgets too: its size is read with a
HEAD request and an object over ``inputs.max_file_bytes`` is refused before a byte is downloaded;
a downloaded object goes through the same guards as a local file, named by its URI."""

from __future__ import annotations

import pandas as pd
import pytest

from privacy_gate.data import read_table
from privacy_gate.errors import DataError
from privacy_gate.publication import objectstore


def test_an_object_over_the_size_budget_is_refused_before_it_is_downloaded(
    s3_env, tmp_path, monkeypatch
):
    from privacy_gate.config import InputLimits

    pd.DataFrame({"a": range(5000), "b": ["x"] * 5000}).to_csv(tmp_path / "t.csv", index=False)
    objectstore.upload(tmp_path / "t.csv", "s3://data/big/t.csv")
    size = (tmp_path / "t.csv").stat().st_size
    downloads = []
    monkeypatch.setattr(objectstore, "download", lambda *a, **k: downloads.append(a))
    with pytest.raises(DataError) as err:
        read_table("s3://data/big/t.csv", limits=InputLimits(max_file_bytes=size - 1))
    assert str(err.value) == (
        f"s3://data/big/t.csv: is {size:,} bytes, more than inputs.max_file_bytes "
        f"({size - 1:,}); raise inputs.max_file_bytes in the config"
    )
    assert downloads == []


def test_a_downloaded_object_goes_through_the_same_guards_named_by_its_uri(s3_env, tmp_path):
    from privacy_gate.config import InputLimits

    frame = pd.DataFrame({"a": range(10), "notes": ["x"] * 10})
    frame.loc[4, "notes"] = "y" * 5000
    frame.to_csv(tmp_path / "t.csv", index=False)
    objectstore.upload(tmp_path / "t.csv", "s3://data/wide/t.csv")
    with pytest.raises(
        DataError,
        match=r"^s3://data/wide/t.csv: a field of 5,000 bytes or more \(data row 5, column "
        r"'notes'\), more than inputs.max_field_bytes \(1,000\)",
    ):
        read_table("s3://data/wide/t.csv", limits=InputLimits(max_field_bytes=1000))
    assert len(read_table("s3://data/wide/t.csv")) == 10
