"""The release-wide tests that read every training record against a synthetic release: the member
scan, the verbatim-copy test and the agreement scan, each called as the gate run calls it.

One place for their arguments, because two callers need them: the gate run's stages
(:mod:`privacy_gate.pipeline.gate_run`) on the release, and blame's "what if" on the release
without one flagged group's synthetic rows (:mod:`privacy_gate.pipeline.group_blame`), which
is what ``approve --suppress GROUP`` re-gates these tests on.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from privacy_gate.experiment.agreement import AgreementResult, agreement_scan
from privacy_gate.experiment.copies import CopyTest, copy_test
from privacy_gate.experiment.member_scan import ScanResult, scan_members
from privacy_gate.names import AGREEMENT, COPIES, exposure_metric, metric_name

#: the budget tests these figures feed (``gate.budget``), by the stage that measures them
SYNTHETIC_SIDE = {"scan": "scan", "copies": "copies", "agreement": "agreement"}


def scan_of(state: Any, synthetic: pd.DataFrame) -> ScanResult:
    """The member scan of ``synthetic`` with the run's splits and settings."""
    cfg = state.settings.exposure
    return scan_members(
        state.inputs.splits,
        synthetic,
        state.settings.spec,
        q=cfg.fdr,
        method=cfg.method,
        seed=state.settings.targets.seed,
        calibration_reference=bool(cfg.reference_calibrates),
        tail_max_share=cfg.tail_max_share,
    )


def copies_of(state: Any, synthetic: pd.DataFrame) -> CopyTest:
    """The verbatim-copy test of ``synthetic`` against the run's training and holdout splits."""
    splits = state.inputs.splits
    return copy_test(
        synthetic,
        splits.train,
        splits.holdout,
        state.settings.spec,
        seed=state.settings.targets.seed,
    )


def agreement_of(state: Any, synthetic: pd.DataFrame) -> AgreementResult:
    """The agreement scan of ``synthetic`` with the run's splits and settings."""
    splits, cfg = state.inputs.splits, state.settings.exposure
    return agreement_scan(
        synthetic,
        splits.train,
        splits.holdout,
        splits.reference,
        state.settings.spec,
        q=cfg.fdr,
        tail_max_share=cfg.tail_max_share,
        seed=state.settings.targets.seed,
        linking=cfg.linking_views,
    )


def scan_figures(result: ScanResult) -> dict[str, float]:
    return {exposure_metric(k): v for k, v in result.metrics().items()}


def copies_figures(result: CopyTest) -> dict[str, float]:
    return {metric_name(COPIES, k): v for k, v in result.metrics().items()}


def agreement_figures(result: AgreementResult) -> dict[str, float]:
    return {metric_name(AGREEMENT, k): v for k, v in result.metrics().items()}


def figures_without_rows(state: Any, synthetic: pd.DataFrame, tests: list[str]) -> dict[str, float]:
    """The figures of each of ``tests`` (among :data:`SYNTHETIC_SIDE`) measured on ``synthetic``
    (the release without some rows), as the gate run measures them."""
    out: dict[str, float] = {}
    if "scan" in tests:
        out.update(scan_figures(scan_of(state, synthetic)))
    if "copies" in tests:
        out.update(copies_figures(copies_of(state, synthetic)))
    if "agreement" in tests:
        out.update(agreement_figures(agreement_of(state, synthetic)))
    return out


__all__ = [
    "SYNTHETIC_SIDE",
    "agreement_figures",
    "agreement_of",
    "copies_figures",
    "copies_of",
    "figures_without_rows",
    "scan_figures",
    "scan_of",
]
