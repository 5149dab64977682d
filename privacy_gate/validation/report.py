"""Sanitised validation results: counts, rates and thresholds, never a value of a record.

GE results carry raw data (``partial_unexpected_list``, observed min/max, column names seen in
the table). Validation results are logged to MLflow, so everything is copied field by field from
a whitelist here: counts and percentages of unexpected values, aggregate *rates* for a few known
expectation types, and thresholds/column names taken from the suite (public, from the spec).
This module does not import great_expectations.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from privacy_gate.errors import ValidationFailed
from privacy_gate.validation.suites import (
    COPY_INDICATOR_COLUMN,
    COPY_SHARE_EXPECTATION,
    EPOCH_SECONDS_META,
)

# Only these expectation types report an observed value, and only because it is a rate.
_RATE_TYPES = frozenset(
    {COPY_SHARE_EXPECTATION, "expect_column_proportion_of_non_null_values_to_be_between"}
)


@dataclass(frozen=True)
class ExpectationOutcome:
    """One expectation's result, reduced to what may be logged.

    ``observed`` is only set for aggregate rates (copy share, share of non-missing values).
    ``message`` is the human line for a failure (None when it passed); it is built from counts
    and suite parameters only.
    """

    expectation_type: str
    column: str | None
    success: bool
    unexpected_count: int | None = None
    unexpected_percent: float | None = None
    observed: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class ValidationReport:
    """The outcome of running one suite on one batch; JSON-serialisable via :meth:`to_dict`."""

    suite_name: str
    success: bool
    results: tuple[ExpectationOutcome, ...]

    def failures(self) -> list[str]:
        """One human-readable line per failed expectation."""
        return [r.message or f"{r.expectation_type} failed" for r in self.results if not r.success]

    @property
    def kind(self) -> str:
        """The suite's kind, ``input`` or ``synthetic`` (its name is ``<dataset>.<kind>``)."""
        return self.suite_name.rsplit(".", 1)[-1]

    def metrics(self) -> dict[str, float]:
        """Numbers for MLflow and gate rules, with dataset-independent keys.

        ``validation.<kind>.success`` (1/0), ``validation.<kind>.failed`` (failed expectations) and,
        for suites with the copy-share expectation, ``validation.<kind>.copy_share``.
        """
        prefix = f"validation.{self.kind}"
        out = {
            f"{prefix}.success": float(self.success),
            f"{prefix}.failed": float(sum(not r.success for r in self.results)),
        }
        for r in self.results:
            if r.expectation_type == COPY_SHARE_EXPECTATION and r.observed is not None:
                out[f"{prefix}.copy_share"] = r.observed
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite_name": self.suite_name,
            "success": self.success,
            "failures": self.failures(),
            "results": [asdict(r) for r in self.results],
        }

    def raise_if_failed(self, what: str) -> None:
        """Raise :class:`ValidationFailed` (one line naming the suite and failures) unless
        success."""
        if self.success:
            return
        lines = self.failures()
        raise ValidationFailed(
            f"{what}: suite '{self.suite_name}' failed {len(lines)} expectation(s): "
            + "; ".join(lines),
            lines,
        )


# --------------------------------------------------------------------------- sanitising


def outcome_from_result(
    expectation_type: str,
    kwargs: dict[str, Any],
    success: bool | None,
    result: dict[str, Any] | None,
    exception_info: dict[str, Any] | None,
    meta: dict[str, Any] | None = None,
) -> ExpectationOutcome:
    """Build an outcome from the parts of a GE ExpectationValidationResult, dropping data values.

    ``kwargs`` and ``meta`` are the expectation's configuration (from the suite, public).
    """
    result = result or {}
    column = kwargs.get("column")
    if expectation_type == COPY_SHARE_EXPECTATION or column == COPY_INDICATOR_COLUMN:
        column = None  # the helper column is an implementation detail, not a data column
    unexpected_count = _int_or_none(result.get("unexpected_count"))
    unexpected_percent = _float_or_none(result.get("unexpected_percent"))
    observed = (
        _float_or_none(result.get("observed_value")) if expectation_type in _RATE_TYPES else None
    )
    error = _exception_class(exception_info)
    ok = bool(success) and error is None  # fail closed: None or an exception is a failure
    outcome = ExpectationOutcome(
        expectation_type=expectation_type,
        column=column if isinstance(column, str) else None,
        success=ok,
        unexpected_count=unexpected_count,
        unexpected_percent=unexpected_percent,
        observed=observed,
    )
    if ok:
        return outcome
    message = _message(outcome, kwargs, result, error, epoch=meta == EPOCH_SECONDS_META)
    return ExpectationOutcome(**{**asdict(outcome), "message": message})


