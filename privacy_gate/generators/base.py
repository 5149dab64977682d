"""The Generator protocol and the string-keyed generator registry.

A generator is fitted on the *train* split only and samples the candidate release. Marginal
generators (later: MST, PrivBayes, Private-GSD) add ``select_focal_points``; the protocol here is
the part every generator shares.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import pandas as pd

from privacy_gate.config import DatasetSpec
from privacy_gate.registry import Registry


@runtime_checkable
class Generator(Protocol):
    name: str

    def fit(self, train: pd.DataFrame, spec: DatasetSpec) -> Generator: ...

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame: ...

    @property
    def privacy(self) -> dict[str, float] | None:
        """``{"epsilon": ..., "delta": ...}`` for DP generators, else None."""
        ...


_GENERATORS = Registry("generator")
register_generator = _GENERATORS.register  # class decorator: @register_generator("mst")
_REGISTRY = _GENERATORS.classes


def available_generators() -> list[str]:
    return _GENERATORS.names()


def create_generator(name: str, **params: Any) -> Generator:
    """``create_generator("gaussian_copula")`` -> an unfitted generator. Errors name the setting."""
    return _GENERATORS.create(name, **params)


def clip_to_spec(df: pd.DataFrame, spec: DatasetSpec) -> pd.DataFrame:
    """Clip numeric columns to the spec's *public* ranges (never to ranges seen in train)."""
    out = df.copy()
    for name, col in spec.columns.items():
        if col.is_numeric and col.kind != "datetime" and (col.min is not None or col.max is not None):
            out[name] = pd.to_numeric(out[name], errors="coerce").clip(lower=col.min, upper=col.max)
    return out
