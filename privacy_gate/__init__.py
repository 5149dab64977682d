"""privacy-gate: a release gate for synthetic tabular data.

``privacy_gate.evaluate(train=..., holdout=..., reference=..., synthetic=..., spec=...)`` judges a
synthetic table in-process and returns a :class:`~privacy_gate.pipeline.GateResult`; the
``privacy-gate`` command runs whole recorded releases (Prefect + MLflow).
"""

from __future__ import annotations

from typing import Any

__all__ = ["evaluate"]


def __getattr__(name: str) -> Any:
    # the pipeline loads numpy, pandas, scikit-learn and the attacks: only when asked for
    if name == "evaluate":
        from privacy_gate.pipeline.evaluate import evaluate

        return evaluate
    raise AttributeError(f"module 'privacy_gate' has no attribute {name!r}")
