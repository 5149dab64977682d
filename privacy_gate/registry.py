"""String-keyed registries (opacus style): ``create_attack("domias")``, ``create_generator("mst")``.

One implementation for every kind of component, so unknown names and bad parameters get the same
clear ConfigError everywhere (naming the component, the parameter and what is accepted). A
component declares its parameters once, as a pydantic model in ``params_model`` (see
:mod:`privacy_gate.params`) whose fields are exactly its constructor's keyword parameters (checked
when it registers); the registry validates through it and describes it
(``privacy-gate list attacks|generators``). Attacks and generators subclass
:class:`privacy_gate.params.Component`, which derives their keyword-only ``__init__``, signature,
``get_params`` and ``repr`` from that model (scikit-learn style); a plain class with a matching
``__init__``, as below, registers too.

>>> from pydantic import BaseModel, ConfigDict, Field
>>> class WParams(BaseModel):
...     model_config = ConfigDict(extra="forbid")
...     size: int = Field(1, ge=1, description="how big")
>>> reg = Registry("widget")
>>> @reg.register("w")
... class W:
...     '''A widget.'''
...     params_model = WParams
...     def __init__(self, *, size: int = 1):
...         self.size = size
>>> reg.create("w", size=2).size, W.name
(2, 'w')
>>> reg.create("w", size=0)
Traceback (most recent call last):
...
privacy_gate.errors.ConfigError: widget 'w': parameter 'size': Input should be greater than or equal
to 1 (got 0)
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from privacy_gate.errors import ConfigError

_T = TypeVar("_T", bound=type)
_SHOWN = 60  # characters of a rejected value quoted in an error message


@dataclass(frozen=True)
class ParamInfo:
    """One declared parameter: name, type, repr of the default, one-line description."""

    name: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class ComponentInfo:
    """One registered component: name, kind ("attack" / "generator"), summary (first line of the
    class docstring) and its declared parameters."""

    name: str
    kind: str
    summary: str
    params: tuple[ParamInfo, ...]


def type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"tuple[{type_name(args[0])}, ...]"
    if origin is not None:
        return (
            f"{getattr(origin, '__name__', str(origin))}[{', '.join(type_name(a) for a in args)}]"
        )
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"mapping of {annotation.__name__}"
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def format_components(infos: list[ComponentInfo]) -> str:
    """Plain text for ``privacy-gate list``: each component, then one line per parameter."""
    lines = []
    for info in infos:
        lines.append(f"{info.name}  —  {info.summary}")
        for p in info.params:
            lines.append(
                f"    {p.name}: {p.type} = {p.default}"
                + (f"  — {p.description}" if p.description else "")
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- validation


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (``Settings`` or ``Settings | None``), if any."""
    for a in (annotation, *typing.get_args(annotation)):
        if isinstance(a, type) and issubclass(a, BaseModel):
            return a
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _problem(model: type[BaseModel], params: Mapping[str, Any], exc: ValidationError) -> str:
    """``parameter '<name>': <what is wrong> (got <value>)`` for the first rejected parameter."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    if not first["loc"]:  # a check of a combination of parameters
        return "parameters: " + "; ".join(
            dict.fromkeys(e["msg"].removeprefix("Value error, ") for e in errors if not e["loc"])
        )
    where = str(first["loc"][0])
    field = model.model_fields.get(where)
    nested = _nested_model(field.annotation) if field is not None else None
    problems: dict[
        str, dict[str, None]
    ] = {}  # where inside the value -> messages (union alternatives)
    shown: dict[str, str] = {}
    for e in errors:
        if not e["loc"] or str(e["loc"][0]) != where:
            continue
        # inside the value: item i of a sequence, or a setting of a nested model (other string
        # locations are pydantic's names of union alternatives: not shown)
        inner = [
            f"item {x}" if isinstance(x, int) else f"setting '{x}'"
            for x in e["loc"][1:]
            if isinstance(x, int) or nested is not None
        ]
        if e["type"] == "extra_forbidden" and inner:
            accepted = (
                f"; accepted settings: {list(nested.model_fields)}" if nested is not None else ""
            )
            problems.setdefault(f"unknown {inner[-1]}{accepted}", {})
            continue
        prefix = ", ".join(inner) + ": " if inner else ""
        problems.setdefault(prefix, {})[e["msg"].removeprefix("Value error, ")] = None
        if e["type"] != "missing":
            shown.setdefault(prefix, _shown(e.get("input")))
    parts = []
    for prefix, msgs in problems.items():
        text = " or ".join(msgs)
        if prefix in shown and "got " not in text:
            text += f" (got {shown[prefix]})"
        parts.append(prefix + text)
    return f"parameter '{where}': " + "; ".join(parts)


def validate_params(model: type[BaseModel], params: Mapping[str, Any], *, owner: str) -> BaseModel:
    """Validate keyword ``params`` through the parameter ``model``: the validated model, or one
    ConfigError line ``<owner>: parameter '<name>': <problem>`` (unknown parameters: the list of
    the accepted ones). Also used by helpers that are not registered (e.g. the density
    estimators)."""
    unknown = [p for p in params if p not in model.model_fields]
    if unknown:
        raise ConfigError(
            f"{owner}: unknown parameter(s) {unknown}; accepted parameters: "
            f"{list(model.model_fields)}"
        )
    try:
        return model.model_validate(dict(params))
    except ValidationError as exc:
        raise ConfigError(f"{owner}: {_problem(model, params, exc)}") from None


# --------------------------------------------------------------------------- the registry


def _keyword_parameters(cls: type) -> set[str]:
    return {
        n
        for n, p in inspect.signature(cls).parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


class Registry:
    """Named classes of one kind (``"attack"``, ``"generator"``), each with a ``params_model``."""

    def __init__(self, kind: str):
        self.kind = kind
        self._classes: dict[str, type] = {}

    def register(self, name: str) -> Callable[[_T], _T]:
        """Class decorator: register ``cls`` under ``name`` and set its ``name`` attribute.

        ConfigError if the class declares no ``params_model`` (a pydantic model) or the model's
        fields are not exactly the keyword parameters of its ``__init__``."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"register: the {self.kind} name must be a non-empty string")

        def decorator(cls: _T) -> _T:
            known = self._classes.get(name)
            # re-registering the same class (a module reload) is fine; a second class is a clash
            if known is not None and (known.__module__, known.__qualname__) != (
                cls.__module__,
                cls.__qualname__,
            ):
                raise ConfigError(
                    f"{self.kind} name '{name}' is already registered by "
                    f"{known.__module__}.{known.__qualname__}"
                )
            model = getattr(cls, "params_model", None)
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise ConfigError(
                    f"{self.kind} '{name}' ({cls.__qualname__}) declares no params_model "
                    "(the pydantic model of its parameters)"
                )
            if set(model.model_fields) != _keyword_parameters(cls):
                raise ConfigError(
                    f"{self.kind} '{name}': {model.__name__} declares {sorted(model.model_fields)} "
                    f"but __init__ takes {sorted(_keyword_parameters(cls))}"
                )
            cls.name = name
            cls.component_kind = self.kind  # how a Component's errors name it: "<kind> '<name>'"
            self._classes[name] = cls
            return cls

        return decorator

    def names(self) -> list[str]:
        return sorted(self._classes)

    def get(self, name: str) -> type | None:
        return self._classes.get(name)

    def _class(self, name: str) -> type:
        cls = self._classes.get(name)
        if cls is None:
            raise ConfigError(
                f"unknown {self.kind} '{name}'; available {self.kind}s: {self.names()}"
            )
        return cls

    def validate(self, name: str, **params: Any) -> BaseModel:
        """Check ``params`` against the component's parameter model without constructing it; the
        validated model (ConfigError, one line, for an unknown name or a rejected parameter)."""
        return validate_params(
            self._class(name).params_model, params, owner=f"{self.kind} '{name}'"
        )

    def describe(self) -> list[ComponentInfo]:
        """Every registered component with its declared parameters, sorted by name."""
        out = []
        for name in self.names():
            cls = self._classes[name]
            doc = (inspect.getdoc(cls) or "").strip()
            params = tuple(
                ParamInfo(
                    name=field,
                    type=type_name(info.annotation),
                    default="required" if info.is_required() else repr(info.get_default()),
                    description=info.description or "",
                )
                for field, info in cls.params_model.model_fields.items()
            )
            out.append(
                ComponentInfo(
                    name=name,
                    kind=self.kind,
                    summary=doc.splitlines()[0] if doc else "",
                    params=params,
                )
            )
        return out

    def create(self, name: str, **params: Any) -> Any:
        """Instantiate ``name`` with keyword ``params``, validated through its ``params_model``
        first; ConfigError for an unknown name (listing the available ones), an unknown parameter
        (listing the accepted ones) or a value the model rejects. The class gets ``params`` as
        given."""
        cls = self._class(name)
        self.validate(name, **params)
        try:
            return cls(**params)
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{self.kind} '{name}': invalid parameter ({exc})") from None
