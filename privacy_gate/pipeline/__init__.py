"""The gate run: typed inputs and settings in, a :class:`GateResult` out.

- :func:`run_gate` judges one synthetic release (validate, attack, MACE, audit, decide), as
  declared stages (:mod:`.stages`) run through an executor (:mod:`.executor`);
- :func:`evaluate` is the notebook entry point (DataFrames in, no Prefect, no MLflow).

Whole recorded runs (MLflow + publication: ``release_run``, ``gate_only_run``, re-gates) are
:mod:`privacy_gate.runs`, which the Prefect flows call with an executor that maps stages to tasks.

Nothing here imports Prefect or MLflow. The names below are loaded when first used: a review
command, which imports ``review.decide``, does not load the gate (the attacks, scikit-learn, SciPy).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privacy_gate.experiment import (
        GateInputs,
        GateSettings,
        settings_for_gate_only,
        settings_for_release,
    )
    from privacy_gate.pipeline.evaluate import evaluate
    from privacy_gate.pipeline.executor import Executor, LocalExecutor
    from privacy_gate.pipeline.gate_run import Sink, run_gate
    from privacy_gate.pipeline.result import GateResult, RunOutcome
    from privacy_gate.pipeline.stages import StageClock

__all__ = [
    "Executor",
    "GateInputs",
    "GateResult",
    "GateSettings",
    "LocalExecutor",
    "RunOutcome",
    "Sink",
    "StageClock",
    "evaluate",
    "run_gate",
    "settings_for_gate_only",
    "settings_for_release",
]

_LAZY = {
    "GateInputs": "privacy_gate.experiment",
    "GateSettings": "privacy_gate.experiment",
    "settings_for_gate_only": "privacy_gate.experiment",
    "settings_for_release": "privacy_gate.experiment",
    "evaluate": "privacy_gate.pipeline.evaluate",
    "Executor": "privacy_gate.pipeline.executor",
    "LocalExecutor": "privacy_gate.pipeline.executor",
    "GateResult": "privacy_gate.pipeline.result",
    "RunOutcome": "privacy_gate.pipeline.result",
    "Sink": "privacy_gate.pipeline.gate_run",
    "run_gate": "privacy_gate.pipeline.gate_run",
    "StageClock": "privacy_gate.pipeline.stages",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
