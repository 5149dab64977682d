"""Who is at risk: attack metrics per subgroup, per entity (set level), and under dependency.

- Subgroups (DOMIAS §5.3, MACE §9.3: minorities and outliers carry the highest risk): each value
  of each audited column and of configured intersections is its own group, however small — a
  small group is never merged away. Every group gets the rank test of
  :mod:`privacy_gate.estimators.group_tests`; groups with at least ``min_group_size`` targets in
  each class also get the attack metrics (point estimates need that many to mean anything).
  Group labels are built from column and category names, never from other record values.
- Entities: an entity is a member if its records were in train; its score is the mean score of its
  target records (set-level membership inference).
- Dependency stress test (Humphries et al.): members from one value of the ``source`` column, non-members
  from the others. Dependent (non-IID) membership can make attacks look far stronger than the IID
  protocol suggests; a large gap is a warning.
- Is the training data plausibly dependent? :func:`source_shift` compares the ``source``
  distribution of the training split with the reference split's (a sample of the population):
  a training set drawn from few sources is not an independent sample, and the IID DP bound on
  membership advantage may not hold for it.

>>> import numpy as np, pandas as pd
>>> t = pd.DataFrame({"g": ["a"] * 6 + ["b"] * 2})
>>> y = np.array([1, 1, 1, 0, 0, 0, 1, 0])
>>> [(g.label, g.n_members, g.estimable(2)) for g in subgroup_groups(t, y, columns=[["g"]])]
[('g=a', 3, True), ('g=b', 1, False)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

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
        """Human label, also the ``--suppress`` syntax: ``race=Black`` or ``sex=Female&race=Black``."""
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


def subgroup_groups(targets: pd.DataFrame, labels: np.ndarray, *, columns: Sequence[Sequence[str]]) -> list[Group]:
    """One group per value of each audited column (or intersection) present among the targets."""
    labels = np.asarray(labels).astype(bool)
    groups: list[Group] = []
    for cols in columns:
        cols = tuple(cols)
        keys = _value_strings(targets, cols).to_numpy()
        for key in sorted(set(keys)):
            mask = keys == key
            groups.append(Group(cols, tuple(key.split("\x1f")), mask, int((mask & labels).sum()),
                                int((mask & ~labels).sum())))
    return groups


#: A column with more distinct values than this is an identifier, not a grouping: audited only
#: when the spec names it in ``subgroups``.
MAX_DEFAULT_GROUPS = 100


def audited_columns(targets: pd.DataFrame, *, subgroups: Sequence[str], categorical: Sequence[str]
                    ) -> tuple[list[str], list[str]]:
    """The spec's ``subgroups``, or every categorical column when it names none. Returns the
    columns and notes for the report (what was audited by default, what was skipped and why)."""
    if subgroups:
        return list(subgroups), []
    chosen, notes = [], []
    for col in categorical:
        n = int(targets[col].nunique(dropna=False))
        if n > MAX_DEFAULT_GROUPS:
            notes.append(f"column '{col}' not audited by default: {n} distinct values (name it in the spec's "
                         "subgroups to audit it)")
        else:
            chosen.append(col)
    notes.insert(0, "the spec names no subgroups: every categorical column is audited "
                    f"({', '.join(chosen) or 'none'})")
    return chosen, notes


def audit_subgroups(groups: Sequence[Group], labels: np.ndarray, scores: Mapping[str, np.ndarray],
                    metric_fn: Callable[[np.ndarray, np.ndarray], Mapping[str, float]], *, min_group_size: int
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
    """Rows of ``df`` in the subgroup named by ``label``."""
    conditions = parse_group_label(label)
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
    m, n = value_labels(member_sources).to_numpy(), value_labels(non_member_sources).to_numpy()
    value = most_frequent(member_sources) if value is None else value
    return value, np.flatnonzero(m == value), np.flatnonzero(n != value)


# --------------------------------------------------------------------------- source shift


@dataclass(frozen=True)
class SourceShift:
    """Train vs reference distribution of the ``source`` column: test of homogeneity (``pvalue``;
    chi-square with sparse categories pooled, or Monte-Carlo where even pooling leaves it invalid:
    ``method``) and total-variation distance (``tv``). NaN when a split has no rows."""

    pvalue: float
    tv: float
    categories: int
    method: str = "chi2"

    def dependent(self, alpha: float) -> bool:
        return self.pvalue < alpha  # NaN (nothing to compare) is never "dependent"

    def describe(self) -> str:
        """``total variation 0.310, p < 1e-6`` (figures only: no category names, no counts)."""
        p = "p < 1e-6" if self.pvalue < 1e-6 else f"p = {self.pvalue:.3g}"
        return f"total variation {self.tv:.3f}, {p}" + (", Monte-Carlo" if self.method == "monte_carlo" else "")


#: categories with fewer expected rows than this in either split are pooled (chi-square validity)
MIN_EXPECTED = 5.0
#: draws of the Monte-Carlo test (p-values no smaller than 1 / (MC_DRAWS + 1); fewer over thousands of sources)
MC_DRAWS = 9999


def _chi2_statistic(table: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Pearson's statistic of 2 x K tables (``table`` may be a stack, ..., 2, K); 0/0 cells count 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = np.where(expected > 0, (table - expected) ** 2 / expected, 0.0)
    return cells.sum(axis=(-2, -1))


def _monte_carlo_pvalue(table: np.ndarray, *, seed: int = 0) -> float:
    """Homogeneity p-value of a 2 x K table conditional on its margins (the training row is a
    multivariate hypergeometric draw from the column totals): valid at any expected counts."""
    totals = table.sum(axis=0).astype(np.int64)
    n_train = int(table[0].sum())
    expected = np.outer(table.sum(axis=1), totals) / table.sum()
    observed = _chi2_statistic(table, expected)
    draws = max(999, min(MC_DRAWS, 5_000_000 // len(totals)))  # fewer with thousands of sources
    rng, at_least, done = np.random.default_rng(seed), 0, 0
    chunk = max(1, 1_000_000 // len(totals))  # draws per batch: about a million cells in memory
    while done < draws:
        rows = rng.multivariate_hypergeometric(totals, n_train, size=min(chunk, draws - done))
        sims = _chi2_statistic(np.stack([rows, totals - rows], axis=1).astype(float), expected)
        at_least, done = at_least + int(np.sum(sims >= observed * (1 - 1e-12))), done + len(rows)
    return (1 + at_least) / (draws + 1)


def source_shift(train: pd.Series, reference: pd.Series) -> SourceShift:
    """How far the training split's sources are from the population's (missing is a category).

    Chi-square test of homogeneity, with the categories expected fewer than ``MIN_EXPECTED`` rows
    in either split pooled into one; where that is not enough (the pooled category is still sparse,
    or it is all there is) a Monte-Carlo test on the unpooled counts.

    >>> a = pd.Series(["x"] * 50 + ["y"] * 50); b = pd.Series(["x"] * 100)
    >>> s = source_shift(a, b); (round(s.tv, 2), s.pvalue < 1e-6, s.categories, s.method)
    (0.5, True, 2, 'chi2')
    >>> source_shift(a, a).pvalue
    1.0
    >>> s = source_shift(pd.Series(["y"] * 8), pd.Series(["x"] * 95 + ["y"] * 5)); (s.method, s.pvalue < 1e-3)
    ('monte_carlo', True)
    """
    from scipy.stats import chi2_contingency

    t, r = (value_labels(v).value_counts() for v in (train, reference))
    table = pd.concat([t, r], axis=1).fillna(0.0).to_numpy(dtype=float).T  # 2 x K
    k = table.shape[1]
    if table[0].sum() == 0 or table[1].sum() == 0:
        return SourceShift(pvalue=float("nan"), tv=float("nan"), categories=k)
    share = table / table.sum(axis=1, keepdims=True)
    tv = 0.5 * float(np.abs(share[0] - share[1]).sum())
    if k < 2:  # one source in both splits: nothing can differ
        return SourceShift(pvalue=1.0, tv=tv, categories=k)
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    sparse = (expected < MIN_EXPECTED).any(axis=0)
    pooled = table
    if sparse.any():
        pooled = np.column_stack([table[:, ~sparse], table[:, sparse].sum(axis=1)])
        pooled_expected = np.outer(pooled.sum(axis=1), pooled.sum(axis=0)) / pooled.sum()
        if pooled.shape[1] < 2 or (pooled_expected[:, -1] < MIN_EXPECTED).any():
            return SourceShift(pvalue=_monte_carlo_pvalue(table), tv=tv, categories=k, method="monte_carlo")
    pvalue = float(chi2_contingency(pooled, correction=False).pvalue)
    return SourceShift(pvalue=pvalue, tv=tv, categories=k)


def dependence_note(shift: SourceShift, *, source: str, alpha: float, epsilon: float | None,
                    dp_bound: float | None) -> str:
    """What a reviewer reads about the training data's independence (no record values)."""
    dp = (f"; the IID DP bound on membership advantage at epsilon {epsilon:g} ({dp_bound:.3f}) assumes "
          "independent records" if epsilon is not None and dp_bound is not None else "")
    if not np.isfinite(shift.pvalue):
        return (f"dependency: cannot compare the training split's {source!r} distribution with the "
                "reference's (a split has no rows)" + dp)
    if shift.dependent(alpha):
        return (f"dependency: the training split's {source!r} distribution differs from the reference's "
                f"({shift.describe()}): its records are plausibly dependent (Humphries et al.)"
                + (dp + " and may not hold for this release" if dp else ""))
    return (f"dependency: no evidence that the training split's {source!r} distribution differs from the "
            f"reference's ({shift.describe()}, alpha {alpha:g})" + dp)


def dependence_clause(shift: SourceShift | None, *, source: str | None, alpha: float) -> str:
    """For the IID DP-bound check: the bound assumes independent records, and whether this
    release's training split looks dependent (figures and the column name only)."""
    head = "the DP bound assumes independent records"
    if shift is None or source is None:
        return (head + "; the spec names no 'source' column, so the gate cannot tell whether the "
                "training records are dependent")
    if not np.isfinite(shift.pvalue):
        return head + f"; the training split's {source!r} distribution could not be compared with the reference's"
    if shift.dependent(alpha):
        return (head + f", and this release's training split looks dependent (its {source!r} distribution differs "
                f"from the reference's: {shift.describe()}), which would explain the excess (Humphries et al.)")
    return (head + f"; there is no evidence that this release's training split is dependent (its {source!r} "
            f"distribution vs the reference's: {shift.describe()}), so suspect the DP implementation first")
