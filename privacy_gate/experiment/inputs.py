"""What one gate run judges: :class:`GateInputs` (the real splits and the candidate release), and
how a release run or a gate-only run gets them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from privacy_gate.config import ReleaseConfig

from privacy_gate.spec import DatasetSpec
from privacy_gate.data import Splits, conform, data_hash, read_table, split_by_entity
from privacy_gate.errors import DataError

SPLIT_NAMES = ("train", "holdout", "reference")


@dataclass(frozen=True, eq=False)  # eq=False: DataFrames compare elementwise
class GateInputs:
    """train (the generator saw only this), holdout (non-members), reference (the attacker's
    auxiliary data) and the synthetic release; ``synthetic_file_sha256`` is the hash of the
    quarantined file when there is one (what an approval refers to)."""

    splits: Splits
    synthetic: pd.DataFrame
    synthetic_file_sha256: str | None = None

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
    """Read and conform the real table (and a public reference file, if configured)."""
    spec = config.dataset.spec
    real = conform(read_table(config.dataset.path), spec, source=str(config.dataset.path))
    reference = None
    if config.dataset.reference_path is not None:
        reference = conform(read_table(config.dataset.reference_path), spec, source=str(config.dataset.reference_path))
    return real, reference


def split_release(config: ReleaseConfig, real: pd.DataFrame, reference: pd.DataFrame | None) -> Splits:
    return split_by_entity(real, config.dataset.spec, config.split, reference=reference)


def read_split_files(paths: dict[str, str | Path], spec: DatasetSpec) -> dict[str, pd.DataFrame]:
    """Gate-only mode: train / holdout / reference files, each conformed to the spec."""
    return {k: conform(read_table(paths[k]), spec, source=str(paths[k])) for k in SPLIT_NAMES}


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
