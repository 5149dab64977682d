"""Blame records its "what if" (Verdict.decision_without): for every flagged group it tried on a
BLOCK, the decision of the release-wide figures without the group's targets, whether or not that
turns the BLOCK into a REVIEW. Fast: the recomputed figures are given (the recomputation itself is
tested by tests/pipeline/test_exposure_canaries.py on real data)."""

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
    settings = SimpleNamespace(active_rules=list(DEFAULT_RULES), gated_attacks=["dcr", "domias", "mama_mia"],
                               gate=GateConfig(), budget_tests=budget_tests({}))
    return SimpleNamespace(settings=settings, inputs=SimpleNamespace(label_key=None),
                           targets=SimpleNamespace(records=pd.DataFrame({"race": races}), labels=labels),
                           audit=SimpleNamespace(groups={GROUP: {}}), metrics=dict(verdict.metrics),
                           disclosure_inputs=None, gated=[])


def _leaking_block() -> Verdict:
    v = golden_verdict("independent", flagged={GROUP: 0.0004}, exposed__share=0.025, exposed__share_lower=0.02,
                       exposed__share_upper=0.03, exposed__tail_pvalue=1e-7)
    assert v.decision == "BLOCK" and v.flagged_subgroups == (GROUP,)
    return v


@pytest.mark.parametrize("rest, decision", [
    ({"exposed.share_lower": 0.0, "exposed.tail_pvalue": 0.4}, "REVIEW"),  # the group explains the BLOCK
    ({}, "BLOCK"),  # the rest still blocks: suppressing the group alone would not do
])
def test_blame_records_what_the_rest_decides_without_each_tried_group(monkeypatch, rest, decision):
    verdict = _leaking_block()
    monkeypatch.setattr(group_blame, "rest_figures", lambda state, group: dict(rest))
    # the reasons' order reads the target tests without the group: as the rest figures say
    monkeypatch.setattr(group_blame, "target_tests_without",
                        lambda state, mask, tests: {t: decision == "BLOCK" for t in tests})
    ruled = group_blame.blame_groups(_state(verdict), verdict, extra_failures=[])
    assert ruled.decision == decision
    expected = "BLOCK" if decision == "BLOCK" else "APPROVE"
    assert ruled.decision_without == {GROUP: {"decision": expected, "targets": 40}}
    assert Verdict.from_dict(ruled.to_dict()).decision_without == ruled.decision_without  # recorded in verdict.json


def test_no_what_if_is_recorded_for_a_review():
    """Blame re-judges only a BLOCK: a REVIEW's groups are not worked out (the report says so)."""
    verdict = golden_verdict("independent", flagged={GROUP: 0.0004})
    assert verdict.decision == "REVIEW"
    ruled = group_blame.blame_groups(_state(verdict), verdict, extra_failures=[])
    assert ruled.decision_without == {}


def test_a_group_leads_the_reasons_only_when_the_evidence_leaves_with_it(monkeypatch):
    """A REVIEW with a flagged group: its reason comes first when the membership and targets
    tests are not significant without its targets, and stays where it was when they still are
    (a release-wide leak that also shows in one group is not that group's)."""
    verdict = golden_verdict("independent", flagged={GROUP: 0.0004})
    significant = [{"name": n, "weight": 1.0, "review_level": 0.01, "block_level": 0.001, "pvalue": 1e-5,
                    "components": 1, "detail": ""} for n in ("membership", "scan")]
    checks = [Check(rule=f"test {n}", metric=f"test:{n}", observed=1e-5, threshold=0.01, bound="max",
                    action="review", passed=False, message=f"evidence of leakage: {n}") for n in ("membership", "scan")]
    group_check = next(c for c in verdict.checks if c.group == GROUP and not c.passed)
    verdict = dataclasses.replace(verdict, reasons=(*checks, group_check), budget={"tests": significant})
    for still, first in ((False, GROUP), (True, None)):
        monkeypatch.setattr(group_blame, "target_tests_without", lambda state, mask, tests: {t: still for t in tests})
        ruled = group_blame.blame_groups(_state(verdict), verdict, extra_failures=[])
        assert ruled.reasons[0].group == first, [c.message for c in ruled.reasons]
        assert len(ruled.reasons) == len(verdict.reasons)
