"""Membership-inference attacks: the Attack protocol, the attacker's ThreatModel and a registry.

Importing this package imports every attack module so that each registers its name;
``create_attack("domias", bandwidth=0.5)`` then builds one from a release config.

Registered: ``domias`` (density ratio; KDE, flow or auto densities), ``dcr``, and the DOMIAS
paper's baselines ``domias_eq1``, ``gan_leaks`` (= ``dcr``), ``gan_leaks_cal``,
``mc_neighbourhood`` and ``logan_d1`` (module :mod:`privacy_gate.attacks.baselines`), and ``mama_mia``
(generator-aware; shadow, oracle and generic variants: :mod:`privacy_gate.attacks.mama_mia`).
"""

from privacy_gate.attacks import baselines, distance, domias, mama_mia  # noqa: F401  (imported to register the attacks)
from privacy_gate.attacks.base import (Attack, Mapper, OracleKnowledge, ThreatModel, available_attacks, create_attack,
                                       describe_attacks, register_attack)

__all__ = ["Attack", "Mapper", "OracleKnowledge", "ThreatModel", "available_attacks", "create_attack",
           "describe_attacks", "register_attack"]
