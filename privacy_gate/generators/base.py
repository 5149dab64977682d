"""The Generator protocol, declared capabilities and the string-keyed generator registry.

A generator is fitted on the *train* split only and samples the candidate release. Every
generator takes the reference split in ``fit`` (public bins for marginal generators; others
ignore it). Marginal generators (MST, PrivBayes, Private-GSD) also implement
:class:`~privacy_gate.generators.focal.MarginalGenerator`; what a generator can do is declared
on its class (``capabilities``) and queried with :func:`generator_capabilities`.

>>> generator_capabilities("mst").marginal, generator_capabilities("gaussian_copula").marginal
(True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

import pandas as pd

from privacy_gate.data import conform
from privacy_gate.errors import ConfigError
from privacy_gate.registry import ComponentInfo, Registry
from privacy_gate.spec import DatasetSpec


@runtime_checkable
class Generator(Protocol):
    name: str

    def fit(
        self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None
    ) -> Generator: ...

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame: ...

    @property
    def privacy(self) -> dict[str, float] | None:
        """``{"epsilon": ..., "delta": ...}`` for DP generators, else None."""
        ...


@dataclass(frozen=True)
class GeneratorCapabilities:
    """What a generator declares about itself (class attribute ``capabilities``).

    marginal: has a data-dependent selection step that can run alone (``select_focal_points``)
        and records ``focal_points_``: MAMA-MIA shadows it, and the gate adds the oracle variant.
    differentially_private: ``privacy`` reports an (epsilon, delta) guarantee.
    uses_reference: ``fit`` takes its discretisation from the reference split.
    refits: a fit on another training set makes another release (False for a release read from a
        file): what the generator-aware test needs to refit the recipe.
    """

    marginal: bool = False
    differentially_private: bool = False
    uses_reference: bool = False
    refits: bool = True


_GENERATORS = Registry("generator")
_G = TypeVar("_G", bound=type)


def register_generator(name: str) -> Callable[[_G], _G]:
    """Class decorator ``@register_generator("mst")``: the class declares ``params_model`` (see
    :class:`~privacy_gate.registry.Registry`) and ``capabilities`` (a
    :class:`GeneratorCapabilities`)."""
    register = _GENERATORS.register(name)

    def decorator(cls: _G) -> _G:
        if not isinstance(getattr(cls, "capabilities", None), GeneratorCapabilities):
            raise ConfigError(
                f"generator '{name}' ({cls.__qualname__}) declares no capabilities "
                "(a GeneratorCapabilities class attribute)"
            )
        return register(cls)

    return decorator


def available_generators() -> list[str]:
    return _GENERATORS.names()


def generator_capabilities(name: str) -> GeneratorCapabilities:
    """The declared capabilities of the generator registered as ``name`` (ConfigError if
    unknown)."""
    cls = _GENERATORS.get(name)
    if cls is None:
        raise ConfigError(
            f"unknown generator '{name}'; available generators: {available_generators()}"
        )
    return cls.capabilities


def describe_generators() -> list[ComponentInfo]:
    """Every registered generator with its declared parameters (``privacy-gate list
    generators``)."""
    return _GENERATORS.describe()


def create_generator(name: str, **params: Any) -> Generator:
    """``create_generator("gaussian_copula")`` -> an unfitted generator. Errors name the setting."""
    return _GENERATORS.create(name, **params)


def sample_synthetic(generator: Generator, n: int, spec: DatasetSpec) -> pd.DataFrame:
    """``generator.sample(n)`` as a release run and a study take it."""
    # generators return spec-typed frames; conform() re-checks that contract
    return conform(
        generator.sample(n),
        spec,
        source=f"synthetic data from generator '{generator.name}'",
        check_identifiers=False,
    )


def clip_to_spec(df: pd.DataFrame, spec: DatasetSpec) -> pd.DataFrame:
    """Clip numeric columns to the spec's *public* ranges (never to ranges seen in train)."""
    out = df.copy()
    for name, col in spec.columns.items():
        if (
            col.is_numeric
            and col.kind != "datetime"
            and (col.min is not None or col.max is not None)
        ):
            out[name] = pd.to_numeric(out[name], errors="coerce").clip(lower=col.min, upper=col.max)
    return out
