"""What one gate run judges with: :class:`GateSettings`, built by exactly two factories.

- :func:`settings_for_release`: a release config plus the generator it fitted. The generator's
  *actual* guarantee (``generator.privacy``) drives the DP-bound check, and for a marginal
  generator MAMA-MIA is also run as an oracle with the focal points the fit really used.
- :func:`settings_for_gate_only`: synthetic data made elsewhere; generator knowledge only when the
  user names the registered generator and its settings that made it (the generator-aware test).

The settings are recorded with the run (``names.ART_SETTINGS``); a re-gate after suppression
reads them back (:meth:`GateSettings.from_record`) instead of rebuilding them from a config, so it
judges with the same attacks, epsilon and oracle as the original run.

>>> from privacy_gate.spec import DatasetSpec
>>> spec = DatasetSpec.model_validate({"name": "t", "columns": {"a": {"kind": "numeric"}}})
>>> s = settings_for_gate_only(spec=spec)
>>> [a.key for a in s.attacks], s.epsilon
(['domias', 'dcr', 'dcr_ratio', 'copy_count', 'mama_mia'], None)
>>> GateSettings.from_record(s.to_record()) == s
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from privacy_gate.attacks import OracleKnowledge
from privacy_gate.config import (
    DEFAULT_ATTACKS,
    AttackConfig,
    AuditConfig,
    DisclosureConfig,
    ExposureConfig,
    GateConfig,
    MaceConfig,
    ReleaseConfig,
    Rule,
    ShadowConfig,
    TargetsConfig,
    active_rules,
    budget_tests,
    protections_off,
    rules_problem,
)
from privacy_gate.generators import Generator, MarginalGenerator, generator_capabilities
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.names import ORACLE_ATTACK
from privacy_gate.spec import DatasetSpec


class GeneratorKnowledge(BaseModel):
    """Black-box knowledge of the generator an attacker may have: its name and settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class GateSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    spec: DatasetSpec
    gate: GateConfig = Field(default_factory=GateConfig)
    attacks: tuple[AttackConfig, ...] = DEFAULT_ATTACKS
    targets: TargetsConfig = Field(default_factory=TargetsConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    mace: MaceConfig = Field(default_factory=MaceConfig)
    exposure: ExposureConfig = Field(default_factory=ExposureConfig)
    disclosure: DisclosureConfig = Field(default_factory=DisclosureConfig)
    shadow: ShadowConfig = Field(default_factory=ShadowConfig)
    generator: GeneratorKnowledge | None = None
    privacy: dict[str, float] | None = None  # the fitted generator's actual guarantee
    oracle_focal_points: tuple[FocalPoint, ...] | None = None  # evaluator-only knowledge
    publish_format: str = "parquet"
    score_chunks: int = Field(
        1, ge=1
    )  # each attack scores its targets in this many tasks (runner.score_chunks)

    @model_validator(mode="after")
    def _rules_read_attacks_that_run(self) -> GateSettings:
        problem = rules_problem(self.gate.rules, self.attacks, self.exposure, self.disclosure)
        if problem:
            raise ValueError(problem)
        return self

    @property
    def epsilon(self) -> float | None:
        return None if self.privacy is None else self.privacy.get("epsilon")

    @property
    def disabled(self) -> dict[str, str]:
        """Default protections this run goes without, and why (``gate.disable`` and switched-off
        stages)."""
        return protections_off(self.gate, self.exposure, self.disclosure)

    @property
    def active_rules(self) -> list[Rule]:
        """The effective rules of the tests this run has."""
        return active_rules(self.gate, self.disabled)

    @property
    def budget_tests(self) -> list[str]:
        """The error budget's tests this run has (:mod:`privacy_gate.gate.budget`)."""
        return budget_tests(self.disabled)

    @property
    def gated_attacks(self) -> list[str]:
        return [a.key for a in self.attacks if a.gate]

    def oracle(self) -> OracleKnowledge | None:
        if not self.oracle_focal_points:
            return None
        return OracleKnowledge(focal_points=self.oracle_focal_points)

    def to_record(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> GateSettings:
        return cls.model_validate(record)


def with_oracle(
    attacks: Sequence[AttackConfig], focal: Sequence[FocalPoint] | None
) -> tuple[AttackConfig, ...]:
    """For a marginal generator, also report MAMA-MIA with the focal points the generator really
    used — the upper bound of black-box knowledge (reported, not gated)."""
    if (
        not focal
        or any(a.key == ORACLE_ATTACK for a in attacks)
        or not any(a.name == "mama_mia" for a in attacks)
    ):
        return tuple(attacks)
    return (
        *attacks,
        AttackConfig(name="mama_mia", variant="oracle", label=ORACLE_ATTACK, gate=False),
    )


def resolved_exposure(exposure: ExposureConfig, *, reference_exchangeable: bool) -> ExposureConfig:
    """``exposure.reference_calibrates`` decided for this run when the config leaves it open."""
    if exposure.reference_calibrates is not None:
        return exposure
    return exposure.model_copy(update={"reference_calibrates": reference_exchangeable})


def settings_for_release(config: ReleaseConfig, generator: Generator) -> GateSettings:
    """Settings of a release run: the config's sections plus what the fitted generator tells.
    The reference split calibrates the member scan only when it is a split of the real table
    that the generator never read (a generator that takes its bins from it emits its values)."""
    focal = list(generator.focal_points_) if isinstance(generator, MarginalGenerator) else None
    reads_reference = bool(
        getattr(getattr(generator, "capabilities", None), "uses_reference", False)
    )
    exposure = resolved_exposure(
        config.exposure,
        reference_exchangeable=(config.dataset.reference_path is None and not reads_reference),
    )
    return GateSettings(
        spec=config.dataset.spec,
        gate=config.gate,
        attacks=with_oracle(config.attacks, focal),
        targets=config.targets,
        audit=config.audit,
        mace=config.mace,
        exposure=exposure,
        disclosure=config.disclosure,
        shadow=config.shadow,
        generator=GeneratorKnowledge(
            name=config.generator.name,
            params={**config.generator.params, "seed": config.generator.seed},
        ),
        privacy=generator.privacy,
        oracle_focal_points=tuple(focal) if focal else None,
        publish_format=config.publish.format,
        score_chunks=config.runner.score_chunks,
    )


def settings_for_gate_only(
    *,
    spec: DatasetSpec,
    gate: GateConfig | None = None,
    attacks: Sequence[AttackConfig] | None = None,
    targets: TargetsConfig | None = None,
    audit: AuditConfig | None = None,
    mace: MaceConfig | None = None,
    exposure: ExposureConfig | None = None,
    score_chunks: int = 1,
    disclosure: DisclosureConfig | None = None,
    shadow: ShadowConfig | None = None,
    generator: GeneratorKnowledge | None = None,
) -> GateSettings:
    """Settings for synthetic data made elsewhere: defaults for every section not given. The
    reference file is taken to be what the gate-only contract says it is — real records of the
    same population that the generator never saw — so it calibrates the member scan unless
    ``exposure.reference_calibrates`` is false, or the user names a generator whose recipe reads
    the reference (MST takes its bins from it): the release then depends on the reference records,
    which are no longer exchangeable with the holdout, as in a release run. ``generator``: the
    registered generator and settings the user says made the release (what the generator-aware
    test refits)."""
    reads_reference = (
        generator is not None and generator_capabilities(generator.name).uses_reference
    )
    return GateSettings(
        spec=spec,
        gate=gate or GateConfig(),
        attacks=tuple(attacks or DEFAULT_ATTACKS),
        targets=targets or TargetsConfig(),
        audit=audit or AuditConfig(),
        mace=mace or MaceConfig(),
        exposure=resolved_exposure(
            exposure or ExposureConfig(), reference_exchangeable=not reads_reference
        ),
        disclosure=disclosure or DisclosureConfig(),
        score_chunks=score_chunks,
        shadow=shadow or ShadowConfig(),
        generator=generator,
    )
