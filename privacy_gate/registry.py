"""String-keyed registries (opacus style): ``create_attack("domias")``, ``create_generator("mst")``.

One implementation for every kind of component, so unknown names and bad parameters get the same
clear ConfigError everywhere (naming the component, the parameter and what is accepted).

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
from collections.abc import Callable
from typing import Any, TypeVar

from privacy_gate.errors import ConfigError

_T = TypeVar("_T", bound=type)


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

    def create(self, name: str, **params: Any) -> Any:
        """Instantiate ``name`` with keyword ``params``; ConfigError for an unknown name (listing
        the available ones) and for parameters the class does not accept or rejects."""
        cls = self.classes.get(name)
        if cls is None:
            raise ConfigError(f"unknown {self.kind} '{name}'; available {self.kind}s: {self.names()}")
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
