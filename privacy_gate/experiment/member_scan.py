"""The member scan: every training record tested for exposure, not only the member targets.

The attacks score a sample of members (the targets, sized by statistics); a copied record outside
that sample is seen only through the share bounds. With ``exposure.scan_members: true`` every
training record is tested with the cheapest per-record exposure score, ``dcr_ratio``'s
``log d_ref - log d_syn`` (distance to the closest synthetic row, calibrated by the distance to the
closest reference row), against every holdout record as the calibration set:

    p_i = (1 + #{h in holdout : s_h >= s_i}) / (n_holdout + 1)

and Benjamini–Hochberg (or –Yekutieli) over all training records at ``exposure.fdr``. Conformal
p-values sharing one calibration set are PRDS, so BH controls the false discovery rate (Bates et
al. 2023, as for the target scan in :mod:`privacy_gate.estimators.exposure`).

Large scans search an approximate inverted-file index
(:func:`privacy_gate.attacks.nn_index.approximate_nearest`). That changes the score, not the
validity: the members and the calibration records go through the same search, so a member that
is not exposed still has a score exchangeable with the holdout's — an approximate search can cost
power, never false discoveries. Below ``EXACT_PAIRS`` query x candidate pairs the search is exact.

Per-record results: row ids and p-values only (``risk/exposed_members.parquet``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from privacy_gate.attacks.distance import nearest_distances, ratio_scores
from privacy_gate.attacks.nn_index import approximate_nearest
from privacy_gate.spec import DatasetSpec
from privacy_gate.data import Splits
from privacy_gate.data.encoding import MixedEncoder
from privacy_gate.estimators.exposure import FdrMethod, conformal_pvalues, fdr_select

#: exact nearest-record search below this many (train + holdout) x (synthetic + reference) pairs;
#: above it the approximate index (seconds instead of minutes at a million rows)
EXACT_PAIRS = 20_000_000_000
CHUNK_BYTES = 1 << 28


@dataclass(frozen=True)
class ScanResult:
    """Every training record's p-value; ``records`` holds row ids, p-values and the selection."""

    records: pd.DataFrame  # row_id, p_value, exposed
    count: int
    tested: int
    calibration: int
    threshold: float
    q: float
    method: str
    search: str  # "exact" or "approximate"

    def metrics(self) -> dict[str, float]:
        """Flat figures (``names.exposure_metric``: ``exposed.scan_count`` ...)."""
        return {"scan_count": float(self.count), "scan_tested": float(self.tested),
                "scan_calibration": float(self.calibration), "scan_threshold": self.threshold,
                "scan_false_bound": self.q * self.count}

    @property
    def discoveries(self) -> np.ndarray:
        return self.records.loc[self.records["exposed"], "row_id"].to_numpy()


def _distances(queries: np.ndarray, candidates: np.ndarray, *, exact: bool, seed: int) -> np.ndarray:
    if exact:
        return np.asarray(nearest_distances(queries.astype(np.float64), candidates.astype(np.float64),
                                            chunk_bytes=CHUNK_BYTES)[0])
    return approximate_nearest(queries, candidates, seed=seed)


def scan_members(splits: Splits, synthetic: pd.DataFrame, spec: DatasetSpec, *, q: float,
                 method: FdrMethod = "bh", seed: int = 0, exact: bool | None = None) -> ScanResult:
    """Test every training record (see the module docstring). ``exact``: force the search kind
    (default: exact below :data:`EXACT_PAIRS` pairs)."""
    if len(splits.holdout) == 0 or len(splits.train) == 0:
        raise ValueError("the member scan needs training and holdout records")
    encoder = MixedEncoder(spec=spec, data_name="reference data").fit(splits.reference)
    # float32 encodings: the scan compares scores made by one procedure, so float32 distances keep
    # its p-values valid, and a million-row scan holds half the memory
    S = np.ascontiguousarray(encoder.transform(synthetic), dtype=np.float32)
    R = np.ascontiguousarray(encoder.transform(splits.reference), dtype=np.float32)
    Q = np.ascontiguousarray(np.vstack([encoder.transform(splits.train), encoder.transform(splits.holdout)]),
                             dtype=np.float32)
    if exact is None:
        exact = len(Q) * (len(S) + len(R)) < EXACT_PAIRS
    d_syn = _distances(Q, S, exact=exact, seed=seed)
    d_ref = _distances(Q, R, exact=exact, seed=seed + 1)
    scores = ratio_scores(d_syn, d_ref)
    n_train = len(splits.train)
    pvalues = conformal_pvalues(scores[:n_train], scores[n_train:])
    selected, threshold = fdr_select(pvalues, q=q, method=method)
    records = pd.DataFrame({"row_id": splits.train.index.to_numpy(), "p_value": pvalues, "exposed": selected})
    return ScanResult(records=records, count=int(selected.sum()), tested=n_train, calibration=len(splits.holdout),
                      threshold=float(threshold), q=q, method=method, search="exact" if exact else "approximate")


__all__ = ["EXACT_PAIRS", "ScanResult", "scan_members"]
