"""Input guards: what a data file may cost, checked before it is parsed.

A table is judged in memory several times over (parsed, conformed, validated, split, encoded per
attack), so what a file costs is bounded up front, from its size on disk, its header and one
streaming pass over its bytes, never from a parse (``inputs`` section, :class:`InputLimits`):

- ``max_file_bytes``: the bytes of the table. A plain file by its size on disk; a ``.gz`` by what
  it decompresses to (counted while streaming, stopped at the budget: a small archive may hold
  gigabytes); a Parquet file by its size on disk and by the uncompressed size its footer records
  (still encoded: a value repeated through a dictionary counts once).
- ``max_columns``: the header's width (every column is at least one feature of the attacks'
  encoding, which holds at most ``MAX_ENCODED_WIDTH``).
- ``max_field_bytes``: the longest single field (one cell). A CSV is scanned for it with quotes
  honoured (a quoted field may hold commas and line breaks); a Parquet file's string columns are
  measured on the Arrow table, before any pandas object exists.

The same pass checks that a CSV is UTF-8 text (:func:`not_utf8`): a latin-1 or Windows-1252 export
is refused naming the file and the line, before the parser fails on it with a bare
``UnicodeDecodeError``.

Every refusal is a :class:`~privacy_gate.errors.DataError` naming the file, the figure and the
setting to change; no value of the file is ever quoted. :func:`header_problem` compares a header
with the spec (every missing and extra column at once).

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = path.write_text('a,b\\n1,"x, y"\\n2,' + "z" * 50 + "\\n")
>>> read_header(path, InputLimits())
['a', 'b']
>>> check_file(path, InputLimits(max_field_bytes=20), where="in the config")
Traceback (most recent call last):
...
privacy_gate.errors.DataError: ...t.csv: a field of 50 bytes or more (data row 2, column 'b'), more
than inputs.max_field_bytes (20); raise inputs.max_field_bytes in the config, or leave long text out
of the table
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import os
from pathlib import Path

import numpy as np

from privacy_gate.config import InputLimits
from privacy_gate.errors import DataError
from privacy_gate.spec import DatasetSpec

#: A header row longer than this is refused (10,000 column names of 1,600 characters each).
MAX_HEADER_BYTES = 16 * 2**20
_CHUNK = 4 * 2**20
_QUOTE, _COMMA, _LF, _CR = ord('"'), ord(","), ord("\n"), ord("\r")
_SETTING = "inputs"


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    return "gzip" if suffix == ".gz" else "csv"


def _open(path: Path):
    return gzip.open(path, "rb") if _kind(path) == "gzip" else open(path, "rb")


def _mb(n: int) -> str:
    return f"{n:,} bytes ({n / 1e6:,.1f} MB)" if n >= 1_000_000 else f"{n:,} bytes"


def _refuse(
    path: str | Path, figure: str, setting: str, limit: int, where: str, remedy: str
) -> DataError:
    return DataError(
        f"{path}: {figure}, more than {_SETTING}.{setting} ({limit:,}); raise {_SETTING}.{setting} "
        f"{where}{remedy}"
    )


class _CsvScanner:
    """One pass over CSV bytes, chunk by chunk: fields end at commas and line breaks outside quotes
    (the parity of the quotes seen so far: an escaped quote ``""`` counts twice, so it keeps the
    parity). Tracks the bytes read, where the header record ends, and the first field longer than
    ``limit`` bytes (its length so far and its place). A record ends at ``\\n``; a ``\\r``
    before it only ends the field."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parity = 0  # quotes seen so far, mod 2: 1 = inside a quoted field
        self.offset = 0  # bytes consumed
        self.field_start = 0  # offset of the current field's first byte
        self.record = 0  # the open record, counted from 0 (0 = the header)
        self.field = 0  # the open field within it
        self.header_end: int | None = None  # offset of the line break that ends the header record
        self.over: tuple[int, int, int] | None = (
            None  # (bytes, record, field) of the first long field
        )

    def feed(self, chunk: bytes) -> None:
        buf = np.frombuffer(chunk, dtype=np.uint8)
        quotes = buf == _QUOTE
        # parity before each byte (uint8 wraps at 256, an even number: the parity survives)
        before = (np.cumsum(quotes, dtype=np.uint8) - quotes + self.parity) & 1
        outside = before == 0
        newline = (buf == _LF) & outside
        ends = np.flatnonzero(((buf == _COMMA) | (buf == _CR)) & outside | newline)
        if ends.size:
            starts = np.empty_like(ends)
            starts[0] = self.field_start - self.offset
            starts[1:] = ends[:-1] + 1
            lengths = ends - starts
            is_break = newline[ends]
            long = np.flatnonzero(lengths > self.limit)
            if self.over is None and long.size:
                at = int(long[0])
                self.over = (int(lengths[at]), *self._position(is_break[:at], at))
            breaks = np.flatnonzero(is_break)
            if self.header_end is None and breaks.size and self.record == 0:
                self.header_end = self.offset + int(ends[breaks[0]])
            self.record, self.field = self._position(is_break, int(ends.size))
            self.field_start = self.offset + int(ends[-1]) + 1
        if len(buf):
            self.parity = int(before[-1] ^ quotes[-1])
        self.offset += len(buf)
        pending = self.offset - self.field_start  # the field still open at the chunk's end
        if self.over is None and pending > self.limit:
            self.over = (pending, self.record, self.field)

    def _position(self, is_break: np.ndarray, at: int) -> tuple[int, int]:
        """(record, field) of the field after the first ``at`` field ends of this chunk, whose
        line-break flags are ``is_break``."""
        breaks = np.flatnonzero(is_break)
        if not breaks.size:
            return self.record, self.field + at
        return self.record + int(breaks.size), at - int(breaks[-1]) - 1


