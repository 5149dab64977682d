"""``evaluate``: the gate as a function, for notebooks and other orchestrators.

No Prefect, no MLflow, nothing written to disk: pass the real splits and the synthetic table as
DataFrames (or file paths), get a :class:`~privacy_gate.pipeline.result.GateResult` back. In
Jupyter the result renders as the full HTML report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from privacy_gate.config import (
    AttackConfig,
    AuditConfig,
    DisclosureConfig,
    ExposureConfig,
    GateConfig,
    MaceConfig,
    ShadowConfig,
    TargetsConfig,
    load_spec,
)
from privacy_gate.data import conform, read_table
from privacy_gate.errors import ConfigError
from privacy_gate.experiment.inputs import GateInputs, check_disjoint, splits_from_frames
from privacy_gate.experiment.settings import GeneratorKnowledge, settings_for_gate_only
from privacy_gate.label_key import LabelKey
from privacy_gate.pipeline.executor import Executor
from privacy_gate.pipeline.gate_run import Sink, run_gate
from privacy_gate.pipeline.result import GateResult
from privacy_gate.pipeline.stages import StageClock
from privacy_gate.spec import DatasetSpec

Table = pd.DataFrame | str | Path


def _frame(value: Table, spec: DatasetSpec, what: str) -> pd.DataFrame:
    real = (
        what != "synthetic"
    )  # the identifier guard is for the real data (a release is bounded by the encoder)
    if isinstance(value, (str, Path)):
        return conform(read_table(value), spec, source=str(value), check_identifiers=real)
    if isinstance(value, pd.DataFrame):
        return conform(value, spec, source=f"the {what} DataFrame", check_identifiers=real)
    raise ConfigError(
        f"evaluate: '{what}' must be a DataFrame or a CSV/Parquet path, got {type(value).__name__}"
    )


def evaluate(
    *,
    train: Table,
    holdout: Table,
    reference: Table,
    synthetic: Table,
    spec: DatasetSpec | str | Path,
    gate: GateConfig | None = None,
    attacks: Sequence[AttackConfig | dict[str, Any]] | None = None,
    targets: TargetsConfig | None = None,
    audit: AuditConfig | None = None,
    mace: MaceConfig | None = None,
    exposure: ExposureConfig | None = None,
    executor: Executor | None = None,
    sinks: Sequence[Sink] = (),
    logger: Any = None,
    score_chunks: int = 1,
    disclosure: DisclosureConfig | None = None,
    label_key: LabelKey | None = None,
    generator: str | None = None,
    generator_params: dict[str, Any] | None = None,
    shadow: ShadowConfig | None = None,
) -> GateResult:
    """Judge ``synthetic`` (made from ``train``) with the gate's attacks, estimators and rules.

    ``holdout``: real records not used for training (non-member targets); ``reference``: real
    records the attacker may know. Sections not given take the defaults of a release config.
    Row ids in per-record results are positions in train, then holdout, then reference.
    ``score_chunks``: each attack scores the targets in that many parts through ``executor.map``
    (one task each on a cluster executor; the same figures). ``label_key``: hashes the record
    values group labels may not show (``LabelKey.for_workdir(folder)`` keeps them stable across
    calls); default a fresh key per call, so labels cannot be reversed nor compared across calls.
    ``generator`` / ``generator_params``: the registered generator and settings that made the
    release, for the generator-aware test (``shadow``: its settings).
    """
    if not isinstance(spec, DatasetSpec):
        spec = load_spec(spec)
    parts = {
        k: _frame(v, spec, k)
        for k, v in (("train", train), ("holdout", holdout), ("reference", reference))
    }
    attack_cfgs = (
        None
        if attacks is None
        else [a if isinstance(a, AttackConfig) else AttackConfig(**a) for a in attacks]
    )
    settings = settings_for_gate_only(
        spec=spec,
        gate=gate,
        attacks=attack_cfgs,
        targets=targets,
        audit=audit,
        mace=mace,
        exposure=exposure,
        score_chunks=score_chunks,
        disclosure=disclosure,
        shadow=shadow,
        generator=None
        if generator is None
        else GeneratorKnowledge(name=generator, params=dict(generator_params or {})),
    )
    check_disjoint(
        parts,
        spec,
        sources={
            k: str(v) if isinstance(v, (str, Path)) else f"(the {k} DataFrame)"
            for k, v in (("train", train), ("holdout", holdout), ("reference", reference))
        },
    )
    inputs = GateInputs(
        splits=splits_from_frames(parts),
        synthetic=_frame(synthetic, spec, "synthetic"),
        label_key=label_key or LabelKey.ephemeral(),
    )
    return run_gate(
        inputs,
        settings,
        executor=executor,
        sinks=sinks,
        clock=StageClock(logger) if logger is not None else None,
    )
