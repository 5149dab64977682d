"""The custom expectation: share of synthetic rows that are verbatim copies of training rows.

GE 1.x recommends customising by subclassing a built-in expectation and fixing defaults. The
copy share is the mean of a 0/1 indicator column, so this subclasses ExpectColumnMeanToBeBetween
with the indicator as the fixed column and the threshold as ``max_value``. Defining the class
registers it with GE under the snake_case of its name, ``expect_training_copy_share_to_be_at_most``;
this module must therefore be imported before a suite containing it is loaded (run.py does).
"""

from __future__ import annotations

from great_expectations.compatibility import pydantic
from great_expectations.expectations import ExpectColumnMeanToBeBetween

from privacy_gate.validation.suites import COPY_INDICATOR_COLUMN, COPY_SHARE_EXPECTATION


class ExpectTrainingCopyShareToBeAtMost(ExpectColumnMeanToBeBetween):
    """Expect at most ``max_value`` (a share in [0, 1]) of synthetic rows to be training copies.

    The validated batch must carry the indicator column ``__pg_is_training_copy__`` (1.0 when the
    synthetic row equals a training row on all attribute columns, else 0.0); privacy_gate adds it
    in ``validate_synthetic``. The observed value is the copy share, an aggregate rate.
    """

    # Fixed defaults: GE serialises only non-default kwargs, so a suite stores just max_value.
    column: str = pydantic.Field(default=COPY_INDICATOR_COLUMN)
    description: str | None = (
        "At most max_value (a share) of the synthetic rows are verbatim copies of training rows."
    )


# Guard against a rename silently changing the type name stored in committed suites.
if ExpectTrainingCopyShareToBeAtMost.expectation_type != COPY_SHARE_EXPECTATION:  # pragma: no cover
    raise RuntimeError("ExpectTrainingCopyShareToBeAtMost registered under an unexpected type name")
