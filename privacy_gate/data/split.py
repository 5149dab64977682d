"""Entity-aware, seeded split into train / holdout / reference.

All records of one entity land in the same part; without an entity column each row is its own
entity. The split is a pure function of (data, spec, fractions, seed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privacy_gate.config import SplitConfig
from privacy_gate.errors import InsufficientDataError
from privacy_gate.spec import DatasetSpec


@dataclass(frozen=True)
class Splits:
    """train: what the generator sees; holdout: non-member targets; reference: attacker's data."""

    train: pd.DataFrame
    holdout: pd.DataFrame
    reference: pd.DataFrame

    def sizes(self) -> dict[str, int]:
        return {
            "train": len(self.train),
            "holdout": len(self.holdout),
            "reference": len(self.reference),
        }


def split_by_entity(
    df: pd.DataFrame,
    spec: DatasetSpec,
    split: SplitConfig,
    *,
    reference: pd.DataFrame | None = None,
) -> Splits:
    """Split ``df`` by entity. If a public ``reference`` table is given, ``df`` is split into
    train/holdout only (in the ratio train:holdout) and ``reference`` is used as given.
    """
    if spec.entity_id is not None:
        keys = df[spec.entity_id]
        if keys.isna().any():
            raise InsufficientDataError(
                f"entity column '{spec.entity_id}' has missing values; every record needs an entity"
            )
        entities = pd.unique(keys)
    else:
        keys = None
        entities = np.arange(len(df))
    fractions = [split.train, split.holdout, 0.0 if reference is not None else split.reference]
    total = sum(fractions)
    fractions = [f / total for f in fractions]
    n = len(entities)
    counts = np.floor(np.array(fractions) * n).astype(int)
    counts[0] += n - counts.sum()  # rounding remainder goes to train
    names = ["train", "holdout", "reference"]
    needed = [name for name, c, f in zip(names, counts, fractions) if f > 0 and c < 1]
    if needed:
        raise InsufficientDataError(
            f"{n} entities are too few for a train/holdout/reference split; {needed} would be empty"
        )
    rng = np.random.default_rng(split.seed)
    order = rng.permutation(n)
    part_of = np.empty(n, dtype=np.int8)
    part_of[order[: counts[0]]] = 0
    part_of[order[counts[0] : counts[0] + counts[1]]] = 1
    part_of[order[counts[0] + counts[1] :]] = 2
    if keys is None:
        row_part = part_of
    else:
        row_part = part_of[pd.Index(entities).get_indexer(keys)]
    parts = [df[row_part == i] for i in range(3)]
    return Splits(
        train=parts[0], holdout=parts[1], reference=reference if reference is not None else parts[2]
    )


def unit_codes(frame: pd.DataFrame, entity_id: str | None) -> np.ndarray:
    """The unit each row belongs to, as codes ``0 .. units - 1``: its entity (sorted by id) in a
    panel, the row itself otherwise. A panel's tests count people, not person-years.

    >>> panel, rows = pd.DataFrame({"pid": ["b", "a", "b"]}), pd.DataFrame({"x": [1, 2]})
    >>> unit_codes(panel, "pid").tolist(), unit_codes(rows, None).tolist()
    ([1, 0, 1], [0, 1])
    """
    if entity_id is None:
        return np.arange(len(frame))
    return pd.factorize(frame[entity_id].astype("string"), sort=True)[0].astype(np.int64)


def sample_units(
    frame: pd.DataFrame, entity_id: str | None, rate: float, rng: np.random.Generator
) -> np.ndarray:
    """Row positions of a seeded sample of ``frame``'s units (rows, or a panel's people with all
    their rows): ``round(rate * units)`` of them, at least one. Drawn without looking at any
    score, at one rate for every split sampled with it, so the kept units stay exchangeable.

    >>> people = pd.DataFrame({"pid": ["a", "a", "b", "c"]})
    >>> rows = sample_units(people, "pid", 2 / 3, np.random.default_rng(0))
    >>> people["pid"].iloc[rows].nunique()  # two of the three people, with all their rows
    2
    """
    codes = unit_codes(frame, entity_id)
    units = int(codes.max()) + 1 if len(codes) else 0
    keep = rng.choice(units, max(1, int(round(rate * units))), replace=False)
    return np.flatnonzero(np.isin(codes, keep))


