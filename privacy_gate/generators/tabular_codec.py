"""A table as a numeric matrix for neural generators, and back, built from public knowledge only.

Numeric columns are scaled to [-1, 1] with the spec's ``min`` / ``max``; where the spec has none,
with the *reference* split's range (the attacker's public data, never the train split). Values
outside the range are clipped. Missing numerics become the range's midpoint and are not
generated (a note says so). Categorical and ordinal columns with categories are one-hot blocks
over the spec's categories (else the reference's values), plus a "missing" slot when the column
is nullable. Datetimes are handled as numbers (seconds).

>>> import pandas as pd
>>> from privacy_gate.spec import DatasetSpec
>>> spec = DatasetSpec.model_validate({"name": "t", "columns": {
...     "age": {"kind": "numeric", "min": 0, "max": 100},
...     "sex": {"kind": "categorical", "categories": ["F", "M"], "nullable": False}}})
>>> codec = TabularCodec.from_spec(spec, reference=None)
>>> codec.encode(pd.DataFrame({"age": [0.0, 50.0], "sex": ["M", "F"]})).tolist()
[[-1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
>>> codec.blocks
[('age', 'numeric', 0, 1), ('sex', 'categorical', 1, 3)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from privacy_gate.data.encoding import category_codes, category_keys
from privacy_gate.errors import ConfigError
from privacy_gate.spec import DatasetSpec

MISSING = "__missing__"


@dataclass
class TabularCodec:
    spec: DatasetSpec
    ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    categories: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_spec(cls, spec: DatasetSpec, *, reference: pd.DataFrame | None) -> TabularCodec:
        codec = cls(spec=spec)
        for name, col in spec.columns.items():
            if name == spec.entity_id:
                continue
            if col.is_numeric:
                lo, hi = col.min, col.max
                if lo is None or hi is None:
                    if reference is None or reference[name].dropna().empty:
                        raise ConfigError(
                            f"column '{name}': no min/max in the spec and no reference data to "
                            "take a public range from"
                        )
                    ref = _as_number(reference[name]).dropna()
                    lo = float(ref.min()) if lo is None else lo
                    hi = float(ref.max()) if hi is None else hi
                    codec.notes.append(
                        f"'{name}': range [{lo:g}, {hi:g}] taken from the reference split"
                    )
                codec.ranges[name] = (float(lo), float(hi) if hi > lo else float(lo) + 1.0)
            else:
                if col.categories is not None:
                    values = category_keys(col.categories)
                elif reference is not None:
                    values = sorted(set(category_keys(list(reference[name].dropna().unique()))))
                    codec.notes.append(f"'{name}': categories taken from the reference split")
                else:
                    raise ConfigError(
                        f"column '{name}': no categories in the spec and no reference data"
                    )
                codec.categories[name] = values + ([MISSING] if col.nullable else [])
        return codec

    @property
    def blocks(self) -> list[tuple[str, str, int, int]]:
        """``(column, "numeric" | "categorical", start, stop)`` in matrix order."""
        out, pos = [], 0
        for name in self.spec.columns:
            if name in self.ranges:
                out.append((name, "numeric", pos, pos + 1))
                pos += 1
            elif name in self.categories:
                width = len(self.categories[name])
                out.append((name, "categorical", pos, pos + width))
                pos += width
        return out

    @property
    def width(self) -> int:
        blocks = self.blocks
        return blocks[-1][3] if blocks else 0

    def encode(self, df: pd.DataFrame) -> np.ndarray:
        X = np.zeros((len(df), self.width), dtype=np.float32)
        missing_numeric = False
        for name, kind, start, _stop in self.blocks:
            if kind == "numeric":
                lo, hi = self.ranges[name]
                v = _as_number(df[name]).to_numpy(dtype=float)
                missing_numeric |= bool(np.isnan(v).any())
                v = np.where(np.isnan(v), (lo + hi) / 2, v)
                X[:, start] = np.clip(2 * (v - lo) / (hi - lo) - 1, -1, 1)
            else:
                cats = self.categories[name]
                missing = len(cats) - 1 if cats and cats[-1] == MISSING else None
                codes = category_codes(df[name], cats)  # -1: missing or outside the categories
                absent = df[name].isna().to_numpy()
                unknown = int(((codes < 0) & ~absent).sum())
                if missing is not None:
                    codes[absent] = missing
                if unknown and self.spec.columns[name].categories is None and missing is not None:
                    # categories taken from the reference: a value it lacks is released as missing
                    codes[codes < 0] = missing
                    self.notes.append(
                        f"'{name}': {unknown} value(s) outside the reference's categories "
                        "encoded as missing"
                    )
                elif (codes < 0).any():
                    raise ConfigError(
                        f"column '{name}': {unknown} value(s) outside its categories, or missing "
                        "values in a non-nullable column"
                    )
                X[np.arange(len(df)), start + codes] = 1.0
        if missing_numeric and "missing numerics are imputed" not in " ".join(self.notes):
            self.notes.append(
                "missing numerics are imputed with the range midpoint and never generated"
            )
        return X

    def decode(
        self, X: np.ndarray, rng: np.random.Generator, *, sample_categories: bool = True
    ) -> pd.DataFrame:
        """Numerics un-scaled and clipped to their range; a category per block drawn from the
        block's (softmax) probabilities, or its argmax."""
        out: dict[str, object] = {}
        for name, kind, start, stop in self.blocks:
            col = self.spec.columns[name]
            if kind == "numeric":
                lo, hi = self.ranges[name]
                v = lo + (np.clip(X[:, start], -1, 1) + 1) / 2 * (hi - lo)
                if col.kind == "datetime":
                    out[name] = pd.to_datetime(v, unit="s")
                elif col.kind == "ordinal":
                    out[name] = np.round(v)
                else:
                    out[name] = v
            else:
                p = np.clip(X[:, start:stop].astype(float), 1e-12, None)
                p /= p.sum(axis=1, keepdims=True)
                if sample_categories:
                    u = rng.random(len(p))[:, None]
                    idx = (p.cumsum(axis=1) < u).sum(axis=1).clip(max=p.shape[1] - 1)
                else:
                    idx = p.argmax(axis=1)
                cats = np.asarray(self.categories[name], dtype=object)
                values = cats[idx]
                values[values == MISSING] = None
                out[name] = values
        columns = [c for c in self.spec.columns if c in out]
        return pd.DataFrame(out)[columns]


def _as_number(s: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(s):
        return s.astype("int64").where(s.notna()) / 1e9
    return pd.to_numeric(s, errors="coerce")


__all__ = ["MISSING", "TabularCodec"]
