"""Generators behind a string-keyed registry: ``create_generator("gaussian_copula")``."""

from privacy_gate.generators import external, mst, private_gsd, privbayes, privgan, sdv  # noqa: F401  (modules register themselves)
from privacy_gate.generators.base import (
    Generator,
    GeneratorCapabilities,
    available_generators,
    create_generator,
    describe_generators,
    generator_capabilities,
    register_generator,
    sample_synthetic,
)
from privacy_gate.generators.focal import MarginalGenerator

__all__ = [
    "Generator",
    "GeneratorCapabilities",
    "MarginalGenerator",
    "available_generators",
    "create_generator",
    "describe_generators",
    "generator_capabilities",
    "register_generator",
    "sample_synthetic",
]
