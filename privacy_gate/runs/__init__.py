"""Whole recorded runs: a release (:mod:`.release`: ``release_run``, ``gate_only_run``) or a re-gate
of a recorded run with rows suppressed (:mod:`.regate`, which rows: :mod:`.suppression`), recorded
in MLflow (:mod:`.mlflow_sink`), read back (:mod:`.run_record`), on a remediation ladder
(:mod:`.remediation`), retried on infrastructure failures (:mod:`.retrying`), with the checks made
before anything runs (:mod:`.preflight`).

Each run goes through the gate run of :mod:`privacy_gate.pipeline`; a release may include the DP
audit of :mod:`privacy_gate.studies`. Nothing here imports Prefect; MLflow only through
:mod:`privacy_gate.tracking`.
"""
