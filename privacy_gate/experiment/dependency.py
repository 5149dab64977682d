"""Dependent training data, measured (Humphries et al.).

- Dependency stress test: members from one value of the ``source`` column, non-members from the
  others. Dependent (non-IID) membership can make attacks look far stronger than the IID protocol
  suggests; the gate reviews a large gap.
- Is the training data plausibly dependent? :func:`source_shift` compares the ``source``
  distribution of the training split with the reference split's (a sample of the population): a
  training set drawn from few sources is not an independent sample, and the IID DP bound on
  membership advantage may not hold for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from privacy_gate.experiment.grouping import most_frequent, value_labels

# --------------------------------------------------------------------------- dependency test


def dependency_indices(
    member_sources: pd.Series, non_member_sources: pd.Series, *, value: str | None
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
        return f"total variation {self.tv:.3f}, {p}" + (
            ", Monte-Carlo" if self.method == "monte_carlo" else ""
        )


#: categories with fewer expected rows than this in either split are pooled (chi-square validity)
MIN_EXPECTED = 5.0
#: draws of the Monte-Carlo test (p-values no smaller than 1 / (MC_DRAWS + 1); fewer over thousands
#: of sources)
MC_DRAWS = 9999


def _chi2_statistic(table: np.ndarray, expected: np.ndarray) -> npt.NDArray[np.float64]:
    """Pearson's statistic of 2 x K tables (``table`` may be a stack, ..., 2, K); 0/0 cells count
    0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = np.where(expected > 0, (table - expected) ** 2 / expected, 0.0)
    # numpy types ``where`` over a float array and a scalar as Any: float cells, their sums
    return cast("npt.NDArray[np.float64]", cells.sum(axis=(-2, -1)))


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
    >>> s = source_shift(pd.Series(["y"] * 8), pd.Series(["x"] * 95 + ["y"] * 5))
    >>> s.method, s.pvalue < 1e-3
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
            return SourceShift(
                pvalue=_monte_carlo_pvalue(table), tv=tv, categories=k, method="monte_carlo"
            )
    pvalue = float(chi2_contingency(pooled, correction=False).pvalue)
    return SourceShift(pvalue=pvalue, tv=tv, categories=k)


def dependence_note(
    shift: SourceShift, *, source: str, alpha: float, epsilon: float | None, dp_bound: float | None
) -> str:
    """What a reviewer reads about the training data's independence (no record values)."""
    dp = (
        f"; the IID DP bound on membership advantage at epsilon {epsilon:g} ({dp_bound:.3f}) "
        "assumes "
        "independent records"
        if epsilon is not None and dp_bound is not None
        else ""
    )
    if not np.isfinite(shift.pvalue):
        return (
            f"dependency: cannot compare the training split's {source!r} distribution with the "
            "reference's (a split has no rows)" + dp
        )
    if shift.dependent(alpha):
        return (
            f"dependency: the training split's {source!r} distribution differs from the "
            "reference's "
            f"({shift.describe()}): its records are plausibly dependent (Humphries et al.)"
            + (dp + " and may not hold for this release" if dp else "")
        )
    return (
        f"dependency: no evidence that the training split's {source!r} distribution differs from "
        "the "
        f"reference's ({shift.describe()}, alpha {alpha:g})" + dp
    )
