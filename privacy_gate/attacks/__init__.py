"""Membership-inference attacks: the Attack protocol, the attacker's ThreatModel and a registry.

Importing this package imports every attack module so that each registers its name;
``create_attack("domias", bandwidth=0.5)`` then builds one from a release config, and
``fit_attack(attack, threat, oracle=..., mapper=...)`` fits it, passing the evaluator's oracle and
a sub-run mapper only to an attack that declares it uses them (MAMA-MIA).

Registered: ``domias`` (density ratio; KDE, flow or auto densities), ``dcr``, and the DOMIAS
paper's baselines ``domias_eq1``, ``gan_leaks`` (= ``dcr``), ``gan_leaks_cal``,
``mc_neighbourhood`` and ``logan_d1`` (module :mod:`privacy_gate.attacks.baselines`), ``mama_mia``
(generator-aware; shadow, oracle and generic variants: :mod:`privacy_gate.attacks.mama_mia`), and
``gen_lra`` (Gen-LRA: the likelihood ratio of the target's nearest synthetic rows under the
reference KDE with and without the target; :mod:`privacy_gate.attacks.gen_lra`; not in the default
list).
"""

from privacy_gate.attacks import baselines, distance, domias, gen_lra, mama_mia  # noqa: F401  (imported to register the attacks)
from privacy_gate.attacks.base import (
    Attack,
    AttackBase,
    EncodedAttack,
    Mapper,
    OracleKnowledge,
    ThreatModel,
    available_attacks,
    create_attack,
    describe_attacks,
    fit_attack,
    register_attack,
)

__all__ = [
    "Attack",
    "AttackBase",
    "EncodedAttack",
    "Mapper",
    "OracleKnowledge",
    "ThreatModel",
    "available_attacks",
    "create_attack",
    "describe_attacks",
    "fit_attack",
    "register_attack",
]