def _message(
    o: ExpectationOutcome,
    kw: dict[str, Any],
    result: dict[str, Any],
    error: str | None,
    *,
    epoch: bool,
) -> str:
    where = f"column '{o.column}': " if o.column else ""
    if error is not None:
        return f"{where}{o.expectation_type} could not be evaluated ({error})"
    t, n = o.expectation_type, o.unexpected_count
    if t == COPY_SHARE_EXPECTATION and o.observed is not None:
        return (
            f"{_pct(o.observed)} of synthetic rows are verbatim copies of training rows "
            f"(max {_pct(kw.get('max_value'))})"
        )
    if t == "expect_table_columns_to_match_set":
        return _columns_message(kw, result)
    if t == "expect_table_row_count_to_be_between":
        return f"row count outside {_interval(kw)}"
    if t == "expect_column_proportion_of_non_null_values_to_be_between" and o.observed is not None:
        if o.observed == 0:
            return f"{where}only missing values"
        return f"{where}{_pct(o.observed)} non-missing values, outside {_interval(kw, pct=True)}"
    if n is not None:
        if t == "expect_column_values_to_not_be_null":
            return f"{where}{n} missing value(s) in a non-nullable column"
        if t == "expect_column_values_to_be_between":
            return f"{where}{n} value(s) outside {_interval(kw, fmt=_date if epoch else _num)}"
        if t == "expect_column_values_to_be_in_set":
            k = len(kw.get("value_set") or [])
            return f"{where}{n} value(s) not among the {k} allowed categories"
        return f"{where}{t}: {n} unexpected value(s)"
    return f"{where}{t} failed"


def _columns_message(kw: dict[str, Any], result: dict[str, Any]) -> str:
    # Missing columns come from the suite (public); unexpected ones come from the data's header,
    # which could be a record (a CSV read without header), so they are only counted.
    expected = [c for c in kw.get("column_set") or [] if isinstance(c, str)]
    mismatched = (result.get("details") or {}).get("mismatched") or {}
    missing = [c for c in expected if c in set(map(str, mismatched.get("missing") or []))]
    n_extra = len(mismatched.get("unexpected") or [])
    parts = []
    if missing:
        parts.append(f"missing column(s) {missing}")
    if n_extra:
        parts.append(f"{n_extra} column(s) not in the spec")
    return "columns do not match the spec: " + ("; ".join(parts) or "column sets differ")


def _interval(kw: dict[str, Any], *, pct: bool = False, fmt: Any = None) -> str:
    lo, hi = kw.get("min_value"), kw.get("max_value")
    fmt = fmt or (_pct if pct else _num)
    left = "(" if kw.get("strict_min") or lo is None else "["
    right = ")" if kw.get("strict_max") or hi is None else "]"
    return f"{left}{'-inf' if lo is None else fmt(lo)}, {'inf' if hi is None else fmt(hi)}{right}"


def _num(v: Any) -> str:
    if not _is_number(v):
        return "?"
    return str(int(v)) if float(v).is_integer() else f"{v:.6g}"


def _date(v: Any) -> str:
    # datetime bounds are stored as epoch seconds; show them as UTC timestamps
    if not _is_number(v):
        return "?"
    return (
        datetime.fromtimestamp(float(v), tz=UTC)
        .strftime("%Y-%m-%d %H:%M:%S")
        .removesuffix(" 00:00:00")
    )


def _pct(v: Any) -> str:
    if not isinstance(v, int | float):
        return "?"
    return f"{v * 100:.2f}".rstrip("0").rstrip(".") + "%"


def _is_number(v: Any) -> bool:
    # numbers.Real covers numpy scalars; bools are not counts or rates
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def _int_or_none(v: Any) -> int | None:
    return int(v) if _is_number(v) else None


def _float_or_none(v: Any) -> float | None:
    return float(v) if _is_number(v) else None


def _exception_class(info: dict[str, Any] | None) -> str | None:
    """The exception's class name only: its message may quote a value (e.g. a bad cast).

    GE gives either one flat ``{raised_exception, exception_traceback, ...}`` dict or, when a
    metric failed, a dict of such dicts keyed by metric.
    """
    if not isinstance(info, dict):
        return None
    infos = (
        [info] if "raised_exception" in info else [v for v in info.values() if isinstance(v, dict)]
    )
    for item in infos:
        if item.get("raised_exception"):
            tb = str(item.get("exception_traceback") or "").strip().splitlines()
            m = re.match(r"^([A-Za-z_][\w.]*)(:|$)", tb[-1]) if tb else None
            return m.group(1).rsplit(".", 1)[-1] if m else "error"
    return None
