"""The noisy measurements a marginal DP generator released to its own synthesis step.

After ``fit``, MST, PrivBayes and Private-GSD keep ``measurements_``: every noisy count vector
they measured (with its noise distribution and scale) and how a record's codes map to a cell of
it. Synthesis only reads these, so they are what a white-box DP audit inspects
(``studies/dp_audit.py``): adding the target record moves the true value of the target's cell
by 1 / ``normaliser`` in every measurement, and nothing else the released noise depends on.
Recording them draws no randomness: samples of a seeded fit are unchanged.

>>> m = NoisyMeasurement(columns=("a",), index=(0,), maps=(np.arange(3),), shape=(3,),
...                      values=np.array([1.0, 2.0, 0.5]), noise="gaussian", scale=1.0)
>>> m.cells(np.array([[2], [0]])).tolist()
[2, 0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class NoisyMeasurement:
    columns: tuple[str, ...]  # the discretiser's column names measured
    index: tuple[int, ...]  # their positions in the discretiser's column order
    maps: tuple[
        np.ndarray, ...
    ]  # per column: original code -> code of the measured (compressed) domain
    shape: tuple[int, ...]  # the measured table's shape
    values: np.ndarray  # the noisy table, flattened (C order)
    noise: Literal["gaussian", "laplace"]
    scale: float  # Gaussian sigma or Laplace b, on the scale of ``values``
    normaliser: float = 1.0  # values = counts / normaliser + noise

    def __post_init__(self) -> None:
        if self.noise not in ("gaussian", "laplace"):
            raise ValueError(f"unknown noise {self.noise!r}")
        if not (len(self.columns) == len(self.index) == len(self.maps) == len(self.shape)):
            raise ValueError("a measurement needs one index, map and size per column")
        if (
            self.values.size != int(np.prod(self.shape))
            or not self.scale > 0
            or not self.normaliser > 0
        ):
            raise ValueError(
                "a measurement's values must fill its shape, with scale and normaliser > 0"
            )

    def cells(self, codes: np.ndarray) -> np.ndarray:
        """The flat cell of each row of ``codes`` (n, d) in the discretiser's column order."""
        codes = np.atleast_2d(codes)
        return np.ravel_multi_index(
            tuple(m[codes[:, j]] for m, j in zip(self.maps, self.index)), self.shape
        )


def identity_map(size: int) -> np.ndarray:
    return np.arange(int(size), dtype=np.int64)
