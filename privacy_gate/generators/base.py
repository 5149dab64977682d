"""The Generator protocol and the string-keyed generator registry.

A generator is fitted on the *train* split only and samples the candidate release. Marginal
generators (later: MST, PrivBayes, Private-GSD) add ``select_focal_points``; the protocol here is
the part every generator shares.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from privacy_gate.config import DatasetSpec
from privacy_gate.errors import ConfigError


@runtime_checkable
class Generator(Protocol):
    name: str

    def fit(self, train: pd.DataFrame, spec: DatasetSpec) -> Generator: ...

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame: ...

    @property
    def privacy(self) -> dict[str, float] | None:
        """``{"epsilon": ..., "delta": ...}`` for DP generators, else None."""
        ...


_REGISTRY: dict[str, type] = {}


def register_generator(name: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        if name in _REGISTRY:
            raise ValueError(f"generator '{name}' is registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def available_generators() -> list[str]:
    return sorted(_REGISTRY)


def create_generator(name: str, **params: Any) -> Generator:
    """``create_generator("gaussian_copula")`` -> an unfitted generator. Errors name the setting."""
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"generator.name: unknown generator '{name}'; available: {', '.join(available_generators())}") from None
    accepted = inspect.signature(cls.__init__).parameters
    unknown = [k for k in params if k not in accepted]
    if unknown:
        allowed = [p for p in accepted if p != "self"]
        raise ConfigError(f"generator '{name}': unknown parameter(s) {unknown}; allowed: {allowed}")
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"generator '{name}': {exc}") from None


def clip_to_spec(df: pd.DataFrame, spec: DatasetSpec) -> pd.DataFrame:
    """Clip numeric columns to the spec's *public* ranges (never to ranges seen in train)."""
    out = df.copy()
    for name, col in spec.columns.items():
        if col.is_numeric and col.kind != "datetime" and (col.min is not None or col.max is not None):
            out[name] = pd.to_numeric(out[name], errors="coerce").clip(lower=col.min, upper=col.max)
    return out
