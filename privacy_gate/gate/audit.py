"""Who is at risk: attack metrics per subgroup, per entity (set level), and under dependency.

- Subgroups (DOMIAS §5.3, MACE §9.3: minorities and outliers carry the highest risk): every attack
  metric again on the targets of each value of each audited column and of configured
  intersections. Groups with fewer than ``min_group_size`` targets in either class are merged into
  "other" and never named; if "other" is still too small it is not reported at all.
- Entities: an entity is a member if its records were in train; its score is the mean score of its
  target records (set-level membership inference).
- Dependency stress test (Humphries et al.): members from one value of the ``source`` column, non-members
  from the others. Dependent (non-IID) membership can make attacks look far stronger than the IID
  protocol suggests; a large gap is a warning.

>>> import numpy as np, pandas as pd
>>> t = pd.DataFrame({"g": ["a"] * 6 + ["b"] * 2})
>>> y = np.array([1, 1, 1, 0, 0, 0, 1, 0])
>>> [(g.label, g.n_members) for g in subgroup_groups(t, y, columns=[["g"]], min_group_size=2)]
[('g=a', 3)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

OTHER = "other"
MISSING = "(missing)"


@dataclass(frozen=True)
class Group:
    """Targets of one subgroup: ``columns`` audited together, the group's ``values`` (or other)."""

    columns: tuple[str, ...]
    values: tuple[str, ...]
    mask: np.ndarray = field(repr=False, compare=False)
    n_members: int = 0
    n_non_members: int = 0

    @property
    def label(self) -> str:
        """Human label, also the ``--suppress`` syntax: ``race=Black`` or ``sex=Female&race=Black``."""
        if self.values == (OTHER,):
            return "&".join(self.columns) + f"={OTHER}"
        return "&".join(f"{c}={v}" for c, v in zip(self.columns, self.values))

    @property
    def is_other(self) -> bool:
        return self.values == (OTHER,)


@dataclass(frozen=True)
class GroupResult:
    group: Group
    metrics: dict[str, float]  # "<attack>.<metric>"

    @property
    def label(self) -> str:
        return self.group.label


def _value_strings(targets: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    parts = [targets[c].astype(object).where(targets[c].notna(), MISSING).astype(str) for c in columns]
    out = parts[0]
    for p in parts[1:]:
        out = out + "\x1f" + p
    return out.reset_index(drop=True)


def subgroup_groups(targets: pd.DataFrame, labels: np.ndarray, *, columns: Sequence[Sequence[str]],
                    min_group_size: int) -> list[Group]:
    """Groups per audited column (or intersection); small groups merged into "other"."""
    labels = np.asarray(labels).astype(bool)
    groups: list[Group] = []
    for cols in columns:
        cols = tuple(cols)
        keys = _value_strings(targets, cols).to_numpy()
        small = np.zeros(len(keys), dtype=bool)
        for key in sorted(set(keys)):
            mask = keys == key
            n_mem, n_non = int((mask & labels).sum()), int((mask & ~labels).sum())
            if min(n_mem, n_non) >= min_group_size:
                groups.append(Group(cols, tuple(key.split("\x1f")), mask, n_mem, n_non))
            else:
                small |= mask
        n_mem, n_non = int((small & labels).sum()), int((small & ~labels).sum())
        if small.any() and min(n_mem, n_non) >= min_group_size:
            groups.append(Group(cols, (OTHER,), small, n_mem, n_non))
    return groups


def audit_subgroups(groups: Sequence[Group], labels: np.ndarray, scores: Mapping[str, np.ndarray],
                    metric_fn: Callable[[np.ndarray, np.ndarray], Mapping[str, float]]) -> list[GroupResult]:
    """``metric_fn(scores, labels)`` per attack on each group's targets."""
    labels = np.asarray(labels)
    results = []
    for g in groups:
        metrics: dict[str, float] = {}
        for attack, s in scores.items():
            for k, v in metric_fn(np.asarray(s)[g.mask], labels[g.mask]).items():
                metrics[f"{attack}.{k}"] = float(v)
        results.append(GroupResult(group=g, metrics=metrics))
    return results


def parse_group_label(label: str) -> dict[str, str]:
    """``"sex=Female&race=Black"`` -> ``{"sex": "Female", "race": "Black"}`` (for ``--suppress``)."""
    out = {}
    for part in label.split("&"):
        col, sep, value = part.partition("=")
        if not sep or not col or not value:
            raise ValueError(f"subgroup '{label}' must look like column=value or col1=v1&col2=v2")
        out[col.strip()] = value.strip()
    return out


def group_mask(df: pd.DataFrame, label: str) -> np.ndarray:
    """Rows of ``df`` in the subgroup named by ``label`` (a named group, not "other")."""
    conditions = parse_group_label(label)
    if OTHER in conditions.values():
        raise ValueError(f"subgroup '{label}' merges small groups and cannot be selected by name")
    mask = np.ones(len(df), dtype=bool)
    for col, value in conditions.items():
        if col not in df.columns:
            raise KeyError(col)
        mask &= _value_strings(df, [col]).to_numpy() == value
    return mask


# ------------------------------------------------------------------------------------ entities


def entity_scores(entity_ids: np.ndarray, labels: np.ndarray, scores: Mapping[str, np.ndarray]
                  ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Set-level view: one label and one score (mean of its records' scores) per entity."""
    codes, uniques = pd.factorize(pd.Series(entity_ids), sort=True)
    counts = np.bincount(codes)
    labels = np.asarray(labels, dtype=float)
    ent_labels = np.bincount(codes, weights=labels) / counts
    if not np.all((ent_labels == 0) | (ent_labels == 1)):
        raise ValueError("an entity has both member and non-member records: the split did not keep entities whole")
    return ent_labels.astype(np.int8), {a: np.bincount(codes, weights=np.asarray(s, float)) / counts
                                        for a, s in scores.items()}


# --------------------------------------------------------------------------- dependency test


def dependency_indices(member_sources: pd.Series, non_member_sources: pd.Series, *, value: str | None
                       ) -> tuple[str, np.ndarray, np.ndarray]:
    """Members from one source value (default: the most frequent among candidate members),
    non-members from the other values. Returns (value, member positions, non-member positions)."""
    m = member_sources.astype(object).where(member_sources.notna(), MISSING).astype(str).to_numpy()
    n = non_member_sources.astype(object).where(non_member_sources.notna(), MISSING).astype(str).to_numpy()
    if value is None:
        vals, counts = np.unique(m, return_counts=True)
        value = str(vals[np.argmax(counts)])
    return value, np.flatnonzero(m == value), np.flatnonzero(n != value)
