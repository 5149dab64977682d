"""Who is at risk: the subgroups and entities of the targets, and the attack metrics per group.

- Subgroups (DOMIAS §5.3, MACE §9.3: minorities and outliers carry the highest risk): each value
  of each audited column and of configured intersections is its own group, however small — a
  small group is never merged away. Every group gets the rank test of
  :mod:`privacy_gate.estimators.group_tests`; groups with at least ``min_group_size`` targets in
  each class also get the attack metrics (point estimates need that many to mean anything).
  Group labels are built from column and category names, never from other record values.
- Rare values (:func:`rare_value_groups`): the records carrying category values that fewer than
  ``audit.rare_value_max_count`` training rows hold, in any categorical column — a value alone
  where it has the power to be flagged, pooled per column where it does not — in the same Holm
  family as the other groups. Named by the spec's public category names, or by a keyed hash
  (:class:`~privacy_gate.label_key.LabelKey`: HMAC with the store's secret, so a list of guesses
  cannot reverse it).
- Entities: an entity is a member if its records were in train; its score is the mean score of its
  target records (set-level membership inference).

Dependent training data (the dependency stress test, the source shift) is measured in
:mod:`privacy_gate.experiment.dependency`.

>>> import numpy as np, pandas as pd
>>> t = pd.DataFrame({"g": ["a"] * 6 + ["b"] * 2})
>>> y = np.array([1, 1, 1, 0, 0, 0, 1, 0])
>>> [(g.label, g.n_members, g.estimable(2)) for g in subgroup_groups(t, y, columns=[["g"]])]
[('g=a', 3, True), ('g=b', 1, False)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pandas as pd

from privacy_gate.label_key import LabelKey

MISSING = "(missing)"


@dataclass(frozen=True)
class Group:
    """Targets of one subgroup: ``columns`` audited together and the group's ``values``."""

    columns: tuple[str, ...]
    values: tuple[str, ...]
    mask: np.ndarray = field(repr=False, compare=False)
    n_members: int = 0
    n_non_members: int = 0

    @property
    def label(self) -> str:
        """Human label (values from :func:`label_values` or keyed hashes), also the ``--suppress``
        syntax: ``race=Black`` or ``sex=Female&race=Black``."""
        return "&".join(f"{c}={v}" for c, v in zip(self.columns, self.values))

    def estimable(self, min_group_size: int) -> bool:
        """Enough targets in each class for point estimates (AUC, TPR, MACE) to mean something."""
        return min(self.n_members, self.n_non_members) >= min_group_size


@dataclass(frozen=True)
class GroupResult:
    group: Group
    metrics: dict[str, float]  # "<attack>.<metric>"

    @property
    def label(self) -> str:
        return self.group.label


def value_labels(values: pd.Series) -> pd.Series:
    """A column's values as strings, missing ones as :data:`MISSING`: the one convention for
    naming groups and sources."""
    return values.astype(object).where(values.notna(), MISSING).astype(str)


def most_frequent(values: pd.Series) -> str:
    """The most frequent value label (ties: the first in sorted order)."""
    vals, counts = np.unique(value_labels(values).to_numpy(), return_counts=True)
    return str(vals[np.argmax(counts)])


def _value_strings(targets: pd.DataFrame, columns: Sequence[str]) -> pd.Series:
    parts = [value_labels(targets[c]) for c in columns]
    out = parts[0]
    for p in parts[1:]:
        out = out + "\x1f" + p
    return out.reset_index(drop=True)


def subgroup_groups(
    targets: pd.DataFrame,
    labels: np.ndarray,
    *,
    columns: Sequence[Sequence[str]],
    public: Mapping[str, frozenset[str] | None] | None = None,
    key: LabelKey | None = None,
) -> list[Group]:
    """One group per value of each audited column (or intersection) present among the targets.
    ``public``: per column, the values a label may show (:func:`label_values`); others are hashed
    with ``key`` (:func:`value_token`). Without it every value is shown (for data with no private
    values)."""
    labels = np.asarray(labels).astype(bool)
    groups: list[Group] = []
    for cols in columns:
        cols = tuple(cols)
        joined = _value_strings(targets, cols).to_numpy()
        for combo in sorted(set(joined)):
            mask = joined == combo
            values = combo.split("\x1f")
            if public is not None:
                values = [value_token(v, public.get(c), key=key) for c, v in zip(cols, values)]
            groups.append(
                Group(
                    cols,
                    tuple(values),
                    mask,
                    int((mask & labels).sum()),
                    int((mask & ~labels).sum()),
                )
            )
    return groups


