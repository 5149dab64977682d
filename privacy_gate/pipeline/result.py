"""The outcome of one gate run: :class:`GateResult` (verdict plus everything it was decided from).

A result renders itself in Jupyter (``_repr_html_``: the same self-contained report the MLflow run
carries) and holds no raw records: scores and risks are keyed by row id.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from privacy_gate.estimators.exposure import ExposureResult
from privacy_gate.estimators.mace_queries import MaceResult
from privacy_gate.gate import Verdict
from privacy_gate.experiment.attack_runs import AttackOutcome, scores_frame
from privacy_gate.experiment.subgroups import AuditResult
from privacy_gate.experiment.member_scan import ScanResult
from privacy_gate.experiment.settings import GateSettings
from privacy_gate.experiment.targets import Targets
from privacy_gate.report.html import ReportInputs, render_report


@dataclass(frozen=True, eq=False)
class GateResult:
    """``verdict`` is always there (a failed run is a BLOCK with the error as its reason); the
    other parts are None when the run stopped before producing them."""

    verdict: Verdict
    settings: GateSettings
    targets: Targets | None = None
    outcomes: tuple[AttackOutcome, ...] = ()
    utility: dict[str, Any] | None = None
    mace: MaceResult | None = None
    exposure: ExposureResult | None = None
    scan: ScanResult | None = None  # the member scan (exposure.scan_members)
    audit: AuditResult | None = None
    validation: Any = None  # the synthetic suite's ValidationReport
    strongest: dict[str, str] = field(default_factory=dict)  # metric -> attack that reached the maximum
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def decision(self) -> str:
        return self.verdict.decision

    @property
    def metrics(self) -> dict[str, float]:
        return dict(self.verdict.metrics)

    def with_verdict(self, verdict: Verdict) -> GateResult:
        return replace(self, verdict=verdict)

    def scores(self) -> pd.DataFrame | None:
        """Per-record attack scores keyed by row id (no attribute values)."""
        return None if self.targets is None else scores_frame(self.targets, self.outcomes)

    def report_html(self) -> str:
        return render_report(ReportInputs(
            verdict=self.verdict.to_dict(), scores=self.scores(),
            subgroups=self.audit.group_rows if self.audit else (), utility=self.utility or {},
            timings=self.timings, run_id=self.verdict.run_id, dataset=self.settings.spec.name,
            mace=self.mace.per_record if self.mace else None))

    def _repr_html_(self) -> str:
        return self.report_html()

    def __repr__(self) -> str:
        reasons = "; ".join(c.message for c in self.verdict.reasons[:3])
        more = f" (+{len(self.verdict.reasons) - 3} more)" if len(self.verdict.reasons) > 3 else ""
        return (f"GateResult({self.verdict.decision}, status={self.verdict.status}, "
                f"attacks={[o.name for o in self.outcomes]}, reasons=[{reasons}{more}])")
