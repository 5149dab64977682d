"""A small public domain for fast DP audits (``tests/dp_audit/domain.py``)."""

from __future__ import annotations

import pytest

from tests.dp_audit.domain import small_domain as _small_domain


@pytest.fixture(scope="session")
def small_domain():
    return _small_domain()
