"""Generators behind a string-keyed registry: ``create_generator("gaussian_copula")``."""

from privacy_gate.generators import external, mst, private_gsd, privbayes, sdv  # noqa: F401  (modules register themselves)
from privacy_gate.generators.base import Generator, available_generators, create_generator, register_generator

__all__ = ["Generator", "available_generators", "create_generator", "register_generator"]
