"""Linkability and attribute inference (Giomi et al., PETS 2023, §4.2-4.3), on the project's faiss
index (:func:`privacy_gate.attacks.nn_index.k_nearest_indices`).

- Linkability: the attacker holds two parts of a person's record (column sets A and B, e.g. a
  demographic table and a purchase table) and links them through the synthetic data: the
  ``n_neighbors`` nearest synthetic records of part A and of part B; the attack succeeds when the
  two sets share a synthetic record. The naive attacker picks ``n_neighbors`` random synthetic
  records for each part.
- Inference: the attacker knows the auxiliary columns of a person and guesses a secret column as
  the secret of the nearest synthetic record on the auxiliary columns; right when equal
  (categories) or within a relative tolerance (numbers). The naive attacker guesses the secret of
  a random synthetic record (the synthetic marginal).

Each attack runs on training targets and on as many control targets; the risk compares the two
(:mod:`privacy_gate.estimators.disclosure`). Per-target successes are kept (booleans, no values)
for the per-subgroup risks.

>>> import pandas as pd
>>> from privacy_gate.experiment.disclosure_codes import Codes
>>> rng = np.random.default_rng(0)
>>> df = pd.DataFrame(rng.normal(size=(300, 4)), columns=list("abcd"))
>>> codes = Codes.of([df, df, df.iloc[:150]], columns=list("abcd"), numeric=set("abcd"))
>>> t = np.arange(100)
>>> link = linkability(codes, ("a", "b"), ("c", "d"), train_idx=t, control_idx=t,
...                    n_neighbors=1, seed=0)
>>> round(link.risk.train_rate, 2)
1.0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import numpy as np
import numpy.typing as npt

from privacy_gate.attacks.nn_index import k_nearest_indices
from privacy_gate.estimators.disclosure import DisclosureRisk, disclosure_risk
from privacy_gate.experiment.disclosure_codes import Codes, same_value


@dataclass(frozen=True)
class AttackOutcomes:
    """One attack's risk and its per-target successes (training targets, control targets)."""

    name: str  # "linkability" or "inference.<column>"
    known: tuple[str, ...]  # the columns the attacker knew (for linkability: A then B)
    risk: DisclosureRisk
    train_hits: np.ndarray = field(repr=False)
    control_hits: np.ndarray = field(repr=False)

    def __post_init__(self) -> None:
        if (
            len(self.train_hits) != self.risk.n_train
            or len(self.control_hits) != self.risk.n_control
        ):
            raise ValueError("per-target successes and counts differ")


def _shared(a: np.ndarray, b: np.ndarray) -> npt.NDArray[np.bool_]:
    # numpy types ``==`` of two untyped arrays as Any: a boolean array, reduced
    return cast("npt.NDArray[np.bool_]", (a[:, :, None] == b[:, None, :]).any(axis=(1, 2)))


def linkability(
    codes: Codes,
    cols_a: tuple[str, ...],
    cols_b: tuple[str, ...],
    *,
    train_idx: np.ndarray,
    control_idx: np.ndarray,
    n_neighbors: int,
    seed: int,
    alpha: float = 0.05,
) -> AttackOutcomes:
    """Linkability risk of ``codes.matrices = (synthetic, training, control)`` for the targets."""
    if not cols_a or not cols_b or set(cols_a) & set(cols_b):
        raise ValueError("linkability needs two non-empty, disjoint column sets")
    syn_a, train_a, control_a = codes.vectors(cols_a)
    syn_b, train_b, control_b = codes.vectors(cols_b)
    targets_a = np.vstack([train_a[train_idx], control_a[control_idx]])
    targets_b = np.vstack([train_b[train_idx], control_b[control_idx]])
    hits = _shared(
        k_nearest_indices(targets_a, syn_a, n_neighbors),
        k_nearest_indices(targets_b, syn_b, n_neighbors),
    )
    n_t = len(train_idx)
    rng = np.random.default_rng(seed)
    k = min(n_neighbors, syn_a.shape[0])
    naive = _shared(
        rng.integers(syn_a.shape[0], size=(n_t, k)), rng.integers(syn_a.shape[0], size=(n_t, k))
    )
    risk = disclosure_risk(
        k_train=hits[:n_t].sum(),
        n_train=n_t,
        k_control=hits[n_t:].sum(),
        n_control=len(control_idx),
        alpha=alpha,
        k_baseline=naive.sum(),
    )
    return AttackOutcomes(
        "linkability", tuple(cols_a) + tuple(cols_b), risk, hits[:n_t], hits[n_t:]
    )


def inference(
    codes: Codes,
    secret: str,
    aux: tuple[str, ...],
    *,
    train_idx: np.ndarray,
    control_idx: np.ndarray,
    seed: int,
    tolerance: float = 0.05,
    alpha: float = 0.05,
) -> AttackOutcomes:
    """Inference risk on ``secret`` from ``aux`` (see the module docstring)."""
    if not aux or secret in aux:
        raise ValueError("inference needs auxiliary columns that do not include the secret")
    syn_v, train_v, control_v = codes.vectors(aux)
    j = codes.index([secret])[0]
    syn_s, train_s, control_s = (m[:, j].astype(np.float64) for m in codes.matrices)
    truth = np.concatenate([train_s[train_idx], control_s[control_idx]])
    nearest = k_nearest_indices(np.vstack([train_v[train_idx], control_v[control_idx]]), syn_v, 1)[
        :, 0
    ]
    numeric = bool(codes.numeric[j])
    hits = same_value(syn_s[nearest], truth, numeric=numeric, tolerance=tolerance)
    n_t = len(train_idx)
    naive = same_value(
        syn_s[np.random.default_rng(seed).integers(len(syn_s), size=n_t)],
        truth[:n_t],
        numeric=numeric,
        tolerance=tolerance,
    )
    risk = disclosure_risk(
        k_train=hits[:n_t].sum(),
        n_train=n_t,
        k_control=hits[n_t:].sum(),
        n_control=len(control_idx),
        alpha=alpha,
        k_baseline=naive.sum(),
    )
    return AttackOutcomes(f"inference.{secret}", tuple(aux), risk, hits[:n_t], hits[n_t:])


__all__ = ["AttackOutcomes", "inference", "linkability"]
