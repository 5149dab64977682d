"""Who is at risk: the attack metrics again per subgroup, per entity (set level) and under the
dependency stress test (see :mod:`privacy_gate.gate.audit` for the grouping rules)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privacy_gate.config import AuditConfig, DatasetSpec, MaceConfig
from privacy_gate.errors import InsufficientDataError
from privacy_gate.estimators.mace_queries import mace_group_metrics
from privacy_gate.estimators.metrics import roc_metrics
from privacy_gate.gate import Check
from privacy_gate.gate.audit import audit_subgroups, entity_scores, subgroup_groups
from privacy_gate.gate.findings import dependency_gap
from privacy_gate.names import dependency_metric, entity_metric, subgroup_metric
from privacy_gate.pipeline.attacking import AttackOutcome
from privacy_gate.pipeline.targets import Targets


@dataclass(frozen=True)
class AuditResult:
    """Subgroup / entity / dependency figures of one gate run, ready for the rules and for logging."""

    metrics: dict[str, float]  # flat, MLflow-named (subgroup/..., <attack>.entity.*, <attack>.dependency.*)
    groups: dict[str, dict[str, float]]  # group label -> "<attack>.<metric>" (what subgroup rules read)
    group_rows: list[dict[str, Any]]  # one row per group and attack, for reports
    warnings: list[Check]  # review-level findings (e.g. dependency gap)


def audit(outcomes: Sequence[AttackOutcome], targets: Targets, spec: DatasetSpec, cfg: AuditConfig,
          dependency: tuple[str, Targets] | None = None, mace: MaceConfig | None = None) -> AuditResult:
    """Per-subgroup metrics (with MACE bounds when ``mace`` settings are given), set-level
    (entity) metrics and the dependency stress test."""

    def group_metrics(s: np.ndarray, y: np.ndarray) -> dict[str, float]:
        out = dict(roc_metrics(s, y))
        if mace is not None:
            try:
                out.update(mace_group_metrics(s, y, prior=mace.prior, delta=mace.delta))
            except InsufficientDataError:  # a group this small gets ROC figures only
                pass
        return out

    scores = {o.name: o.scores for o in outcomes}
    metrics: dict[str, float] = {}
    columns = [[c] for c in spec.subgroups] + [list(c) for c in cfg.intersections]
    groups = subgroup_groups(targets.records, targets.labels, columns=columns, min_group_size=cfg.min_group_size)
    results = audit_subgroups(groups, targets.labels, scores, group_metrics)
    rows = []
    for r in results:
        for key, value in r.metrics.items():
            metrics[subgroup_metric(r.group.columns, r.group.values, key)] = value
        for o in outcomes:
            rows.append({"group": r.label, "attack": o.name, "n_members": r.group.n_members,
                         "n_non_members": r.group.n_non_members,
                         **{k.split(".", 1)[1]: v for k, v in r.metrics.items() if k.startswith(o.name + ".")}})
    if spec.entity_id is not None:
        ent_labels, ent_scores = entity_scores(targets.records[spec.entity_id].to_numpy(), targets.labels, scores)
        for attack, s in ent_scores.items():
            metrics.update({entity_metric(attack, k): float(v) for k, v in roc_metrics(s, ent_labels).items()})
    warnings = []
    if dependency is not None:
        value, dep_targets = dependency
        for o in outcomes:
            dep = roc_metrics(o.extra_scores["dependency"], dep_targets.labels)
            metrics.update({dependency_metric(o.name, k): float(v) for k, v in dep.items()})
            finding = dependency_gap(o.name, dependency_auc=dep["auc"], iid_auc=o.metrics["auc"],
                                     max_gap=cfg.dependency_max_auc_gap, source=str(spec.source), value=value)
            if finding is not None:
                warnings.append(finding)
    return AuditResult(metrics=metrics, groups={r.label: r.metrics for r in results}, group_rows=rows,
                       warnings=warnings)
