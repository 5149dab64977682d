"""Prefect wiring, and nothing else: the ``release``, ``gate`` and ``review-regate`` flows call the
library pipeline with a :class:`PrefectExecutor`; the release flow can wait for a typed review
(suspended in a deployment's run: ``review_wait``).

This is the only package that imports Prefect. The pipeline's logic lives in
:mod:`privacy_gate.pipeline`.
"""

from privacy_gate.flows.gate_flows import (
    audit_dp_flow,
    dependency_study_flow,
    gate_flow,
    regate_flow,
    release_flow,
)
from privacy_gate.flows.prefect_executor import PrefectExecutor, task_runner_for
from privacy_gate.flows.review_form import ReviewInput

__all__ = [
    "PrefectExecutor",
    "ReviewInput",
    "audit_dp_flow",
    "dependency_study_flow",
    "gate_flow",
    "regate_flow",
    "release_flow",
    "task_runner_for",
]
