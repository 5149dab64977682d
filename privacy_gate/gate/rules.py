"""Gate rules -> checks -> ``Verdict`` (DESIGN.md §7). Fails closed on missing or NaN metrics.

Metric keys: ``<attack>.<metric>`` for attack metrics (``domias.auc``), plain keys otherwise
(``utility.quality``). A rule with ``attack: any`` is checked against every attack that ran.

>>> from privacy_gate.config import Rule
>>> v = decide([Rule(metric="auc", attack="any", max=0.6)], {"dcr.auc": 0.5, "domias.auc": 0.7},
...            attacks=["dcr", "domias"])
>>> v.decision, v.reasons[0].metric
('BLOCK', 'domias.auc')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from privacy_gate.config import Rule
from privacy_gate.gate.verdict import Check, Verdict


def _metric_keys(rule: Rule, attacks: Sequence[str]) -> list[str]:
    if rule.attack is None:
        return [rule.metric]
    if rule.attack == "any":
        return [f"{a}.{rule.metric}" for a in attacks]
    return [f"{rule.attack}.{rule.metric}"]


def check_rule(rule: Rule, metrics: Mapping[str, float], *, attacks: Sequence[str], group: str | None = None
               ) -> list[Check]:
    """Evaluate one rule; one check per metric it reads. Missing/NaN values fail the check.

    ``group`` names the subgroup whose metrics are passed (for subgroup-scope rules); the checks'
    metric names are then ``<group>: <attack>.<metric>``.
    """
    keys = _metric_keys(rule, attacks)
    if not keys:  # 'any' with no attack run: nothing was measured, so nothing can be approved
        keys = [f"<no attack>.{rule.metric}"]
    bound = "max" if rule.max is not None else "min"
    checks = []
    for key in keys:
        name = f"{group}: {key}" if group else key
        value = metrics.get(key)
        if value is None or not math.isfinite(float(value)):
            what = "missing" if value is None else "not a finite number"
            checks.append(Check(rule=rule.describe(), metric=name, observed=None, threshold=rule.threshold,
                                bound=bound, action="block", passed=False,
                                message=f"{name} is {what}; the gate cannot approve without it"))
            continue
        value = float(value)
        passed = value <= rule.threshold if bound == "max" else value >= rule.threshold
        op = "<=" if bound == "max" else ">="
        msg = f"{name} = {value:.4g} {'within' if passed else 'violates'} {bound} {rule.threshold:g} ({op})"
        checks.append(Check(rule=rule.describe(), metric=name, observed=value, threshold=rule.threshold,
                            bound=bound, action=rule.action, passed=passed, message=msg))
    return checks


def decide(
    rules: Iterable[Rule],
    metrics: Mapping[str, float],
    *,
    attacks: Sequence[str],
    groups: Mapping[str, Mapping[str, float]] | None = None,
    extra_failures: Iterable[Check] = (),
    warnings: Iterable[Check] = (),
    data_hashes: Mapping[str, str] | None = None,
    rules_hash: str | None = None,
) -> Verdict:
    """BLOCK if any block check fails, else REVIEW if any review check fails (or a warning needs a
    human), else APPROVE.

    ``groups`` maps subgroup labels to their metrics; subgroup-scope rules are checked in each, and
    a group failing any of them is flagged. ``extra_failures`` are failures found outside the
    rules (e.g. the synthetic GE suite); ``warnings`` are review-level findings (e.g. a large
    dependency gap).
    """
    rules = list(rules)
    checks = [c for r in rules if r.scope == "global" for c in check_rule(r, metrics, attacks=attacks)]
    flagged: list[str] = []
    for label, group_metrics in (groups or {}).items():
        group_checks = [c for r in rules if r.scope == "subgroup"
                        for c in check_rule(r, group_metrics, attacks=attacks, group=label)]
        checks += group_checks
        if any(not c.passed for c in group_checks):
            flagged.append(label)
    checks += list(extra_failures) + list(warnings)
    failed = tuple(c for c in checks if not c.passed)
    if any(c.action == "block" for c in failed):
        decision = "BLOCK"
    elif failed:
        decision = "REVIEW"
    else:
        decision = "APPROVE"
    return Verdict(decision=decision, status="ok", reasons=failed, checks=tuple(checks),
                   metrics={k: float(v) for k, v in metrics.items()}, flagged_subgroups=tuple(flagged),
                   data_hashes=dict(data_hashes or {}), rules_hash=rules_hash)
