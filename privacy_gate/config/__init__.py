"""The release config and the gate rules (pydantic models), and their YAML loading; the dataset spec
itself lives in :mod:`privacy_gate.spec`. This is the user-facing contract, documented in the
README and read in one place: import its names from here. Every error names the file, the key and
the problem.

- :mod:`.sections`: the config's sections (data, split, generator, attacks, targets, audits,
  MACE, review, tracking, publication, input limits, runner, schedule, retries, DP audit);
- :mod:`.rules`: the gate's rules, their defaults and the error budget (``gate``);
- :mod:`.release`: the whole configs (:class:`ReleaseConfig`, :class:`GateOnlyConfig`), the checks
  across sections, the remediation ladder and the dependency study;
- :mod:`.gate_deployment`: a gate-mode deployment's config (the judging sections and its own
  files, schedule and publication);
- :mod:`.loading`: reading config and spec files (bounded YAML, one-line errors).

>>> cfg = GateConfig.model_validate({"rules": [{"metric": "auc", "attack": "dcr", "max": 0.6}]})
>>> cfg.rules[0].describe()
'dcr.auc <= 0.6'
"""

from privacy_gate.config.gate_deployment import GateDeploymentConfig, GateFiles
from privacy_gate.config.loading import (
    MAX_YAML_ALIASES,
    MAX_YAML_BYTES,
    MAX_YAML_NODES,
    is_gate_deployment,
    load_gate_deployment,
    load_gate_only_config,
    load_judging,
    load_release_config,
    load_rules,
    load_rules_config,
    load_spec,
)
from privacy_gate.config.release import (
    LADDER_FILTERS,
    DependencyStudyConfig,
    GateOnlyConfig,
    ReleaseConfig,
    RemediateConfig,
    StudyGenerator,
    StudyScenario,
)
from privacy_gate.config.rules import (
    BUDGET_TESTS,
    DEFAULT_RULES,
    RUN_DECIDED_TESTS,
    TEST_KEYS,
    BudgetConfig,
    Disable,
    GateConfig,
    Rule,
    active_rules,
    budget_tests,
    protections_off,
    rule_test,
    rules_problem,
)
from privacy_gate.config.sections import (
    DEFAULT_ATTACKS,
    DEFAULT_MAX_FIELD_BYTES,
    DEFAULT_MAX_FILE_BYTES,
    SMALLEST_CONTROL,
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
    TargetsConfig,
    TrackingConfig,
    location_name,
)
from privacy_gate.errors import ConfigError

__all__ = [
    "AttackConfig",
    "AuditConfig",
    "BUDGET_TESTS",
    "BudgetConfig",
    "ConfigError",
    "DEFAULT_ATTACKS",
    "DEFAULT_MAX_FIELD_BYTES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_RULES",
    "DPAuditConfig",
    "DatasetConfig",
    "DependencyStudyConfig",
    "Disable",
    "DisclosureConfig",
    "ExposureConfig",
    "GateConfig",
    "GateDeploymentConfig",
    "GateFiles",
    "GateOnlyConfig",
    "GeneratorConfig",
    "InputLimits",
    "LADDER_FILTERS",
    "MAX_YAML_ALIASES",
    "MAX_YAML_BYTES",
    "MAX_YAML_NODES",
    "MaceConfig",
    "PublishConfig",
    "ReleaseConfig",
    "RemediateConfig",
    "RetryConfig",
    "ReviewConfig",
    "Rule",
    "RUN_DECIDED_TESTS",
    "RunnerConfig",
    "SMALLEST_CONTROL",
    "ScheduleConfig",
    "ShadowConfig",
    "SplitConfig",
    "StudyGenerator",
    "StudyScenario",
    "TEST_KEYS",
    "TargetsConfig",
    "TrackingConfig",
    "active_rules",
    "budget_tests",
    "is_gate_deployment",
    "load_gate_deployment",
    "load_gate_only_config",
    "load_judging",
    "load_release_config",
    "load_rules",
    "load_rules_config",
    "load_spec",
    "location_name",
    "protections_off",
    "rule_test",
    "rules_problem",
]