def not_utf8(path: str | Path, line: int | None) -> DataError:
    """The refusal of a CSV that is not UTF-8 text: the file, the line (1 = the header) and what to
    do; never the bytes (they belong to a record).

    >>> str(not_utf8("people.csv", 7))[:96]
    'people.csv: not UTF-8 text (line 7 holds a byte sequence that is not UTF-8, as a latin-1 or
    Wind'
    """
    at = f"line {line:,}" if line else "a line"
    return DataError(
        f"{path}: not UTF-8 text ({at} holds a byte sequence that is not UTF-8, as a latin-1 or "
        "Windows-1252 export does); save the table as UTF-8 (for example `iconv -f latin1 -t utf-8 "
        "IN.csv > OUT.csv`) and run again"
    )


def _scan(path: Path, header: list[str], *, limits: InputLimits, where: str) -> None:
    """Stream ``path``'s (decompressed) bytes through a scanner, stopping as soon as a budget is
    exceeded. A field over the budget is confirmed by Python's CSV reader (:func:`_long_field`)
    before it is refused: the scanner's quote parity is exact for files written by a CSV writer,
    but a stray quote inside an unquoted field (``12" pizza``), which readers take literally,
    would make it see one long field. ``header``: the file's column names, which name the column
    of a long field."""
    scanner = _CsvScanner(limits.max_field_bytes)
    checked = False
    utf8, lines = codecs.getincrementaldecoder("utf-8")(), 0
    try:
        with _open(path) as fh:
            while True:
                chunk = fh.read(_CHUNK)
                try:  # a multi-byte character cut by the chunk is carried over by the decoder
                    utf8.decode(chunk, final=not chunk)
                except UnicodeDecodeError as exc:  # the carried bytes hold no line break
                    raise not_utf8(path, lines + exc.object[: exc.start].count(b"\n") + 1) from None
                if not chunk:
                    break
                lines += chunk.count(b"\n")
                scanner.feed(chunk)
                if scanner.offset > limits.max_file_bytes:
                    what = "decompresses to" if _kind(path) == "gzip" else "holds"
                    raise _refuse(
                        path,
                        f"{what} {_mb(scanner.offset)} or more",
                        "max_file_bytes",
                        limits.max_file_bytes,
                        where,
                        "",
                    )
                if scanner.over is not None and not checked:
                    record = _long_field(path, limits.max_field_bytes)
                    if record is not None:
                        raise _field_error(path, header, scanner, record, limits, where)
                    checked = True  # stray quotes: the reader found no long field in the whole file
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"{path}: cannot be read ({type(exc).__name__})") from None


