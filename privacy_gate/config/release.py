"""The whole configs: a release (:class:`ReleaseConfig`) and the judging sections of a gate-only run
(:class:`GateOnlyConfig`), with the checks that read several sections at once (attacks against
rules, audit settings against the spec), and the sections only a whole release has: the
remediation ladder (:class:`RemediateConfig`) and the dependency study
(:class:`DependencyStudyConfig`).
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from privacy_gate.config.rules import GateConfig, rules_problem
from privacy_gate.config.sections import (
    DEFAULT_ATTACKS,
    AttackConfig,
    AuditConfig,
    DatasetConfig,
    DisclosureConfig,
    DPAuditConfig,
    ExposureConfig,
    GeneratorConfig,
    InputLimits,
    MaceConfig,
    PublishConfig,
    RetryConfig,
    ReviewConfig,
    RunnerConfig,
    ScheduleConfig,
    ShadowConfig,
    SplitConfig,
    Strict,
    TargetsConfig,
    TrackingConfig,
)
from privacy_gate.errors import ConfigError
from privacy_gate.names import SUPPRESS_COPIES
from privacy_gate.spec import DatasetSpec


def _attack_list_problem(attacks: list[AttackConfig]) -> str | None:
    """What is wrong with a config's attack list (empty, or a metric name used twice), or None."""
    names = [a.key for a in attacks]
    if not names:
        return "attacks: at least one attack is required (the gate cannot approve unattacked data)"
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        return (
            f"attacks: {dupes} listed more than once (metric names would collide; give one a "
            "different 'label')"
        )
    return None


def _audit_problem(audit: AuditConfig, spec: DatasetSpec) -> str | None:
    """Audit settings the spec cannot support (intersections of non-subgroups, a dependency test
    without a source column), or None."""
    for combo in audit.intersections:
        if len(combo) < 2 or any(c not in spec.subgroups for c in combo):
            return (
                f"audit.intersections: {combo} must list two or more of the spec's subgroups "
                f"{spec.subgroups}"
            )
    if audit.dependency_test and spec.source is None:
        return "audit.dependency_test needs a 'source' column in the dataset spec"
    return None


#: What a ``{filter: ...}`` rung of ``remediate.ladder`` removes from the previous attempt's
#: release: ``copies``, the rows ``privacy-gate approve --suppress copies`` removes (no names
#: needed).
LADDER_FILTERS = (SUPPRESS_COPIES,)


class RemediateConfig(Strict):
    """What to try when the gate BLOCKs the configured generator: ``ladder`` is an ordered list of
    rungs. A generator rung is generator settings (a rung without ``name`` changes only the given
    parameters of the configured generator); a filter rung, ``{filter: copies}``, re-gates the
    previous attempt's release without the rows that copy training records (it must follow a
    generator attempt: the configured generator or a generator rung). ``choose``: the ``first``
    rung that passes, or the ``most_useful`` by ``utility.quality`` among the rungs that pass (all
    rungs are then tried). A REVIEW stops the ladder. ``max_total_epsilon``: refuse a ladder whose
    DP generators could spend more in total (attempts on the same data compose: their epsilons add
    up; a filter rung spends none)."""

    ladder: list[dict[str, Any]] = Field(min_length=1)
    choose: Literal["first", "most_useful"] = "first"
    max_total_epsilon: float | None = Field(None, gt=0)


def _ladder_problem(remediate: RemediateConfig | None) -> str | None:
    """What is wrong with the ladder's filter rungs, or None (generator rungs are checked against
    their generator by ``runs.remediation.check_ladder``)."""
    after_filter = False
    for i, rung in enumerate(remediate.ladder if remediate else []):
        where = f"remediate.ladder[{i}]"
        if "filter" not in rung:
            after_filter = False
            continue
        extra = sorted(str(k) for k in rung if k != "filter")
        if extra:
            return (
                f"{where}: a filter rung has only the key 'filter', not {', '.join(extra)} "
                "(generator "
                "settings go in a rung of their own)"
            )
        if not isinstance(rung["filter"], str) or rung["filter"] not in LADDER_FILTERS:
            return (
                f"{where}: unknown filter {rung['filter']!r}; allowed: {', '.join(LADDER_FILTERS)}"
            )
        if after_filter:
            return (
                f"{where}: a filter rung must follow a generator attempt (the configured generator "
                "or a "
                f"generator rung), not remediate.ladder[{i - 1}], another filter rung: filtering a "
                "filtered "
                "release again only removes more clean rows"
            )
        after_filter = True
    return None


