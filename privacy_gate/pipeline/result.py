"""The outcome of one gate run: :class:`GateResult` (verdict plus everything it was decided from),
and of one whole recorded run: :class:`RunOutcome` (the verdict, where the release went, the run).

A result renders itself in Jupyter (``_repr_html_``: the same self-contained report the MLflow run
carries) and holds no raw records: scores and risks are keyed by row id.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from privacy_gate.estimators.exposure import ExposureResult
from privacy_gate.estimators.mace.queries import MaceResult
from privacy_gate.experiment.attack_runs import AttackOutcome, scores_frame
from privacy_gate.experiment.disclosure import DisclosureResult
from privacy_gate.experiment.member_scan import ScanResult
from privacy_gate.experiment.settings import GateSettings
from privacy_gate.experiment.shadow_gate import ShadowResult
from privacy_gate.experiment.subgroups import AuditResult
from privacy_gate.experiment.targets import Targets
from privacy_gate.gate import Verdict
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
    shadow: ShadowResult | None = None  # the generator-aware test (shadow), when it ran
    disclosure: DisclosureResult | None = (
        None  # singling out, linkability, inference (disclosure.enabled)
    )
    audit: AuditResult | None = None
    validation: Any = None  # the synthetic suite's ValidationReport
    strongest: dict[str, str] = field(
        default_factory=dict
    )  # metric -> attack that reached the maximum
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
        return render_report(
            ReportInputs(
                verdict=self.verdict.to_dict(),
                scores=self.scores(),
                subgroups=self.audit.group_rows if self.audit else (),
                utility=self.utility or {},
                timings=self.timings,
                run_id=self.verdict.run_id,
                dataset=self.settings.spec.name,
                mace=self.mace.per_record if self.mace else None,
                disclosure=self.disclosure.summary() if self.disclosure else None,
                shadow_evidence=self.shadow.evidence if self.shadow else (),
            )
        )

    def _repr_html_(self) -> str:
        return self.report_html()

    def __repr__(self) -> str:
        reasons = "; ".join(c.message for c in self.verdict.reasons[:3])
        more = f" (+{len(self.verdict.reasons) - 3} more)" if len(self.verdict.reasons) > 3 else ""
        return (
            f"GateResult({self.verdict.decision}, status={self.verdict.status}, "
            f"attacks={[o.name for o in self.outcomes]}, reasons=[{reasons}{more}])"
        )


@dataclass(frozen=True)
class RunOutcome:
    """What a whole recorded run (release, gate-only, review re-run, remediation ladder, retried
    or paused flow) ends with. Never mutated: later steps make a new one with
    :func:`dataclasses.replace` (``attempts`` after retries, ``published`` after a review).

    ``ladder``: the remediation ladder's ledger (a JSON record: attempts, choice, budget) and
    ``ladder_run_id`` its parent MLflow run, when the config has a ladder. ``review``,
    ``review_error`` and ``review_decision`` (the decision record, ``ReviewDecision.to_dict()``):
    what a flow paused for review adds. ``suppression``: what a re-gate after ``--suppress``
    removed, as counts (``rows_before``, ``removed``, ``by_label``: rows per label as the gate
    labels them). :meth:`to_dict` is the JSON form (keys as the result dicts had them;
    ``review_decision`` is ``decision`` there)."""

    verdict: Verdict
    run_id: str | None
    tracking_uri: str | None
    dataset: str | None
    published: str | None = None
    quarantined: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    summary_markdown: str | None = None
    retryable: bool = False
    attempts: int = 1
    ladder: dict[str, Any] | None = None
    ladder_run_id: str | None = None
    review: str | None = None
    review_error: str | None = None
    review_decision: dict[str, Any] | None = None
    experiment_id: str | None = (
        None  # the MLflow experiment of run_id (its runs page: tracking.experiment_url)
    )
    suppression: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``verdict`` as ``Verdict.to_dict()``; the summary, ladder and review
        keys only when the outcome has them."""
        d: dict[str, Any] = {
            "verdict": self.verdict.to_dict(),
            "published": self.published,
            "quarantined": self.quarantined,
            "tracking_uri": self.tracking_uri,
            "run_id": self.run_id,
            "timings": dict(self.timings),
            "dataset": self.dataset,
            "retryable": self.retryable,
            "attempts": self.attempts,
        }
        if self.summary_markdown is not None:  # a flow moves it to a Prefect artifact
            d["summary_markdown"] = self.summary_markdown
        if self.ladder is not None:
            d |= {"ladder": self.ladder, "ladder_run_id": self.ladder_run_id}
        if self.review is not None:
            d["review"] = self.review
        if self.review_error is not None:
            d["review_error"] = self.review_error
        if self.review_decision is not None:
            d["decision"] = self.review_decision
        if self.experiment_id is not None:
            d["experiment_id"] = self.experiment_id
        if self.suppression is not None:
            d["suppression"] = self.suppression
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunOutcome:
        d = dict(d)
        d["verdict"] = Verdict.from_dict(d["verdict"])
        if "decision" in d:
            d["review_decision"] = d.pop("decision")
        return cls(**d)
