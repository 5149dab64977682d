"""Utility of a synthetic table: total-variation distance of its 1-way and 2-way marginals.

A release can be blocked for being useless. Every attribute column is
discretised with bins taken from the *real* frame passed (normally the holdout): numeric-like
columns into up to ``n_bins`` equal-depth bins (or the spec's public ``bins``), categorical
columns into the spec's public categories or the categories seen in the real frame. Missing
values are a cell of their own, and synthetic categories unknown to the real frame fall into an
"other" cell, so a generator inventing values is penalised rather than ignored.

The result holds column names and numbers only — never bin edges or category values, which
come from real records.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from privacy_gate.data.encoding import category_codes, category_keys, column_as_float
from privacy_gate.errors import ConfigError, DataError, InsufficientDataError
from privacy_gate.spec import ColumnSpec, DatasetSpec


def _numeric_codes(
    real: np.ndarray, syn: np.ndarray, col: ColumnSpec, n_bins: int
) -> tuple[np.ndarray, np.ndarray, int]:
    if col.bins is not None:  # public knowledge beats anything estimated from the data
        edges = np.asarray(col.bins, dtype=np.float64)
    else:
        observed = real[~np.isnan(real)]
        # unique: heavy ties (capital_gain is mostly 0) collapse equal-depth edges
        edges = (
            np.unique(np.quantile(observed, np.linspace(0.0, 1.0, n_bins + 1)))
            if observed.size
            else np.empty(0)
        )
    # interior edges only: values beyond the real range join the outermost bins
    interior = edges[1:-1]
    n_value_cells = interior.size + 1

    def codes(values: np.ndarray) -> np.ndarray:
        c = np.searchsorted(interior, values, side="right").astype(np.int64)
        c[np.isnan(values)] = n_value_cells  # missing: its own cell
        return c

    return codes(real), codes(syn), n_value_cells + 1


def _categorical_codes(
    real: pd.Series, syn: pd.Series, col: ColumnSpec
) -> tuple[np.ndarray, np.ndarray, int]:
    if col.categories is not None:
        cats = category_keys(col.categories)
    else:
        cats = sorted(category_keys(list(real.dropna().unique())))
        cats = list(dict.fromkeys(cats))  # 1 and 1.0 collapse to one key
    k = len(cats)

    def codes(series: pd.Series) -> np.ndarray:
        c = category_codes(series, cats)
        c[c < 0] = k + 1  # unseen: the "other" cell
        c[series.isna().to_numpy()] = k  # missing: its own cell
        return c

    return codes(real), codes(syn), k + 2


def _tvd(a: np.ndarray, b: np.ndarray, n_cells: int) -> float:
    p = np.bincount(a, minlength=n_cells) / a.size
    q = np.bincount(b, minlength=n_cells) / b.size
    return 0.5 * float(np.abs(p - q).sum())


def marginal_quality(
    synthetic: pd.DataFrame, real: pd.DataFrame, *, spec: DatasetSpec, n_bins: int = 20
) -> dict[str, object]:
    """Fidelity of ``synthetic`` to ``real``: ``1 - mean(mean 1-way TVD, mean 2-way TVD)``.

    Returns ``quality`` (1 = identical marginals), ``tvd_1way``/``tvd_2way`` (means over columns
    and over column pairs), the worst column and pair with their TVD, ``tvd_1way_by_column``,
    ``n_columns`` and ``n_pairs``. With a single attribute column there are no pairs: quality is
    ``1 - tvd_1way`` and the 2-way entries are None.
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 2:
        raise ConfigError(f"marginal_quality: 'n_bins' must be an integer >= 2, got {n_bins!r}")
    if not isinstance(spec, DatasetSpec):
        raise ConfigError(
            f"marginal_quality: 'spec' must be a DatasetSpec, got {type(spec).__name__}"
        )
    columns = list(spec.attribute_columns)
    for what, frame in (("synthetic", synthetic), ("real", real)):
        if not isinstance(frame, pd.DataFrame):
            raise DataError(
                f"marginal_quality: the {what} data must be a pandas DataFrame, got "
                f"{type(frame).__name__}"
            )
        if len(frame) == 0:
            raise InsufficientDataError(f"marginal_quality: the {what} data has no rows")
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise DataError(
                f"marginal_quality: column(s) {missing} of spec '{spec.name}' are missing from the "
                f"{what} data"
            )

    real_codes, syn_codes, sizes = [], [], []
    for name in columns:
        col = spec.columns[name]
        if col.is_numeric:
            r = column_as_float(real[name], kind=col.kind, column=name)
            s = column_as_float(synthetic[name], kind=col.kind, column=name)
            a, b, k = _numeric_codes(r, s, col, int(n_bins))
        else:
            a, b, k = _categorical_codes(real[name], synthetic[name], col)
        real_codes.append(a)
        syn_codes.append(b)
        sizes.append(k)

    tvd1 = {name: _tvd(a, b, k) for name, a, b, k in zip(columns, real_codes, syn_codes, sizes)}
    worst_col = max(tvd1, key=tvd1.__getitem__)
    mean1 = float(np.mean(list(tvd1.values())))

    # 2-way: one combined integer code per pair (a * k_b + b), counted with a single bincount
    pair_tvd: dict[tuple[str, str], float] = {}
    for i, j in combinations(range(len(columns)), 2):
        kj = sizes[j]
        pair_tvd[(columns[i], columns[j])] = _tvd(
            real_codes[i] * kj + real_codes[j], syn_codes[i] * kj + syn_codes[j], sizes[i] * kj
        )
    mean2: float | None
    if pair_tvd:
        worst_pair = max(pair_tvd, key=pair_tvd.__getitem__)
        mean2 = float(np.mean(list(pair_tvd.values())))
        quality = 1.0 - 0.5 * (mean1 + mean2)
    else:
        worst_pair, mean2, quality = None, None, 1.0 - mean1
    return {
        "quality": float(quality),
        "tvd_1way": mean1,
        "tvd_2way": mean2,
        "worst_1way_column": worst_col,
        "worst_1way_tvd": tvd1[worst_col],
        "worst_2way_pair": list(worst_pair) if worst_pair else None,
        "worst_2way_tvd": pair_tvd[worst_pair] if worst_pair else None,
        "tvd_1way_by_column": tvd1,
        "n_columns": len(columns),
        "n_pairs": len(pair_tvd),
    }