class StudyGenerator(Strict):
    """One generator of a dependency study: ``name``, fixed ``params``, and for a DP generator the
    ``epsilons`` to sweep (each becomes its ``epsilon`` parameter); none for a non-DP generator."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    epsilons: list[float] | None = Field(None, min_length=1)

    @field_validator("epsilons")
    @classmethod
    def _positive(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and any(e <= 0 for e in v):
            raise ValueError("every epsilon must be positive")
        return v


class StudyScenario(Strict):
    """A split that makes the training set dependent (Humphries et al.):

    - ``source``: members from one value of the spec's ``source`` column (``value``; default the
      most frequent), non-members from the other values;
    - ``cluster``: k-means with ``k`` clusters fitted on the *reference* encoding; members from
      one cluster, non-members from another (``clusters``; default the two largest);
    - ``bias``: a share ``p`` of the training set has ``attribute`` = ``value`` (or, for a numeric
      attribute, ``>= at_least``), for each p in ``shares``; non-members half and half; the
      attribute is dropped from everything the attacker sees, as in the paper.

    ``generators`` overrides the study's list for this scenario."""

    kind: Literal["source", "cluster", "bias"]
    value: str | None = None
    k: int = Field(2, ge=2)
    clusters: tuple[int, int] | None = None
    attribute: str | None = None
    at_least: float | None = None
    shares: list[float] = Field(default_factory=lambda: [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    generators: list[StudyGenerator] | None = None

    @model_validator(mode="after")
    def _check(self) -> StudyScenario:
        if self.kind == "bias":
            if self.attribute is None:
                raise ValueError("a bias scenario needs 'attribute'")
            if (self.value is None) == (self.at_least is None):
                raise ValueError(
                    "a bias scenario needs exactly one of 'value' (categorical) or 'at_least' "
                    "(numeric)"
                )
            if not self.shares or any(not 0 <= p <= 1 for p in self.shares):
                raise ValueError("'shares' must be values in [0, 1]")
        elif self.attribute is not None or self.at_least is not None:
            raise ValueError(
                f"'attribute' and 'at_least' belong to bias scenarios, not {self.kind}"
            )
        if self.clusters is not None and (
            self.kind != "cluster" or self.clusters[0] == self.clusters[1]
        ):
            raise ValueError("'clusters' is two different cluster numbers of a cluster scenario")
        return self

    @property
    def label(self) -> str:
        if self.kind == "source":
            return f"source={self.value}" if self.value else "source"
        if self.kind == "cluster":
            return f"cluster k={self.k}"
        return (
            "bias "
            f"{self.attribute}"
            f"{'=' + self.value if self.value else '>=' + format(self.at_least, 'g')}"
        )


class DependencyStudyConfig(Strict):
    """The dependency study (``privacy-gate dependency-study CONFIG``): for each scenario and
    repetition, a dependent split of ``members`` / ``non_members`` records and its IID counterpart
    (the same records merged and re-split at the same sizes), each generator retrained on both,
    attacked, and MACE-bounded. ``attacks``: default the release config's (MAMA-MIA only for
    marginal generators)."""

    scenarios: list[StudyScenario] = Field(min_length=1)
    generators: list[StudyGenerator] = Field(min_length=1)
    members: int = Field(1000, ge=20)
    non_members: int = Field(1000, ge=20)
    repetitions: int = Field(5, ge=2)
    seed: int = 0


def _study_problem(study: DependencyStudyConfig | None, spec: DatasetSpec) -> str | None:
    """What a dependency study asks of the spec that it does not have, or None."""
    for i, sc in enumerate(study.scenarios if study else []):
        where = f"dependency_study.scenarios[{i}]"
        if sc.kind == "source" and spec.source is None:
            return f"{where}: a source scenario needs a 'source' column in the dataset spec"
        if sc.kind == "bias":
            col = spec.columns.get(sc.attribute)
            if col is None or sc.attribute == spec.entity_id:
                return f"{where}: attribute {sc.attribute!r} is not an attribute column of the spec"
            if sc.at_least is not None and not col.is_numeric:
                return (
                    f"{where}: 'at_least' needs a numeric attribute; {sc.attribute!r} is "
                    f"{col.kind} (use 'value')"
                )
            if sc.value is not None and col.is_numeric:
                return (
                    f"{where}: 'value' needs a categorical attribute; {sc.attribute!r} is "
                    f"{col.kind} (use 'at_least')"
                )
    return None


class ReleaseConfig(Strict):
    dataset: DatasetConfig
    generator: GeneratorConfig
    split: SplitConfig = Field(default_factory=SplitConfig)
    targets: TargetsConfig = Field(default_factory=TargetsConfig)
    attacks: list[AttackConfig] = Field(default_factory=lambda: list(DEFAULT_ATTACKS))
    gate: GateConfig = Field(default_factory=GateConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    mace: MaceConfig = Field(default_factory=MaceConfig)
    exposure: ExposureConfig = Field(default_factory=ExposureConfig)
    disclosure: DisclosureConfig = Field(default_factory=DisclosureConfig)
    shadow: ShadowConfig = Field(default_factory=ShadowConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    runner: RunnerConfig = Field(default_factory=RunnerConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    schedule: ScheduleConfig | None = None
    retries: RetryConfig = Field(default_factory=RetryConfig)
    remediate: RemediateConfig | None = None
    publish: PublishConfig = Field(default_factory=PublishConfig)
    inputs: InputLimits = Field(default_factory=InputLimits)
    dependency_study: DependencyStudyConfig | None = None
    audit_dp: DPAuditConfig | None = None

    @model_validator(mode="after")
    def _unique_attacks(self) -> ReleaseConfig:
        problem = _attack_list_problem(self.attacks) or rules_problem(
            self.gate.rules, self.attacks, self.exposure, self.disclosure
        )
        if problem is None and self.split.reference == 0 and self.dataset.reference_path is None:
            problem = (
                "split.reference is 0 but dataset.reference_path is not set: the attacker's "
                "reference data must come from one of them"
            )
        problem = problem or _audit_problem(self.audit, self.dataset.spec)
        problem = problem or _study_problem(self.dependency_study, self.dataset.spec)
        problem = problem or _ladder_problem(self.remediate)
        if problem:
            raise ValueError(problem)
        return self

    def config_hash(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


class GateOnlyConfig(Strict):
    """The judging sections of a release config, for gate-only runs (``privacy-gate gate
    --config``): synthetic data made elsewhere is judged with the same attacks, targets, audit and
    MACE settings a release would use."""

    targets: TargetsConfig = Field(default_factory=TargetsConfig)
    attacks: list[AttackConfig] = Field(default_factory=lambda: list(DEFAULT_ATTACKS))
    gate: GateConfig = Field(default_factory=GateConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    mace: MaceConfig = Field(default_factory=MaceConfig)
    exposure: ExposureConfig = Field(default_factory=ExposureConfig)
    disclosure: DisclosureConfig = Field(default_factory=DisclosureConfig)
    shadow: ShadowConfig = Field(default_factory=ShadowConfig)
    inputs: InputLimits = Field(default_factory=InputLimits)

    @model_validator(mode="after")
    def _attacks(self, info: ValidationInfo) -> GateOnlyConfig:
        # ``rules_at`` (validation context): where the file holds the rules (a --rules file may hold
        # a bare ``rules:`` list), so the message names the key as the user wrote it
        at = (info.context or {}).get("rules_at", "gate.rules")
        problem = _attack_list_problem(self.attacks) or rules_problem(
            self.gate.rules, self.attacks, self.exposure, self.disclosure, at=at
        )
        if problem:
            raise ValueError(problem)
        return self

    def check_against(self, spec: DatasetSpec, source: str) -> None:
        """Settings that need the spec: audited intersections, the dependency test."""
        problem = _audit_problem(self.audit, spec)
        if problem:
            raise ConfigError(f"{source}: {problem}")
