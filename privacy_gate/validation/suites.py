"""Expectation suites built from a :class:`DatasetSpec`, as plain JSON-serialisable dicts.

The dicts use Great Expectations 1.x's ExpectationSuite JSON format exactly as GE itself writes
it (``ExpectationSuite.to_json_dict()``: float bounds, default kwargs left out,
``meta``/``severity`` on every expectation), so a committed suite file, the builder output and a GE
round trip are all equal as dicts. Building suites does not import great_expectations (it takes
seconds); only running them and checking a loaded file (``run.py``: ``load_suite``) do.

Every value in a suite comes from the spec, i.e. public domain knowledge, never from the data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# conform() turns categorical values into strings with this function; the allowed categories must
# be stringified the same way (1 and 1.0 are the same category) or valid values would fail.
from privacy_gate.data.table import as_category_string
from privacy_gate.errors import ConfigError
from privacy_gate.spec import DatasetSpec

#: Helper column added to the synthetic batch only while validating: 1.0 = verbatim training copy.
COPY_INDICATOR_COLUMN = "__pg_is_training_copy__"
#: expectation type (GE derives it from the class name ExpectTrainingCopyShareToBeAtMost).
COPY_SHARE_EXPECTATION = "expect_training_copy_share_to_be_at_most"

_REBUILD_NOTE = "Built from dataset spec '{name}' by privacy_gate.validation; do not edit by hand."


#: meta marker on range checks of datetime columns (bounds in seconds since the epoch)
EPOCH_SECONDS_META = {"privacy_gate": {"unit": "seconds since 1970-01-01 UTC"}}


def _expectation(
    type_: str, *, meta: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    # GE serialises kwargs without None/default values; mirror that so round trips are exact.
    kw = {k: v for k, v in kwargs.items() if v is not None}
    return {"type": type_, "kwargs": kw, "meta": dict(meta or {}), "severity": "critical"}


def _bound(v: float | None) -> float | None:
    return None if v is None else float(v)


def _check_reserved(spec: DatasetSpec) -> None:
    if COPY_INDICATOR_COLUMN in spec.columns:
        raise ConfigError(f"spec '{spec.name}': column name '{COPY_INDICATOR_COLUMN}' is reserved")


def _domain_expectations(spec: DatasetSpec, *, entity_not_null: bool) -> list[dict[str, Any]]:
    """Per-column checks shared by both suites: nulls, ranges and allowed categories."""
    out: list[dict[str, Any]] = []
    for name, col in spec.columns.items():
        if not col.nullable or (entity_not_null and name == spec.entity_id):
            out.append(_expectation("expect_column_values_to_not_be_null", column=name))
        if col.categories is not None:  # categorical, or ordinal with a category list
            value_set = [as_category_string(c) for c in col.categories]
            out.append(
                _expectation("expect_column_values_to_be_in_set", column=name, value_set=value_set)
            )
        elif col.is_numeric and (col.min is not None or col.max is not None):
            # datetime bounds are seconds since the Unix epoch: the batch carries datetimes as
            # epoch seconds (see run.py), because the spec's min/max are plain numbers.
            out.append(
                _expectation(
                    "expect_column_values_to_be_between",
                    column=name,
                    min_value=_bound(col.min),
                    max_value=_bound(col.max),
                    meta=EPOCH_SECONDS_META if col.kind == "datetime" else None,
                )
            )
    return out


def build_input_suite(spec: DatasetSpec) -> dict[str, Any]:
    """Suite ``<name>.input`` for the real input table (after ``conform()``).

    Checks: exactly the spec's columns; at least one row; no column entirely missing; non-nullable
    columns and the entity column without missing values; ranges; allowed categories.
    """
    _check_reserved(spec)
    exps = [
        _expectation("expect_table_columns_to_match_set", column_set=list(spec.columns)),
        _expectation("expect_table_row_count_to_be_between", min_value=1),
    ]
    # "not entirely missing" = share of non-null values strictly above 0 (an explicit aggregate
    # check, rather than a not-null check with a tiny `mostly`, which reads like a tolerance).
    exps += [
        _expectation(
            "expect_column_proportion_of_non_null_values_to_be_between",
            column=name,
            min_value=0.0,
            strict_min=True,
        )
        for name in spec.columns
    ]
    exps += _domain_expectations(spec, entity_not_null=True)
    return _suite(f"{spec.name}.input", exps, spec)


def build_synthetic_suite(spec: DatasetSpec, *, max_copy_share: float) -> dict[str, Any]:
    """Suite ``<name>.synthetic``: the input suite's schema/domain checks plus the copy share.

    The validated batch is the synthetic table plus :data:`COPY_INDICATOR_COLUMN`, so the column
    set includes that helper column.
    """
    _check_reserved(spec)
    if not (
        isinstance(max_copy_share, int | float) and 0.0 <= max_copy_share <= 1.0
    ):  # NaN fails too
        raise ConfigError(f"max_copy_share must be a number in [0, 1], got {max_copy_share!r}")
    exps = [
        _expectation(
            "expect_table_columns_to_match_set", column_set=[*spec.columns, COPY_INDICATOR_COLUMN]
        ),
        _expectation("expect_table_row_count_to_be_between", min_value=1),
        *_domain_expectations(spec, entity_not_null=False),
        # the indicator column is the expectation's fixed default column, so GE leaves it out
        _expectation(COPY_SHARE_EXPECTATION, max_value=float(max_copy_share)),
    ]
    return _suite(f"{spec.name}.synthetic", exps, spec)


def _suite(name: str, expectations: list[dict[str, Any]], spec: DatasetSpec) -> dict[str, Any]:
    # No great_expectations_version in meta: GE adds it when it loads a suite, and leaving it out
    # keeps committed suites from going stale on every GE patch release.
    return {
        "name": name,
        "id": None,
        "expectations": expectations,
        "meta": {"privacy_gate": {"dataset": spec.name}},
        "notes": _REBUILD_NOTE.format(name=spec.name),
    }


def dump_suite(suite: dict[str, Any], path: str | Path) -> None:
    """Write a suite as stable, diff-friendly JSON (2-space indent, trailing newline)."""
    Path(path).write_text(json.dumps(suite, indent=2) + "\n")
