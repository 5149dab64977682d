"""The membership experiment: what the attacker knows, whom they attack, how well they do.

Typed inputs (:class:`GateInputs`) and settings (:class:`GateSettings`) build the attacker's
:class:`~privacy_gate.attacks.ThreatModel` once (:func:`threat_model`); the experiment chooses
the targets and keeps their labels (the evaluator's side), runs each attack on the threat model
(:class:`AttackOutcome`), scans every member (:mod:`.member_scan`), and measures subgroups,
entities and dependent data (:mod:`.subgroups`, :mod:`.grouping`, :mod:`.dependency`).

Everything here is a measurement: numbers, no rules. ``privacy_gate.gate`` turns measurements
into checks and a verdict; ``privacy_gate.pipeline`` orchestrates the stages.

The names below are loaded when first used (the attacks behind them load scikit-learn and SciPy),
so a module that needs one helper of this package (a group label) does not load every attack.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privacy_gate.experiment.attack_runs import AttackOutcome, run_attack, strongest
    from privacy_gate.experiment.inputs import GateInputs
    from privacy_gate.experiment.settings import (
        GateSettings,
        settings_for_gate_only,
        settings_for_release,
    )
    from privacy_gate.experiment.targets import Targets, choose_dependency_targets, choose_targets

__all__ = [
    "AttackOutcome",
    "GateInputs",
    "GateSettings",
    "Targets",
    "choose_dependency_targets",
    "choose_targets",
    "run_attack",
    "settings_for_gate_only",
    "settings_for_release",
    "strongest",
]

_LAZY = {
    "AttackOutcome": "attack_runs",
    "run_attack": "attack_runs",
    "strongest": "attack_runs",
    "GateInputs": "inputs",
    "GateSettings": "settings",
    "settings_for_gate_only": "settings",
    "settings_for_release": "settings",
    "Targets": "targets",
    "choose_dependency_targets": "targets",
    "choose_targets": "targets",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
