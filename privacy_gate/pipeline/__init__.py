"""The gate pipeline: typed inputs and settings in, a :class:`GateResult` out.

- :func:`run_gate` judges one synthetic release (validate, attack, MACE, audit, decide);
- :func:`evaluate` is the notebook entry point (DataFrames in, no Prefect, no MLflow);
- :func:`release_run` / :func:`gate_only_run` are whole recorded runs (MLflow + publication),
  which the Prefect flows call with an executor that maps stages to tasks.

Nothing here imports Prefect. MLflow is reached only through ``privacy_gate.tracking``, loaded
when a recorded run starts.
"""

from privacy_gate.experiment import GateInputs, GateSettings, settings_for_gate_only, settings_for_release
from privacy_gate.pipeline.evaluate import evaluate
from privacy_gate.pipeline.executor import Executor, LocalExecutor
from privacy_gate.pipeline.result import GateResult, RunOutcome
from privacy_gate.pipeline.gate_run import Sink, run_gate
from privacy_gate.pipeline.stages import StageClock

__all__ = ["Executor", "GateInputs", "GateResult", "GateSettings", "LocalExecutor", "RunOutcome", "Sink", "StageClock",
           "evaluate", "run_gate", "settings_for_gate_only", "settings_for_release"]
