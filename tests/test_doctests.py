"""Every doctest in the package runs: each module of ``privacy_gate`` is found by walking the
package (no hand-kept list), and its examples are run with ``doctest``; so are the examples of the
benchmark modules that hold any (found by reading them). A module whose examples fail, or that
cannot be imported, fails here by name."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import privacy_gate


def package_modules() -> list[str]:
    """Every module of the package, in name order (``__main__`` modules left out: importing them
    runs them)."""
    names = [m.name for m in pkgutil.walk_packages(privacy_gate.__path__, prefix="privacy_gate.")]
    return sorted(n for n in ["privacy_gate", *names] if not n.endswith("__main__"))


def benchmark_modules() -> list[str]:
    """The modules of ``benchmarks/`` whose source holds a doctest example."""
    root = Path(__file__).resolve().parents[1] / "benchmarks"
    return sorted(
        f"benchmarks.{path.stem}" for path in root.glob("*.py") if ">>> " in path.read_text()
    )


def test_the_walk_finds_the_package_modules():
    modules = package_modules()
    assert "privacy_gate.estimators.tail_test" in modules and "privacy_gate.gate.budget" in modules
    assert len(modules) > 100


def test_the_benchmarks_with_examples_are_found():
    assert "benchmarks.leak_grammar" in benchmark_modules()


@pytest.mark.parametrize("name", package_modules() + benchmark_modules())
def test_module_doctests(name: str):
    module = importlib.import_module(name)
    result = doctest.testmod(
        module,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        verbose=False,
        report=False,
    )
    assert result.failed == 0, (
        f"{result.failed} of {result.attempted} doctest examples of {name} failed (run python -m "
        "doctest -v on it)"
    )
