"""String-keyed registries (opacus style): ``create_attack("domias")``, ``create_generator("mst")``.

One implementation for every kind of component, so unknown names and bad parameters get the same
clear ConfigError everywhere (naming the component, the parameter and what is accepted). A
component declares its parameters once, as a pydantic model in ``params_model`` (see
:mod:`privacy_gate.params`); the registry validates through it and describes it
(``privacy-gate list attacks|generators``).

>>> reg = Registry("widget")
>>> @reg.register("w")
... class W:
...     def __init__(self, *, size: int = 1):
...         self.size = size
>>> reg.create("w", size=2).size, W.name
(2, 'w')
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from privacy_gate.errors import ConfigError

_T = TypeVar("_T", bound=type)


@dataclass(frozen=True)
class ParamInfo:
    name: str
    type: str
    default: str
    description: str


@dataclass(frozen=True)
class ComponentInfo:
    name: str
    kind: str
    summary: str
    params: tuple[ParamInfo, ...]


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return "None" if annotation is type(None) else getattr(annotation, "__name__", str(annotation))


def format_components(infos: list[ComponentInfo]) -> str:
    """Plain text for ``privacy-gate list``: each component, then one line per parameter."""
    lines = []
    for info in infos:
        lines.append(f"{info.name}  —  {info.summary}")
        for p in info.params:
            lines.append(f"    {p.name}: {p.type} = {p.default}" + (f"  — {p.description}" if p.description else ""))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


class Registry:
    def __init__(self, kind: str):
        self.kind = kind
        self.classes: dict[str, type] = {}

    def register(self, name: str) -> Callable[[_T], _T]:
        """Class decorator: register ``cls`` under ``name`` and set its ``name`` attribute."""
        if not isinstance(name, str) or not name:
            raise ConfigError(f"register: the {self.kind} name must be a non-empty string")

        def decorator(cls: _T) -> _T:
            known = self.classes.get(name)
            # re-registering the same class (a module reload) is fine; a second class is a clash
            if known is not None and (known.__module__, known.__qualname__) != (cls.__module__, cls.__qualname__):
                raise ConfigError(f"{self.kind} name '{name}' is already registered by "
                                  f"{known.__module__}.{known.__qualname__}")
            cls.name = name
            self.classes[name] = cls
            return cls

        return decorator

    def names(self) -> list[str]:
        return sorted(self.classes)

    def get(self, name: str) -> type | None:
        return self.classes.get(name)

    def _class(self, name: str) -> type:
        cls = self.classes.get(name)
        if cls is None:
            raise ConfigError(f"unknown {self.kind} '{name}'; available {self.kind}s: {self.names()}")
        return cls

    def validate(self, name: str, **params: Any) -> None:
        """Check ``params`` against the component's parameter model (ConfigError, one line)."""
        cls = self._class(name)
        model = getattr(cls, "params_model", None)
        if model is None:
            return
        try:
            model.model_validate(params)
        except ValidationError as exc:
            errors = exc.errors()
            first = errors[0]
            if first["type"] == "extra_forbidden":
                unknown = [p for p in params if p not in model.model_fields]
                raise ConfigError(f"{self.kind} '{name}': unknown parameter(s) {unknown}; accepted parameters: "
                                  f"{list(model.model_fields)}") from None
            where = str(first["loc"][0]) if first["loc"] else "parameters"
            # a union (e.g. 'scott' or a number) reports one error per alternative: say them all
            msgs = dict.fromkeys(e["msg"].removeprefix("Value error, ") for e in errors
                                 if (str(e["loc"][0]) if e["loc"] else "parameters") == where)
            msg = " or ".join(msgs)
            if "got " not in msg:
                shown = repr(first.get("input"))
                msg += f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
            what = f"parameter '{where}'" if first["loc"] else "parameters"
            raise ConfigError(f"{self.kind} '{name}': {what}: {msg}") from None

    def describe(self) -> list[ComponentInfo]:
        """Every registered component with its declared parameters, sorted by name."""
        out = []
        for name in self.names():
            cls = self.classes[name]
            summary = (inspect.getdoc(cls) or "").strip().splitlines()[0] if inspect.getdoc(cls) else ""
            model = getattr(cls, "params_model", None)
            params = () if model is None else tuple(
                ParamInfo(name=field, type=_type_name(info.annotation), default=repr(info.get_default()),
                          description=info.description or "")
                for field, info in model.model_fields.items())
            out.append(ComponentInfo(name=name, kind=self.kind, summary=summary, params=params))
        return out

    def create(self, name: str, **params: Any) -> Any:
        """Instantiate ``name`` with keyword ``params``; ConfigError for an unknown name (listing
        the available ones) and for parameters the class does not accept or rejects."""
        cls = self._class(name)
        self.validate(name, **params)
        signature = inspect.signature(cls)
        accepted = [p for p in signature.parameters if p != "self"]
        unknown = [p for p in params if p not in signature.parameters]
        if unknown:
            raise ConfigError(f"{self.kind} '{name}': unknown parameter(s) {unknown}; accepted parameters: {accepted}")
        try:
            signature.bind(**params)
        except TypeError as exc:  # e.g. a required parameter is missing
            raise ConfigError(f"{self.kind} '{name}': {exc}") from None
        try:
            return cls(**params)
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{self.kind} '{name}': invalid parameter ({exc})") from None
