"""Reading tables and making them conform to a :class:`DatasetSpec`.

Errors name the file and column and describe the problem in counts, never with the offending
values: those are values of real records.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from privacy_gate import objectstore
from privacy_gate.spec import DatasetSpec
from privacy_gate.errors import DataError

_READERS = {".csv": "csv", ".gz": "csv", ".parquet": "parquet", ".pq": "parquet"}


def read_table(path: str | Path) -> pd.DataFrame:
    """Read CSV (optionally gzipped) or Parquet, from a file or an ``s3://`` object; the index
    becomes the row id (0..n-1)."""
    if objectstore.is_s3(path):
        uri = str(path)
        _, key = objectstore.split_uri(uri)
        with tempfile.TemporaryDirectory(prefix="privacy-gate-") as tmp:
            local = objectstore.download(uri, Path(tmp) / Path(key).name)
            try:
                return read_table(local)
            except DataError as exc:  # name the object, not the temporary copy
                raise DataError(str(exc).replace(str(local), uri)) from None
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    kind = _READERS.get(path.suffix.lower())
    if kind is None:
        raise DataError(f"{path}: unsupported file type '{path.suffix}' (use .csv, .csv.gz or .parquet)")
    try:
        df = pd.read_csv(path, low_memory=False) if kind == "csv" else pd.read_parquet(path)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty") from None
    except Exception as exc:  # noqa: BLE001 - any reader failure is a data error for the user
        raise DataError(f"{path}: cannot be read as {kind} ({exc.__class__.__name__})") from None
    return df.reset_index(drop=True)


def conform(df: pd.DataFrame, spec: DatasetSpec, *, source: str, check_identifiers: bool = True) -> pd.DataFrame:
    """Check ``df`` against ``spec`` (columns, emptiness, all-missing columns) and cast types.

    ``source`` names the data in messages (a file path or "synthetic data"). Returns a copy with
    the spec's column order; categorical values become strings, numerics floats.
    ``check_identifiers``: refuse identifier-like categorical columns (:func:`identifier_problem`);
    on for real data, off for a release (judged against the real data's categories, and its
    encodings are bounded by :class:`~privacy_gate.data.encoding.MixedEncoder`).
    """
    missing = [c for c in spec.columns if c not in df.columns]
    extra = [c for c in df.columns if c not in spec.columns]
    if missing:
        raise DataError(f"{source}: column(s) {missing} of spec '{spec.name}' are missing from the data")
    if extra:
        raise DataError(f"{source}: column(s) {extra} are not in spec '{spec.name}'")
    if len(df) == 0:
        raise DataError(f"{source}: the table has no rows")
    out = {}
    for name, col in spec.columns.items():
        s = df[name]
        if s.isna().all():
            raise DataError(f"{source}: column '{name}' has only missing values")
        if col.kind == "numeric" or (col.kind == "ordinal" and col.categories is None):
            num = pd.to_numeric(s, errors="coerce")
            bad = int((num.isna() & s.notna()).sum())
            if bad:
                raise DataError(f"{source}: column '{name}' is {col.kind} but {bad} value(s) are not numbers")
            num = num.astype("float64")
            n_inf = int(np.isinf(num).sum())
            if n_inf:  # inf breaks every encoder and density; a range in the spec would have caught it too
                raise DataError(f"{source}: column '{name}' has {n_inf} infinite value(s)")
            out[name] = num
        elif col.kind == "datetime":
            dt = pd.to_datetime(s, errors="coerce")
            bad = int((dt.isna() & s.notna()).sum())
            if bad:
                raise DataError(f"{source}: column '{name}' is datetime but {bad} value(s) are not dates")
            out[name] = dt
        else:
            out[name] = s.map(as_category_string, na_action="ignore").astype(object)
            problem = identifier_problem(out[name], spec, name) if check_identifiers else None
            if problem:
                raise DataError(f"{source}: {problem}")
    return pd.DataFrame(out, index=df.index)


#: The share rule of the identifier guard needs this many values: in a small table most values of
#: an honest categorical can be distinct by chance.
MIN_ROWS_FOR_SHARE = 200
#: A column with a different value in every row is an identifier from this many values on.
MIN_ROWS_UNIQUE = 20


def identifier_problem(values: pd.Series, spec: DatasetSpec, column: str) -> str | None:
    """What makes categorical ``column`` look like a per-row identifier, or None: a different value
    in every row, more distinct values than ``spec.max_categories``, or (from
    ``MIN_ROWS_FOR_SHARE`` values on) more than ``spec.max_category_share`` of them distinct.
    The entity id is an identifier by declaration and is not checked. Counts only, never values.

    >>> spec = DatasetSpec.model_validate({"name": "t", "columns": {"c": {"kind": "categorical"}}})
    >>> identifier_problem(pd.Series([str(i) for i in range(300)]), spec, "c")[:61]
    "column 'c' is declared categorical but has 300 distinct value"
    >>> identifier_problem(pd.Series(["a", "b"] * 150), spec, "c") is None
    True
    """
    if column == spec.entity_id:
        return None
    n = int(values.notna().sum())
    distinct = int(values.nunique(dropna=True))
    share = distinct / max(1, n)
    if n >= MIN_ROWS_UNIQUE and distinct == n:
        why = "a different value in every row"
    elif distinct > spec.max_categories:
        why = f"more than the spec's max_categories ({spec.max_categories})"
    elif n >= MIN_ROWS_FOR_SHARE and share > spec.max_category_share:
        why = f"{share:.0%} of its values distinct, more than the spec's max_category_share ({spec.max_category_share:g})"
    else:
        return None
    kind = spec.columns[column].kind
    return (f"column '{column}' is declared {kind} but has {distinct} distinct values in {n} rows ({why}): it looks "
            f"like an identifier, and one-hot encoding it would make {distinct} features. Declare it as the spec's "
            "entity_id or drop the column (a true category with this many values: bin it, or raise max_categories "
            "/ max_category_share in the spec)")


def as_category_string(v: object) -> str:
    # 1 and 1.0 read from CSV/Parquet must be the same category
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def row_hashes(df: pd.DataFrame) -> np.ndarray:
    """A uint64 hash per row over the values only (not the index): equal rows hash equal."""
    return pd.util.hash_pandas_object(df, index=False).to_numpy()


def data_hash(df: pd.DataFrame) -> str:
    """sha256 over column names and row hashes: identifies the exact table a verdict judged."""
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, df.columns)).encode())
    h.update(row_hashes(df).tobytes())
    return h.hexdigest()
