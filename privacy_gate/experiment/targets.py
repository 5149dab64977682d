"""Targets of the attacks and their membership labels. The labels stay here, with the evaluator:
attacks only ever see the target records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from privacy_gate.config import TargetsConfig
from privacy_gate.data import Splits
from privacy_gate.data.split import unit_codes
from privacy_gate.errors import InsufficientDataError
from privacy_gate.experiment.dependency import dependency_indices
from privacy_gate.experiment.floors import (
    SMALLEST_PER_CLASS,
    Shortfall,
    dependency_shortfall,
    targets_shortfall,
)
from privacy_gate.spec import DatasetSpec


@dataclass(frozen=True)
class Targets:
    """Target records for the attacks and their membership labels (1 = in train), and the floor
    (``targets.min_per_class``) they fall short of, if any: the gate then REVIEWs for insufficient
    evidence."""

    records: pd.DataFrame  # index = row id in the real table
    labels: np.ndarray
    shortfall: Shortfall | None = None
    #: a panel (``spec.entity_id``): each target row's unit (person), members' and non-members'
    #: codes disjoint; None when every row is its own unit
    units: np.ndarray | None = None

    def __post_init__(self) -> None:
        if len(self.records) != len(self.labels):
            raise ValueError("targets and labels differ in length")

    @property
    def row_ids(self) -> np.ndarray:
        # pandas is untyped here (Any): the targets' row ids
        return cast(np.ndarray, self.records.index.to_numpy())

    def count(self, *, members: bool) -> int:
        """Member (or non-member) units: people in a panel, rows otherwise."""
        side = np.asarray(self.labels).astype(bool) == members
        return (
            int(side.sum())
            if self.units is None
            else int(np.unique(np.asarray(self.units)[side]).size)
        )


def _too_few(n_mem: int, n_non: int, what: str) -> InsufficientDataError:
    return InsufficientDataError(
        f"only {n_mem} member and {n_non} non-member targets available{what}; at least "
        f"{SMALLEST_PER_CLASS} of each "
        "are needed to measure anything (the MACE bounds split them in three parts), whatever "
        "targets.min_per_class "
        "says: use more data, a larger holdout (split.holdout) or larger targets.n_non_members / "
        "n_members"
    )


def choose_targets(
    splits: Splits,
    cfg: TargetsConfig,
    *,
    max_per_class: int | None = None,
    entity_id: str | None = None,
) -> Targets:
    """Non-members from holdout (all of it, up to ``max_per_class``, unless ``n_non_members`` is
    set), members sampled from train to balance them; reproducible from ``cfg.seed``. Fewer than
    ``cfg.min_per_class`` per class are used as they are (with a :class:`Shortfall`); fewer than
    :data:`SMALLEST_PER_CLASS` are refused. With ``entity_id`` (a panel) whole people are drawn:
    :func:`_choose_units`."""
    if entity_id is not None:
        return _choose_units(splits, cfg, max_per_class=max_per_class, entity_id=entity_id)
    rng = np.random.default_rng(cfg.seed)
    default = min(len(splits.holdout), max_per_class) if max_per_class else len(splits.holdout)
    n_non = min(cfg.n_non_members or default, len(splits.holdout))
    n_mem = min(cfg.n_members or n_non, len(splits.train))
    if min(n_non, n_mem) < SMALLEST_PER_CLASS:
        raise _too_few(n_mem, n_non, "")
    short = targets_shortfall(
        cfg,
        n_train=len(splits.train),
        n_holdout=len(splits.holdout),
        n_members=n_mem,
        n_non_members=n_non,
        cap=max_per_class,
    )
    members = splits.train.iloc[np.sort(rng.choice(len(splits.train), n_mem, replace=False))]
    non_members = splits.holdout.iloc[
        np.sort(rng.choice(len(splits.holdout), n_non, replace=False))
    ]
    records = pd.concat([members, non_members])
    labels = np.concatenate([np.ones(n_mem, dtype=np.int8), np.zeros(n_non, dtype=np.int8)])
    return Targets(records=records, labels=labels, shortfall=short)


def _choose_units(
    splits: Splits, cfg: TargetsConfig, *, max_per_class: int | None, entity_id: str
) -> Targets:
    """A panel's targets: the same number of *people* from each side, each with all their rows.

    Why units, not rows: the per-unit tests (exposure, the membership test) score a person by
    their most exposed target row, ``max`` over the rows drawn of that person. That maximum is
    exchangeable between members and non-members under no leakage only if the rows it runs over
    are drawn alike on both sides. Sampling rows does not do that: the same number of rows from a
    training split three times the holdout's size leaves a member about a third of their rows and
    a non-member all of theirs, so the non-members' maxima run over more rows and are stochastically
    larger (a test that loses its power), and the other way round it is anti-conservative. Drawing
    whole people makes a unit's rows its entity's rows on either side, a symmetric function of the
    person: the split put people at random into train and holdout, the draw takes a uniform subset
    of each side's people of a size fixed in advance, so given the chosen people the labels are a
    uniformly random assignment of ``n`` members and ``n`` non-members — exchangeability of people.
    The number of people is fixed from the people per side (set by the split's fractions) and the
    rows per person over train and holdout together (a symmetric figure), never from one side's
    rows: ``max_per_class`` and ``n_non_members`` / ``n_members`` (in rows) become people at that
    pooled rate. The row-level attacks and MACE still read the rows; the tests that count people
    read :attr:`Targets.units`.
    """
    rng = np.random.default_rng(cfg.seed)
    codes = [unit_codes(part, entity_id) for part in (splits.train, splits.holdout)]
    people = [int(c.max()) + 1 if c.size else 0 for c in codes]
    rows_per_unit = (len(splits.train) + len(splits.holdout)) / max(1, sum(people))

    def units_for(rows: int | None) -> int | None:
        return None if rows is None else max(1, int(round(rows / rows_per_unit)))

    wanted = units_for(cfg.n_non_members) or units_for(max_per_class) or people[1]
    n_non = min(wanted, people[1])
    n_mem = min(units_for(cfg.n_members) or n_non, people[0])
    if min(n_non, n_mem) < SMALLEST_PER_CLASS:
        raise _too_few(n_mem, n_non, f" (people: {entity_id})")
    chosen = [
        np.sort(rng.choice(people[0], n_mem, replace=False)),
        np.sort(rng.choice(people[1], n_non, replace=False)),
    ]
    take = [np.isin(c, ch) for c, ch in zip(codes, chosen)]
    members, non_members = splits.train[take[0]], splits.holdout[take[1]]
    # the floor stays in rows: it sizes the row-level figures (MACE splits the targets in three);
    # the people-level tests have their own floor (exposure.level's calibration,
    # ``level_shortfall``)
    short = targets_shortfall(
        cfg,
        n_train=len(splits.train),
        n_holdout=len(splits.holdout),
        n_members=len(members),
        n_non_members=len(non_members),
        cap=max_per_class,
    )
    labels = np.concatenate(
        [np.ones(len(members), dtype=np.int8), np.zeros(len(non_members), dtype=np.int8)]
    )
    units = np.concatenate(
        [codes[0][take[0]], people[0] + codes[1][take[1]]]
    )  # disjoint codes per side
    return Targets(
        records=pd.concat([members, non_members]), labels=labels, shortfall=short, units=units
    )


def choose_dependency_targets(
    splits: Splits, spec: DatasetSpec, cfg: TargetsConfig, *, value: str | None
) -> tuple[str, Targets]:
    """Dependency stress test (Humphries et al.): members from one ``source`` value, non-members
    from the others — dependent membership the IID protocol does not see. The same floors as
    :func:`choose_targets` (``cfg.min_per_class``, :data:`SMALLEST_PER_CLASS`)."""
    value, mem_idx, non_idx = dependency_indices(
        splits.train[spec.source], splits.holdout[spec.source], value=value
    )
    n = min(len(mem_idx), len(non_idx), cfg.n_non_members or len(non_idx))
    if n < SMALLEST_PER_CLASS:
        raise _too_few(
            n,
            n,
            f" to the dependency test ({len(mem_idx)} training records from the tested "
            f"{spec.source} "
            f"value, {len(non_idx)} holdout records from the others)",
        )
    short = dependency_shortfall(
        cfg, source=str(spec.source), members=len(mem_idx), non_members=len(non_idx), per_class=n
    )
    rng = np.random.default_rng(cfg.seed + 1)
    members = splits.train.iloc[np.sort(rng.choice(mem_idx, n, replace=False))]
    non_members = splits.holdout.iloc[np.sort(rng.choice(non_idx, n, replace=False))]
    labels = np.concatenate([np.ones(n, dtype=np.int8), np.zeros(n, dtype=np.int8)])
    return value, Targets(records=pd.concat([members, non_members]), labels=labels, shortfall=short)