def _long_field(path: Path, limit: int) -> int | None:
    """The record (0 = the header) holding the first field longer than ``limit`` bytes as Python's
    CSV reader splits ``path`` (latin-1: one character per byte; the structure is ASCII), or None.
    The reader holds at most ``limit`` characters of a field. (``csv.field_size_limit`` is
    process-wide: it is set for this pass only, which runs only once the scanner saw a long
    field.)"""
    previous = csv.field_size_limit()
    rows = 0
    try:
        csv.field_size_limit(limit)
        with _open(path) as fh, io.TextIOWrapper(fh, encoding="latin-1", newline="") as text:
            for _ in csv.reader(text):
                rows += 1
    except csv.Error as exc:
        return (
            rows if "field larger than field limit" in str(exc) else None
        )  # else: the parser says what
    finally:
        csv.field_size_limit(previous)
    return None


def _field_error(
    path: Path,
    header: list[str],
    scanner: _CsvScanner,
    record: int,
    limits: InputLimits,
    where: str,
) -> DataError:
    """The refusal of a long field in ``record``: its size and column (a name of ``header``) when
    the scanner saw the same record (column names only, never a value)."""
    size, at_record, field = scanner.over or (0, -1, 0)
    column, figure = "", f"more than {limits.max_field_bytes:,} bytes"
    if at_record == record:
        figure = f"{size:,} bytes or more"
        if record > 0 and field < len(header):
            column = f", column {header[field]!r}"
    line = "the header" if record == 0 else f"data row {record:,}"
    return _refuse(
        path,
        f"a field of {figure} ({line}{column})",
        "max_field_bytes",
        limits.max_field_bytes,
        where,
        ", or leave long text out of the table",
    )


def _csv_header(path: Path, limits: InputLimits, where: str) -> list[str]:
    scanner = _CsvScanner(limits.max_field_bytes)
    raw = bytearray()
    try:
        with _open(path) as fh:
            while scanner.header_end is None:
                chunk = fh.read(64 * 1024)
                if not chunk:
                    break
                scanner.feed(chunk)
                raw += chunk
                if scanner.header_end is None and scanner.field + 1 > limits.max_columns:
                    raise _refuse(
                        path,
                        f"the header has more than {limits.max_columns:,} columns",
                        "max_columns",
                        limits.max_columns,
                        where,
                        ", or split the table",
                    )
                if scanner.over is not None and scanner.over[1] == 0:
                    raise _refuse(
                        path,
                        f"a field of {scanner.over[0]:,} bytes or more (the header)",
                        "max_field_bytes",
                        limits.max_field_bytes,
                        where,
                        "",
                    )
                if scanner.offset > MAX_HEADER_BYTES:
                    raise DataError(
                        f"{path}: the header row is longer than {MAX_HEADER_BYTES:,} bytes; a "
                        "table's "
                        "header holds its column names, one line"
                    )
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"{path}: cannot be read ({type(exc).__name__})") from None
    end = scanner.header_end if scanner.header_end is not None else len(raw)
    try:
        text = bytes(raw[:end]).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(f"{path}: the header is not UTF-8 text") from None
    if not text.strip():
        raise DataError(f"{path}: the file is empty (no header row)")
    try:
        return next(csv.reader(io.StringIO(text)))
    except (csv.Error, StopIteration):
        raise DataError(f"{path}: the header row cannot be read as CSV") from None


def _parquet_file(path: Path):
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - a footer that cannot be read is a data error for the user
        raise DataError(f"{path}: cannot be read as parquet ({exc.__class__.__name__})") from None


def _parquet_columns(pf) -> list[str]:
    """The data columns of a Parquet file (an index pandas stored is not one: it is read as the
    index and dropped, as ``read_table`` does)."""
    schema = pf.schema_arrow
    index = {
        c for c in (schema.pandas_metadata or {}).get("index_columns", []) if isinstance(c, str)
    }
    return [n for n in schema.names if n not in index]


def read_header(
    path: str | Path, limits: InputLimits, *, where: str = "in the config"
) -> list[str]:
    """The column names of a local CSV (``.csv``, ``.csv.gz``) or Parquet file, read from its first
    line or its footer only; a header wider than ``limits.max_columns`` is refused while reading."""
    path = Path(path)
    if _kind(path) == "parquet":
        return _parquet_columns(_parquet_file(path))
    return _csv_header(path, limits, where)


