"""Parameters declared once: the parameter models every attack and generator declares
(``params_model``) — numbers that refuse booleans and strings, a base model that refuses unknown
keys — and :class:`Component`, the base that turns such a model into the class's keyword-only
constructor, its signature, ``get_params`` and ``repr`` (scikit-learn style).

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

import inspect
import math
from numbers import Integral, Real
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from privacy_gate.registry import type_name, validate_params

__all__ = [
    "Component",
    "Field",
    "Fraction",
    "NonNegativeInt",
    "NonNegativeNumber",
    "Number",
    "OpenFraction",
    "Params",
    "PositiveInt",
    "PositiveNumber",
    "Seed",
]


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


class _TypeText:
    """An annotation shown as the readable type text of ``privacy-gate list`` (``'kde' |
    'flow'``)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def model_signature(model: type[BaseModel]) -> inspect.Signature:
    """The keyword-only signature a parameter model stands for: one parameter per field, with
    the field's default (none for a required field) and its type as ``privacy-gate list`` shows
    it."""
    return inspect.Signature(
        [
            inspect.Parameter(
                field,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=_TypeText(type_name(info.annotation)),
                default=inspect.Parameter.empty
                if info.is_required()
                else info.get_default(call_default_factory=True),
            )
            for field, info in model.model_fields.items()
        ]
    )


class Component:
    """Base of a class whose hyper-parameters are its ``params_model`` (a :class:`Params`): the
    model is the one place they are declared. The class gets

    - a keyword-only constructor whose defaults are the model's; the given values are validated
      through the model (a one-line ConfigError naming the component and the parameter) and
      stored as given, one attribute each; extra set-up goes in the ``_post_init`` hook;
    - ``__signature__`` from the model, so ``inspect.signature`` and ``help()`` show the real
      keyword defaults;
    - ``get_params()`` (the hyper-parameters, a dict) and a ``repr`` showing only the non-defaults.

    Learned state (set by ``fit``) ends in ``_``. A registered class's errors name it as the
    registry does (``attack 'domias'``), any other by its class name.

    >>> class KnnParams(Params):
    ...     k: PositiveInt = Field(3, description="neighbours")
    ...     metric: str = Field("euclidean", description="distance")
    >>> class Knn(Component):
    ...     params_model = KnnParams
    >>> Knn(), Knn(k=5), Knn(k=5).get_params()
    (Knn(), Knn(k=5), {'k': 5, 'metric': 'euclidean'})
    >>> inspect.signature(Knn)
    <Signature (*, k: int = 3, metric: str = 'euclidean')>
    >>> Knn(k=0)
    Traceback (most recent call last):
    ...
    privacy_gate.errors.ConfigError: Knn: parameter 'k': must be greater than 0, got 0
    """

    params_model: ClassVar[type[Params]]
    #: "attack", "generator": set by :meth:`privacy_gate.registry.Registry.register` with ``name``
    component_kind: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "params_model" in cls.__dict__:
            clash = sorted(
                set(cls.params_model.model_fields)
                & {"component_kind", "get_params", "name", "owner", "params_model"}
            )
            if clash:
                raise TypeError(
                    f"{cls.__qualname__}: parameter(s) {clash} would hide the component's own "
                    "attributes"
                )
            cls.__signature__ = model_signature(cls.params_model)

    def __init__(self, **params: Any):
        validate_params(self.params_model, params, owner=self.owner())
        for field, info in self.params_model.model_fields.items():
            setattr(
                self,
                field,
                params[field] if field in params else info.get_default(call_default_factory=True),
            )
        self._post_init()

    def _post_init(self) -> None:
        """Hook: set-up beyond storing the hyper-parameters (derived, non-parameter attributes)."""

    @classmethod
    def owner(cls) -> str:
        """How errors name the component: ``attack 'domias'`` once registered, else the class
        name."""
        name = getattr(cls, "name", None)
        return (
            f"{cls.component_kind} '{name}'"
            if cls.component_kind and isinstance(name, str)
            else cls.__name__
        )

    def get_params(self) -> dict[str, Any]:
        """The hyper-parameters, as given (or defaulted): ``type(self)(**self.get_params())`` is an
        unfitted copy."""
        return {field: getattr(self, field) for field in self.params_model.model_fields}

    def __repr__(self) -> str:
        defaults = type(self).__signature__.parameters
        shown = [
            f"{k}={v!r}"
            for k, v in self.get_params().items()
            if defaults[k].default is inspect.Parameter.empty
            or repr(v) != repr(defaults[k].default)
        ]
        return f"{type(self).__name__}({', '.join(shown)})"
