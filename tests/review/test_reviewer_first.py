"""A decision without a reviewer name is refused before any work: no lock, no quarantine fetch,
no re-gate (``--reviewer "$USER"`` with ``USER`` unset once re-gated for 41 s, printed APPROVE and
only then refused)."""

from __future__ import annotations

import pytest

from privacy_gate.errors import ReviewError
from privacy_gate.review.decide import decide_run


@pytest.mark.parametrize("reviewer", ["", "   "])
def test_an_empty_reviewer_is_refused_before_any_work(tmp_path, reviewer):
    calls = []
    store = tmp_path / "store"
    with pytest.raises(ReviewError, match="nothing was re-gated, published or recorded"):
        decide_run(
            "0" * 32,
            action="approve",
            reviewer=reviewer,
            suppress=["race=Black"],
            tracking_uri=f"sqlite:///{store}/mlflow.db",
            workdir=str(tmp_path / "wd"),
            regate=lambda **kw: calls.append(kw),
        )
    assert calls == []
    assert list(tmp_path.iterdir()) == []  # no store, lock or workdir was created