def label_values(
    columns: Sequence[str],
    declared: Mapping[str, Sequence[object] | None],
    outside_train: Sequence[pd.DataFrame],
    *,
    min_count: int,
) -> dict[str, frozenset[str]]:
    """Per column, the category values a group label may show: the spec's declared categories
    (public knowledge) and the values at least ``min_count`` records outside the training split
    (holdout, reference) hold — common in the population, so naming one names no person. Every
    other value (say one only a training record holds) is a record value and is hashed.

    >>> h = pd.DataFrame({"c": ["a"] * 10 + ["b"] * 3})
    >>> sorted(label_values(["c"], {"c": None}, [h], min_count=10)["c"])
    ['a']
    >>> sorted(label_values(["c"], {"c": ["z"]}, [h], min_count=10)["c"])
    ['a', 'z']
    """
    out: dict[str, frozenset[str]] = {}
    for col in columns:
        counts: pd.Series | None = None
        for frame in outside_train:
            if col in frame.columns and len(frame):
                c = value_labels(frame[col]).value_counts()
                counts = c if counts is None else counts.add(c, fill_value=0)
        common = (
            {str(v) for v, n in counts.items() if n >= min_count} if counts is not None else set()
        )
        out[col] = frozenset(common | {str(v) for v in (declared.get(col) or ())})
    return out


#: A column with more distinct values than this is an identifier, not a grouping: audited only
#: when the spec names it in ``subgroups``.
MAX_DEFAULT_GROUPS = 100


