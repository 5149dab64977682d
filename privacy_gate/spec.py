"""The dataset spec: columns with their kinds and *public* domain knowledge, the entity column,
the audited subgroups and the source column. Almost every module needs it (readers, encoders,
generators, attacks, the gate); nothing here depends on the release config.

The format (README, "Dataset spec") is a user-facing contract: other tools write it, so it is
validated strictly (unknown keys are errors) and every error names the key and the problem.

>>> spec = DatasetSpec.model_validate({"name": "t", "columns": {"a": {"kind": "numeric"}}})
>>> spec.column_names
['a']
>>> spec.columns["a"].is_numeric
True
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ColumnKind = Literal["categorical", "ordinal", "numeric", "datetime"]

#: A dataset name becomes part of MLflow experiment names, Prefect concurrency limits and event
#: resources, and (as a slug) of file names: letters, digits, space and ``_ . - ( ) +``, starting
#: with a letter or digit, at most ``MAX_NAME_LENGTH`` characters (no path separators, no control
#: characters such as NUL, no names longer than a file name may be).
MAX_NAME_LENGTH = 100
_NAME_PATTERN = re.compile(r"[^\W_][\w .()+\-]*")

#: Defaults of the spec's identifier guard (README, "Dataset spec"): a categorical column with more
#: distinct values than ``max_categories``, or (from ``MIN_ROWS_FOR_SHARE`` rows with a value on)
#: with more than ``max_category_share`` of its values distinct, is refused when the real data is
#: read. Such a column is an identifier (a name, an e-mail, a record number), not a category:
#: one-hot encoding it costs one feature per row (12,000 rows: 12,000 features, gigabytes per
#: matrix, minutes per attack), no attack or generator can learn from a value held by one or two
#: records, and a generator that reproduces it would release identifiers. Real categoricals stay far
#: below: Adult's widest, native_country, has 42 values; 1,000 one-hot features on 12,000 rows are
#: 96 MB per matrix.
DEFAULT_MAX_CATEGORIES = 1000
DEFAULT_MAX_CATEGORY_SHARE = 0.5

#: The widest encoding the attacks' encoder accepts (``MixedEncoder``, all columns together): 10,000
#: features on 12,000 rows are already 960 MB per matrix, and the attacks hold several. Every
#: attribute column is at least one feature, so it also bounds a table's width
#: (``inputs.max_columns``).
MAX_ENCODED_WIDTH = 10_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _bound(v: float | None) -> str:
    return "unbounded" if v is None else f"{v:g}"


class ColumnSpec(_Strict):
    """One column: its kind and optional *public* domain knowledge (never read from the data)."""

    kind: ColumnKind
    categories: list[Any] | None = None
    min: float | None = None
    max: float | None = None
    bins: list[float] | None = None
    nullable: bool = True

    @model_validator(mode="after")
    def _check(self) -> ColumnSpec:
        if self.categories is not None:
            if self.kind not in ("categorical", "ordinal"):
                raise ValueError(
                    f"'categories' is only allowed for categorical/ordinal columns, not {self.kind}"
                )
            if len(self.categories) == 0:
                raise ValueError("'categories' must not be empty")
            if len(set(map(str, self.categories))) != len(self.categories):
                raise ValueError("'categories' contains duplicates")
        numeric_keys = [k for k in ("min", "max", "bins") if getattr(self, k) is not None]
        if numeric_keys and self.kind in ("categorical",):
            raise ValueError("'min'/'max'/'bins' are not allowed for categorical columns")
        if numeric_keys and self.categories is not None:
            # an ordinal is either a list of ordered categories or a number with a range, not both:
            # the list made it categorical and the range was ignored until the data failed it
            keys = " and ".join(f"'{k}'" for k in numeric_keys)
            raise ValueError(
                f"{keys} contradict 'categories': an ordinal with a category list is ordered by "
                "the "
                f"list, one with {keys} is a number; keep one of them"
            )
        if self.min is not None and self.max is not None and not self.min < self.max:
            raise ValueError(f"'min' ({self.min}) must be smaller than 'max' ({self.max})")
        if self.bins is not None:
            if len(self.bins) < 2 or any(b >= c for b, c in zip(self.bins, self.bins[1:])):
                raise ValueError("'bins' must be at least two strictly increasing edges")
            outside = (self.max is not None and self.bins[0] >= self.max) or (
                self.min is not None and self.bins[-1] <= self.min
            )
            if outside:
                raise ValueError(
                    f"'bins' ({self.bins[0]:g} to {self.bins[-1]:g}) contradict 'min'/'max' "
                    f"({_bound(self.min)} to {_bound(self.max)}): every value in the range would "
                    "fall "
                    "outside the bins"
                )
        return self

    @property
    def is_numeric(self) -> bool:
        """Numeric-like columns: numeric, datetime, and ordinals without a category list."""
        return self.kind in ("numeric", "datetime") or (
            self.kind == "ordinal" and self.categories is None
        )


class DatasetSpec(_Strict):
    """Columns with kinds and public knowledge, entity column, audited subgroups, source column."""

    name: str = Field(min_length=1)
    columns: dict[str, ColumnSpec]
    entity_id: str | None = None
    subgroups: list[str] = Field(default_factory=list)
    source: str | None = None
    # who the disclosure attacker is (README, "Disclosure risks"): the columns an attacker may
    # know about a person (default: every attribute column that is not sensitive), the secrets
    # (default: the attribute columns that are not quasi-identifiers, or every attribute column in
    # turn when neither is declared), and the two parts of a record linkability joins (default:
    # the quasi-identifiers split in two halves, in spec order)
    quasi_identifiers: list[str] | None = None
    sensitive: list[str] | None = None
    linkability: list[list[str]] | None = None
    # the identifier guard (see DEFAULT_MAX_CATEGORIES): most distinct values a categorical column
    # may have, and the largest share of its values (from 200 values on) that may be distinct
    max_categories: int = Field(DEFAULT_MAX_CATEGORIES, ge=2)
    max_category_share: float = Field(DEFAULT_MAX_CATEGORY_SHARE, gt=0, le=1)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        # the value itself is never repeated: it may be 10,000 characters or hold control characters
        if len(v) > MAX_NAME_LENGTH:
            raise ValueError(
                f"dataset name is {len(v)} characters long; at most {MAX_NAME_LENGTH} are allowed"
            )
        if v and not _NAME_PATTERN.fullmatch(v):
            raise ValueError(
                "dataset name may only hold letters, digits, spaces and _ . - ( ) +, and must "
                "start "
                "with a letter or digit (no '/', no control characters)"
            )
        return v

    @field_validator("columns")
    @classmethod
    def _non_empty(cls, v: dict[str, ColumnSpec]) -> dict[str, ColumnSpec]:
        if not v:
            raise ValueError("at least one column is required")
        return v

    @model_validator(mode="after")
    def _refs(self) -> DatasetSpec:
        for key, col in (("entity_id", self.entity_id), ("source", self.source)):
            if col is not None and col not in self.columns:
                raise ValueError(f"{key} names unknown column '{col}'")
        for col in self.subgroups:
            if col not in self.columns:
                raise ValueError(f"subgroups names unknown column '{col}'")
            if self.columns[col].is_numeric:
                raise ValueError(
                    f"subgroup column '{col}' must be categorical or ordinal with categories"
                )
            if col == self.entity_id:
                raise ValueError(
                    f"subgroups names the entity_id '{col}': an identifier has one group per "
                    "entity; "
                    "audit attribute columns, not the identifier"
                )
        if len(set(self.subgroups)) != len(self.subgroups):
            raise ValueError("subgroups lists a column more than once")
        if self.source is not None and self.source == self.entity_id:
            raise ValueError(
                f"source and entity_id are both '{self.source}': the source is where a record "
                "comes "
                "from (a site, a wave), shared by many entities; name different columns"
            )
        self._check_disclosure()
        if self.entity_id is not None and len(self.columns) < 2:
            raise ValueError("a spec with an entity_id needs at least one other column")
        for name, col in self.columns.items():
            if (
                col.categories is not None
                and len(col.categories) > self.max_categories
                and name != self.entity_id
            ):
                raise ValueError(
                    f"column '{name}' lists {len(col.categories)} categories, more than "
                    "max_categories "
                    f"({self.max_categories}); declare it as entity_id, drop it, or raise "
                    "max_categories"
                )
        return self

    def _check_disclosure(self) -> None:
        for key, cols in (
            ("quasi_identifiers", self.quasi_identifiers),
            ("sensitive", self.sensitive),
            *((f"linkability[{i}]", part) for i, part in enumerate(self.linkability or [])),
        ):
            for col in cols or []:
                if col not in self.columns:
                    raise ValueError(f"{key} names unknown column '{col}'")
                if col == self.entity_id:
                    raise ValueError(
                        f"{key} names the entity_id '{col}' (an identifier, not an attribute)"
                    )
            if cols is not None and len(set(cols)) != len(cols):
                raise ValueError(f"{key} lists a column more than once")
        if self.quasi_identifiers is not None and not self.quasi_identifiers:
            raise ValueError(
                "quasi_identifiers: empty — leave the key out for the default (every non-sensitive "
                "column)"
            )
        both = set(self.quasi_identifiers or []) & set(self.sensitive or [])
        if both:
            raise ValueError(
                f"sensitive and quasi_identifiers share {sorted(both)}: a secret is what the "
                "attacker "
                "does not know"
            )
        if self.linkability is not None:
            if len(self.linkability) != 2 or not all(self.linkability):
                raise ValueError("linkability must list exactly two non-empty column sets")
            if set(self.linkability[0]) & set(self.linkability[1]):
                raise ValueError("linkability: the two column sets must not share a column")

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    @property
    def attribute_columns(self) -> list[str]:
        """Columns that describe a record (the entity id is an identifier, not an attribute)."""
        return [c for c in self.columns if c != self.entity_id]
