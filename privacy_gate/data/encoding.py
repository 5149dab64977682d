"""A numeric encoding of mixed-type tables for distance- and density-based attacks.

:class:`MixedEncoder` turns the attribute columns of a :class:`DatasetSpec` table into a float64
matrix in which *one unit of Euclidean distance means roughly the same thing for every column*:

- numeric-like columns (numeric, datetime, ordinal without a category list) are standardised
  with the mean and standard deviation learned in ``fit``; a difference of one standard deviation
  is distance 1;
- categorical columns (and ordinals with a public category list) are one-hot encoded and scaled
  by ``1/sqrt(2)``, so two *different* categories are at distance exactly 1 — the same scale as
  one standard deviation of a numeric column, and no column dominates the distance by width.

Missing values never become NaN in the output (KDE and distances would propagate them): numerics
are imputed with the fit mean plus a 0/1 indicator, categoricals map to an extra "missing/other"
slot. The entity id column is an identifier, not an attribute, and is never encoded.

>>> import pandas as pd
>>> from privacy_gate.spec import DatasetSpec
>>> spec = DatasetSpec.model_validate({"name": "t", "columns": {
...     "x": {"kind": "numeric", "nullable": False},
...     "c": {"kind": "categorical", "categories": ["a", "b"]}}})
>>> enc = MixedEncoder(spec=spec).fit(pd.DataFrame({"x": [0.0, 2.0], "c": ["a", "b"]}))
>>> enc.feature_names_out_
['x', 'c[0]', 'c[1]', 'c[missing]']
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.data.table import as_category_string  # the same category mapping as conform()
from privacy_gate.errors import ConfigError, DataError
from privacy_gate.spec import MAX_ENCODED_WIDTH, ColumnSpec, DatasetSpec

# One-hot value: two different categories differ in two coordinates by this much each, so their
# Euclidean distance is sqrt(2 * (1/sqrt(2))**2) = 1.
ONEHOT_SCALE = 1.0 / math.sqrt(2.0)

_CATEGORICAL_MODES = ("onehot", "ordinal")

# The widest encoding ``fit`` accepts is ``MAX_ENCODED_WIDTH`` (all columns together; defined with
# the spec, whose width it bounds). Each one-hot column is also bounded by its spec's
# ``max_categories``; this bounds the total whatever the spec says.


def column_as_float(series: pd.Series, *, kind: str, column: str) -> np.ndarray:
    """A float64 view of a numeric-like column: datetimes become seconds since the epoch.

    Missing values become NaN; infinite values are a :class:`DataError` (they cannot be
    standardised or binned, and silently clipping them would hide a broken generator).
    """
    if kind == "datetime":
        dt = (
            series
            if pd.api.types.is_datetime64_any_dtype(series)
            else pd.to_datetime(series, errors="coerce")
        )
        if getattr(dt.dt, "tz", None) is not None:
            dt = dt.dt.tz_convert("UTC").dt.tz_localize(None)
        missing = dt.isna().to_numpy()
        # whole seconds: sub-second resolution is noise at the scale of a standard deviation
        values = dt.to_numpy(dtype="datetime64[s]").astype("int64").astype("float64")
        values[missing] = np.nan
        return values
    try:
        values = np.asarray(series, dtype="float64")
    except (TypeError, ValueError):
        raise DataError(
            f"column '{column}' is {kind} but holds values that are not numbers"
        ) from None
    n_inf = int(np.isinf(values).sum())
    if n_inf:
        raise DataError(f"column '{column}' has {n_inf} infinite value(s)")
    return values


def category_keys(categories: list[Any]) -> list[str]:
    """Spec categories as the strings :func:`privacy_gate.data.conform` produces (1.0 -> "1")."""
    return [as_category_string(c) for c in categories]


def category_codes(series: pd.Series, categories: list[str]) -> np.ndarray:
    """Index of each value in ``categories``; -1 for missing or unseen values.

    Factorises first so the string mapping runs once per distinct value, not once per row
    (fast on 50k rows, and robust to frames that did not go through ``conform``).
    """
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    lookup = pd.Index(categories).get_indexer([as_category_string(u) for u in uniques])
    lookup = np.append(lookup, -1)  # position -1 of the lookup serves factorize's NA sentinel
    return lookup[codes].astype(np.int64, copy=False)


class MixedEncoder:
    """Encode the attribute columns of a spec'd table as a standardised float64 matrix.

    Parameters
    ----------
    spec:
        The dataset spec; decides each column's kind and the public category lists.
    categorical:
        ``"onehot"`` (default): one-hot scaled by ``1/sqrt(2)`` plus a "missing/other" slot.
        ``"ordinal"``: the category's position in the (public or learned) category list,
        standardised like a numeric column, with a missing indicator — compact, but it imposes
        an order, so only sensible for true ordinals.
    data_name:
        What the fit data is called in ``notes_`` (default ``"fit data"``; the attacks fit on
        and say ``"reference data"``).

    Learned attributes (after ``fit``)
    ----------------------------------
    columns_: attribute columns encoded (spec order, entity id excluded).
    feature_names_out_: one name per output column. Categories are named by position
        (``col[3]``), never by value, so names are safe to log; ``categories_`` maps them back.
    categories_: category list per categorical column (public list if the spec has one, else
        the sorted categories seen in the fit data).
    means_, scales_: mean and standard deviation per standardised column.
    missing_indicator_: per numeric-like column, whether it has a missing-indicator feature.
    dropped_columns_: columns constant in the fit data; their value feature is dropped.
    notes_: human-readable notes on what the encoding did with the data that a user should know
        — a constant column dropped, values outside a public category list mapped to the
        "missing/other" slot. Notes name columns and count rows; they never contain data values,
        so they are safe to log and to show in a release report.
    n_effective_dims_: number of original columns that contribute at least one feature — the
        dimension to use in bandwidth rules instead of the (one-hot inflated) output width.
    n_features_out_: output width.
    """

    def __init__(
        self,
        *,
        spec: DatasetSpec,
        categorical: str = "onehot",
        data_name: str = "fit data",
        max_width: int = MAX_ENCODED_WIDTH,
    ):
        if not isinstance(spec, DatasetSpec):
            raise ConfigError(
                f"MixedEncoder: 'spec' must be a DatasetSpec, got {type(spec).__name__}"
            )
        if categorical not in _CATEGORICAL_MODES:
            raise ConfigError(
                f"MixedEncoder: 'categorical' must be one of {list(_CATEGORICAL_MODES)}, got "
                f"{categorical!r}"
            )
        if not isinstance(data_name, str) or not data_name:
            raise ConfigError(
                f"MixedEncoder: 'data_name' must be a non-empty string, got {data_name!r}"
            )
        if not isinstance(max_width, int) or max_width < 1:
            raise ConfigError(
                f"MixedEncoder: 'max_width' must be a positive integer, got {max_width!r}"
            )
        self.spec = spec
        self.categorical = categorical
        self.max_width = max_width  # refuse a wider encoding (one-hot of an identifier-like column)
        self.data_name = data_name  # how notes_ refer to the fit data, e.g. "reference data"

    # ------------------------------------------------------------------ fitting

    def fit(self, df: pd.DataFrame) -> MixedEncoder:
        """Learn means, scales and category lists from ``df`` (the attacker's reference data)."""
        self._check_frame(df, "fit")
        self.columns_ = list(self.spec.attribute_columns)
        self.categories_: dict[str, list[str]] = {}
        self.means_: dict[str, float] = {}
        self.scales_: dict[str, float] = {}
        self.missing_indicator_: dict[str, bool] = {}
        self.dropped_columns_: list[str] = []
        self.notes_: list[str] = []
        # the plan: per column, a tuple that transform() replays without re-deciding anything
        self._plan: list[tuple] = []
        names: list[str] = []
        effective = 0
        onehot = {
            name: self._categories(self.spec.columns[name], df[name])
            for name in self.columns_
            if self._is_onehot(self.spec.columns[name])
        }
        self._check_widths(
            {name: len(cats) for name, cats in onehot.items()},
            limit=self.spec.max_categories,
            setting="the spec's max_categories",
        )
        for name in self.columns_:
            col = self.spec.columns[name]
            if self._is_onehot(col):
                cats = onehot[name]
                self.categories_[name] = cats
                self._note_unlisted(name, df[name], cats)
                names += [f"{name}[{i}]" for i in range(len(cats))] + [f"{name}[missing]"]
                self._plan.append(("onehot", name, len(cats)))
                effective += 1
                continue
            if (
                col.categories is not None or col.kind == "categorical"
            ):  # ordinal mode for categoricals
                cats = self._categories(col, df[name])
                self.categories_[name] = cats
                self._note_unlisted(name, df[name], cats)
                codes = category_codes(df[name], cats).astype("float64")
                codes[codes < 0] = np.nan
                values = codes
            else:
                values = column_as_float(df[name], kind=col.kind, column=name)
            observed = values[~np.isnan(values)]
            has_missing = observed.size < values.size
            mean = float(observed.mean()) if observed.size else 0.0
            std = float(observed.std()) if observed.size else 0.0
            # relative tolerance: a constant 0.1 column can come out with std ~1e-17, and
            # dividing by it would blow floating-point noise up to huge distances
            constant = not std > 1e-12 * max(1.0, abs(mean))
            if constant:
                self.dropped_columns_.append(name)
                # missingness is then the only information left; keep it only if it occurs
                indicator = has_missing
                what = "has no observed values" if not observed.size else "is constant"
                kept = "; only its missing indicator is kept" if indicator else ""
                self.notes_.append(
                    f"column '{name}' {what} in the {self.data_name} and was dropped from the "
                    f"encoding{kept}"
                )
            else:
                # nullable columns get the indicator even without missing fit values, so that
                # synthetic rows with missing values remain distinguishable from the mean
                indicator = has_missing or col.nullable
            self.missing_indicator_[name] = indicator
            if not constant:
                self.means_[name] = mean
                self.scales_[name] = std
                names.append(name)
            if indicator:
                names.append(f"{name}[missing]")
            if not constant or indicator:
                effective += 1
            self._plan.append(("numeric", name, (mean, std) if not constant else None, indicator))
        if len(names) > self.max_width:
            widest = sorted(self.categories_, key=lambda c: -len(self.categories_[c]))[:3]
            n_indicators = sum(n.endswith("[missing]") for n in names)
            raise DataError(
                f"MixedEncoder.fit: encoding the {self.data_name} would make {len(names)} "
                "features, more than its "
                f"maximum width ({self.max_width}): {len(self.columns_)} attribute columns, "
                f"{n_indicators} of the "
                "features missing-value indicators (a nullable numeric column is two features)"
                + (
                    "; widest one-hot columns: "
                    + ", ".join(
                        f"'{c}' ({len(self.categories_[c])} distinct values)" for c in widest
                    )
                    if widest
                    else ""
                )
                + ". Declare an identifier column as the spec's entity_id or drop it, drop "
                "columns, or declare "
                "numeric columns without missing values nullable: false"
            )
        self.feature_names_out_ = names
        self.n_features_out_ = len(names)
        self.n_effective_dims_ = effective
        return self

    def _check_widths(self, counts: dict[str, int], *, limit: int, setting: str) -> None:
        """Refuse one-hot columns wider than ``limit`` before anything is allocated, every one of
        them in one error (counts only)."""
        wide = {name: n for name, n in counts.items() if n > limit}
        if len(wide) == 1:
            ((name, n),) = wide.items()
            raise DataError(
                f"MixedEncoder.fit: column '{name}' has {n} distinct values in the "
                f"{self.data_name}, more "
                f"than {setting} ({limit}); one-hot encoding it would make {n + 1} features. It "
                "looks "
                "like an identifier: declare it as the spec's entity_id or drop the column"
            )
        if wide:
            raise DataError(
                f"MixedEncoder.fit: {len(wide)} columns have more distinct values in the "
                f"{self.data_name} than "
                f"{setting} ({limit}): "
                + ", ".join(f"'{name}' ({n})" for name, n in wide.items())
                + f"; one-hot encoding them would make {sum(wide.values()) + len(wide)} features. "
                "They look like "
                "identifiers: declare one as the spec's entity_id or drop the columns"
            )

    def _is_onehot(self, col: ColumnSpec) -> bool:
        categorical_like = col.kind == "categorical" or (
            col.kind == "ordinal" and col.categories is not None
        )
        return categorical_like and self.categorical == "onehot"

    def _note_unlisted(self, name: str, series: pd.Series, cats: list[str]) -> None:
        """Note (count only, no values) fit rows whose category is not in the public list."""
        if self.spec.columns[name].categories is None:
            return  # learned categories cover every observed value
        n_unlisted = int(((category_codes(series, cats) < 0) & series.notna().to_numpy()).sum())
        if n_unlisted:
            self.notes_.append(
                f"column '{name}': {n_unlisted} row(s) of the {self.data_name} hold a value "
                "outside the spec's category list; "
                "they are encoded like missing values"
            )

    @staticmethod
    def _categories(col: ColumnSpec, series: pd.Series) -> list[str]:
        if col.categories is not None:
            return category_keys(col.categories)
        # distinct values first: the string mapping then runs once per category, not per row
        return sorted(set(category_keys(list(series.dropna().unique()))))

    # ------------------------------------------------------------------ transforming

    def transform(self, df: pd.DataFrame) -> np.ndarray:
        """Encode ``df`` into an ``(n_rows, n_features_out_)`` float64 matrix without NaNs."""
        if not hasattr(self, "_plan"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("MixedEncoder is not fitted yet; call fit() first")
        self._check_frame(df, "transform")
        n = len(df)
        out = np.zeros((n, self.n_features_out_), dtype=np.float64)
        rows = np.arange(n)
        j = 0
        for step in self._plan:
            if step[0] == "onehot":
                _, name, k = step
                codes = category_codes(df[name], self.categories_[name])
                codes[codes < 0] = k  # missing and unseen share the extra slot
                out[rows, j + codes] = ONEHOT_SCALE
                j += k + 1
                continue
            _, name, stats, indicator = step
            col = self.spec.columns[name]
            if name in self.categories_:
                values = category_codes(df[name], self.categories_[name]).astype("float64")
                values[values < 0] = np.nan
            else:
                values = column_as_float(df[name], kind=col.kind, column=name)
            missing = np.isnan(values)
            if stats is not None:
                mean, std = stats
                z = (values - mean) / std
                z[missing] = 0.0  # the fit mean, standardised
                out[:, j] = z
                j += 1
            if indicator:
                out[:, j] = missing
                j += 1
        return out

    def fit_transform(self, df: pd.DataFrame) -> np.ndarray:
        """``fit(df)`` then ``transform(df)``."""
        return self.fit(df).transform(df)

    def _check_frame(self, df: pd.DataFrame, where: str) -> None:
        if not isinstance(df, pd.DataFrame):
            raise DataError(
                f"MixedEncoder.{where}: expected a pandas DataFrame, got {type(df).__name__}"
            )
        missing = [c for c in self.spec.attribute_columns if c not in df.columns]
        if missing:
            raise DataError(
                f"MixedEncoder.{where}: column(s) {missing} of spec '{self.spec.name}' are missing"
            )
        if where == "fit" and len(df) == 0:
            raise DataError("MixedEncoder.fit: the table has no rows")
