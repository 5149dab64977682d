"""Blame records its "what if" (Verdict.decision_without): for every flagged group it tried on a
BLOCK or a REVIEW, the decision of the release-wide figures without the group's targets, whether or
not that turns a BLOCK into a REVIEW; on a REVIEW the significant tests that read every training
record are measured again without the group's synthetic rows. Fast: the recomputed figures are
given (the recomputation itself is tested by tests/runs/test_exposure_canaries.py and
tests/pipeline/test_group_effects.py on real data)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from privacy_gate.config import DEFAULT_RULES, GateConfig, budget_tests
from privacy_gate.gate import Verdict
from privacy_gate.gate.verdict import Check
from privacy_gate.pipeline import group_blame

from ..report.golden_reports import golden_verdict

GROUP = "race=Black"


def _state(verdict: Verdict) -> SimpleNamespace:
    races = np.array(["Black"] * 40 + ["White"] * 1160)
    labels = np.r_[np.ones(600, int), np.zeros(600, int)]
    settings = SimpleNamespace(
        active_rules=list(DEFAULT_RULES),
        gated_attacks=["dcr", "domias", "mama_mia"],
        gate=GateConfig(),
        budget_tests=budget_tests({}),
    )
    synthetic = pd.DataFrame({"race": ["Black"] * 30 + ["White"] * 970})
    inputs = SimpleNamespace(label_key=None, synthetic=synthetic)
    return SimpleNamespace(
        settings=settings,
        inputs=inputs,
        targets=SimpleNamespace(records=pd.DataFrame({"race": races}), labels=labels),
        audit=SimpleNamespace(groups={GROUP: {}}),
        metrics=dict(verdict.metrics),
        disclosure_inputs=None,
        gated=[],
    )


def _leaking_block() -> Verdict:
    v = golden_verdict(
        "independent",
        flagged={GROUP: 0.0004},
        exposed__share=0.025,
        exposed__share_lower=0.02,
        exposed__share_upper=0.03,
        exposed__tail_pvalue=1e-7,
    )
    assert v.decision == "BLOCK" and v.flagged_subgroups == (GROUP,)
    return v


@pytest.mark.parametrize(
    "rest, decision",
    [
        (
            {"exposed.share_lower": 0.0, "exposed.tail_pvalue": 0.4},
            "REVIEW",
        ),  # the group explains the BLOCK
        ({}, "BLOCK"),  # the rest still blocks: suppressing the group alone would not do
    ],
)
def test_blame_records_what_the_rest_decides_without_each_tried_group(monkeypatch, rest, decision):
    verdict = _leaking_block()
    monkeypatch.setattr(group_blame, "rest_figures", lambda state, group: dict(rest))
    # the reasons' order reads the target tests without the group: as the rest figures say
    monkeypatch.setattr(
        group_blame,
        "target_tests_without",
        lambda state, mask, tests: {t: decision == "BLOCK" for t in tests},
    )
    ruled = group_blame.blame_groups(_state(verdict), verdict, extra_failures=[])
    assert ruled.decision == decision
    expected = "BLOCK" if decision == "BLOCK" else "APPROVE"
    assert ruled.decision_without == {GROUP: {"decision": expected, "targets": 40}}
    assert (
        Verdict.from_dict(ruled.to_dict()).decision_without == ruled.decision_without
    )  # recorded in verdict.json


def _scan_review() -> Verdict:
    """A REVIEW raised by the member scan's tail test and one flagged group."""
    verdict = golden_verdict("independent", flagged={GROUP: 0.0004}, exposed__scan_tail_pvalue=1e-5)
    assert verdict.decision == "REVIEW" and "test:scan" in {c.key for c in verdict.reasons}
    return verdict


@pytest.mark.parametrize("scan_without, decision", [(0.6, "APPROVE"), (1e-5, "REVIEW")])
def test_a_review_records_what_the_rest_decides_with_the_scan_measured_without_the_groups_rows(
    monkeypatch, scan_without, decision
):
    """A REVIEW's what-if: the target tests without the group's targets, and the significant
    scan measured again on the release without the group's synthetic rows (what --suppress
    removes); what the rest decides follows the re-measured figure."""
    verdict = _scan_review()
    monkeypatch.setattr(group_blame, "rest_figures", lambda state, group: {})
    seen = []

    def without_rows(state, synthetic, tests):
        seen.append((len(synthetic), tuple(tests)))
        return {"exposed.scan_tail_pvalue": scan_without}

    monkeypatch.setattr(group_blame, "figures_without_rows", without_rows)
    ruled = group_blame.blame_groups(_state(verdict), verdict, extra_failures=[])
    assert ruled.decision == "REVIEW"  # the what-if never changes a REVIEW
    assert seen == [(970, ("scan",))]  # the release without the group's 30 synthetic rows
    assert ruled.decision_without == {
        GROUP: {"decision": decision, "targets": 40, "rows": 30, "remeasured": ["scan"]}
    }
    assert Verdict.from_dict(ruled.to_dict()).decision_without == ruled.decision_without


def test_a_review_whose_rest_cannot_be_measured_records_nothing(monkeypatch):
    def fails(state, group):
        raise ValueError("too few targets outside the group")

    monkeypatch.setattr(group_blame, "rest_figures", fails)
    verdict = _scan_review()
    ruled = group_blame.blame_groups(_state(verdict), verdict, extra_failures=[])
    assert ruled.decision == "REVIEW" and ruled.decision_without == {}


def test_a_group_leads_the_reasons_only_when_the_evidence_leaves_with_it(monkeypatch):
    """A REVIEW with a flagged group: its reason comes first when the membership and targets
    tests are not significant without its targets, and stays where it was when they still are
    (a release-wide leak that also shows in one group is not that group's)."""
    verdict = golden_verdict("independent", flagged={GROUP: 0.0004})
    significant = [
        {
            "name": n,
            "weight": 1.0,
            "review_level": 0.01,
            "block_level": 0.001,
            "pvalue": 1e-5,
            "components": 1,
            "detail": "",
        }
        for n in ("membership", "scan")
    ]
    checks = [
        Check(
            rule=f"test {n}",
            metric=f"test:{n}",
            observed=1e-5,
            threshold=0.01,
            bound="max",
            action="review",
            passed=False,
            message=f"evidence of leakage: {n}",
        )
        for n in ("membership", "scan")
    ]
    group_check = next(c for c in verdict.checks if c.group == GROUP and not c.passed)
    verdict = dataclasses.replace(
        verdict, reasons=(*checks, group_check), budget={"tests": significant}
    )
    # no what-if here: the order of the reasons is under test
    monkeypatch.setattr(group_blame, "rest_decision", lambda state, group, mask, **kw: None)
    for still, first in ((False, GROUP), (True, None)):
        monkeypatch.setattr(
            group_blame,
            "target_tests_without",
            lambda state, mask, tests, still=still: {t: still for t in tests},
        )
        ruled = group_blame.blame_groups(_state(verdict), verdict, extra_failures=[])
        assert ruled.reasons[0].group == first, [c.message for c in ruled.reasons]
        assert ruled.points_at == first  # recorded: every one-line reason starts with it
        assert len(ruled.reasons) == len(verdict.reasons)
