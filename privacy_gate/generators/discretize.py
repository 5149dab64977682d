"""Discretisation for the marginal-based generators, from public knowledge only.

Bins come from the spec (``bins``, or ``categories``) or from the *reference* split (20 equal-depth
bins for numeric columns by default), never from the train split, so the DP guarantee of the
generators stays honest: the domain is not a function of the private data. It is reversible:
codes map back to the original column types (a numeric value drawn uniformly inside its bin,
rounded when the column is integer-valued; a category from the public list).

Every column gets one extra code for "missing" when it is nullable. Values outside the known
domain (an unseen category, a number outside the public range) map to the nearest valid code
(clip) for numerics and to the missing code for categories, since no public value exists for them.

>>> import pandas as pd
>>> from privacy_gate.spec import DatasetSpec
>>> spec = DatasetSpec.model_validate({"name": "t", "columns": {
...     "x": {"kind": "numeric", "bins": [0, 10, 20]},
...     "c": {"kind": "categorical", "categories": ["a", "b"], "nullable": False}}})
>>> d = Discretizer(spec=spec).fit(None)
>>> d.domain_
{'x': 3, 'c': 2}
>>> d.transform(pd.DataFrame({"x": [5.0, 15.0, None], "c": ["b", "a", "a"]})).tolist()
[[0, 1], [1, 0], [2, 0]]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from privacy_gate.errors import ConfigError
from privacy_gate.spec import ColumnSpec, DatasetSpec


@dataclass(frozen=True)
class ColumnBins:
    """How one column maps to codes 0..size-1 (the last code is 'missing' when ``nullable``)."""

    name: str
    kind: str  # "numeric" | "datetime" | "categorical"
    edges: tuple[float, ...] | None  # numeric: strictly increasing bin edges
    categories: tuple[str, ...] | None  # categorical: public or reference categories
    nullable: bool
    integer: bool = False  # numeric values are integers: round when sampling inside a bin
    points: tuple[float | None, ...] | None = None  # per bin: the single reference value it holds

    @property
    def n_values(self) -> int:
        return len(self.edges) - 1 if self.edges is not None else len(self.categories or ())

    @property
    def size(self) -> int:
        return self.n_values + (1 if self.nullable else 0)


class Discretizer:
    """``fit(reference)`` learns bins from the spec and (only where the spec is silent) from the
    reference data; ``transform`` gives an (n, d) int array; ``inverse_transform`` samples
    values."""

    def __init__(self, *, spec: DatasetSpec, n_bins: int = 20):
        if n_bins < 2:
            raise ConfigError(f"n_bins must be >= 2, got {n_bins}")
        self.spec = spec
        self.n_bins = n_bins

    def fit(self, reference: pd.DataFrame | None) -> Discretizer:
        self.columns_ = list(self.spec.attribute_columns)
        self.bins_ = {
            c: self._column_bins(c, self.spec.columns[c], reference) for c in self.columns_
        }
        self.domain_ = {c: b.size for c, b in self.bins_.items()}
        return self

    def _column_bins(
        self, name: str, col: ColumnSpec, reference: pd.DataFrame | None
    ) -> ColumnBins:
        ref = reference[name] if reference is not None and name in reference else None
        if not col.is_numeric:
            if col.categories is not None:
                cats = tuple(str(c) for c in col.categories)
            elif ref is not None and ref.notna().any():
                cats = tuple(sorted(map(str, ref.dropna().unique())))
            else:
                raise ConfigError(
                    f"column '{name}': no public categories in the spec and no reference data to "
                    "take them from; add 'categories' to the spec"
                )
            return ColumnBins(name, "categorical", None, cats, col.nullable)
        kind = "datetime" if col.kind == "datetime" else "numeric"
        values = None if ref is None else _as_float(ref, kind).astype(float)
        values = None if values is None else values[np.isfinite(values)]
        integer = bool(values is not None and len(values) and np.all(values == np.round(values)))
        if col.bins is not None:
            edges = np.asarray(col.bins, dtype=float)
        elif values is not None and len(values):
            edges = _equal_depth_edges(values, self.n_bins)
            lo = col.min if col.min is not None else edges[0]
            hi = col.max if col.max is not None else edges[-1]
            edges[0], edges[-1] = (
                min(lo, edges[0]),
                max(hi, edges[-1]),
            )  # extend to the public range
            points = _point_masses(values, edges)
            return ColumnBins(
                name, kind, tuple(float(e) for e in edges), None, col.nullable, integer, points
            )
        elif col.min is not None and col.max is not None:
            edges = np.linspace(col.min, col.max, self.n_bins + 1)
            integer = col.kind == "ordinal"
        else:
            raise ConfigError(
                f"column '{name}': no public 'bins' or 'min'/'max' in the spec and no reference "
                "data to take bins from"
            )
        return ColumnBins(name, kind, tuple(float(e) for e in edges), None, col.nullable, integer)

    def transform(self, df: pd.DataFrame) -> np.ndarray:
        out = np.empty((len(df), len(self.columns_)), dtype=np.int64)
        for j, name in enumerate(self.columns_):
            b = self.bins_[name]
            missing_code = b.n_values if b.nullable else 0
            if b.categories is not None:
                col = df[name]
                present = col.notna().to_numpy()
                codes = np.full(
                    len(col), -1, dtype=np.int64
                )  # str() of each present value, vectorised
                codes[present] = pd.Categorical(
                    col[present].astype(object).astype(str), categories=list(b.categories)
                ).codes
                codes[codes < 0] = missing_code
            else:
                x = _as_float(df[name], b.kind)
                edges = np.asarray(b.edges)
                codes = np.clip(
                    np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2
                ).astype(np.int64)
                codes[~np.isfinite(x)] = missing_code
            out[:, j] = codes
        return out

    def inverse_transform(self, codes: np.ndarray, *, rng: np.random.Generator) -> pd.DataFrame:
        codes = np.asarray(codes)
        cols = {}
        for j, name in enumerate(self.columns_):
            b = self.bins_[name]
            c = codes[:, j]
            missing = (c >= b.n_values) if b.nullable else np.zeros(len(c), dtype=bool)
            cc = np.minimum(c, b.n_values - 1)
            if b.categories is not None:
                vals = np.asarray(b.categories, dtype=object)[cc]
                vals[missing] = np.nan
                cols[name] = vals
                continue
            edges = np.asarray(b.edges)
            x = rng.uniform(edges[cc], edges[cc + 1])
            if (
                b.points is not None
            ):  # a bin that held one reference value (a spike, e.g. 0) gives it back
                point = np.array([np.nan if p is None else p for p in b.points])[cc]
                has_point = ~np.isnan(point)
            if b.integer:  # integer-valued column: a uniformly drawn integer inside the bin
                # bins are [lo, hi) except the last, which is closed: the integers inside them
                last = cc == len(edges) - 2
                lo = np.ceil(edges[cc])
                hi = np.where(last, np.floor(edges[cc + 1]), np.ceil(edges[cc + 1]) - 1)
                hi = np.where(hi >= lo, hi, lo)
                x = np.floor(rng.uniform(lo, hi + 1)).clip(lo, hi)
            if b.points is not None:
                x = np.where(has_point, point, x)
            x[missing] = np.nan
            cols[name] = pd.to_datetime(x, unit="s") if b.kind == "datetime" else x
        return pd.DataFrame(cols)


def _equal_depth_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """Equal-depth edges; a value holding a large share of the data (a spike such as 0 in
    capital_gain) gets a bin of its own instead of swallowing its neighbours."""
    edges = np.unique(np.quantile(values, np.linspace(0, 1, n_bins + 1)))
    if len(edges) < 2:  # constant reference column: one bin around it
        return np.array([edges[0] - 0.5, edges[0] + 0.5])
    uniq = np.unique(values)
    extra = []
    for e in edges[:-1]:
        above = uniq[uniq > e]
        if above.size and np.mean(values == e) >= 1.0 / n_bins:  # spike at e: close its bin early
            extra.append(above[0])
    return np.unique(np.concatenate([edges, extra]))


def _point_masses(values: np.ndarray, edges: np.ndarray) -> tuple[float | None, ...]:
    codes = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, len(edges) - 2)
    out: list[float | None] = []
    for i in range(len(edges) - 1):
        inside = np.unique(values[codes == i])
        out.append(float(inside[0]) if inside.size == 1 else None)
    return tuple(out)


def _as_float(s: pd.Series, kind: str) -> np.ndarray:
    if kind == "datetime":
        dt = pd.to_datetime(s, errors="coerce")
        out = dt.astype("int64").to_numpy(dtype=float) / 1e9
        out[dt.isna().to_numpy()] = np.nan
        return out
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