def audited_columns(
    targets: pd.DataFrame, *, subgroups: Sequence[str], categorical: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The spec's ``subgroups``, or every categorical column when it names none. Returns the
    columns and notes for the report (what was audited by default, what was skipped and why)."""
    if subgroups:
        return list(subgroups), []
    chosen, notes = [], []
    for col in categorical:
        n = int(targets[col].nunique(dropna=False))
        if n > MAX_DEFAULT_GROUPS:
            notes.append(
                f"column '{col}' not audited by default: {n} distinct values (name it in the "
                "spec's "
                "subgroups to audit it)"
            )
        else:
            chosen.append(col)
    notes.insert(
        0,
        "the spec names no subgroups: every categorical column is audited "
        f"({', '.join(chosen) or 'none'})",
    )
    return chosen, notes


def audit_subgroups(
    groups: Sequence[Group],
    labels: np.ndarray,
    scores: Mapping[str, np.ndarray],
    metric_fn: Callable[[np.ndarray, np.ndarray], Mapping[str, float]],
    *,
    min_group_size: int,
) -> list[GroupResult]:
    """``metric_fn(scores, labels)`` per attack on the targets of each group large enough for
    point estimates; smaller groups get an empty metrics dict (their rank test is added later)."""
    labels = np.asarray(labels)
    results = []
    for g in groups:
        metrics: dict[str, float] = {}
        if g.estimable(min_group_size):
            for attack, s in scores.items():
                for k, v in metric_fn(np.asarray(s)[g.mask], labels[g.mask]).items():
                    metrics[f"{attack}.{k}"] = float(v)
        results.append(GroupResult(group=g, metrics=metrics))
    return results


# ------------------------------------------------------------------------------- rare values

#: joins the values of a pooled rare-values group in its label: ``native_country=Cambodia|Laos``
RARE_SEPARATOR = "|"


def value_token(value: str, public: frozenset[str] | None, *, key: LabelKey | None) -> str:
    """How a value appears in a group label: itself when it is public (:func:`label_values`), else
    its keyed hash (``key.token``) — a value held by a handful of training rows is a record value,
    and an unkeyed hash of it is reversed by hashing guesses. No key to hash with: ValueError.

    >>> key = LabelKey(bytes(32))
    >>> value_token("Laos", frozenset({"Laos"}), key=key), value_token("Jane Roe", None, key=key)
    ('Laos', '#b3a2308657')
    """
    if public is not None and value in public:
        return value
    if key is None:
        raise ValueError(
            "a group label holding a record value is hashed with the store's label key, and none "
            "was given"
        )
    return key.token(value)


def rare_values(
    train: pd.DataFrame, columns: Sequence[str], *, max_count: int
) -> dict[str, list[str]]:
    """Per column, the values fewer than ``max_count`` training rows hold (sorted). Derived from the
    training split: which values are rare stays with the evaluator; only public value names (or
    hashes) are ever written out."""
    out = {}
    for col in columns:
        counts = value_labels(train[col]).value_counts()
        rare = sorted(str(v) for v, n in counts.items() if n < max_count)
        if rare:
            out[col] = rare
    return out


def rare_value_groups(
    targets: pd.DataFrame,
    labels: np.ndarray,
    rare: Mapping[str, Sequence[str]],
    *,
    public: Mapping[str, frozenset[str] | None],
    alpha: float,
    family_size: int,
    separate: Sequence[str] = (),
    key: LabelKey | None = None,
) -> list[Group]:
    """The rare-values family: per column, each rare value with power to be flagged on its own (the
    smallest p-value its exact rank test can reach, ``1 / C(n1 + n0, n1)``, is below ``alpha /
    family_size``) is its own group, unless its column is already audited per value (``separate``);
    the other rare values of the column form one pooled group (``col=v1|v2|...``)."""
    from math import comb

    labels = np.asarray(labels).astype(bool)
    groups: list[Group] = []
    for col, values in rare.items():
        keys = value_labels(targets[col]).to_numpy()
        pooled = []
        for v in values:
            mask = keys == v
            n1, n0 = int((mask & labels).sum()), int((mask & ~labels).sum())
            if n1 == 0 and n0 == 0:
                continue
            if (
                col not in separate
                and n1
                and n0
                and 1.0 / comb(n1 + n0, n1) <= alpha / max(1, family_size)
            ):
                groups.append(
                    Group((col,), (value_token(v, public.get(col), key=key),), mask, n1, n0)
                )
            else:
                pooled.append(v)
        if pooled:
            mask = np.isin(keys, pooled)
            token = RARE_SEPARATOR.join(value_token(v, public.get(col), key=key) for v in pooled)
            groups.append(
                Group(
                    (col,), (token,), mask, int((mask & labels).sum()), int((mask & ~labels).sum())
                )
            )
    return groups


def parse_group_label(label: str) -> dict[str, str]:
    """``"sex=Female&race=Black"`` -> ``{"sex": "Female", "race": "Black"}`` (for ``--suppress``).
    An ``&`` inside a value (``Trinadad&Tobago``) stays with it: only ``&column=`` starts a
    condition.

    >>> parse_group_label("native_country=Laos|Trinadad&Tobago&sex=Female")
    {'native_country': 'Laos|Trinadad&Tobago', 'sex': 'Female'}
    """
    out = {}
    parts: list[str] = []
    for piece in label.split("&"):
        if parts and "=" not in piece:
            parts[-1] += "&" + piece  # part of the previous value
        else:
            parts.append(piece)
    for part in parts:
        col, sep, value = part.partition("=")
        if not sep or not col or not value:
            raise ValueError(f"subgroup '{label}' must look like column=value or col1=v1&col2=v2")
        out[col.strip()] = value.strip()
    return out


def group_mask(df: pd.DataFrame, label: str, *, key: LabelKey | None = None) -> np.ndarray:
    """Rows of ``df`` in the subgroup named by ``label``; a label naming hashed values needs the
    ``key`` that hashed them (ValueError without one)."""
    conditions = parse_group_label(label)
    mask = np.ones(len(df), dtype=bool)
    for col, value in conditions.items():
        if col not in df.columns:
            raise KeyError(col)
        mask &= np.isin(_value_tokens(df[col], value, key), value.split(RARE_SEPARATOR))
    return mask


def names_hashed_values(label: str) -> bool:
    """Whether ``label`` names a value by its hash (``occupation=#6c1051d176``)."""
    try:
        values = parse_group_label(label).values()
    except ValueError:  # not a group label ("copies", "exposed")
        return False
    return any(t.startswith("#") for v in values for t in v.split(RARE_SEPARATOR))


def _value_tokens(values: pd.Series, label_value: str, key: LabelKey | None) -> np.ndarray:
    """A column's values as they appear in ``label_value``: hashed when the label names hashes."""
    # pandas is untyped here (Any): the values' labels, as strings
    plain = cast(np.ndarray, value_labels(values).to_numpy())
    tokens = label_value.split(RARE_SEPARATOR)
    if not any(t.startswith("#") for t in tokens):
        return plain
    # a label may mix shown and hashed values: a row matches by its value or by its value's hash.
    # Each distinct value is hashed once (an HMAC per row was the cost of a large release).
    shown = set(tokens)
    codes, distinct = pd.factorize(plain)
    # pandas is untyped here (factorize: Any): each row's token, through its value's code
    return cast(
        np.ndarray,
        np.array(
            [v if v in shown else value_token(v, None, key=key) for v in distinct], dtype=object
        )[codes],
    )


# ------------------------------------------------------------------------------------ entities


def entity_scores(
    entity_ids: np.ndarray, labels: np.ndarray, scores: Mapping[str, np.ndarray]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Set-level view: one label and one score (mean of its records' scores) per entity."""
    codes, uniques = pd.factorize(pd.Series(entity_ids), sort=True)
    counts = np.bincount(codes)
    labels = np.asarray(labels, dtype=float)
    ent_labels = np.bincount(codes, weights=labels) / counts
    if not np.all((ent_labels == 0) | (ent_labels == 1)):
        raise ValueError(
            "an entity has both member and non-member records: the split did not keep entities "
            "whole"
        )
    return ent_labels.astype(np.int8), {
        a: np.bincount(codes, weights=np.asarray(s, float)) / counts for a, s in scores.items()
    }
