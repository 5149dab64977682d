"""Membership-inference attacks: the Attack protocol, the attacker's ThreatModel and a registry.

Importing this package imports every attack module so that each registers its name;
``create_attack("domias", bandwidth=0.5)`` then builds one from a release config.
"""

from privacy_gate.attacks import distance, domias, mama_mia  # noqa: F401  (imported to register the attacks)
from privacy_gate.attacks.base import Attack, ThreatModel, available_attacks, create_attack, register_attack

__all__ = ["Attack", "ThreatModel", "available_attacks", "create_attack", "register_attack"]
