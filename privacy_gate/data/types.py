"""The value types a table came in with, and a release written back in them.

The gate judges a conformed table (``conform``: categories as strings, numbers as floats), but a
release is published for people who read it with the types their input had: a boolean column
stays boolean, integer-coded categories stay integers, integer counts stay integers.
:func:`value_types` records a table's types per column (``bool``, ``int``, ``float``, ``str``,
``datetime``); :func:`restore_types` casts a conformed release back to them, column by column and
only where that loses nothing: the restored column must conform to exactly the values that
were judged (a generator that made ``2.5`` of an integer column keeps it a float; a category
``"other"`` in an integer-coded column keeps the column text).

>>> raw = pd.DataFrame({"smoker": [True, False, None], "region": [1.0, 2.0, None],
...                     "age": [30, 41, 52]})
>>> from privacy_gate.spec import DatasetSpec
>>> spec = DatasetSpec.model_validate({"name": "t", "columns": {"smoker": {"kind": "categorical"},
...     "region": {"kind": "categorical"}, "age": {"kind": "numeric"}}})
>>> types = value_types(raw, spec)
>>> types
{'smoker': 'bool', 'region': 'int', 'age': 'int'}
>>> judged = pd.DataFrame({"smoker": ["True", None, "False"], "region": ["3", "1", None],
...                        "age": [33.0, 40.0, 61.0]})
>>> restore_types(judged, types).dtypes.astype(str).to_dict()
{'smoker': 'boolean', 'region': 'Int64', 'age': 'int64'}
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privacy_gate.data.table import conform
from privacy_gate.spec import DatasetSpec

BOOL, INT, FLOAT, STR, DATETIME = "bool", "int", "float", "str", "datetime"


def _integral(values: pd.Series) -> bool:
    """Every present value is a finite whole number."""
    x = pd.to_numeric(values.dropna(), errors="coerce").to_numpy(dtype="float64")
    return bool(np.all(np.isfinite(x)) and np.all(x == np.round(x)))


def value_types(df: pd.DataFrame, spec: DatasetSpec) -> dict[str, str]:
    """The type each of ``spec``'s columns has in ``df`` (as read, before ``conform``).

    A float column of a categorical or an ordinal with categories whose values are all whole
    numbers is ``int``: CSV has no integer with a missing value, so pandas reads integer codes
    with gaps as floats. A numeric float column stays ``float`` (it may be a measurement that
    happens to be whole)."""
    out: dict[str, str] = {}
    for name, col in spec.columns.items():
        if name not in df.columns:
            continue
        s = df[name]
        category_like = not col.is_numeric and col.kind != "datetime"
        if pd.api.types.is_bool_dtype(s.dtype):
            out[name] = BOOL
        elif pd.api.types.is_integer_dtype(s.dtype):
            out[name] = INT
        elif pd.api.types.is_float_dtype(s.dtype):
            out[name] = INT if category_like and s.notna().any() and _integral(s) else FLOAT
        elif pd.api.types.is_datetime64_any_dtype(s.dtype):
            out[name] = DATETIME
        else:
            inferred = pd.api.types.infer_dtype(s, skipna=True)
            out[name] = {
                "boolean": BOOL,
                "integer": INT,
                "floating": FLOAT,
                "mixed-integer-float": FLOAT,
                "datetime": DATETIME,
                "datetime64": DATETIME,
            }.get(inferred, STR)
            if out[name] == FLOAT and category_like and _integral(s):
                out[name] = INT
    return out


def conform_typed(
    raw: pd.DataFrame, spec: DatasetSpec, **conform_args
) -> tuple[pd.DataFrame, dict[str, str]]:
    """``(conform(raw, spec, ...), value_types(raw, spec))``: a table as the gate judges it and
    the types a release of it is written back in (the raw frame is not kept)."""
    types = value_types(raw, spec)
    return conform(raw, spec, **conform_args), types


def _as_bool(s: pd.Series) -> pd.Series | None:
    present = s.dropna()
    if pd.api.types.is_numeric_dtype(s.dtype):  # a numeric column of a boolean input: 1.0 / 0.0
        if not present.isin([0.0, 1.0]).all():
            return None
        values = s.map({1.0: True, 0.0: False})
    else:  # a category column of a boolean input: "True" / "False" (``as_category_string``)
        if not present.isin(["True", "False"]).all():
            return None
        values = s.map({"True": True, "False": False})
    return values.astype("boolean") if s.isna().any() else values.astype(bool)


def _as_int(s: pd.Series) -> pd.Series | None:
    x = pd.to_numeric(s, errors="coerce")
    if (x.isna() & s.notna()).any() or not _integral(x):
        return None
    return x.astype("Int64") if x.isna().any() else x.astype("int64")


def restore_types(df: pd.DataFrame, types: dict[str, str] | None) -> pd.DataFrame:
    """``df`` (a conformed release) with each column cast back to its type in ``types`` where that
    is lossless (:func:`round_trips`); other columns are left as they are."""
    if not types:
        return df
    out = df.copy()
    for name, kind in types.items():
        if name not in out.columns or kind not in (BOOL, INT):
            continue
        cast = _as_bool(out[name]) if kind == BOOL else _as_int(out[name])
        if cast is not None and round_trips(out[name], cast):
            out[name] = cast
    return out


def round_trips(judged: pd.Series, cast: pd.Series) -> bool:
    """``cast`` conforms back to ``judged``: the same missing cells, and the same numbers (a
    numeric column) or the same category strings (``str`` of a bool or an int is what
    ``conform`` makes of it)."""
    if not judged.isna().equals(cast.isna()):
        return False
    present = judged.notna().to_numpy()
    if pd.api.types.is_float_dtype(judged.dtype):
        return bool(
            np.array_equal(
                cast[present].astype("float64").to_numpy(),
                judged[present].to_numpy(dtype="float64"),
            )
        )
    return bool(
        (cast[present].astype(str).to_numpy() == judged[present].astype(str).to_numpy()).all()
    )