def _check_parquet(path: Path, pf, limits: InputLimits, where: str) -> None:
    meta = pf.metadata
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if size > limits.max_file_bytes:  # its size on disk was checked already
        raise _refuse(
            path,
            f"holds {_mb(size)} of uncompressed data",
            "max_file_bytes",
            limits.max_file_bytes,
            where,
            "",
        )
    # a column chunk smaller than the field budget cannot hold a longer value: only larger
    # string columns are read (bounded by the size budget) and measured on Arrow, before pandas
    names = pf.schema_arrow.names
    suspects = set()
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        for j in range(rg.num_columns):
            if rg.column(j).total_uncompressed_size > limits.max_field_bytes:
                suspects.add(rg.column(j).path_in_schema.split(".")[0])
    import pyarrow as pa
    import pyarrow.compute as pc

    for name in [n for n in names if n in suspects]:
        kind = pf.schema_arrow.field(name).type
        if not (
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind)
        ):
            continue
        column = pf.read(columns=[name]).column(name)
        longest = pc.max(pc.binary_length(column)).as_py() or 0
        if longest > limits.max_field_bytes:
            raise _refuse(
                path,
                f"a field of {longest:,} bytes (column {name!r})",
                "max_field_bytes",
                limits.max_field_bytes,
                where,
                ", or leave long text out of the table",
            )


def check_file(
    path: str | Path,
    limits: InputLimits,
    *,
    where: str = "in the config",
    spec: DatasetSpec | None = None,
) -> list[str]:
    """Everything a local data file may cost, checked before it is parsed: its size, its header's
    width (and, given ``spec``, its columns), then its longest field. Returns the header."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    check_size(path, os.path.getsize(path), limits, where=where)
    pf = _parquet_file(path) if _kind(path) == "parquet" else None  # its footer, read once
    header = _parquet_columns(pf) if pf is not None else _csv_header(path, limits, where)
    check_width(path, header, limits, where=where)
    if spec is not None:
        problem = header_problem(header, spec)
        if problem:
            raise DataError(f"{path}: {problem}")
    if pf is not None:
        _check_parquet(path, pf, limits, where)
    else:
        _scan(path, header, limits=limits, where=where)
    return header


def check_size(
    name: str | Path, size: int, limits: InputLimits, *, where: str = "in the config"
) -> None:
    """Refuse a file (or an ``s3://`` object, by the size a HEAD request gave) of ``size`` bytes
    over ``limits.max_file_bytes``; ``name`` is what the refusal names."""
    if size > limits.max_file_bytes:
        raise _refuse(name, f"is {_mb(size)}", "max_file_bytes", limits.max_file_bytes, where, "")


def check_width(
    path: str | Path, header: list[str], limits: InputLimits, *, where: str = "in the config"
) -> None:
    if len(header) > limits.max_columns:
        raise _refuse(
            Path(path),
            f"{len(header):,} columns",
            "max_columns",
            limits.max_columns,
            where,
            ", or split the table (the attacks' encoding holds at most one feature per column and "
            "10,000 in all)",
        )


def header_problem(header: list[str], spec: DatasetSpec) -> str | None:
    """Every way a header differs from ``spec``, in one sentence (column names only), or None:
    the spec's columns it lacks, the columns the spec does not have, names given twice, and
    unnamed columns (by position).

    >>> spec = DatasetSpec.model_validate({"name": "t", "columns": {"a": {"kind": "numeric"},
    ...                                    "b": {"kind": "numeric"}}})
    >>> header_problem(["a", "c", "c", ""], spec)
    "column(s) ['b'] of spec 't' are missing from the data; column(s) ['c'] are not in spec 't';
    ['c'] appear more than once; column 4 has no name"
    """
    names = set(header)
    missing = [c for c in spec.columns if c not in names]
    extra = list(dict.fromkeys(c for c in header if c and c not in spec.columns))
    seen: set[str] = set()
    twice = list(dict.fromkeys(c for c in header if c and (c in seen or seen.add(c))))
    unnamed = [i + 1 for i, c in enumerate(header) if not c]
    parts = []
    if missing:
        parts.append(f"column(s) {missing} of spec '{spec.name}' are missing from the data")
    if extra:
        parts.append(f"column(s) {extra} are not in spec '{spec.name}'")
    if twice:
        parts.append(f"{twice} appear more than once")
    if unnamed:
        parts.append(
            f"column{'s' if len(unnamed) > 1 else ''} {', '.join(map(str, unnamed))} "
            f"{'have' if len(unnamed) > 1 else 'has'} no name"
        )
    return "; ".join(parts) or None
