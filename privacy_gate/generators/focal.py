"""Focal points: the data-dependent measurements a marginal generator chooses (MAMA-MIA, §III).

MST's focal points are 2-way marginals (its spanning-tree edges), PrivBayes' are conditionals
(child | parents), Private-GSD's are selected marginal queries. A marginal generator exposes the
selection step alone (``select_focal_points``) so MAMA-MIA shadow runs can stop right after it,
and records what the real fit selected in ``focal_points_``.

>>> FocalPoint(kind="conditional", columns=("income", "age", "sex")).parents
('age', 'sex')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from privacy_gate.generators.base import Generator


@dataclass(frozen=True, order=True)
class FocalPoint:
    kind: Literal["marginal", "conditional", "query"]
    columns: tuple[str, ...]  # marginal/query: the attributes; conditional: (child, *parents)
    cell: tuple[int, ...] | None = (
        None  # query: the selected cell's codes, when a cell was selected
    )

    def __post_init__(self) -> None:
        if self.kind not in ("marginal", "conditional", "query"):
            raise ValueError(f"unknown focal point kind {self.kind!r}")
        if not self.columns:
            raise ValueError("a focal point needs at least one column")
        if self.cell is not None and len(self.cell) != len(self.columns):
            raise ValueError("a focal point's cell must have one code per column")

    @property
    def child(self) -> str:
        return self.columns[0]

    @property
    def parents(self) -> tuple[str, ...]:
        return self.columns[1:] if self.kind == "conditional" else ()


@runtime_checkable
class MarginalGenerator(Generator, Protocol):
    """A generator whose data-dependent selection step can run alone (cheaply, same budget
    share)."""

    focal_points_: list[FocalPoint]

    def select_focal_points(
        self, data: pd.DataFrame, rng: np.random.Generator
    ) -> list[FocalPoint]: ...