def unit_max(scores: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each unit's largest row score (a symmetric function of the unit's rows, so units stay
    exchangeable between the splits when rows are not).

    >>> unit_max(np.array([0.5, 2.0, 1.0]), np.array([1, 0, 1])).tolist()
    [2.0, 1.0]
    """
    scores, codes = np.asarray(scores), np.asarray(codes)
    if codes.size == 0:
        return scores[:0]
    out = np.full(
        int(codes.max()) + 1,
        -np.inf if scores.dtype.kind == "f" else np.iinfo(np.int64).min,
        dtype=scores.dtype if scores.dtype.kind == "f" else np.int64,
    )
    np.maximum.at(out, codes, scores)
    return out


def labelled_units(units: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each row's unit as codes ``0 .. units - 1``, each unit's label) for labelled rows grouped
    into units (any hashable codes, e.g. :func:`unit_codes` offset per side). A unit on both sides
    of a membership split is refused: the split is by entity, so that is a caller's mix-up.

    >>> codes, lab = labelled_units(np.array([7, 3, 7, 9]), np.array([1, 0, 1, 0]))
    >>> codes.tolist(), lab.tolist()
    ([1, 0, 1, 2], [False, True, False])
    """
    labels = np.asarray(labels).astype(bool)
    keys, codes = np.unique(np.asarray(units), return_inverse=True)
    member = np.zeros(keys.size, dtype=bool)
    member[codes[labels]] = True
    non_member = np.zeros(keys.size, dtype=bool)
    non_member[codes[~labels]] = True
    if (member & non_member).any():
        raise ValueError("a unit (entity) has rows among both the members and the non-members")
    return codes.astype(np.int64), member


def unit_scores(
    scores: Mapping[str, np.ndarray], labels: np.ndarray, units: np.ndarray
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Target rows' scores per attack reduced to their units (a panel's people): each unit's
    largest score per attack (:func:`unit_max`), each unit's label, and each row's unit code
    (:func:`labelled_units`). What the per-person membership figures run on: the people, not their
    rows, are exchangeable between the splits.

    >>> scores = {"a": np.array([0.1, 0.9, 0.5])}
    >>> by_unit, lab, codes = unit_scores(scores, np.array([1, 1, 0]), np.array([4, 4, 2]))
    >>> by_unit["a"].tolist(), lab.tolist(), codes.tolist()
    ([0.5, 0.9], [False, True], [1, 1, 0])
    """
    codes, unit_labels = labelled_units(units, labels)
    return (
        {a: unit_max(np.asarray(s, dtype=float), codes) for a, s in scores.items()},
        unit_labels,
        codes,
    )


def one_row_each(codes: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted positions of one row, drawn uniformly, of each of ``n`` units drawn uniformly
    (``codes``: :func:`unit_codes`). Attempts on different people are independent where a
    person's rows are not: a rate over these rows keeps its binomial interval.

    >>> rows = one_row_each(np.array([0, 0, 1, 2, 2, 2]), 2, np.random.default_rng(0))
    >>> len(rows), len(set(np.array([0, 0, 1, 2, 2, 2])[rows].tolist()))
    (2, 2)
    """
    codes = np.asarray(codes)
    order = rng.permutation(
        codes.size
    )  # each unit's first row in a random order: a uniform row of it
    units, first = np.unique(codes[order], return_index=True)
    chosen = rng.choice(units.size, n, replace=False)
    return np.sort(order[first[chosen]])
