"""Findings outside the rules, turned into checks: estimators and audits report numbers, the gate
decides what they mean (a failed synthetic-data suite blocks; an advantage above the DP bound or
a large dependency gap needs a human)."""

from __future__ import annotations

from collections.abc import Iterable

from privacy_gate.gate.verdict import Check
from privacy_gate.names import VALIDATION_SYNTHETIC


def validation_failures(suite: str, messages: Iterable[str]) -> list[Check]:
    """A failed expectation of the synthetic-data suite blocks the release."""
    return [Check(rule=f"suite {suite}", metric=VALIDATION_SYNTHETIC, observed=None, threshold=None, bound="none",
                  action="block", passed=False, message=msg) for msg in messages]


def dp_bound_exceeded(query: str, *, lower: float, bound: float, epsilon: float, message: str,
                      dependence: str | None = None) -> Check:
    """An advantage lower bound above the DP bound: a broken DP implementation or dependent records
    (Humphries et al.) — never silenced, always reviewed. ``dependence`` says that the bound assumes
    independent records and whether this release's training data looks dependent
    (:func:`privacy_gate.gate.audit.dependence_clause`)."""
    return Check(rule=f"advantage lower bound <= DP bound tanh-form at epsilon {epsilon:g}", attack=query,
                 metric="mace.advantage_lower", observed=float(lower), threshold=float(bound), bound="max",
                 action="review", passed=False,
                 message=f"{query}: {message}" + (f"; {dependence}" if dependence else ""))


def dependency_gap(attack: str, *, dependency_auc: float, iid_auc: float, max_gap: float, source: str,
                   value: str) -> Check | None:
    """Members from one source vs the IID protocol: a larger AUC gap than ``max_gap`` is reviewed."""
    gap = dependency_auc - iid_auc
    if gap <= max_gap:
        return None
    return Check(rule=f"dependency AUC gap <= {max_gap:g}", attack=attack, metric="dependency.auc",
                 observed=float(gap), threshold=max_gap, bound="max", action="review", passed=False,
                 message=(f"{attack}: AUC {dependency_auc:.3f} when members come from {source}={value!r} vs "
                          f"{iid_auc:.3f} IID (gap {gap:.3f}); dependent records make this release "
                          "leakier than the IID figures and any DP bound suggest"))


def dependency_dp_bound_exceeded(attack: str, *, lower: float, bound: float, epsilon: float, source: str,
                                  value: str) -> Check:
    """The advantage lower bound with members from one source above the IID DP bound: the DP
    guarantee assumes independent records, and these are not — a human decides."""
    return Check(rule=f"dependency advantage lower bound <= IID DP bound at epsilon {epsilon:g}", attack=attack,
                 metric="dependency.dp_bound_excess", observed=float(lower - bound), threshold=0.0, bound="max",
                 action="review", passed=False,
                 message=(f"{attack}: with members from {source}={value!r} the advantage is at least {lower:.3f} "
                          f"(MACE lower bound), above the IID DP bound {bound:.3f} at epsilon {epsilon:g}; the DP "
                          "guarantee assumes independent records, so it does not cover dependent ones"))


def attack_invalid(attack: str, reason: str) -> Check:
    """An attack whose scores cannot rank the targets blocks: its figures would read as "safe"."""
    return Check(rule="attack scores can rank the targets", attack=attack, metric="scores", observed=None,
                 threshold=None, bound="none", action="block", passed=False,
                 message=f"{attack}: the attack {reason}; the gate cannot approve a release it could not attack "
                         "(check the spec's column kinds and the synthetic data's columns)")
