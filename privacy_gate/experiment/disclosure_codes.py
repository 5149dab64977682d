"""The disclosure evaluators' view of the records: every frame (synthetic, training, control) as
one float32 code matrix over the attacker's columns (categories as shared integer codes, numbers
as themselves, missing as NaN) for the singling-out predicates, and as scaled vectors for the
nearest-neighbour searches (numbers over their joint range, categories one-hot at 1/sqrt(2) so a
mismatch costs 1, like a Gower distance, with a missing indicator where a column has gaps).

>>> import pandas as pd
>>> a = pd.DataFrame({"c": ["x", "y"], "n": [0.0, 10.0]})
>>> b = pd.DataFrame({"c": ["y", None], "n": [5.0, 5.0]})
>>> codes = Codes.of([a, b], columns=["c", "n"], numeric={"n"})
>>> codes.matrices[1].tolist()
[[1.0, 5.0], [nan, 5.0]]
>>> codes.vectors(["n"])[0].ravel().tolist()
[0.0, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import numpy.typing as npt
import pandas as pd

_HALF = 1.0 / np.sqrt(2.0)


@dataclass(frozen=True)
class Codes:
    """Code matrices of several frames over ``columns``; ``numeric[j]`` says column j is a
    number."""

    columns: tuple[str, ...]
    numeric: np.ndarray
    matrices: tuple[np.ndarray, ...] = field(repr=False)
    _blocks: dict[int, list[np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False
    )  # column -> scaled blocks

    @classmethod
    def of(
        cls,
        frames: Sequence[pd.DataFrame],
        *,
        columns: Sequence[str],
        numeric: set[str] | frozenset[str],
    ) -> Codes:
        sizes = [len(f) for f in frames]
        cols = []
        for c in columns:
            joined = pd.concat([f[c] for f in frames], ignore_index=True)
            if c in numeric:
                if pd.api.types.is_datetime64_any_dtype(joined):
                    v = joined.astype("datetime64[s]").astype("int64").astype("float64")
                    v[joined.isna().to_numpy()] = np.nan
                else:
                    v = pd.to_numeric(joined, errors="coerce").to_numpy(dtype="float64")
            else:
                v = pd.factorize(joined.astype(object), use_na_sentinel=True)[0].astype("float64")
                v[v < 0] = np.nan
            cols.append(v.astype(np.float32))
        full = np.column_stack(cols) if cols else np.empty((sum(sizes), 0), dtype=np.float32)
        bounds = np.cumsum([0, *sizes])
        mats = tuple(
            np.ascontiguousarray(full[bounds[i] : bounds[i + 1]]) for i in range(len(frames))
        )
        return cls(
            columns=tuple(columns),
            numeric=np.array([c in numeric for c in columns], dtype=bool),
            matrices=mats,
        )

    def index(self, columns: Sequence[str]) -> list[int]:
        return [self.columns.index(c) for c in columns]

    def vectors(self, columns: Sequence[str]) -> tuple[np.ndarray, ...]:
        """Scaled float32 vectors of every frame over ``columns`` (see the module docstring)."""
        parts: list[list[np.ndarray]] = [[] for _ in self.matrices]
        for j in self.index(columns):
            if j not in self._blocks:
                self._blocks[j] = self._block(j)
            for p, b in zip(parts, self._blocks[j]):
                p.append(b)
        return tuple(
            np.hstack(p).astype(np.float32) if p else np.zeros((len(m), 1), np.float32)
            for p, m in zip(parts, self.matrices)
        )

    def _block(self, j: int) -> list[np.ndarray]:
        """Column j scaled, one block per frame."""
        parts: list[list[np.ndarray]] = [[] for _ in self.matrices]
        values = [m[:, j].astype(np.float64) for m in self.matrices]
        allv = np.concatenate(values)
        missing = np.isnan(allv)
        if self.numeric[j]:
            lo, hi = (np.nanmin(allv), np.nanmax(allv)) if (~missing).any() else (0.0, 1.0)
            span = hi - lo if hi > lo else 1.0
            for p, v in zip(parts, values):
                p.append(np.nan_to_num((v - lo) / span, nan=0.0)[:, None])
        else:
            n_codes = int(np.nanmax(allv)) + 1 if (~missing).any() else 0
            eye = np.eye(n_codes + 1, dtype=np.float32) * _HALF
            for p, v in zip(parts, values):
                p.append(eye[np.where(np.isnan(v), n_codes, v).astype(np.int64)][:, :n_codes])
        if missing.any():
            for p, v in zip(parts, values):
                p.append(np.isnan(v).astype(np.float32)[:, None])
        return [np.hstack(p).astype(np.float32) for p in parts]


def same_value(
    guess: np.ndarray, truth: np.ndarray, *, numeric: bool, tolerance: float
) -> np.ndarray:
    """Whether each guess of a secret is right: categories exactly, numbers within ``tolerance``
    of the true value (relative: ``|guess - truth| <= tolerance * |truth|``); both missing is right.

    >>> guess, truth = np.array([1.0, 104.0, np.nan]), np.array([1.0, 100.0, np.nan])
    >>> same_value(guess, truth, numeric=True, tolerance=0.05).tolist()
    [True, True, True]
    """
    both_missing = np.isnan(guess) & np.isnan(truth)
    if numeric:
        with np.errstate(invalid="ignore"):
            hit = np.abs(guess - truth) <= tolerance * np.abs(truth)
    else:
        hit = guess == truth
    # numpy types ``==`` of two untyped arrays as Any: a boolean array
    return cast("npt.NDArray[np.bool_]", hit | both_missing)


__all__ = ["Codes", "same_value"]
