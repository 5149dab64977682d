"""One attack on one release: fit on the attacker's threat model (built once per run:
:func:`threat_model`), score the targets, measure.

The evaluator (this module) owns the labels and the metrics; the attack sees the threat model
(synthetic + reference data, the spec, black-box generator knowledge) and, for MAMA-MIA's oracle
variant only, the evaluator-only :class:`~privacy_gate.attacks.OracleKnowledge`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.attacks import Mapper, OracleKnowledge, ThreatModel, create_attack, fit_attack
from privacy_gate.config import AttackConfig
from privacy_gate.estimators.metrics import roc_metrics
from privacy_gate.experiment.inputs import GateInputs
from privacy_gate.experiment.settings import GateSettings
from privacy_gate.experiment.targets import Targets
from privacy_gate.names import LEAKAGE_METRICS
from privacy_gate.spec import DatasetSpec


@dataclass(frozen=True)
class AttackOutcome:
    name: str
    params: dict[str, Any]
    scores: np.ndarray
    metrics: dict[str, float]
    seconds: float
    extra_scores: dict[str, np.ndarray] = field(default_factory=dict)  # scores of extra target sets
    notes: tuple[str, ...] = ()  # what the attack's encoder dropped or could not use (no values)
    invalid: str | None = None  # why the scores cannot support a decision (degenerate), else None


#: An attack whose most common score covers at least this share of the targets cannot rank them.
MAX_TIED_SHARE = 0.99


def degenerate_reason(scores: np.ndarray) -> str | None:
    """Why these scores cannot support a decision, or None. A gate that could not really attack
    must not approve: constant or near-constant scores (a broken encoder, an attack that saw no
    usable column) look exactly like "no leakage"."""
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        return "produced no scores"
    finite = np.isfinite(scores)
    if not finite.all():
        return f"{int((~finite).sum())} of {scores.size} scores are not finite"
    _, counts = np.unique(scores, return_counts=True)
    if counts.size == 1:
        return "gave every target the same score"
    top = counts.max() / scores.size
    if top >= MAX_TIED_SHARE:
        return (
            f"gave {top:.1%} of the targets the same score (at most {MAX_TIED_SHARE:.0%} allowed)"
        )
    return None


def _score_part(job: tuple[Any, pd.DataFrame]) -> tuple[np.ndarray, tuple[str, ...]]:
    """One chunk's scores, and the notes the scoring added (on a cluster the scorer is a copy, so
    notes made while scoring would otherwise stay on the worker). ``job``: (fitted attack,
    records)."""
    scorer, records = job
    scores = np.asarray(scorer.score(records), dtype=float)
    return scores, tuple(getattr(scorer, "notes_", ()) or ())


def score_targets(
    scorer: Any, records: pd.DataFrame, *, chunks: int = 1, mapper: Mapper | None = None
) -> np.ndarray:
    """The fitted attack's scores for ``records``, computed in ``chunks`` consecutive parts
    mapped by ``mapper`` (on a Dask runner: one task per part) when both are given.

    Every attack scores each target on its own (nothing is pooled across the targets of one
    call), so the parts give exactly the scores of one call; the notes of the parts are merged.

    >>> class Twice:
    ...     notes_ = ()
    ...     def score(self, df): return 2.0 * df["x"].to_numpy()
    >>> df = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    >>> score_targets(Twice(), df, chunks=2, mapper=lambda fn, jobs: [fn(j) for j in jobs]).tolist()
    [2.0, 4.0, 6.0, 8.0, 10.0]
    """
    if chunks <= 1 or mapper is None or len(records) < 2 * chunks:
        return np.asarray(scorer.score(records), dtype=float)
    bounds = np.linspace(0, len(records), chunks + 1).astype(int)
    parts = mapper(
        _score_part, [(scorer, records.iloc[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    )
    notes = list(getattr(scorer, "notes_", ()) or ())
    for _, part_notes in parts:
        notes += [n for n in part_notes if n not in notes]
    if hasattr(scorer, "notes_"):
        scorer.notes_ = notes
    return np.concatenate([p for p, _ in parts])


def threat_model(inputs: GateInputs, settings: GateSettings) -> ThreatModel:
    """What the attacker knows, built once per run: the release, the reference split, the spec,
    black-box knowledge of the generator and the size of its training set."""
    generator = settings.generator
    return ThreatModel(
        synthetic=inputs.synthetic,
        reference=inputs.splits.reference,
        spec=settings.spec,
        generator=generator.name if generator else None,
        generator_params=dict(generator.params) if generator else {},
        n_train=len(inputs.splits.train),
    )


def run_attack(
    attack: AttackConfig,
    threat: ThreatModel,
    targets: Targets,
    *,
    extra_targets: dict[str, Targets] | None = None,
    oracle: OracleKnowledge | None = None,
    mapper: Mapper | None = None,
    score_chunks: int = 1,
    score_mapper: Mapper | None = None,
) -> AttackOutcome:
    """Fit one attack on the threat model, score the targets (and any extra target sets, e.g. the
    dependency test's, with the same fitted attack), compute the metrics.

    ``oracle``: evaluator-only knowledge, for MAMA-MIA's oracle variant; ``mapper`` maps
    independent sub-runs (MAMA-MIA's shadow runs), e.g. ``executor.map``; ``score_chunks`` > 1
    with ``score_mapper`` scores the gate's targets in that many parts mapped by it
    (:func:`score_targets`)."""
    start = time.perf_counter()
    scorer = create_attack(attack.name, **attack.params)
    fit_attack(scorer, threat, oracle=oracle, mapper=mapper)
    scores = score_targets(scorer, targets.records, chunks=score_chunks, mapper=score_mapper)
    extra = {
        k: np.asarray(scorer.score(t.records), dtype=float)
        for k, t in (extra_targets or {}).items()
    }
    metrics = roc_metrics(scores, targets.labels)
    return AttackOutcome(
        name=attack.key,
        params=attack.params,
        scores=scores,
        metrics={k: float(v) for k, v in metrics.items()},
        seconds=time.perf_counter() - start,
        extra_scores=extra,
        notes=tuple(getattr(scorer, "notes_", ()) or ()),
        invalid=degenerate_reason(scores) or _encoding_reason(scorer, threat.spec),
    )


def _encoding_reason(scorer: Any, spec: DatasetSpec) -> str | None:
    """An attack whose encoding dropped most columns saw too little of the records to judge them."""
    encoder = getattr(scorer, "encoder_", None)
    dropped = list(getattr(encoder, "dropped_columns_", ()) or ())
    n = len(spec.attribute_columns)
    if n and len(dropped) * 2 > n:
        return (
            f"encoded only {n - len(dropped)} of {n} columns ({len(dropped)} dropped as constant)"
        )
    return None


def scores_frame(targets: Targets, outcomes: Sequence[AttackOutcome]) -> pd.DataFrame:
    """Per-record scores keyed by row id: no attribute values of the real records."""
    out = pd.DataFrame({"row_id": targets.row_ids, "member": targets.labels})
    for o in outcomes:
        out[f"{o.name}_score"] = o.scores
    return out


def strongest(outcomes: Sequence[AttackOutcome]) -> dict[str, tuple[float, str]]:
    """Per metric, the worst case across attacks and which attack reached it: a gate is only as
    strong as the strongest attack it runs."""
    out: dict[str, tuple[float, str]] = {}
    for metric in LEAKAGE_METRICS:
        values = [(o.metrics[metric], o.name) for o in outcomes if metric in o.metrics]
        if values:
            out[metric] = max(values)
    return out
