"""The stages of a gate run as plain functions (no Prefect, no MLflow): flows/ orchestrates them.

Labels of the targets live here, with the evaluator; attacks only ever see the target records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.config import AttackConfig, DatasetSpec, ReleaseConfig, TargetsConfig
from privacy_gate.data import Splits, conform, read_table, split_by_entity
from privacy_gate.errors import InsufficientDataError


def load_real_data(config: ReleaseConfig) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Read and conform the real table (and a public reference file, if configured)."""
    spec = config.dataset.spec
    real = conform(read_table(config.dataset.path), spec, source=str(config.dataset.path))
    reference = None
    if config.dataset.reference_path is not None:
        reference = conform(read_table(config.dataset.reference_path), spec, source=str(config.dataset.reference_path))
    return real, reference


def split(config: ReleaseConfig, real: pd.DataFrame, reference: pd.DataFrame | None) -> Splits:
    return split_by_entity(real, config.dataset.spec, config.split, reference=reference)


@dataclass(frozen=True)
class Targets:
    """Target records for the attacks and their membership labels (1 = in train)."""

    records: pd.DataFrame  # index = row id in the real table
    labels: np.ndarray

    def __post_init__(self) -> None:
        if len(self.records) != len(self.labels):
            raise ValueError("targets and labels differ in length")

    @property
    def row_ids(self) -> np.ndarray:
        return self.records.index.to_numpy()


def choose_targets(splits: Splits, cfg: TargetsConfig) -> Targets:
    """Non-members from holdout (all of it by default: statistical power over speed), members
    sampled from train to balance them."""
    rng = np.random.default_rng(cfg.seed)
    n_non = min(cfg.n_non_members or len(splits.holdout), len(splits.holdout))
    n_mem = min(cfg.n_members or n_non, len(splits.train))
    if min(n_non, n_mem) < cfg.min_per_class:
        raise InsufficientDataError(
            f"only {n_mem} member and {n_non} non-member targets available; targets.min_per_class is "
            f"{cfg.min_per_class} (use more data or a larger holdout fraction)")
    members = splits.train.iloc[np.sort(rng.choice(len(splits.train), n_mem, replace=False))]
    non_members = splits.holdout.iloc[np.sort(rng.choice(len(splits.holdout), n_non, replace=False))]
    records = pd.concat([members, non_members])
    labels = np.concatenate([np.ones(n_mem, dtype=np.int8), np.zeros(n_non, dtype=np.int8)])
    return Targets(records=records, labels=labels)


def choose_dependency_targets(splits: Splits, spec: DatasetSpec, cfg: TargetsConfig, *, value: str | None,
                              min_per_class: int) -> tuple[str, Targets]:
    """Dependency stress test (seed 002): members from one ``source`` value, non-members from the
    others — dependent membership the IID protocol does not see."""
    from privacy_gate.gate.audit import dependency_indices

    value, mem_idx, non_idx = dependency_indices(splits.train[spec.source], splits.holdout[spec.source], value=value)
    n = min(len(mem_idx), len(non_idx), cfg.n_non_members or len(non_idx))
    if n < min_per_class:
        raise InsufficientDataError(
            f"dependency test: only {len(mem_idx)} training records with {spec.source}={value!r} and "
            f"{len(non_idx)} holdout records from other sources; need {min_per_class} of each")
    rng = np.random.default_rng(cfg.seed + 1)
    members = splits.train.iloc[np.sort(rng.choice(mem_idx, n, replace=False))]
    non_members = splits.holdout.iloc[np.sort(rng.choice(non_idx, n, replace=False))]
    labels = np.concatenate([np.ones(n, dtype=np.int8), np.zeros(n, dtype=np.int8)])
    return value, Targets(records=pd.concat([members, non_members]), labels=labels)


@dataclass(frozen=True)
class AttackOutcome:
    name: str
    params: dict[str, Any]
    scores: np.ndarray
    metrics: dict[str, float]
    seconds: float
    extra_scores: dict[str, np.ndarray] = field(default_factory=dict)  # scores of extra target sets


def run_attack(attack: AttackConfig, *, synthetic: pd.DataFrame, splits: Splits, spec: DatasetSpec,
               targets: Targets, generator: str | None = None, generator_params: dict | None = None,
               extra_targets: dict[str, Targets] | None = None, focal_points: tuple | None = None,
               mapper: Any = None) -> AttackOutcome:
    """Fit one attack on the threat model, score the targets (and any extra target sets, e.g. the
    dependency test's, with the same fitted attack), compute the metrics.

    ``focal_points``: what the real generator recorded (only the oracle variant of MAMA-MIA reads
    them); ``mapper``: how an attack with independent sub-runs (MAMA-MIA's shadow runs) maps them
    — the flow passes one that runs them as Prefect tasks."""
    from privacy_gate.attacks import ThreatModel, create_attack
    from privacy_gate.estimators.metrics import roc_metrics

    start = time.perf_counter()
    threat = ThreatModel(synthetic=synthetic, reference=splits.reference, spec=spec, generator=generator,
                         generator_params=dict(generator_params or {}), n_train=len(splits.train),
                         focal_points=tuple(focal_points) if focal_points else None)
    scorer = create_attack(attack.name, **attack.params)
    if mapper is not None and hasattr(scorer, "mapper_"):
        scorer.mapper_ = mapper
    scorer.fit(threat)
    scores = np.asarray(scorer.score(targets.records), dtype=float)
    extra = {k: np.asarray(scorer.score(t.records), dtype=float) for k, t in (extra_targets or {}).items()}
    metrics = roc_metrics(scores, targets.labels)
    return AttackOutcome(name=attack.key, params=attack.params, scores=scores,
                         metrics={k: float(v) for k, v in metrics.items()}, seconds=time.perf_counter() - start,
                         extra_scores=extra)


