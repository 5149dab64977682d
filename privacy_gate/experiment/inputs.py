"""What one gate run judges: :class:`GateInputs` (the real splits and the candidate release), and
how a release run or a gate-only run gets them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from privacy_gate.config import InputLimits, ReleaseConfig
from privacy_gate.data import Splits, conform, data_hash, read_table, split_by_entity
from privacy_gate.data.table import row_hashes
from privacy_gate.data.types import conform_typed
from privacy_gate.errors import DataError
from privacy_gate.label_key import LabelKey
from privacy_gate.spec import DatasetSpec

SPLIT_NAMES = ("train", "holdout", "reference")


@dataclass(frozen=True, eq=False)  # eq=False: DataFrames compare elementwise
class GateInputs:
    """train (the generator saw only this), holdout (non-members), reference (the attacker's
    auxiliary data) and the synthetic release; ``synthetic_file_sha256`` is the hash of the
    quarantined file when there is one (what an approval refers to). ``label_key`` hashes the
    record values that group labels may not show: the store's key for a recorded run (so
    ``--suppress`` finds the group again), else a fresh one (labels that cannot be reproduced)."""

    splits: Splits
    synthetic: pd.DataFrame
    synthetic_file_sha256: str | None = None
    label_key: LabelKey = field(default_factory=LabelKey.ephemeral, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.synthetic, pd.DataFrame) or len(self.synthetic) == 0:
            raise DataError("the synthetic release has no rows; there is nothing to judge")

    def data_hashes(self) -> dict[str, str]:
        out = {f"{k}_sha256": data_hash(getattr(self.splits, k)) for k in SPLIT_NAMES}
        out["synthetic_sha256"] = data_hash(self.synthetic)
        if self.synthetic_file_sha256:
            out["synthetic_file_sha256"] = self.synthetic_file_sha256
        return out


def load_real_data(config: ReleaseConfig) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Read and conform the real table (and a public reference file, if configured), each held to
    the config's ``inputs`` limits."""
    real, reference, _ = load_real_data_typed(config)
    return real, reference


def load_real_data_typed(
    config: ReleaseConfig,
) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, str]]:
    """:func:`load_real_data` and the real table's value types (``data.types.value_types``: what a
    release of it is published in)."""
    spec = config.dataset.spec
    real, types = conform_typed(
        read_table(config.dataset.path, limits=config.inputs), spec, source=str(config.dataset.path)
    )
    reference = None
    if config.dataset.reference_path is not None:
        reference = conform(
            read_table(config.dataset.reference_path, limits=config.inputs),
            spec,
            source=str(config.dataset.reference_path),
        )
    return real, reference, types


def check_encoding_width(df: pd.DataFrame, spec: DatasetSpec, *, source: str) -> None:
    """The attacks' encoding of ``df`` fits ``MAX_ENCODED_WIDTH`` features: checked right after the
    table is read, before validation (Great Expectations on thousands of columns takes minutes),
    rather than when the first attack encodes it. Raises DataError naming ``source``."""
    from privacy_gate.data.encoding import MixedEncoder

    MixedEncoder(spec=spec, data_name=source).fit(df)


def split_release(
    config: ReleaseConfig, real: pd.DataFrame, reference: pd.DataFrame | None
) -> Splits:
    return split_by_entity(real, config.dataset.spec, config.split, reference=reference)


def read_split_files(
    paths: dict[str, str | Path], spec: DatasetSpec, limits: InputLimits | None = None
) -> dict[str, pd.DataFrame]:
    """Gate-only mode: train / holdout / reference files, each held to ``limits`` (default: the
    ``inputs`` defaults) and conformed to the spec."""
    return {
        k: conform(read_table(paths[k], limits=limits), spec, source=str(paths[k]))
        for k in SPLIT_NAMES
    }


