"""Building blocks of the parameter models every attack and generator declares (``params_model``):
numbers that refuse booleans and strings, and a base model that refuses unknown keys.

>>> class P(Params):
...     epsilon: PositiveNumber = Field(1.0, description="privacy budget")
>>> P(epsilon=2).epsilon
2.0
>>> P.model_validate({"epsilon": True})
Traceback (most recent call last):
...
pydantic_core._pydantic_core.ValidationError: 1 validation error for P
epsilon
  Value error, expected a number, got True [type=value_error, input_value=True, input_type=bool]
    ...
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["Field", "Fraction", "NonNegativeInt", "NonNegativeNumber", "Number", "OpenFraction", "Params",
           "PositiveInt", "PositiveNumber", "Seed"]


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"expected a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"expected a finite number, got {value!r}")
    return value


def _integer(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(value)


def _positive(value: float) -> float:
    if value <= 0:
        raise ValueError(f"must be greater than 0, got {value!r}")
    return value


def _non_negative(value: float) -> float:
    if value < 0:
        raise ValueError(f"must be at least 0, got {value!r}")
    return value


def _fraction(value: float) -> float:
    if not 0 <= value <= 1:
        raise ValueError(f"must be in [0, 1], got {value!r}")
    return value


def _open_fraction(value: float) -> float:
    if not 0 < value < 1:
        raise ValueError(f"must be in (0, 1), got {value!r}")
    return value


Number = Annotated[float, BeforeValidator(_number)]
PositiveNumber = Annotated[float, BeforeValidator(_number), AfterValidator(_positive)]
NonNegativeNumber = Annotated[float, BeforeValidator(_number), AfterValidator(_non_negative)]
Fraction = Annotated[float, BeforeValidator(_number), AfterValidator(_fraction)]
OpenFraction = Annotated[float, BeforeValidator(_number), AfterValidator(_open_fraction)]
PositiveInt = Annotated[int, BeforeValidator(_integer), AfterValidator(_positive)]
NonNegativeInt = Annotated[int, BeforeValidator(_integer), AfterValidator(_non_negative)]
Seed = Annotated[int, BeforeValidator(_integer), AfterValidator(_non_negative)]


class Params(BaseModel):
    """Base of every component's parameter model: unknown keys are errors, values as given."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)