def scores_frame(targets: Targets, outcomes: list[AttackOutcome]) -> pd.DataFrame:
    """Per-record scores keyed by row id: no attribute values of the real records."""
    out = pd.DataFrame({"row_id": targets.row_ids, "member": targets.labels})
    for o in outcomes:
        out[f"{o.name}_score"] = o.scores
    return out


@dataclass(frozen=True)
class AuditResult:
    """Subgroup / entity / dependency figures of one gate run, ready for the rules and for logging."""

    metrics: dict[str, float]  # flat, MLflow-named (subgroup/..., <attack>.entity.*, <attack>.dependency.*)
    groups: dict[str, dict[str, float]]  # group label -> "<attack>.<metric>" (what subgroup rules read)
    group_rows: list[dict[str, Any]]  # one row per group and attack, for reports
    warnings: list[Any]  # review-level Checks (e.g. dependency gap)


def audit(outcomes: list[AttackOutcome], targets: Targets, spec: DatasetSpec, cfg: Any,
          dependency: tuple[str, Targets] | None = None, mace: Any = None) -> AuditResult:
    """Per-subgroup metrics (with MACE bounds when ``mace`` settings are given), set-level
    (entity) metrics and the dependency stress test."""
    from privacy_gate import tracking
    from privacy_gate.errors import InsufficientDataError
    from privacy_gate.estimators.mace_gate import mace_group_metrics
    from privacy_gate.estimators.metrics import roc_metrics
    from privacy_gate.gate import Check
    from privacy_gate.gate.audit import audit_subgroups, entity_scores, subgroup_groups

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
            metrics[tracking.subgroup_metric(r.group.columns, r.group.values, key)] = value
        for o in outcomes:
            rows.append({"group": r.label, "attack": o.name, "n_members": r.group.n_members,
                         "n_non_members": r.group.n_non_members,
                         **{k.split(".", 1)[1]: v for k, v in r.metrics.items() if k.startswith(o.name + ".")}})
    if spec.entity_id is not None:
        ent_labels, ent_scores = entity_scores(targets.records[spec.entity_id].to_numpy(), targets.labels, scores)
        for attack, s in ent_scores.items():
            metrics.update({tracking.entity_metric(attack, k): float(v) for k, v in roc_metrics(s, ent_labels).items()})
    warnings = []
    if dependency is not None:
        value, dep_targets = dependency
        for o in outcomes:
            dep = roc_metrics(o.extra_scores["dependency"], dep_targets.labels)
            metrics.update({tracking.dependency_metric(o.name, k): float(v) for k, v in dep.items()})
            gap = dep["auc"] - o.metrics["auc"]
            if gap > cfg.dependency_max_auc_gap:
                warnings.append(Check(
                    rule=f"dependency AUC gap <= {cfg.dependency_max_auc_gap:g}", metric=tracking.dependency_metric(o.name, "auc"),
                    observed=float(gap), threshold=cfg.dependency_max_auc_gap, bound="max", action="review", passed=False,
                    message=(f"{o.name}: AUC {dep['auc']:.3f} when members come from {spec.source}={value!r} vs "
                             f"{o.metrics['auc']:.3f} IID (gap {gap:.3f}); dependent records make this release "
                             "leakier than the IID figures and any DP bound suggest")))
    return AuditResult(metrics=metrics, groups={r.label: r.metrics for r in results}, group_rows=rows,
                       warnings=warnings)


#: Attack metrics where a larger value means more leakage: the strongest attack is the max.
LEAKAGE_METRICS = ("auc", "tpr_at_fpr_0.01", "tpr_at_fpr_0.001", "advantage")


def strongest(outcomes: list[AttackOutcome]) -> dict[str, tuple[float, str]]:
    """Per metric, the worst case across attacks and which attack reached it: a gate is only as
    strong as the strongest attack it runs."""
    out: dict[str, tuple[float, str]] = {}
    for metric in LEAKAGE_METRICS:
        values = [(o.metrics[metric], o.name) for o in outcomes if metric in o.metrics]
        if values:
            out[metric] = max(values)
    return out


def splits_from_files(parts: dict[str, pd.DataFrame]) -> Splits:
    """Gate-only mode: train / holdout / reference come as separate files. Row ids are positions
    in train, then holdout, then reference, so per-record results stay uniquely keyed."""
    offset = 0
    out = {}
    for name in ("train", "holdout", "reference"):
        df = parts[name]
        out[name] = df.set_axis(pd.RangeIndex(offset, offset + len(df)), axis=0)
        offset += len(df)
    return Splits(**out)
