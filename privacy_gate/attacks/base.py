"""The attacker's view (:class:`ThreatModel`), the :class:`Attack` protocol, the attack base
classes and the attack registry.

An attack sees what a real attacker would see — the released synthetic data, some auxiliary
(reference) data from the same population, and optionally which generator was used with which
settings — and scores target records: higher means "more likely a member of the training data".
The membership labels of the targets stay with the evaluator.

An attack class subclasses :class:`AttackBase` (parameters declared once, in ``params_model``:
:class:`privacy_gate.params.Component`) — or :class:`EncodedAttack`, to work on the standardised
mixed encoding fitted on the reference data — and registers itself with ``@register_attack``.
Its ``fit`` takes the threat model only; an attack that needs the evaluator's
:class:`OracleKnowledge` or a mapper for independent sub-runs says so (``uses_oracle`` /
``uses_mapper``) and takes that keyword, and :func:`fit_attack` passes it only to such attacks.

>>> sorted(available_attacks())  # doctest: +SKIP
['dcr', 'domias']
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, NoReturn, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from privacy_gate.attacks.shadow import Mapper
from privacy_gate.data.encoding import MixedEncoder
from privacy_gate.errors import ConfigError, DataError
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.params import Component
from privacy_gate.registry import ComponentInfo, Registry
from privacy_gate.spec import DatasetSpec

#: Default memory budget for the temporary distance matrices of the chunked attacks.
DEFAULT_CHUNK_BYTES = 256 * 2**20


@dataclass(frozen=True, eq=False)  # eq=False: comparing DataFrames with == is elementwise
class ThreatModel:
    """What the attacker knows.

    synthetic: the released synthetic table.
    reference: auxiliary real records from the same population, disjoint from the training data.
    spec: the dataset spec (public knowledge: kinds, category lists, ranges).
    generator, generator_params: black-box knowledge of the generator (name and settings), if any.
    n_train: size of the generator's training set, if known (shadow runs need it).

    What the real generator did internally (its focal points) is not attacker knowledge: the
    evaluator passes it separately, as :class:`OracleKnowledge`.
    """

    synthetic: pd.DataFrame
    reference: pd.DataFrame
    spec: DatasetSpec
    generator: str | None = None
    generator_params: Mapping[str, Any] = field(default_factory=dict)
    n_train: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.spec, DatasetSpec):
            raise ConfigError(
                f"ThreatModel: 'spec' must be a DatasetSpec, got {type(self.spec).__name__}"
            )
        for what in ("synthetic", "reference"):
            frame = getattr(self, what)
            if not isinstance(frame, pd.DataFrame):
                raise DataError(
                    f"ThreatModel: '{what}' must be a pandas DataFrame, got {type(frame).__name__}"
                )
            if len(frame) == 0:
                raise DataError(f"ThreatModel: the {what} data has no rows")
            missing = [c for c in self.spec.attribute_columns if c not in frame.columns]
            if missing:
                raise DataError(
                    f"ThreatModel: column(s) {missing} of spec '{self.spec.name}' are missing from "
                    f"the {what} data"
                )
        syn_cols, ref_cols = set(self.synthetic.columns), set(self.reference.columns)
        if syn_cols != ref_cols:
            raise DataError(
                "ThreatModel: synthetic and reference data have different columns "
                f"(only in synthetic: {sorted(map(str, syn_cols - ref_cols))}; "
                f"only in reference: {sorted(map(str, ref_cols - syn_cols))})"
            )
        if self.generator is not None and (
            not isinstance(self.generator, str) or not self.generator
        ):
            raise ConfigError("ThreatModel: 'generator' must be a non-empty string or None")
        if not isinstance(self.generator_params, Mapping):
            raise ConfigError(
                "ThreatModel: 'generator_params' must be a mapping, got "
                f"{type(self.generator_params).__name__}"
            )
        # a read-only copy: the threat model is shared by concurrently running attacks
        object.__setattr__(self, "generator_params", MappingProxyType(dict(self.generator_params)))
        if self.n_train is not None:
            if (
                isinstance(self.n_train, bool)
                or not isinstance(self.n_train, (int, np.integer))
                or self.n_train < 1
            ):
                raise ConfigError(
                    "ThreatModel: 'n_train' must be a positive integer or None, got "
                    f"{self.n_train!r}"
                )


@dataclass(frozen=True)
class OracleKnowledge:
    """Evaluator-only knowledge, never an attacker's: the focal points the real generator used
    (``focal_points_``). MAMA-MIA's oracle variant reads it to bound what shadow modelling can
    learn.

    >>> from privacy_gate.generators.focal import FocalPoint
    >>> OracleKnowledge(focal_points=(FocalPoint("marginal", ("a", "b")),)).focal_points[0].columns
    ('a', 'b')
    """

    focal_points: tuple[FocalPoint, ...]

    def __post_init__(self) -> None:
        fps = tuple(self.focal_points)
        if not fps or not all(isinstance(f, FocalPoint) for f in fps):
            raise ConfigError(
                "OracleKnowledge: focal_points must be a non-empty sequence of FocalPoint"
            )
        object.__setattr__(self, "focal_points", fps)


@runtime_checkable
class Attack(Protocol):
    """A membership-inference attack (scikit-learn style: ``fit`` returns self).

    ``score`` returns one finite float per target row, in the order of the rows; higher means
    more likely a member. Targets carry no labels. ``fit`` takes the threat model; an attack
    that also reads the evaluator's ``oracle`` knowledge or maps independent sub-runs with a
    ``mapper`` declares ``uses_oracle`` / ``uses_mapper`` and takes that keyword-only argument
    (call such attacks through :func:`fit_attack`).
    """

    name: str

    def fit(self, threat: ThreatModel) -> Attack: ...

    def score(self, targets: pd.DataFrame) -> np.ndarray: ...


class AttackBase(Component):
    """Base of the registered attacks: hyper-parameters from ``params_model`` (see
    :class:`~privacy_gate.params.Component`); ``fit(threat)`` takes nothing else unless the class
    declares ``uses_oracle`` (``fit(..., oracle=None)``) or ``uses_mapper`` (``fit(...,
    mapper=None)``)."""

    name: ClassVar[str]  # set by @register_attack
    uses_oracle: ClassVar[bool] = False
    uses_mapper: ClassVar[bool] = False


class EncodedAttack(AttackBase):
    """An attack on the standardised mixed encoding (:class:`MixedEncoder`) fitted on the reference
    data — the attacker's own data plus the spec's public categories; learned ``encoder_``."""

    def _fit_encoder(self, threat: ThreatModel) -> MixedEncoder:
        """Fit ``encoder_`` on ``threat.reference`` and return it."""
        self.encoder_ = MixedEncoder(spec=threat.spec, data_name="reference data").fit(
            threat.reference
        )
        return self.encoder_

    def _fit_encoded(self, threat: ThreatModel) -> tuple[np.ndarray, np.ndarray]:
        """Fit ``encoder_`` (:meth:`_fit_encoder`); the encoded synthetic and reference data."""
        encoder = self._fit_encoder(threat)
        return encoder.transform(threat.synthetic), encoder.transform(threat.reference)

    def _encode(self, targets: pd.DataFrame) -> np.ndarray:
        """``targets`` on the fitted encoding (NotFittedError before ``fit``)."""
        if not hasattr(self, "encoder_"):
            not_fitted(f"attack '{self.name}'")
        return self.encoder_.transform(targets)


def fit_attack(
    attack: Attack,
    threat: ThreatModel,
    *,
    oracle: OracleKnowledge | None = None,
    mapper: Mapper | None = None,
) -> Attack:
    """``attack.fit(threat)``, passing ``oracle`` and ``mapper`` only to an attack that declares it
    uses them (``uses_oracle`` / ``uses_mapper``); the fitted attack.

    >>> class Plain:
    ...     def fit(self, threat):
    ...         return "fitted"
    >>> fit_attack(Plain(), None, oracle=None, mapper=map)
    'fitted'
    """
    wanted = {"oracle": oracle, "mapper": mapper}
    return attack.fit(
        threat, **{k: v for k, v in wanted.items() if getattr(attack, f"uses_{k}", False)}
    )


# --------------------------------------------------------------------------- registry

_ATTACKS = Registry("attack")
register_attack = _ATTACKS.register  # class decorator: @register_attack("domias")


def available_attacks() -> list[str]:
    """Names of the registered attacks, sorted."""
    return _ATTACKS.names()


def describe_attacks() -> list[ComponentInfo]:
    """Every registered attack with its declared parameters (``privacy-gate list attacks``)."""
    return _ATTACKS.describe()


def create_attack(name: str, **params: Any) -> Attack:
    """Instantiate the attack registered as ``name`` with keyword ``params`` (ConfigError for an
    unknown name or a parameter the attack does not accept or rejects)."""
    return _ATTACKS.create(name, **params)


# --------------------------------------------------------------------------- shared checks


def not_fitted(owner: str) -> NoReturn:
    """Raise scikit-learn's NotFittedError for ``owner`` (an attack or estimator used before
    fit)."""
    from sklearn.exceptions import NotFittedError  # lazy: importing scikit-learn costs ~0.7 s

    raise NotFittedError(f"{owner} is not fitted yet; call fit() first")


def check_scores(scores: np.ndarray, *, owner: str, n_targets: int) -> np.ndarray:
    """Guard the Attack contract: one finite float per target (the gate fails closed on NaN)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (n_targets,):
        raise DataError(f"{owner}: produced {scores.shape} scores for {n_targets} targets")
    n_bad = int((~np.isfinite(scores)).sum())
    if n_bad:
        raise DataError(f"{owner}: produced {n_bad} non-finite score(s)")
    return scores
