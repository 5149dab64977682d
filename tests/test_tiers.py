"""The slow tier (tests/conftest.py: SLOW_TIER) names tests that exist, each with its reason, and
the `slow` mark comes from there only."""

from pathlib import Path

import pytest

from .conftest import SLOW_TIER, pytest_collection_modifyitems, slow_tier_reason

TESTS = Path(__file__).resolve().parent


def _module_file(module: str) -> Path:
    found = list(TESTS.rglob(f"{module}.py"))
    assert len(found) == 1, (
        f"SLOW_TIER names module {module!r}: {len(found)} files of that name under tests/"
    )
    return found[0]


@pytest.mark.parametrize("key", sorted(SLOW_TIER))
def test_each_slow_entry_names_a_test_that_exists_and_says_why(key):
    module, _, function = key.partition("::")
    source = _module_file(module).read_text()
    if function:
        assert f"def {function}(" in source, (
            f"SLOW_TIER names {key!r}, which {module}.py does not define"
        )
    assert len(SLOW_TIER[key]) > 20, key


def test_the_reason_is_found_by_module_or_by_test_with_its_parameters():
    assert slow_tier_reason("tests/flows/test_production_stack.py::test_anything") is not None
    assert (
        slow_tier_reason("tests/pipeline/test_canaries.py::test_copy_canary_is_blocked[2]")
        is not None
    )
    assert slow_tier_reason("tests/pipeline/test_canaries.py::test_something_else") is None
    assert slow_tier_reason("tests/estimators/test_mace.py::test_copy_canary_is_blocked") is None


class _Item:
    """What the collection hook reads of a test item: its node id and marks."""

    def __init__(self, nodeid: str, marks=()):
        self.nodeid, self.marks = nodeid, list(marks)

    def get_closest_marker(self, name):
        return next((m for m in self.marks if m.name == name), None)

    def add_marker(self, mark):
        self.marks.append(mark.mark)


def test_the_tier_marks_its_tests_and_refuses_a_slow_mark_outside_it():
    inside, outside = (
        _Item("tests/flows/test_production_stack.py::test_x"),
        _Item("tests/estimators/test_mace.py::t"),
    )
    pytest_collection_modifyitems(None, [inside, outside])
    assert (
        inside.get_closest_marker("slow") is not None and outside.get_closest_marker("slow") is None
    )
    with pytest.raises(
        pytest.UsageError,
        match="is marked slow but its module is not in tests/conftest.py SLOW_TIER",
    ):
        pytest_collection_modifyitems(
            None, [_Item("tests/estimators/test_mace.py::t", [pytest.mark.slow.mark])]
        )
