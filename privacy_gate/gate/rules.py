"""Gate rules -> checks -> ``Verdict``. Fails closed on missing or NaN metrics.

Metric keys: ``<attack>.<metric>`` for attack metrics (``domias.auc``), plain keys otherwise
(``utility.quality``). A rule with ``attack: any`` is checked against every attack that ran.

>>> from privacy_gate.config import Rule
>>> v = decide([Rule(metric="auc", attack="any", max=0.6)], {"dcr.auc": 0.5, "domias.auc": 0.7},
...            attacks=["dcr", "domias"])
>>> v.decision, v.reasons[0].attack, v.reasons[0].key
('BLOCK', 'domias', 'domias.auc')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from privacy_gate.config import Rule
from privacy_gate.estimators.power import null_reference
from privacy_gate.gate.human import human_number
from privacy_gate.gate.verdict import Check, Verdict
from privacy_gate.names import COMBINED, check_key, metric_name


def _rule_targets(rule: Rule, attacks: Sequence[str]) -> list[str | None]:
    """The attacks a rule reads (None: a plain metric such as ``utility.quality``); empty when the
    rule does not apply (the combined query exists only with two or more gated attacks)."""
    if rule.attack is None:
        return [None]
    if rule.attack == COMBINED and len(attacks) < 2:
        return []
    if rule.attack == "any":
        # 'any' with no attack run: nothing was measured, so nothing can be approved
        return list(attacks) or ["<no attack>"]
    return [rule.attack]


def _figures_of(attack: str | None, metrics: Mapping[str, float]) -> Mapping[str, float]:
    """One attack's figures (``n_members``, ``mace.bias``, ...) out of the flat metrics; for a
    plain metric (no attack) the flat metrics themselves (``exposed.tested``, ...)."""
    if attack is None:
        return metrics
    prefix = f"{attack}."
    return {k[len(prefix):]: v for k, v in metrics.items() if k.startswith(prefix)}


def check_rule(rule: Rule, metrics: Mapping[str, float], *, attacks: Sequence[str], group: str | None = None
               ) -> list[Check]:
    """Evaluate one rule; one check per metric it reads. Missing/NaN values fail the check.

    ``group`` names the subgroup whose metrics are passed (for subgroup-scope rules); the checks
    carry it, and their ``key`` reads ``<group>: <attack>.<metric>``. In a subgroup, a metric the
    group does not have (point estimates of a group too small for them) is not applicable: such
    a group is judged by its rank test, which every group has.
    """
    bound = "max" if rule.max is not None else "min"
    targets = _rule_targets(rule, attacks)
    if not targets:
        return [Check(rule=rule.describe(), attack=COMBINED, metric=rule.metric, group=group, observed=None,
                      threshold=rule.threshold, bound=bound, action=rule.action, passed=True,
                      message=f"{rule.describe()}: not applicable — the combined query needs at least 2 gated "
                              f"attacks ({len(attacks)} ran)")]
    checks = []
    for attack in targets:
        where = dict(attack=attack, metric=rule.metric, group=group)
        name = check_key(**where)
        value = metrics.get(metric_name(attack, rule.metric))
        if value is None and group is not None:
            continue
        if value is None or not math.isfinite(float(value)):
            what = "missing" if value is None else "not a finite number"
            checks.append(Check(rule=rule.describe(), observed=None, threshold=rule.threshold, bound=bound,
                                action="block", passed=False,
                                message=f"{name} is {what}; the gate cannot approve without it", **where))
            continue
        value = float(value)
        passed = value <= rule.threshold if bound == "max" else value >= rule.threshold
        op = "<=" if bound == "max" else ">="
        msg = (f"{name} = {human_number(value)} {'within' if passed else 'violates'} {bound} "
               f"{human_number(rule.threshold, 6)} ({op})")
        reference = null_reference(rule.metric, _figures_of(attack, metrics))
        action = rule.action
        if not passed and reference is not None and (reference > rule.threshold if bound == "max"
                                                     else reference < rule.threshold):
            msg += (f"; a release with no leakage would score about {human_number(reference, 3)} here — too few targets to "
                    "tell, add targets")
            if action == "block" and (value <= reference if bound == "max" else value >= reference):
                # no evidence of leakage beyond chance at this N: a human decides, the gate does not block
                action = "review"
        checks.append(Check(rule=rule.describe(), observed=value, threshold=rule.threshold, bound=bound,
                            action=action, passed=passed, message=msg, null_reference=reference, **where))
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
