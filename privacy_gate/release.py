"""The stages of a gate run as plain functions (no Prefect, no MLflow): flows/ orchestrates them.

Labels of the targets live here, with the evaluator; attacks only ever see the target records.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.config import AttackConfig, DatasetSpec, ReleaseConfig, TargetsConfig
from privacy_gate.data import Splits, conform, read_table, split_by_entity
from privacy_gate.errors import InsufficientDataError


def load_real_data(config: ReleaseConfig) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Read and conform the real table (and a public reference file, if configured)."""
    spec = config.dataset.spec
    real = conform(read_table(config.dataset.path), spec, source=str(config.dataset.path))
    reference = None
    if config.dataset.reference_path is not None:
        reference = conform(read_table(config.dataset.reference_path), spec, source=str(config.dataset.reference_path))
    return real, reference


def split(config: ReleaseConfig, real: pd.DataFrame, reference: pd.DataFrame | None) -> Splits:
    return split_by_entity(real, config.dataset.spec, config.split, reference=reference)


@dataclass(frozen=True)
class Targets:
    """Target records for the attacks and their membership labels (1 = in train)."""

    records: pd.DataFrame  # index = row id in the real table
    labels: np.ndarray

    def __post_init__(self) -> None:
        if len(self.records) != len(self.labels):
            raise ValueError("targets and labels differ in length")

    @property
    def row_ids(self) -> np.ndarray:
        return self.records.index.to_numpy()


def choose_targets(splits: Splits, cfg: TargetsConfig) -> Targets:
    """Non-members from holdout (all of it by default: statistical power over speed), members
    sampled from train to balance them."""
    rng = np.random.default_rng(cfg.seed)
    n_non = min(cfg.n_non_members or len(splits.holdout), len(splits.holdout))
    n_mem = min(cfg.n_members or n_non, len(splits.train))
    if min(n_non, n_mem) < cfg.min_per_class:
        raise InsufficientDataError(
            f"only {n_mem} member and {n_non} non-member targets available; targets.min_per_class is "
            f"{cfg.min_per_class} (use more data or a larger holdout fraction)")
    members = splits.train.iloc[np.sort(rng.choice(len(splits.train), n_mem, replace=False))]
    non_members = splits.holdout.iloc[np.sort(rng.choice(len(splits.holdout), n_non, replace=False))]
    records = pd.concat([members, non_members])
    labels = np.concatenate([np.ones(n_mem, dtype=np.int8), np.zeros(n_non, dtype=np.int8)])
    return Targets(records=records, labels=labels)


@dataclass(frozen=True)
class AttackOutcome:
    name: str
    params: dict[str, Any]
    scores: np.ndarray
    metrics: dict[str, float]
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)


def run_attack(attack: AttackConfig, *, synthetic: pd.DataFrame, splits: Splits, spec: DatasetSpec,
               targets: Targets, generator: str | None = None, generator_params: dict | None = None) -> AttackOutcome:
    """Fit one attack on the threat model, score the targets, compute the metrics."""
    from privacy_gate.attacks import ThreatModel, create_attack
    from privacy_gate.estimators.metrics import roc_metrics

    start = time.perf_counter()
    threat = ThreatModel(synthetic=synthetic, reference=splits.reference, spec=spec, generator=generator,
                         generator_params=dict(generator_params or {}), n_train=len(splits.train))
    scorer = create_attack(attack.name, **attack.params).fit(threat)
    scores = np.asarray(scorer.score(targets.records), dtype=float)
    metrics = roc_metrics(scores, targets.labels)
    return AttackOutcome(name=attack.name, params=attack.params, scores=scores,
                         metrics={k: float(v) for k, v in metrics.items()}, seconds=time.perf_counter() - start)


def scores_frame(targets: Targets, outcomes: list[AttackOutcome]) -> pd.DataFrame:
    """Per-record scores keyed by row id: no attribute values of the real records."""
    out = pd.DataFrame({"row_id": targets.row_ids, "member": targets.labels})
    for o in outcomes:
        out[f"{o.name}_score"] = o.scores
    return out
