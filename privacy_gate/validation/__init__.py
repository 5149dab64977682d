"""Great Expectations glue: suites built from a dataset spec, checkpoint runs, sanitised reports.

This package is the only place in privacy_gate that imports great_expectations, and it does so
lazily (on the first validation run), so importing it is cheap.

- ``build_input_suite`` / ``build_synthetic_suite``: JSON-serialisable GE 1.x suites from a spec
  (committed under ``expectations/``; ``load_suite`` reads them back).
- ``validate_input`` / ``validate_synthetic``: run a suite with a real GE checkpoint and return a
  ``ValidationReport`` that holds counts and rates only, never a value of a record.
- ``ExpectTrainingCopyShareToBeAtMost``: the custom expectation on the share of synthetic rows
  that are verbatim copies of training rows.
"""

from __future__ import annotations

from typing import Any

from privacy_gate.validation.report import ExpectationOutcome, ValidationReport
from privacy_gate.validation.run import (
    copy_indicator,
    gx_suite_from_dict,
    gx_suite_to_dict,
    load_suite,
    validate_input,
    validate_synthetic,
)
from privacy_gate.validation.suites import (
    COPY_INDICATOR_COLUMN,
    COPY_SHARE_EXPECTATION,
    build_input_suite,
    build_synthetic_suite,
    dump_suite,
)

__all__ = [
    "COPY_INDICATOR_COLUMN",
    "COPY_SHARE_EXPECTATION",
    "ExpectTrainingCopyShareToBeAtMost",
    "ExpectationOutcome",
    "ValidationReport",
    "build_input_suite",
    "build_synthetic_suite",
    "copy_indicator",
    "dump_suite",
    "gx_suite_from_dict",
    "gx_suite_to_dict",
    "load_suite",
    "validate_input",
    "validate_synthetic",
]


def __getattr__(name: str) -> Any:
    # The expectation class needs great_expectations; import it only when asked for.
    if name == "ExpectTrainingCopyShareToBeAtMost":
        from privacy_gate.validation.expectations import ExpectTrainingCopyShareToBeAtMost

        return ExpectTrainingCopyShareToBeAtMost
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
