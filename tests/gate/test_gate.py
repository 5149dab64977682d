import json
import math

import pytest

from privacy_gate.config import Rule
from privacy_gate.gate import Check, Verdict, decide

RULES = [
    Rule(metric="auc", attack="any", max=0.6, action="block"),
    Rule(metric="advantage", attack="any", max=0.2, action="review"),
    Rule(metric="utility.quality", min=0.6, action="block"),
]
ATTACKS = ["domias", "dcr"]


def _metrics(**over):
    m = {
        "domias.auc": 0.51,
        "dcr.auc": 0.5,
        "domias.advantage": 0.05,
        "dcr.advantage": 0.04,
        "utility.quality": 0.9,
    }
    m.update(over)
    return m


def test_approve_when_every_rule_passes():
    v = decide(RULES, _metrics(), attacks=ATTACKS)
    assert v.decision == "APPROVE" and v.status == "ok" and v.reasons == ()
    assert len(v.checks) == 5 and all(c.passed for c in v.checks)


def test_review_and_block_precedence():
    assert decide(RULES, _metrics(**{"dcr.advantage": 0.3}), attacks=ATTACKS).decision == "REVIEW"
    v = decide(RULES, _metrics(**{"dcr.advantage": 0.3, "domias.auc": 0.9}), attacks=ATTACKS)
    assert v.decision == "BLOCK"
    failing = {c.key: c for c in v.reasons}
    assert set(failing) == {"dcr.advantage", "domias.auc"}
    assert failing["domias.auc"].observed == 0.9 and failing["domias.auc"].threshold == 0.6
    assert failing["domias.auc"].bound == "max"


def test_min_rule_blocks_useless_release():
    v = decide(RULES, _metrics(**{"utility.quality": 0.3}), attacks=ATTACKS)
    assert v.decision == "BLOCK" and v.reasons[0].bound == "min"


@pytest.mark.parametrize("value", [None, math.nan, math.inf])
def test_missing_or_nan_metric_fails_closed(value):
    m = _metrics()
    if value is None:
        del m["dcr.auc"]
    else:
        m["dcr.auc"] = value
    v = decide(RULES, m, attacks=ATTACKS)
    assert v.decision == "BLOCK"
    assert "dcr.auc" in v.reasons[0].message


def test_any_rule_without_attacks_cannot_approve():
    assert decide(RULES, _metrics(), attacks=[]).decision == "BLOCK"


def test_extra_failures_and_flagged_subgroups():
    fail = Check(
        rule="suite",
        metric="validation.synthetic",
        observed=None,
        threshold=None,
        bound="none",
        action="block",
        passed=False,
        message="copies",
    )
    assert decide(RULES, _metrics(), attacks=ATTACKS, extra_failures=[fail]).decision == "BLOCK"
    warn = Check(
        rule="dependency",
        metric="dcr.dependency.auc",
        observed=0.8,
        threshold=0.1,
        bound="max",
        action="review",
        passed=False,
        message="gap",
    )
    assert decide(RULES, _metrics(), attacks=ATTACKS, warnings=[warn]).decision == "REVIEW"


def test_subgroup_rules_flag_exactly_the_failing_groups():
    rules = RULES + [Rule(metric="auc", attack="any", max=0.7, action="review", scope="subgroup")]
    groups = {
        "race=A": {"domias.auc": 0.5, "dcr.auc": 0.55},
        "race=B": {"domias.auc": 0.52, "dcr.auc": 0.95},
        "sex=F": {"domias.auc": 0.5, "dcr.auc": 0.5},
    }
    v = decide(rules, _metrics(), attacks=ATTACKS, groups=groups)
    assert v.decision == "REVIEW" and v.flagged_subgroups == ("race=B",)
    assert [c.key for c in v.reasons] == ["race=B: dcr.auc"]
    assert [(c.group, c.attack, c.metric) for c in v.reasons] == [("race=B", "dcr", "auc")]
    block = [Rule(metric="auc", attack="dcr", max=0.9, action="block", scope="subgroup")]
    v = decide(block, {}, attacks=ATTACKS, groups=groups)
    assert v.decision == "BLOCK" and v.flagged_subgroups == ("race=B",)
    # subgroup rules are not checked against the global metrics
    assert decide(rules[-1:], {"dcr.auc": 0.99}, attacks=ATTACKS).decision == "APPROVE"


def test_verdict_round_trips_and_refuses_unsafe_states():
    v = decide(
        RULES, _metrics(**{"dcr.auc": math.nan}), attacks=ATTACKS, data_hashes={"train": "abc"}
    )
    d = json.loads(v.to_json())
    assert d["metrics"]["dcr.auc"] is None
    assert Verdict.from_dict(d) == v
    assert set(v.summary()) == {
        "verdict",
        "status",
        "reasons",
        "metrics",
        "flagged_subgroups",
        "run_id",
    }
    with pytest.raises(ValueError, match="fail closed"):
        Verdict(decision="APPROVE", status="error", reasons=())
    with pytest.raises(ValueError):
        Verdict(decision="MAYBE", status="ok", reasons=())
    assert Verdict.error("x").exit_code == 4
