"""Findings outside the rules, turned into checks: estimators and audits report numbers, the gate
decides what they mean (a failed synthetic-data suite blocks; an advantage above the DP bound or
a large dependency gap needs a human)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from privacy_gate.gate.verdict import Check
from privacy_gate.names import VALIDATION_SYNTHETIC

if (
    TYPE_CHECKING
):  # annotations only: reading a verdict's words (review, reports) loads no estimator
    from privacy_gate.experiment.dependency import SourceShift
    from privacy_gate.experiment.subgroups import DependencyMeasurement

# the metrics (and the DP-bound check's rule) of the findings' checks: what words/checks.py reads
#: an advantage lower bound above the DP bound (its metric is the MACE figure it reads)
DP_BOUND_RULE = "advantage lower bound <= DP bound"
DEPENDENCY_GAP = "dependency.auc"
DEPENDENCY_DP_EXCESS = "dependency.dp_bound_excess"
ATTACK_SCORES = "scores"
DP_AUDIT_EPSILON = "dp_audit.epsilon_lower"


def validation_failures(suite: str, messages: Iterable[str]) -> list[Check]:
    """A failed expectation of the synthetic-data suite blocks the release."""
    return [
        Check(
            rule=f"suite {suite}",
            metric=VALIDATION_SYNTHETIC,
            observed=None,
            threshold=None,
            bound="none",
            action="block",
            passed=False,
            message=msg,
        )
        for msg in messages
    ]


def dp_bound_exceeded(
    query: str,
    *,
    lower: float,
    bound: float,
    epsilon: float,
    message: str,
    dependence: str | None = None,
) -> Check:
    """An advantage lower bound above the DP bound: a broken DP implementation or dependent records
    (Humphries et al.) — never silenced, always reviewed. ``dependence`` says that the bound assumes
    independent records and whether this release's training data looks dependent
    (:func:`dependence_clause`)."""
    return Check(
        rule=f"{DP_BOUND_RULE} tanh-form at epsilon {epsilon:g}",
        attack=query,
        metric="mace.advantage_lower",
        observed=float(lower),
        threshold=float(bound),
        bound="max",
        action="review",
        passed=False,
        message=f"{query}: {message}" + (f"; {dependence}" if dependence else ""),
    )


def dependency_gap(
    attack: str, *, dependency_auc: float, iid_auc: float, max_gap: float, source: str, value: str
) -> Check | None:
    """Members from one source vs the IID protocol: a larger AUC gap than ``max_gap`` is
    reviewed."""
    gap = dependency_auc - iid_auc
    if gap <= max_gap:
        return None
    return Check(
        rule=f"dependency AUC gap <= {max_gap:g}",
        attack=attack,
        metric=DEPENDENCY_GAP,
        observed=float(gap),
        threshold=max_gap,
        bound="max",
        action="review",
        passed=False,
        message=(
            f"{attack}: AUC {dependency_auc:.3f} when members come from {source}={value!r} vs "
            f"{iid_auc:.3f} IID (gap {gap:.3f}); dependent records make this release "
            "leakier than the IID figures and any DP bound suggest"
        ),
    )


def dependency_dp_bound_exceeded(
    attack: str, *, lower: float, bound: float, epsilon: float, source: str, value: str
) -> Check:
    """The advantage lower bound with members from one source above the IID DP bound: the DP
    guarantee assumes independent records, and these are not — a human decides."""
    return Check(
        rule=f"dependency advantage lower bound <= IID DP bound at epsilon {epsilon:g}",
        attack=attack,
        metric=DEPENDENCY_DP_EXCESS,
        observed=float(lower - bound),
        threshold=0.0,
        bound="max",
        action="review",
        passed=False,
        message=(
            f"{attack}: with members from {source}={value!r} the advantage is at least {lower:.3f} "
            f"(MACE lower bound), above the IID DP bound {bound:.3f} at epsilon {epsilon:g}; the "
            "DP "
            "guarantee assumes independent records, so it does not cover dependent ones"
        ),
    )


def dependency_findings(
    measured: DependencyMeasurement | None, *, max_gap: float, dp_review: bool
) -> list[Check]:
    """What the dependency stress test means for the release: an AUC gap above ``max_gap`` and (with
    ``dp_review``) an advantage above the IID DP bound are each reviewed."""
    if measured is None:
        return []
    out = [
        c
        for c in (
            dependency_gap(
                g.attack,
                dependency_auc=g.dependency_auc,
                iid_auc=g.iid_auc,
                max_gap=max_gap,
                source=measured.source,
                value=measured.value,
            )
            for g in measured.gaps
        )
        if c is not None
    ]
    e = measured.excess
    if e is not None and e.lower > e.bound and dp_review:
        out.append(
            dependency_dp_bound_exceeded(
                e.attack,
                lower=e.lower,
                bound=e.bound,
                epsilon=e.epsilon,
                source=measured.source,
                value=measured.value,
            )
        )
    return out


def attack_invalid(attack: str, reason: str) -> Check:
    """An attack whose scores cannot rank the targets blocks: its figures would read as "safe"."""
    return Check(
        rule="attack scores can rank the targets",
        attack=attack,
        metric=ATTACK_SCORES,
        observed=None,
        threshold=None,
        bound="none",
        action="block",
        passed=False,
        message=f"{attack}: the attack {reason}; the gate cannot approve a release it could not "
        "attack "
        "(check the spec's column kinds and the synthetic data's columns)",
    )


def dependence_clause(shift: SourceShift | None, *, source: str | None, alpha: float) -> str:
    """For the IID DP-bound check: the bound assumes independent records, and whether this
    release's training split looks dependent (figures and the column name only)."""
    head = "the DP bound assumes independent records"
    if shift is None or source is None:
        return (
            head + "; the spec names no 'source' column, so the gate cannot tell whether the "
            "training records are dependent"
        )
    if not np.isfinite(shift.pvalue):
        return head + (
            f"; the training split's {source!r} distribution could not be compared with the "
            "reference's"
        )
    if shift.dependent(alpha):
        return (
            head
            + f", and this release's training split looks dependent (its {source!r} distribution "
            "differs "
            f"from the reference's: {shift.describe()}), which would explain the excess (Humphries "
            "et al.)"
        )
    return (
        head
        + f"; there is no evidence that this release's training split is dependent (its {source!r} "
        f"distribution vs the reference's: {shift.describe()}), so suspect the DP implementation "
        "first"
    )


def dp_audit_check(
    *, epsilon_lower: float, epsilon: float, max_ratio: float, message: str
) -> Check:
    """The DP audit (``audit_dp``): an empirical epsilon lower bound above ``max_ratio`` x the
    claimed epsilon proves the DP implementation broken -- BLOCK, never reviewed away."""
    limit = float(epsilon) * float(max_ratio)
    return Check(
        rule=f"DP audit epsilon lower bound <= {max_ratio:g} x claimed epsilon {epsilon:g}",
        metric=DP_AUDIT_EPSILON,
        observed=float(epsilon_lower),
        threshold=limit,
        bound="max",
        action="block",
        passed=bool(epsilon_lower <= limit),
        message=message,
    )
