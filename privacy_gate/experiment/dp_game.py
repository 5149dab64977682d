"""The distinguishing game of a DP audit: targets, neighbouring datasets and the scores of one run.

Targets (Annamalai, Ganev & De Cristofaro, USENIX Security 2024: natural records give loose
audits, a worst-case record a tight one):

- ``worst_case``: built from the *public* domain (the discretiser of the spec and reference): in
  every column the public value (bin or category) that is rarest in D, so the combination is
  absent from D whenever any column has an unused value. Its numeric values are drawn inside the
  bin (the record is synthetic, not real).
- ``outlier``: the real record of D whose values are jointly rarest (lowest sum of log 1-way
  frequencies). It is a real record: it is named by its row position and a hash, never printed.

Neighbouring datasets follow the generator's DP definition (``neighbours``): ``add_remove`` (MST,
Private-GSD: D vs D + {target}) or ``replace_one`` (PrivBayes, n public: D vs D with one fixed
record replaced by the target).

Scores (higher = "the target was in"):

- white-box: the log-likelihood ratio of the generator's released noisy measurements
  (``measurements_``) between "in" and "out", at the cells the target (and the replaced record)
  fall in; for Gaussian noise it is exactly Gaussian with mean shift sqrt(sum 1 / sigma_i^2) over
  the measurements touching the target, the Neyman-Pearson test of those measurements. Threat
  model: the adversary sees the generator's internal noisy marginals and knows D (the strongest
  DP adversary short of seeing the selection randomness).
- black-box: from the released synthetic rows only: exact copies of the target (heavy weight) plus,
  per column, log(1 + rows holding the target's value) weighted by how rare that value is in D.
  Threat model: the adversary sees the synthetic data and knows D and the target.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from privacy_gate.generators.discretize import Discretizer
from privacy_gate.generators.measurements import NoisyMeasurement
from privacy_gate.spec import DatasetSpec

Neighbours = Literal["add_remove", "replace_one"]
TARGET_KINDS = ("worst_case", "outlier")
_EXACT_WEIGHT = 10.0


@dataclass(frozen=True, eq=False)
class AuditTarget:
    """A target and the two neighbouring datasets of the game (the record is never logged)."""

    kind: Literal["worst_case", "outlier"]
    # public description: "worst-case record from the public domain" / "row 17 (sha256 ...)"
    label: str
    record: pd.DataFrame  # one row, the spec's columns
    out_data: pd.DataFrame
    in_data: pd.DataFrame
    replaced: pd.DataFrame | None  # replace_one: the record the target replaces in "in"

    def __post_init__(self) -> None:
        if len(self.record) != 1:
            raise ValueError("a target is one record")
        if self.kind not in TARGET_KINDS:
            raise ValueError(f"unknown target kind {self.kind!r}; known: {TARGET_KINDS}")


def record_hash(row: pd.DataFrame) -> str:
    """A short, stable hash of a record's values (how reports name a real record)."""
    return hashlib.sha256(row.to_json(orient="records", date_format="iso").encode()).hexdigest()[
        :12
    ]


def _neighbours(
    base: pd.DataFrame, target: pd.DataFrame, replaced: pd.DataFrame | None, kind: Neighbours
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None]:
    """(out, in, replaced): add_remove: base vs base + target; replace_one: base + r vs base +
    target."""
    if kind == "add_remove":
        return base, pd.concat([base, target], ignore_index=True), None
    if kind != "replace_one":
        raise ValueError(f"unknown neighbouring relation {kind!r}")
    if replaced is None:
        replaced, base = base.iloc[[-1]], base.iloc[:-1]
    return (
        pd.concat([base, replaced], ignore_index=True),
        pd.concat([base, target], ignore_index=True),
        replaced.reset_index(drop=True),
    )


