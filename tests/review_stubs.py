"""The autouse fixture shared by the review tests on hand-made runs: no signing key, and the HTML
report (not under test) not re-rendered after a decision. Imported into a test module, it applies
to every test of that module."""

from __future__ import annotations

import pytest

from privacy_gate import tracking
from privacy_gate.review import decide as review


@pytest.fixture(autouse=True)
def no_key_no_report(monkeypatch):
    monkeypatch.delenv(tracking.SIGNING_KEY_ENV, raising=False)
    monkeypatch.setattr(
        review, "_refresh_report", lambda tracker, run_id: None
    )  # the HTML report is not under test
