"""What the HTML report shows, as one record read back from an MLflow run
(:func:`privacy_gate.report.html.load_report_inputs`) or built from a gate result in memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass(frozen=True, eq=False)
class ReportInputs:
    """Everything the report shows, read back from one MLflow run (see
    :func:`privacy_gate.report.html.load_report_inputs`)."""

    verdict: dict[str, Any]
    scores: pd.DataFrame | None = (
        None  # row_id, member, <attack>_score (only distributions are shown)
    )
    subgroups: Sequence[Mapping[str, Any]] = ()  # rows of audit/subgroups.json
    utility: Mapping[str, Any] = field(default_factory=dict)
    decisions: Sequence[Mapping[str, Any]] = ()  # review/decision-*.json, oldest first
    timings: Mapping[str, float] = field(default_factory=dict)
    run_id: str | None = None
    dataset: str | None = None
    tracking_uri: str | None = None
    experiment_id: str | None = None
    mace: pd.DataFrame | None = (
        None  # optional per-record MACE risk: row_id, risk, risk_lower, risk_upper
    )
    published: str | None = (
        None  # where the release was published (the run's publication tags), if it was
    )
    dp_audit: Mapping[str, Any] | None = (
        None  # dp_audit/audit.json when the release audited its DP claim
    )
    group_rocs: Mapping[str, Any] | None = (
        None  # audit/flagged_roc.json: ROC curves inside flagged groups
    )
    disclosure: Mapping[str, Any] | None = (
        None  # risk/disclosure.json (DisclosureResult.summary: no values)
    )
    metric_files: Sequence[
        str
    ] = ()  # the run's metrics/ artifacts: every figure, as JSON and tables
    workdir: str | None = None  # the run's workdir (its tag): the decision commands name it
    shadow_evidence: Sequence[
        Mapping[str, Any]
    ] = ()  # risk/shadow_evidence.json (scores, no values)


__all__ = ["ReportInputs"]
