"""The effect size of each flagged group, worked out once in the gate run and recorded in the
verdict (``Verdict.group_effects``) so that every surface (report, MLflow, ``review``, Prefect)
shows the same figures.

Per flagged group (at most :data:`MAX_EFFECTS`, the group the evidence points at first):

- its member and non-member targets;
- the strongest gated attack inside the group (its members vs its non-members) and that attack's
  AUC with a 95% interval: Hanley & McNeil's normal approximation from the two counts, or, where
  that collapses to a point (AUC 0 or 1: a small group separated perfectly), Wilson's score
  interval for the AUC as a proportion of the smaller count
  (:func:`privacy_gate.words.evidence.auc_interval`, the interval the report's subgroup table
  shows); worked out for every flagged group, whatever ``audit.min_group_size`` (a group below it
  gets no point estimates in the audit table, and its flag is exactly what a reviewer must read);
- that attack's share of the group's members caught at 1% false alarms among the group's
  non-members (the conservative ROC reading of :func:`~privacy_gate.estimators.metrics.roc_metrics`:
  with fewer than 100 non-members no false alarm at all), with Wilson's 95% interval over the
  members (the threshold, set on the non-members, taken as given);
- the records named exposed that are the group's, out of all named: the member targets the
  exposure stage named, the training records the member scan named, and the training records in
  the scan's top set (its label-blind highest scores), each by row id against the group's rows;
- its Holm-adjusted rank-test p-value and the number of groups the correction was over.

Counts and figures only: no record value, no row id (group labels are the audit's, already
public or hashed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.errors import InsufficientDataError
from privacy_gate.estimators.disclosure import wilson_interval
from privacy_gate.estimators.metrics import roc_metrics
from privacy_gate.experiment.grouping import group_mask
from privacy_gate.gate.verdict import Verdict
from privacy_gate.names import MAX_GROUP_ROCS, group_test_metric
from privacy_gate.words.evidence import auc_interval, hanley_mcneil_interval

#: The fields of a gate run's state the effects read (``gated`` through ``settings`` and
#: ``outcomes``); ``exposure`` and ``scan`` may be None (the scan is opt-in), and are then left out
READS = ("targets", "inputs", "settings", "outcomes", "exposure", "scan", "audit")
#: flagged groups whose effect size is worked out (as many as the report draws ROC curves for)
MAX_EFFECTS = MAX_GROUP_ROCS
#: the false-alarm rate the members caught are read at
FPR_LEVEL = 0.01


def _ordered(verdict: Verdict) -> list[str]:
    """The flagged groups, the one the evidence points at first, at most :data:`MAX_EFFECTS`."""
    flagged = list(verdict.flagged_subgroups)
    if verdict.points_at in flagged:
        flagged.remove(verdict.points_at)
        flagged.insert(0, verdict.points_at)
    return flagged[:MAX_EFFECTS]


def _strongest(
    outcomes: Sequence[Any], mask: np.ndarray, labels: np.ndarray
) -> dict[str, Any] | None:
    """The attack with the highest AUC inside the group, its ROC figures and intervals."""
    best: dict[str, Any] | None = None
    y = labels[mask]
    for o in outcomes:
        scores = np.asarray(o.scores, float)[mask]
        try:
            m = roc_metrics(scores, y)
        except InsufficientDataError:  # one class only inside the group
            return None
        if best is None or m["auc"] > best["auc"]:
            best = {"attack": o.name, **m}
    if best is None:
        return None
    n_m, n_n = int(best.pop("n_members")), int(best.pop("n_non_members"))
    lo, hi = auc_interval(best["auc"], n_m, n_n)
    collapsed = hanley_mcneil_interval(best["auc"], n_m, n_n)
    caught = int(round(best["tpr_at_fpr_0.01"] * n_m))
    t_lo, t_hi = wilson_interval(caught, n_m, alpha=0.05)
    return {
        "attack": best["attack"],
        "auc": float(best["auc"]),
        "auc_lower": lo,
        "auc_upper": hi,
        "auc_interval": "wilson" if collapsed[0] == collapsed[1] else "hanley-mcneil",
        "tpr": float(best["tpr_at_fpr_0.01"]),
        "tpr_lower": t_lo,
        "tpr_upper": t_hi,
        "caught": caught,
        "false_alarms_allowed": int(np.floor(FPR_LEVEL * n_n + 1e-9)),
    }


def _named(ids: np.ndarray, rows: pd.Index) -> int:
    return int(pd.Index(ids).isin(rows).sum())


def group_effect(state: Any, group: str, *, p_adjusted: float | None = None) -> dict[str, Any]:
    """The effect record of one flagged ``group`` (see the module docstring)."""
    targets, key = state.targets, state.inputs.label_key
    labels = np.asarray(targets.labels).astype(int)
    mask = group_mask(targets.records, group, key=key)
    out: dict[str, Any] = {
        "members": int(labels[mask].sum()),
        "non_members": int((labels[mask] == 0).sum()),
    }
    gated = list(state.gated) or list(state.outcomes)
    strongest = _strongest(gated, mask, labels) if out["members"] and out["non_members"] else None
    if strongest is not None:
        out.update(strongest)
    if p_adjusted is not None:
        out["p_adjusted"] = float(p_adjusted)
    train = state.inputs.splits.train
    rows = train.index[group_mask(train, group, key=key)]
    out["training_records"] = int(len(rows))
    exposure, scan = getattr(state, "exposure", None), getattr(state, "scan", None)
    both: set[Any] = set()
    if exposure is not None:
        named = exposure.discoveries
        both.update(named.tolist())
        out.update(exposed_targets=_named(named, rows), exposed_targets_all=int(len(named)))
    if scan is not None:
        named, top = scan.discoveries, scan.records.loc[scan.records["in_top"], "row_id"].to_numpy()
        both.update(named.tolist())
        out.update(
            scan_named=_named(named, rows),
            scan_named_all=int(len(named)),
            top_members=_named(top, rows),
            top_members_all=int(len(top)),
        )
    if exposure is not None or scan is not None:  # a record named by both counts once
        out.update(named=_named(np.array(sorted(both)), rows), named_all=len(both))
    return out


def group_effects(state: Any, verdict: Verdict) -> dict[str, dict[str, Any]]:
    """The effect record of each flagged group of ``verdict`` (at most :data:`MAX_EFFECTS`, the
    group the evidence points at first); a group the targets cannot resolve is left out."""
    groups = getattr(state.audit, "groups", {}) or {}
    out: dict[str, dict[str, Any]] = {}
    for group in _ordered(verdict):
        p = (groups.get(group) or {}).get(group_test_metric("p_adjusted"))
        try:
            out[group] = {**group_effect(state, group, p_adjusted=p), "groups_audited": len(groups)}
        except (KeyError, ValueError):  # a label the data cannot resolve: no figures to show
            continue
    return out


__all__ = ["FPR_LEVEL", "MAX_EFFECTS", "READS", "group_effect", "group_effects"]