def worst_case_target(
    data: pd.DataFrame,
    spec: DatasetSpec,
    discretizer: Discretizer,
    *,
    neighbours: Neighbours,
    rng: np.random.Generator,
) -> AuditTarget:
    """The public-domain record rarest in D, column by column (see the module doc)."""
    codes = discretizer.transform(data)
    target_codes = np.array(
        [
            [
                int(np.argmin(np.bincount(codes[:, j], minlength=discretizer.domain_[c])))
                for j, c in enumerate(discretizer.columns_)
            ]
        ]
    )
    row = discretizer.inverse_transform(target_codes, rng=rng)
    record = data.iloc[[0]].copy().reset_index(drop=True)
    for c in discretizer.columns_:
        record[c] = row[c].to_numpy()
    if spec.entity_id is not None:
        record[spec.entity_id] = "dp-audit-target"
    out, inn, replaced = _neighbours(data.reset_index(drop=True), record, None, neighbours)
    return AuditTarget(
        "worst_case", "worst-case record from the public domain", record, out, inn, replaced
    )


def outlier_target(
    data: pd.DataFrame, discretizer: Discretizer, *, neighbours: Neighbours
) -> AuditTarget:
    """The real record of D with the rarest values (lowest sum of log 1-way frequencies)."""
    codes = discretizer.transform(data)
    logf = np.zeros(len(data))
    for j, c in enumerate(discretizer.columns_):
        counts = np.bincount(codes[:, j], minlength=discretizer.domain_[c])
        logf += np.log(counts[codes[:, j]] / len(data))
    i = int(np.argmin(logf))
    data = data.reset_index(drop=True)
    record = data.iloc[[i]].reset_index(drop=True)
    rest = data.drop(index=i).reset_index(drop=True)
    typical = (
        rest.iloc[[int(np.argmax(np.delete(logf, i)))]] if neighbours == "replace_one" else None
    )
    out, inn, replaced = _neighbours(rest, record, typical, neighbours)
    return AuditTarget(
        "outlier", f"row {i} (sha256 {record_hash(record)})", record, out, inn, replaced
    )


def _loglik(noise: str, y: float, mean: float, scale: float) -> float:
    if noise == "gaussian":
        return -((y - mean) ** 2) / (2 * scale**2)
    return -abs(y - mean) / scale


def whitebox_score(
    measurements: tuple[NoisyMeasurement, ...],
    *,
    out_codes: np.ndarray,
    target_codes: np.ndarray,
    replaced_codes: np.ndarray | None,
) -> float:
    """log p(measurements | in) - log p(measurements | out), from the cells the game changes.

    ``out_codes`` are the "out" dataset's codes in the generator's own discretisation; "in" is
    "out" plus the target (minus the replaced record, for replace_one)."""
    if not measurements:
        raise ValueError("the generator released no noisy measurements (measurements_ is empty)")
    llr = 0.0
    for m in measurements:
        out_cells = m.cells(out_codes)
        t = int(m.cells(target_codes)[0])
        changes = {t: 1}
        if replaced_codes is not None:
            r = int(m.cells(replaced_codes)[0])
            changes[r] = changes.get(r, 0) - 1
        for cell, delta in changes.items():
            if delta == 0:
                continue
            base = float(np.count_nonzero(out_cells == cell))
            y = float(m.values[cell])
            llr += _loglik(m.noise, y, (base + delta) / m.normaliser, m.scale) - _loglik(
                m.noise, y, base / m.normaliser, m.scale
            )
    return llr


def rarity_weights(data_codes: np.ndarray, target_codes: np.ndarray) -> npt.NDArray[np.float64]:
    """Per column: -log of the smoothed frequency of the target's value in D (rare = heavy)."""
    n = data_codes.shape[0]
    counts = (data_codes == target_codes.reshape(1, -1)).sum(axis=0)
    # numpy types ``==`` of two untyped arrays as Any: counts, their smoothed log frequencies
    return cast("npt.NDArray[np.float64]", -np.log((counts + 0.5) / (n + 1.0)))


def blackbox_score(
    synthetic_codes: np.ndarray, target_codes: np.ndarray, weights: np.ndarray
) -> float:
    """Exact copies of the target (weight 10 each) + per column log(1 + rows holding the target's
    value), weighted by the value's rarity in D (a value absent from D and present in the release
    weighs most)."""
    if synthetic_codes.shape[0] == 0:
        return 0.0
    match = synthetic_codes == target_codes.reshape(1, -1)
    exact = float(match.all(axis=1).sum())
    return _EXACT_WEIGHT * exact + float((np.log1p(match.sum(axis=0)) * weights).sum())
