"""The DP audit in the gate: strict config, a violation BLOCKs with a reason naming a broken DP
implementation, a clean audit adds a passed check only, the report shows the figure."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from privacy_gate.config import DPAuditConfig
from privacy_gate.estimators.dp_audit import AuditBound
from privacy_gate.gate.verdict import Verdict
from privacy_gate.report.html import ReportInputs, render_report
from privacy_gate.studies.dp_audit import DPAuditResult, ScoreAudit
from privacy_gate.studies.dp_audit_gate import apply_audit


def _result(eps_lower: float) -> DPAuditResult:
    bound = AuditBound(
        threshold=1.0,
        false_positives=1,
        negatives=100,
        false_negatives=40,
        positives=100,
        alpha=0.05,
        delta=1e-5,
        epsilon_lower=eps_lower,
        mu_lower=0.5,
        mu_estimate=1.2,
        mu_upper=2.0,
    )
    audit = ScoreAudit(
        "worst_case",
        "worst-case record from the public domain",
        "whitebox",
        bound,
        (1.1, 0.9, 1.3),
        ((0.0, 1.0), (0.01, 0.4), (1.0, 0.0)),
    )
    return DPAuditResult(
        generator="mst",
        version="abc",
        epsilon=1.0,
        delta=1e-5,
        claimed_mu=0.25,
        mu_basis="zCDP",
        runs=200,
        seconds=1.0,
        max_certifiable_epsilon=3.3,
        audits=(audit,),
    )


def test_config_is_strict_and_names_the_key():
    assert DPAuditConfig().runs == 200
    with pytest.raises(ValidationError, match="runs"):
        DPAuditConfig(runs=2)
    with pytest.raises(ValidationError, match="max_ratio"):
        DPAuditConfig(max_ratio=0.5)
    with pytest.raises(ValidationError, match="extra"):
        DPAuditConfig.model_validate({"runs": 10, "rounds": 3})
    with pytest.raises(ValidationError, match="targets"):
        DPAuditConfig(targets=())


def test_violation_blocks_and_says_broken():
    ok = Verdict(decision="APPROVE", status="ok", reasons=())
    v = apply_audit(ok, _result(1.6), max_ratio=1.0, cached=False)
    assert v.decision == "BLOCK" and "implementation is broken" in v.reasons[-1].message
    assert v.metrics["dp_audit.epsilon_lower"] == 1.6
    assert apply_audit(ok, _result(1.6), max_ratio=2.0, cached=True).decision == "APPROVE"
    clean = apply_audit(ok, _result(0.3), max_ratio=1.0, cached=False)
    assert clean.decision == "APPROVE" and clean.checks[-1].passed and clean.reasons == ()
    assert DPAuditResult.from_dict(_result(0.3).to_dict()) == _result(0.3)


def test_report_shows_the_audit_without_records():
    r = _result(1.6)
    page = render_report(
        ReportInputs(verdict={"verdict": "BLOCK", "metrics": {}}, dp_audit=r.to_dict())
    )
    assert 'id="dp_audit"' in page and "never certifies DP" in page and "data:image/png" in page
    assert 'id="dp_audit"' not in render_report(
        ReportInputs(verdict={"verdict": "APPROVE", "metrics": {}})
    )