#: Identical records of different people exist in real tables (Adult has them), so two honest
#: splits share a few rows by chance: each row of one has a twin in the other at about the rate
#: the training split's rows have one among themselves. The chance rate taken is this floor or
#: three times that rate, whichever is larger (the training split's own rate is a noisy count).
MAX_CHANCE_OVERLAP = 0.01
#: How often honest splits are refused: the overlap is refused only when so many shared rows have
#: at most this chance under the chance rate (a binomial tail). A mixed-up file shares far more
#: (a holdout that is the training file: all of it), so the refusal keeps its power while a
#: twin-heavy table of a few hundred rows, whose count of shared rows is a handful either way, is
#: not refused for a count chance alone gives it.
OVERLAP_LEVEL = 1e-4


def _twin_share(rows: np.ndarray, of: np.ndarray) -> tuple[int, float]:
    """How many of ``rows`` have an identical row in ``of``, and their share."""
    shared = int(np.isin(rows, of).sum())
    return shared, shared / max(1, len(rows))


def overlap_pvalue(shared: int, n: int, rate: float) -> float:
    """The chance that ``shared`` or more of ``n`` rows have a twin in another split when each has
    one at ``rate`` (honest splits of one population).

    >>> overlap_pvalue(4, 166, 0.012) > 0.1  # a twin-heavy table's 500-row split: chance
    True
    >>> overlap_pvalue(100, 100, 0.01) < 1e-100  # the holdout is the training file
    True
    """
    from scipy import stats

    return float(stats.binom.sf(shared - 1, n, rate)) if shared > 0 else 1.0


def check_disjoint(
    parts: dict[str, pd.DataFrame], spec: DatasetSpec, *, sources: dict[str, str]
) -> None:
    """Train, holdout and reference must be different people. A holdout that is (or contains) the
    training file makes members and non-members the same records, so no attack can tell them
    apart and a leaky release would pass; a reference holding training records blinds the
    reference-calibrated attacks. Refused with the files named and the overlap counted (no values).

    >>> df = pd.DataFrame({"a": range(100)})
    >>> spec = DatasetSpec.model_validate({"name": "t", "columns": {"a": {"kind": "numeric"}}})
    >>> check_disjoint({"train": df, "holdout": df, "reference": df.iloc[:0]}, spec,
    ...                sources={"train": "t.csv", "holdout": "h.csv", "reference": "r.csv"})
    Traceback (most recent call last):
    ...
    privacy_gate.errors.DataError: holdout h.csv and train t.csv share records: 100 of 100 holdout
    rows (100.0%) are identical to train rows (about 1% are expected by chance); the splits must
    hold different people
    """
    names = [n for n in SPLIT_NAMES if n in parts]
    if spec.entity_id is not None:
        ids = {n: set(parts[n][spec.entity_id].dropna().astype(str)) for n in names}
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                common = len(ids[a] & ids[b])
                if common:
                    raise DataError(
                        f"{b} {sources[b]} and {a} {sources[a]} share {common} {spec.entity_id!r} "
                        "entities; the splits must hold different entities"
                    )
    hashed = {n: row_hashes(parts[n][spec.column_names]) for n in names}
    train = hashed.get("train")
    twins = 0.0
    if train is not None and len(train):
        _, counts = np.unique(train, return_counts=True)
        twins = float(counts[counts > 1].sum()) / len(train)  # training rows with a twin in train
    limit = max(MAX_CHANCE_OVERLAP, 3 * twins)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared, share = _twin_share(hashed[b], hashed[a])
            # a tail this small lies above the chance rate: the test needs no share bar besides
            if overlap_pvalue(shared, len(hashed[b]), limit) <= OVERLAP_LEVEL:
                raise DataError(
                    f"{b} {sources[b]} and {a} {sources[a]} share records: {shared} of "
                    f"{len(hashed[b])} "
                    f"{b} rows ({share:.1%}) are identical to {a} rows (about {limit:.0%} are "
                    "expected by chance); the splits must hold different people"
                )


def splits_from_frames(parts: dict[str, pd.DataFrame]) -> Splits:
    """Gate-only mode: train / holdout / reference come separately. Row ids are positions in
    train, then holdout, then reference, so per-record results stay uniquely keyed."""
    offset = 0
    out = {}
    for name in SPLIT_NAMES:
        df = parts[name]
        out[name] = df.set_axis(pd.RangeIndex(offset, offset + len(df)), axis=0)
        offset += len(df)
    return Splits(**out)
