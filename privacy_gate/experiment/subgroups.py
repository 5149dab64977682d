"""Who is at risk, measured: the attack metrics again per subgroup, the subgroups' rank tests, the
entity (set-level) metrics, the dependency stress test and the source shift (see
:mod:`privacy_gate.experiment.grouping` for the grouping rules,
:mod:`privacy_gate.estimators.group_tests` for the tests). Numbers only: what they mean for the
release is the gate's to say (:func:`privacy_gate.gate.findings.dependency_findings`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.config import AuditConfig, MaceConfig
from privacy_gate.errors import InsufficientDataError
from privacy_gate.estimators.group_tests import RankedScores, group_pvalue, holm_adjust
from privacy_gate.estimators.mace.dp import dp_advantage_bound
from privacy_gate.estimators.mace.queries import mace_group_metrics
from privacy_gate.estimators.metrics import roc_metrics
from privacy_gate.experiment.attack_runs import AttackOutcome
from privacy_gate.experiment.dependency import SourceShift, dependence_note
from privacy_gate.experiment.grouping import (
    RARE_SEPARATOR,
    audit_subgroups,
    audited_columns,
    entity_scores,
    group_mask,
    rare_value_groups,
    subgroup_groups,
)
from privacy_gate.experiment.targets import Targets
from privacy_gate.label_key import LabelKey
from privacy_gate.names import (
    dependency_figure,
    dependency_metric,
    entity_metric,
    exposure_metric,
    group_test_metric,
    subgroup_metric,
)
from privacy_gate.spec import DatasetSpec


@dataclass(frozen=True)
class DependencyGap:
    """One attack's AUC with members from one source (``dependency_auc``) vs the IID protocol's."""

    attack: str
    dependency_auc: float
    iid_auc: float


@dataclass(frozen=True)
class DependencyExcess:
    """The largest MACE lower bound on the dependency targets (``attack``'s) and the IID DP bound of
    an ``epsilon``-DP release it is compared with."""

    attack: str
    lower: float
    bound: float
    epsilon: float


@dataclass(frozen=True)
class DependencyMeasurement:
    """The dependency stress test of one run: members from ``source`` = ``value``."""

    source: str
    value: str
    gaps: tuple[DependencyGap, ...]
    excess: DependencyExcess | None = None


@dataclass(frozen=True)
class AuditResult:
    """Subgroup / entity / dependency figures of one gate run, ready for the rules and for
    logging."""

    metrics: dict[
        str, float
    ]  # flat, MLflow-named (subgroup/..., <attack>.entity.*, <attack>.dependency.*)
    groups: dict[
        str, dict[str, float]
    ]  # group label -> "<attack>.<metric>" / "membership_test.*" (rules)
    group_rows: list[dict[str, Any]]  # one row per group and attack, for reports
    notes: list[str] = field(default_factory=list)  # what was audited by default, what was skipped
    dependency: DependencyMeasurement | None = None  # the dependency stress test, when run
    # group label -> its mask over the targets (per-group ROC curves of flagged groups); not logged
    masks: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)


#: the family-wise level the default subgroup rule reads (``membership_test.p_adjusted >= 0.01``):
#: a rare value is tested alone only when its exact test could reach it after Holm
RARE_ALPHA = 0.01


def _categorical(spec: DatasetSpec) -> list[str]:
    return [c for c, col in spec.columns.items() if not col.is_numeric and c != spec.entity_id]


def audit(
    outcomes: Sequence[AttackOutcome],
    targets: Targets,
    spec: DatasetSpec,
    cfg: AuditConfig,
    dependency: tuple[str, Targets] | None = None,
    mace: MaceConfig | None = None,
    gated: Sequence[str] | None = None,
    exposed: np.ndarray | None = None,
    shift: SourceShift | None = None,
    epsilon: float | None = None,
    rare: dict[str, list[str]] | None = None,
    public: Mapping[str, frozenset[str]] | None = None,
    label_key: LabelKey | None = None,
    scan_named: tuple[pd.DataFrame, np.ndarray] | None = None,
) -> AuditResult:
    """Per-subgroup metrics (with MACE bounds when ``mace`` settings are given) for groups large
    enough, the rank test of every group over the ``gated`` attacks (Holm-adjusted across all
    groups), the exposed records inside each group (``exposed``: a mask over the targets),
    set-level (entity) metrics, the dependency stress test (with MACE bounds compared with the
    IID DP bound of an ``epsilon``-DP release), the train-vs-reference ``shift`` of sources, and
    the rare-values family (``rare``: per categorical column, the values fewer than
    ``cfg.rare_value_max_count`` training rows hold). ``public``: per column, the values a group
    label may show (:func:`~privacy_gate.experiment.grouping.label_values`); others are hashed
    with ``label_key``. Without it, the spec's declared categories are shown and every other value
    is hashed. ``scan_named``: the training split and the row ids the member scan named; each
    group's row then says how many of them are its (``scan_named``, for the report)."""

    def group_metrics(s: np.ndarray, y: np.ndarray) -> dict[str, float]:
        out = dict(roc_metrics(s, y))
        if mace is not None:
            try:
                out.update(mace_group_metrics(s, y, prior=mace.prior, delta=mace.delta))
            except InsufficientDataError:  # a group this small gets ROC figures only
                pass
        return out

    scores = {o.name: o.scores for o in outcomes}
    gated_names = list(scores) if gated is None else [g for g in gated if g in scores]
    metrics: dict[str, float] = {}
    audited, notes = audited_columns(
        targets.records, subgroups=spec.subgroups, categorical=_categorical(spec)
    )
    columns = [[c] for c in audited] + [list(c) for c in cfg.intersections]
    if public is None:
        public = {c: frozenset(map(str, col.categories or ())) for c, col in spec.columns.items()}
    groups = subgroup_groups(
        targets.records, targets.labels, columns=columns, public=public, key=label_key
    )
    if rare:
        known = {g.label for g in groups}
        extra = rare_value_groups(
            targets.records,
            targets.labels,
            rare,
            public=public,
            alpha=RARE_ALPHA,
            family_size=len(groups) + len(rare),
            separate=audited,
            key=label_key,
        )
        groups += [g for g in extra if g.label not in known]
        pooled = [g for g in extra if RARE_SEPARATOR in g.values[0]]
        if extra:
            pooled_text = ", ".join(
                f"{g.columns[0]}: {g.values[0].count(RARE_SEPARATOR) + 1} values" for g in pooled
            )
            notes.append(
                f"rare values (held by fewer than {cfg.rare_value_max_count} training rows) "
                f"audited in {len(rare)} column(s): {len(extra) - len(pooled)} alone, "
                f"{len(pooled)} pooled group(s) ({pooled_text})"
            )
    results = audit_subgroups(
        groups, targets.labels, scores, group_metrics, min_group_size=cfg.min_group_size
    )
    gated_scores = {a: scores[a] for a in gated_names}
    ranked = RankedScores.of(gated_scores) if gated_scores else None
    entities = None if spec.entity_id is None else targets.records[spec.entity_id].to_numpy()
    tests = [
        group_pvalue(gated_scores, g.mask, targets.labels, seed=i, ranked=ranked, entities=entities)
        for i, g in enumerate(groups)
    ]
    adjusted = holm_adjust(np.array([p for p, _ in tests]))
    rows = []
    for r, (p, attack), p_adj in zip(results, tests, adjusted):
        r.metrics.update(
            {
                group_test_metric("p_value"): p,
                group_test_metric("p_adjusted"): float(p_adj),
                "n_members": float(r.group.n_members),
                "n_non_members": float(r.group.n_non_members),
            }
        )
        if exposed is not None:
            r.metrics[exposure_metric("count")] = float(np.sum(np.asarray(exposed)[r.group.mask]))
        for key, value in r.metrics.items():
            metrics[subgroup_metric(r.group.columns, r.group.values, key)] = value
        common = {
            "group": r.label,
            "n_members": r.group.n_members,
            "n_non_members": r.group.n_non_members,
            "test_p_value": p,
            "test_p_adjusted": float(p_adj),
            "test_attack": attack,
            "exposed": r.metrics.get(exposure_metric("count")),
        }
        if scan_named is not None:
            common["scan_named"] = _named_in(scan_named, r.label, label_key)
        for o in outcomes:
            rows.append(
                {
                    **common,
                    "attack": o.name,
                    **{
                        k.split(".", 1)[1]: v
                        for k, v in r.metrics.items()
                        if k.startswith(o.name + ".")
                    },
                }
            )
    if spec.entity_id is not None:
        ent_labels, ent_scores = entity_scores(
            targets.records[spec.entity_id].to_numpy(), targets.labels, scores
        )
        for attack, s in ent_scores.items():
            metrics.update(
                {entity_metric(attack, k): float(v) for k, v in roc_metrics(s, ent_labels).items()}
            )
    measured = None
    bound = None if epsilon is None or mace is None else dp_advantage_bound(epsilon, mace.prior)
    if shift is not None:
        metrics.update(
            {
                dependency_figure("source_shift_pvalue"): shift.pvalue,
                dependency_figure("source_tv"): shift.tv,
                dependency_figure("plausibly_dependent"): float(
                    shift.dependent(cfg.dependency_alpha)
                ),
            }
        )
        notes.append(
            dependence_note(
                shift,
                source=str(spec.source),
                alpha=cfg.dependency_alpha,
                epsilon=epsilon,
                dp_bound=bound,
            )
        )
    if dependency is not None:
        dep_value, dep_targets = dependency
        gaps = []
        for o in outcomes:
            dep = roc_metrics(o.extra_scores["dependency"], dep_targets.labels)
            metrics.update({dependency_metric(o.name, k): float(v) for k, v in dep.items()})
            gaps.append(
                DependencyGap(
                    o.name, dependency_auc=float(dep["auc"]), iid_auc=float(o.metrics["auc"])
                )
            )
        excess = None
        if mace is not None:
            excess = _dependency_vs_dp(
                outcomes,
                gated_names,
                dep_targets.labels,
                metrics,
                mace=mace,
                bound=bound,
                epsilon=epsilon,
            )
        measured = DependencyMeasurement(
            source=str(spec.source), value=dep_value, gaps=tuple(gaps), excess=excess
        )
    return AuditResult(
        metrics=metrics,
        groups={r.label: r.metrics for r in results},
        group_rows=rows,
        notes=notes,
        dependency=measured,
        masks={g.label: g.mask for g in groups},
    )


def _named_in(
    scan_named: tuple[pd.DataFrame, np.ndarray], label: str, key: LabelKey | None
) -> int | None:
    """How many of the row ids the member scan named are training records of the group ``label``."""
    train, named = scan_named
    try:
        rows = train.index[group_mask(train, label, key=key)]
    except (KeyError, ValueError):  # a label the training split cannot resolve
        return None
    return int(pd.Index(named).isin(rows).sum())


def _dependency_vs_dp(
    outcomes: Sequence[AttackOutcome],
    gated: Sequence[str],
    labels: np.ndarray,
    metrics: dict[str, float],
    *,
    mace: MaceConfig,
    bound: float | None,
    epsilon: float | None,
) -> DependencyExcess | None:
    """MACE bounds on the dependency targets, at delta / k over the k gated attacks (so the largest
    lower bound is a valid bound on the strongest); for a DP release, their excess over the IID DP
    bound (``dependency.dp_bound_excess``; the gate reviews a positive one)."""
    lowers: dict[str, float] = {}
    for o in outcomes:
        if o.name not in gated:
            continue
        try:
            m = mace_group_metrics(
                o.extra_scores["dependency"],
                labels,
                prior=mace.prior,
                delta=mace.delta / max(1, len(gated)),
            )
        except InsufficientDataError:
            continue
        metrics.update({dependency_metric(o.name, k): v for k, v in m.items()})
        lowers[o.name] = m["mace.advantage_lower"]
    if bound is None or epsilon is None or not lowers:  # bound: None without epsilon
        return None
    attack = max(lowers, key=lowers.__getitem__)
    metrics[dependency_figure("dp_bound_excess")] = lowers[attack] - bound
    return DependencyExcess(attack, lower=lowers[attack], bound=bound, epsilon=float(epsilon))
