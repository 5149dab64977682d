"""Targets of the attacks and their membership labels. The labels stay here, with the evaluator:
attacks only ever see the target records."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from privacy_gate.config import TargetsConfig

from privacy_gate.spec import DatasetSpec
from privacy_gate.data import Splits
from privacy_gate.errors import InsufficientDataError
from privacy_gate.experiment.dependency import dependency_indices
from privacy_gate.experiment.floors import SMALLEST_PER_CLASS, Shortfall, dependency_shortfall, targets_shortfall


@dataclass(frozen=True)
class Targets:
    """Target records for the attacks and their membership labels (1 = in train), and the floor
    (``targets.min_per_class``) they fall short of, if any: the gate then REVIEWs for insufficient
    evidence."""

    records: pd.DataFrame  # index = row id in the real table
    labels: np.ndarray
    shortfall: Shortfall | None = None

    def __post_init__(self) -> None:
        if len(self.records) != len(self.labels):
            raise ValueError("targets and labels differ in length")

    @property
    def row_ids(self) -> np.ndarray:
        return self.records.index.to_numpy()


def _too_few(n_mem: int, n_non: int, what: str) -> InsufficientDataError:
    return InsufficientDataError(
        f"only {n_mem} member and {n_non} non-member targets available{what}; at least {SMALLEST_PER_CLASS} of each "
        f"are needed to measure anything (the MACE bounds split them in three parts), whatever targets.min_per_class "
        "says: use more data, a larger holdout (split.holdout) or larger targets.n_non_members / n_members")


def choose_targets(splits: Splits, cfg: TargetsConfig, *, max_per_class: int | None = None) -> Targets:
    """Non-members from holdout (all of it, up to ``max_per_class``, unless ``n_non_members`` is
    set), members sampled from train to balance them; reproducible from ``cfg.seed``. Fewer than
    ``cfg.min_per_class`` per class are used as they are (with a :class:`Shortfall`); fewer than
    :data:`SMALLEST_PER_CLASS` are refused."""
    rng = np.random.default_rng(cfg.seed)
    default = min(len(splits.holdout), max_per_class) if max_per_class else len(splits.holdout)
    n_non = min(cfg.n_non_members or default, len(splits.holdout))
    n_mem = min(cfg.n_members or n_non, len(splits.train))
    if min(n_non, n_mem) < SMALLEST_PER_CLASS:
        raise _too_few(n_mem, n_non, "")
    short = targets_shortfall(cfg, n_train=len(splits.train), n_holdout=len(splits.holdout), n_members=n_mem,
                              n_non_members=n_non, cap=max_per_class)
    members = splits.train.iloc[np.sort(rng.choice(len(splits.train), n_mem, replace=False))]
    non_members = splits.holdout.iloc[np.sort(rng.choice(len(splits.holdout), n_non, replace=False))]
    records = pd.concat([members, non_members])
    labels = np.concatenate([np.ones(n_mem, dtype=np.int8), np.zeros(n_non, dtype=np.int8)])
    return Targets(records=records, labels=labels, shortfall=short)


def choose_dependency_targets(splits: Splits, spec: DatasetSpec, cfg: TargetsConfig, *, value: str | None
                              ) -> tuple[str, Targets]:
    """Dependency stress test (Humphries et al.): members from one ``source`` value, non-members
    from the others — dependent membership the IID protocol does not see. The same floors as
    :func:`choose_targets` (``cfg.min_per_class``, :data:`SMALLEST_PER_CLASS`)."""
    value, mem_idx, non_idx = dependency_indices(splits.train[spec.source], splits.holdout[spec.source], value=value)
    n = min(len(mem_idx), len(non_idx), cfg.n_non_members or len(non_idx))
    if n < SMALLEST_PER_CLASS:
        raise _too_few(n, n, f" to the dependency test ({len(mem_idx)} training records from the tested {spec.source} "
                             f"value, {len(non_idx)} holdout records from the others)")
    short = dependency_shortfall(cfg, source=spec.source, members=len(mem_idx), non_members=len(non_idx), per_class=n)
    rng = np.random.default_rng(cfg.seed + 1)
    members = splits.train.iloc[np.sort(rng.choice(mem_idx, n, replace=False))]
    non_members = splits.holdout.iloc[np.sort(rng.choice(non_idx, n, replace=False))]
    labels = np.concatenate([np.ones(n, dtype=np.int8), np.zeros(n, dtype=np.int8)])
    return value, Targets(records=pd.concat([members, non_members]), labels=labels, shortfall=short)
