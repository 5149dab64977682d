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

from privacy_gate.config import InputLimits
from privacy_gate.data import guards
from privacy_gate.errors import DataError
from privacy_gate.publication import objectstore
from privacy_gate.spec import DatasetSpec

_READERS = {".csv": "csv", ".gz": "csv", ".parquet": "parquet", ".pq": "parquet"}


def read_table(
    path: str | Path, *, limits: InputLimits | None = None, where: str = "in the config"
) -> pd.DataFrame:
    """Read CSV (optionally gzipped) or Parquet, from a file or an ``s3://`` object; the index
    becomes the row id (0..n-1). The file is held to ``limits`` (default: the ``inputs``
    defaults) before it is parsed (``guards.check_file``: size, width, longest field); ``where``
    says where a refused budget is set (\"in the config\", \"in the --config file\")."""
    limits = limits or InputLimits()
    if objectstore.is_s3(path):
        uri = str(path)
        _, key = objectstore.split_uri(uri)
        guards.check_size(
            uri, objectstore.object_size(uri), limits, where=where
        )  # before a byte is downloaded
        with tempfile.TemporaryDirectory(prefix="privacy-gate-") as tmp:
            local = objectstore.download(uri, Path(tmp) / Path(key).name)
            try:
                return read_table(local, limits=limits, where=where)
            except DataError as exc:  # name the object, not the temporary copy
                raise DataError(str(exc).replace(str(local), uri)) from None
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: file not found")
    kind = _READERS.get(path.suffix.lower())
    if kind is None:
        raise DataError(
            f"{path}: unsupported file type '{path.suffix}' (use .csv, .csv.gz or .parquet)"
        )
    guards.check_file(path, limits, where=where)
    try:
        df = pd.read_csv(path, low_memory=False) if kind == "csv" else pd.read_parquet(path)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty") from None
    except UnicodeDecodeError:  # the guards' pass names the line; this is the parser's own finding
        raise guards.not_utf8(path, None) from None
    except Exception as exc:  # noqa: BLE001 - any reader failure is a data error for the user
        raise DataError(f"{path}: cannot be read as {kind} ({exc.__class__.__name__})") from None
    return df.reset_index(drop=True)


def conform(
    df: pd.DataFrame, spec: DatasetSpec, *, source: str, check_identifiers: bool = True
) -> pd.DataFrame:
    """Check ``df`` against ``spec`` (columns, emptiness, all-missing columns) and cast types.

    ``source`` names the data in messages (a file path or "synthetic data"). Returns a copy with
    the spec's column order; categorical values become strings, numerics floats (the types ``df``
    had: ``privacy_gate.data.types.value_types``).
    ``check_identifiers``: refuse identifier-like categorical columns (:func:`identifier_problem`);
    on for real data, off for a release (judged against the real data's categories, and its
    encodings are bounded by :class:`~privacy_gate.data.encoding.MixedEncoder`).
    Every column is checked before anything is refused: one :class:`DataError` names all the
    offending columns (counts only, never values).
    """
    problem = guards.header_problem([str(c) for c in df.columns], spec)
    if problem:
        raise DataError(f"{source}: {problem}")
    if len(df) == 0:
        raise DataError(f"{source}: the table has no rows")
    out, problems, identifiers = {}, [], []
    for name, col in spec.columns.items():
        s = df[name]
        if s.isna().all():
            problems.append(f"column '{name}' has only missing values")
            continue
        if col.kind == "numeric" or (col.kind == "ordinal" and col.categories is None):
            num = pd.to_numeric(s, errors="coerce")
            bad = int((num.isna() & s.notna()).sum())
            if bad:
                problems.append(f"column '{name}' is {col.kind} but {bad} value(s) are not numbers")
                continue
            num = num.astype("float64")
            n_inf = int(np.isinf(num).sum())
            if (
                n_inf
            ):  # inf breaks every encoder and density; a range in the spec would have caught it too
                problems.append(f"column '{name}' has {n_inf} infinite value(s)")
            out[name] = num
        elif col.kind == "datetime":
            dt = pd.to_datetime(s, errors="coerce")
            bad = int((dt.isna() & s.notna()).sum())
            if bad:
                problems.append(f"column '{name}' is datetime but {bad} value(s) are not dates")
            out[name] = dt
        else:
            out[name] = s.map(as_category_string, na_action="ignore").astype(object)
            finding = identifier_finding(out[name], spec, name) if check_identifiers else None
            if finding:
                identifiers.append(finding)
    if identifiers:
        problems.append(_identifiers_sentence(identifiers))
    if problems:
        raise DataError(f"{source}: " + "; ".join(problems))
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
    finding = identifier_finding(values, spec, column)
    return None if finding is None else _identifiers_sentence([finding])


#: What to do about a column that looks like an identifier.
_IDENTIFIER_REMEDY = (
    "entity_id or drop the column (a true category with this many values: bin it, or raise "
    "max_categories / max_category_share in the spec)"
)


def identifier_finding(values: pd.Series, spec: DatasetSpec, column: str) -> tuple[str, int] | None:
    """(what makes ``column`` look like an identifier, its distinct count), or None."""
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
        why = (
            f"{share:.0%} of its values distinct, more than the spec's max_category_share "
            f"({spec.max_category_share:g})"
        )
    else:
        return None
    kind = spec.columns[column].kind
    return (
        f"column '{column}' is declared {kind} but has {distinct} distinct values in {n} rows "
        f"({why})"
    ), distinct


def _identifiers_sentence(findings: list[tuple[str, int]]) -> str:
    if len(findings) == 1:
        text, distinct = findings[0]
        return (
            f"{text}: it looks like an identifier, and one-hot encoding it would make {distinct} "
            "features. "
            f"Declare it as the spec's {_IDENTIFIER_REMEDY}"
        )
    total = sum(d for _, d in findings)
    return (
        f"{len(findings)} columns look like identifiers: "
        + "; ".join(t for t, _ in findings)
        + f"; one-hot encoding them would make {total} features. Declare each as the spec's "
        f"{_IDENTIFIER_REMEDY}"
    )


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
