"""Remediation by suppression: which synthetic rows a reviewer's ``--suppress`` removes.

- ``--suppress race=Black``: every synthetic row of a flagged subgroup.
- ``--suppress copies``: the synthetic rows that reproduce a training record — wholly, partly or
  its rare quasi-identifiers — more than the population's own twins explain (calibrated on the
  holdout and reference records: a clean release loses about 1% of its rows;
  :func:`privacy_gate.experiment.agreement.copy_rows`). It needs no names.
- ``--suppress exposed``: the synthetic rows that make the exposed records exposed. The records
  are the members singled out by the exposure scan (the FDR discoveries, and every member whose
  combined p-value is at most the scan's false-alarm level); for each, every synthetic row
  closer to it than its closest *reference* record is removed (at least its nearest synthetic
  row), on the attacks' encoding. That is exactly the evidence ``dcr_ratio`` reads: afterwards no
  synthetic row is nearer to the record than real records of the population are.

What this does not guarantee: with the member scan off, records that were not member targets
were not tested; a
generator that leaked a record through a combination of several synthetic rows is not undone by
removing the nearest ones; and the re-gate judges the filtered release on the same targets whose
scores chose what to remove, so its figures for those records are optimistic. The re-gate still
applies every rule, and a release that BLOCKs after suppression is not published.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from privacy_gate.attacks.density import as_matrix, chunked_products
from privacy_gate.attacks.distance import nearest_distances
from privacy_gate.data.encoding import MixedEncoder
from privacy_gate.errors import ReviewError
from privacy_gate.experiment.agreement import copy_rows
from privacy_gate.experiment.grouping import group_mask
from privacy_gate.label_key import LabelKey
from privacy_gate.names import SUPPRESS_COPIES, SUPPRESS_EXPOSED
from privacy_gate.spec import DatasetSpec

CHUNK_BYTES = 1 << 27


def singled_out(exposed_records: pd.DataFrame, *, level: float) -> np.ndarray:
    """Row ids of the records ``--suppress exposed`` protects: the discoveries and every member
    with combined p-value at most ``level``."""
    rows = exposed_records["exposed"].to_numpy(dtype=bool) | (
        exposed_records["p_value"].to_numpy() <= level
    )
    return exposed_records.loc[rows, "row_id"].to_numpy()


def exposed_neighbour_mask(
    synthetic: pd.DataFrame, records: pd.DataFrame, reference: pd.DataFrame, spec: DatasetSpec
) -> np.ndarray:
    """Synthetic rows closer to one of ``records`` than that record's closest reference row (and
    each record's nearest synthetic row)."""
    drop = np.zeros(len(synthetic), dtype=bool)
    if records.empty or synthetic.empty:
        return drop
    encoder = MixedEncoder(spec=spec, data_name="reference data").fit(reference)
    S = as_matrix(encoder.transform(synthetic), owner="suppression")
    X = as_matrix(encoder.transform(records), owner="suppression")
    R = as_matrix(encoder.transform(reference), owner="suppression")
    d_ref, _ = nearest_distances(X, R, chunk_bytes=CHUNK_BYTES)
    _, nearest = nearest_distances(X, S, chunk_bytes=CHUNK_BYTES)
    drop[nearest] = True
    s_norms, x_norms = np.einsum("ij,ij->i", S, S), np.einsum("ij,ij->i", X, X)
    for start, stop, B in chunked_products(
        X, S, CHUNK_BYTES
    ):  # B: squared distances, built in place
        B *= -2.0
        B += s_norms[None, :]
        B += x_norms[start:stop, None]
        drop |= (B < d_ref[start:stop, None] ** 2).any(axis=0)
    return drop


def suppression_masks(
    labels: Sequence[str],
    *,
    synthetic: pd.DataFrame,
    spec: DatasetSpec,
    exposed: pd.DataFrame | None = None,
    reference: pd.DataFrame | None = None,
    train: pd.DataFrame | None = None,
    holdout: pd.DataFrame | None = None,
    label_key: LabelKey | None = None,
) -> dict[str, pd.Series]:
    """For each ``--suppress`` label, the rows of ``synthetic`` it removes (``exposed`` needs the
    exposed records' real rows and the reference data; ``copies`` the training, holdout and
    reference data; a label naming hashed values, the ``label_key`` that hashed them). A row may
    be removed by several labels (a group's rows that also copy training records)."""
    masks: dict[str, pd.Series] = {}
    for label in labels:
        if label == SUPPRESS_COPIES:
            if train is None or holdout is None or reference is None:
                raise ReviewError(
                    "--suppress copies: the run's training, holdout and reference data are needed"
                )
            drop = copy_rows(synthetic, train, holdout, reference, spec)
        elif label == SUPPRESS_EXPOSED:
            if exposed is None or reference is None:
                raise ReviewError("--suppress exposed: this run recorded no exposed records")
            drop = exposed_neighbour_mask(synthetic, exposed, reference, spec)
        else:
            try:
                drop = group_mask(synthetic, label, key=label_key)
            except KeyError as exc:
                raise ReviewError(f"--suppress {label!r}: unknown column {exc}") from None
            except ValueError as exc:
                raise ReviewError(f"--suppress {label!r}: {exc}") from None
        masks[label] = pd.Series(np.asarray(drop, dtype=bool), index=synthetic.index)
    return masks
