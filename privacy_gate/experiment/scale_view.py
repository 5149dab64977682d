"""The member scan's scale-invariant view: a record and its copy with every number multiplied by
one factor encode alike.

A copy scaled by 1.02 is no natural twin, yet in the scan's standardised encoding it can sit
farther from its record than the record's nearest real neighbour: a year column times 1.02 moves
40 years, an integer column leaves its grid. What such a copy keeps is every *ratio* between
the record's numbers. The view encodes each numeric-like value by its log-magnitude centred on the
record's own mean log-magnitude (over its non-zero, observed values),

    c_j(x) = log|x_j| - mean_{k: x_k != 0, observed} log|x_k|     (0 where x_j is 0 or missing),

each column divided by its standard deviation over the pool, plus the value's sign (negative,
zero, positive) and the base encoding's categorical and missing-value features. ``c(a x) = c(x)``
for every factor ``a > 0``: the scaled copy is an exact match, while a natural neighbour that
differs in any ratio is not. The view drops one degree of freedom (the record's overall magnitude),
which is what it pays; with fewer than two numeric-like columns it has nothing to compare and is not
used.

The categorical, missing-value and sign features (a one-hot block of about a hundred columns on
Adult) enter through a fixed random projection to :data:`PROJECTED_DIMS` dimensions: equal blocks
stay exactly equal, so a scaled copy still matches its record exactly, unequal ones stay apart
(two records that differ in one category are sqrt(1) apart before, about as far after, the
spread of a chi-square with that many degrees of freedom), and the view's search reads about a
sixth of the columns (on full Adult it had doubled the scan's time with the whole block).

The view is one function of each row and of the pool's per-column spread, the same for every
record whichever split it is in, so the scan's exchangeability (and so its p-values) is kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privacy_gate.data.encoding import MixedEncoder, column_as_float

#: the sign feature's weight: a value whose sign differs is as far as one one-hot category apart
SIGN_WEIGHT = 0.5
#: dimensions of the random projection of the categorical, missing-value and sign features
PROJECTED_DIMS = 12
#: the projection's seed: fixed, so the view is the same function in every run (it holds no secret)
PROJECTION_SEED = 20261128


def ratio_columns(encoder: MixedEncoder) -> list[str]:
    """The encoder's standardised columns that hold numbers (not category codes): what a scaled
    copy multiplies."""
    return [c for c in encoder.means_ if c not in encoder.categories_]


def centred_log_magnitudes(
    frame: pd.DataFrame, encoder: MixedEncoder, columns: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """``(c, sign)``: the centred log-magnitudes (see the module docstring) and the signs of the
    ``columns`` of ``frame``.

    >>> from privacy_gate.spec import DatasetSpec
    >>> cols = {"a": {"kind": "numeric"}, "b": {"kind": "numeric"}}
    >>> spec = DatasetSpec.model_validate({"name": "t", "columns": cols})
    >>> df = pd.DataFrame({"a": [2.0, 4.0, 0.0], "b": [8.0, 16.0, 5.0]})
    >>> enc = MixedEncoder(spec=spec).fit(df)
    >>> c, sign = centred_log_magnitudes(df, enc, ["a", "b"])
    >>> bool(np.allclose(c[0], c[1])), c[2].tolist(), sign[2].tolist()
    (True, [0.0, 0.0], [0.0, 1.0])
    """
    values = (
        np.column_stack(
            [
                column_as_float(frame[c], kind=encoder.spec.columns[c].kind, column=c)
                for c in columns
            ]
        )
        if columns
        else np.zeros((len(frame), 0))
    )
    present = np.isfinite(values) & (values != 0.0)
    logs = np.where(present, np.log(np.abs(np.where(present, values, 1.0))), 0.0)
    count = present.sum(axis=1, keepdims=True)
    centre = logs.sum(axis=1, keepdims=True) / np.maximum(count, 1)
    return np.where(present, logs - centre, 0.0), np.sign(np.nan_to_num(values, nan=0.0))


class ScaleInvariantView:
    """The view of the pool and the synthetic rows; ``fit`` on the pool (one function of it),
    then ``transform`` any frame already encoded by ``encoder``.

    >>> from privacy_gate.spec import DatasetSpec
    >>> cols = {"a": {"kind": "numeric"}, "b": {"kind": "numeric"}}
    >>> spec = DatasetSpec.model_validate({"name": "t", "columns": cols})
    >>> pool = pd.DataFrame({"a": [20.0, 35.0, 50.0, 61.0], "b": [1.0, 3.0, 2.0, 5.0]})
    >>> enc = MixedEncoder(spec=spec).fit(pool)
    >>> view = ScaleInvariantView(encoder=enc).fit(pool)
    >>> row = pool.iloc[[2]]
    >>> copy = row * 1.02
    >>> seen = lambda frame: view.transform(frame, enc.transform(frame))
    >>> bool(np.allclose(seen(copy), seen(row)))
    True
    """

    def __init__(self, *, encoder: MixedEncoder):
        self.encoder = encoder

    @property
    def usable(self) -> bool:
        """At least two numbers per record: with one, no ratio is left to compare."""
        return len(ratio_columns(self.encoder)) >= 2

    def fit(self, pool: pd.DataFrame) -> ScaleInvariantView:
        self._fit(centred_log_magnitudes(pool, self.encoder, ratio_columns(self.encoder))[0])
        return self

    def fit_transform(self, pool: pd.DataFrame, encoded: np.ndarray) -> np.ndarray:
        """``fit(pool)`` and the pool's view, its log-magnitudes read once."""
        centred, sign = centred_log_magnitudes(pool, self.encoder, ratio_columns(self.encoder))
        self._fit(centred)
        return self._view(centred, sign, encoded)

    def _fit(self, centred: np.ndarray) -> None:
        self.columns_ = ratio_columns(self.encoder)
        self.positions_ = [self.encoder.feature_names_out_.index(c) for c in self.columns_]
        spread = centred.std(axis=0)
        self.scales_ = np.where(spread > 0, spread, 1.0)
        numeric = set(self.positions_)
        self.block_ = [j for j in range(self.encoder.n_features_out_) if j not in numeric]
        width = len(self.block_) + len(self.columns_)
        rng = np.random.default_rng(PROJECTION_SEED)
        self.projection_ = rng.normal(size=(width, PROJECTED_DIMS)) / np.sqrt(PROJECTED_DIMS)

    def transform(self, frame: pd.DataFrame, encoded: np.ndarray) -> np.ndarray:
        """The view of ``frame`` (``encoded``: its base encoding, whose numeric features it
        replaces)."""
        return self._view(*centred_log_magnitudes(frame, self.encoder, self.columns_), encoded)

    def _view(self, centred: np.ndarray, sign: np.ndarray, encoded: np.ndarray) -> np.ndarray:
        block = np.hstack(
            [np.asarray(encoded, dtype=np.float64)[:, self.block_], SIGN_WEIGHT * sign]
        )
        return np.hstack([centred / self.scales_, block @ self.projection_])


__all__ = [
    "PROJECTED_DIMS",
    "PROJECTION_SEED",
    "SIGN_WEIGHT",
    "ScaleInvariantView",
    "centred_log_magnitudes",
    "ratio_columns",
]
