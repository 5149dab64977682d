"""The generator-aware test: the release against refits of its recipe on the records the gate holds.

When the gate knows how the release was made (a release run; a gate-only run given
``--generator``), it fits the same generator with the same settings ``K`` more times, each on a
training set of the real size drawn from the pool (train and holdout, and the reference when it
is exchangeable with them: ``exposure.reference_calibrates``), with a fresh seed derived from the
run's seed, and samples as many rows as the release has. Every pool record is scored on the real
release and on every shadow release with the member scan's copy-multiplicity score (the nearest
synthetic rows against the record's nearest *other* pool record: ``dcr_ratio``'s log ratio plus the
repetition ``copy_count`` adds). Each training record's real score is then compared with its own
scores in the shadows that never saw it; the statistics, why they keep their level, the looks and
the power are in :mod:`privacy_gate.estimators.shadow_stats`.

Cost: one fit, one sample and one nearest-neighbour search of the pool per shadow, mapped over
worker processes in batches (one batch per look, a progress line after each); a batch does not
start when the time budget (``shadow.max_seconds``) would not cover it. The looks stop early when
the decision can no longer change: the test is significant at its review share (no rule reads
``shadow.*``, so it cannot BLOCK alone), or the look the design needs for its power is reached —
and once it is significant, more fits (no more tests) until what it found can be named
(:func:`naming_fits`).

It is one module because the fits, the scores and the looks are one procedure over one shared
:class:`ScoringContext`: the looks decide how many fits run next, and each fit's scores feed the
next look, so splitting the loop from what it maps would pass its whole state across files.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.attacks.distance import (
    COPY_FLOOR,
    COPY_NEIGHBOURS,
    copy_scores,
    k_nearest_distances,
)
from privacy_gate.attacks.shadow import Mapper, default_mapper
from privacy_gate.config import ShadowConfig
from privacy_gate.data import Splits
from privacy_gate.data.encoding import MixedEncoder
from privacy_gate.estimators.shadow_stats import (
    calibrated_scores,
    expected_out,
    fits_needed,
    look_schedule,
    look_weights,
    memorised_power,
    name_records,
    out_pvalues,
    release_pvalue,
)
from privacy_gate.estimators.tail_test import top_set
from privacy_gate.experiment.shadow_evidence import record_evidence
from privacy_gate.generators import create_generator
from privacy_gate.spec import DatasetSpec

#: mixed into the run's seed so the shadows' randomness is their own (reproducible, never the
#: attacks' or the split's draws)
SEED_TAG = 0x5AD0
#: once the test is significant, fits go on (up to ``shadow.max_fits``, no more tests) until a
#: copied record's p-value floor is this factor below the naming FDR: BH then names copies of a
#: quarter of the training records (what the test found can also be named)
NAMING_MARGIN = 4.0
CHUNK_BYTES = 1 << 27


@dataclass(frozen=True, eq=False)
class ScoringContext:
    """What every shadow fit needs, shared (pickled once per worker chunk)."""

    generator: str
    params: dict[str, Any]  # the recipe's settings without its seed
    spec: DatasetSpec
    pool: pd.DataFrame
    reference: pd.DataFrame | None  # what the real fit was given as reference (public bins)
    n_train: int
    n_tested: int  # the first records of the pool: the ones the test permutes
    n_samples: int
    encoder: MixedEncoder
    pool_encoded: np.ndarray
    d_real: np.ndarray
    floor: float


@dataclass(frozen=True, eq=False)
class FitJob:
    context: ScoringContext
    members: np.ndarray  # pool positions of this shadow's training set
    seed: int


def release_scores(context: ScoringContext, synthetic: pd.DataFrame) -> np.ndarray:
    """Every pool record's copy-multiplicity score on one release."""
    S = np.ascontiguousarray(context.encoder.transform(synthetic), dtype=np.float64)
    d_syn = k_nearest_distances(
        context.pool_encoded, S, min(COPY_NEIGHBOURS, len(S)), chunk_bytes=CHUNK_BYTES
    )
    return copy_scores(d_syn, context.d_real, floor=context.floor)


def _accelerated(generator: Any) -> Any:
    """Torch generators on CUDA when there is one (their released rows do not depend on it)."""
    params = getattr(generator, "synth_params", None)
    if isinstance(params, dict) and "epochs" in params:
        try:
            import torch

            if torch.cuda.is_available():
                params["enable_gpu"] = True
        except ImportError:  # pragma: no cover - torch is a dependency
            pass
    return generator


def fit_and_score(job: FitJob) -> np.ndarray:
    """One shadow: the recipe fitted on ``job.members`` with ``job.seed``, sampled, scored.
    Top-level and picklable (process pools)."""
    c = job.context
    train = c.pool.iloc[np.sort(job.members)]
    gen = _accelerated(create_generator(c.generator, **{**c.params, "seed": job.seed}))
    gen.fit(train, c.spec, reference=c.reference)
    return release_scores(c, gen.sample(c.n_samples, seed=job.seed))


@dataclass(frozen=True)
class ShadowResult:
    """The test's p-value and what it used; ``records`` per training record (row ids, no values)."""

    pvalue: float
    rank_pvalue: float
    tail_pvalue: float
    fits: int
    looks: int
    pool: int
    tested: int
    out_median: float
    records: pd.DataFrame  # row_id, p_value, z, n_out, n_in, named, in_top
    named: int
    named_threshold: float
    top_set: int
    top_members: int
    top_exposed_lower: int
    power: float
    fits_needed: int | None
    sufficient: bool
    seconds: float
    promise_share: float
    stopped: str  # why the looks ended
    # named records' real / out / in scores
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def metrics(self) -> dict[str, float]:
        """Flat figures (``shadow.<figure>``, ``names.SHADOW_FIGURES``)."""
        return {
            "pvalue": self.pvalue,
            "rank_pvalue": self.rank_pvalue,
            "tail_pvalue": self.tail_pvalue,
            "fits": float(self.fits),
            "looks": float(self.looks),
            "out_median": self.out_median,
            "tested": float(self.tested),
            "pool": float(self.pool),
            "named": float(self.named),
            "named_threshold": self.named_threshold,
            "top_set": float(self.top_set),
            "top_members": float(self.top_members),
            "top_exposed_lower": float(self.top_exposed_lower),
            "power": self.power,
            "fits_needed": math.nan if self.fits_needed is None else float(self.fits_needed),
            "sufficient": float(self.sufficient),
            "seconds": self.seconds,
            "fits_per_second": self.fits / self.seconds if self.seconds > 0 else math.nan,
            "promise_share": self.promise_share,
        }


def scoring_context(
    splits: Splits,
    synthetic: pd.DataFrame,
    spec: DatasetSpec,
    *,
    generator: str,
    params: dict[str, Any],
    calibration_reference: bool,
    draw_reference: bool = False,
) -> ScoringContext:
    """The pool (train first, the reference last), its encoding and each record's nearest other
    pool record. The reference is in it when it is tested (``calibration_reference``) or only drawn
    into shadow training sets (``draw_reference``)."""
    with_reference = calibration_reference or draw_reference
    parts = [splits.train, splits.holdout] + ([splits.reference] if with_reference else [])
    pool = pd.concat(parts)  # row ids kept: they key the per-record results
    encoder = MixedEncoder(spec=spec, data_name="the generator-aware test's pool").fit(pool)
    P = np.ascontiguousarray(encoder.transform(pool), dtype=np.float64)
    d_pool = k_nearest_distances(P, P, 2, chunk_bytes=CHUNK_BYTES)
    d_real = np.where(d_pool[:, 0] == 0.0, d_pool[:, 1], d_pool[:, 0])
    return ScoringContext(
        generator=generator,
        params={k: v for k, v in params.items() if k != "seed"},
        spec=spec,
        pool=pool,
        reference=splits.reference if len(splits.reference) else None,
        n_train=len(splits.train),
        n_tested=len(splits.train)
        + len(splits.holdout)
        + (len(splits.reference) if calibration_reference else 0),
        n_samples=len(synthetic),
        encoder=encoder,
        pool_encoded=P,
        d_real=d_real,
        floor=COPY_FLOOR * float(np.median(d_real)),
    )


def naming_fits(n_train: int, n_draw: int, q: float) -> int:
    """The fits at which a record above all its out-shadows can be named: its p-value floor
    ``1 / (n_out + 1)`` :data:`NAMING_MARGIN` times below the FDR level for the typical record."""
    return int(math.ceil(NAMING_MARGIN / q / expected_out(1, n_train, n_draw)))


def _design(
    looks: list[int],
    *,
    n_train: int,
    n_pool: int,
    n_draw: int,
    review_level: float,
    share: float,
    power: float,
) -> tuple[list[int], float]:
    """The looks up to the first whose power (as the final look, half the level, two parts)
    reaches ``power``, and that power."""
    best = 0.0
    for j, k in enumerate(looks):
        level = review_level * (1.0 if j == 0 else 0.5) / 2.0
        best = memorised_power(
            n_train=n_train, n_pool=n_pool, fits=k, level=level, share=share, n_draw=n_draw
        )
        if best >= power:
            return looks[: j + 1], best
    return looks, best


def final_level(review_level: float, fits: int) -> float:
    """The level of the last look of a design that ends at ``fits`` (its two parts)."""
    return review_level * float(look_weights(len(look_schedule(fits)))[-1]) / 2.0


def run_shadow_test(
    splits: Splits,
    synthetic: pd.DataFrame,
    spec: DatasetSpec,
    *,
    generator: str,
    params: dict[str, Any],
    config: ShadowConfig,
    review_level: float,
    power: float,
    q: float,
    seed: int,
    calibration_reference: bool,
    draw_reference: bool | None = None,
    mapper: Mapper | None = None,
    progress: Callable[[str], None] = lambda line: None,
) -> ShadowResult:
    """The whole test (module docstring). ``review_level``: the test's share of the review budget;
    ``power``: the budget's power; ``q``: the naming FDR; ``calibration_reference``: the reference
    is tested with train and holdout; ``draw_reference`` (default: the same): shadows may also
    train on reference records, which gives every record more out-shadows."""
    started = time.perf_counter()
    context = scoring_context(
        splits,
        synthetic,
        spec,
        generator=generator,
        params=params,
        calibration_reference=calibration_reference,
        draw_reference=calibration_reference if draw_reference is None else draw_reference,
    )
    n_draw, n_pool, n_train = len(context.pool), context.n_tested, context.n_train
    if n_pool <= n_train:
        raise ValueError("the generator-aware test needs pool records outside the training split")
    looks, design_power = _design(
        look_schedule(config.max_fits),
        n_train=n_train,
        n_pool=n_pool,
        n_draw=n_draw,
        review_level=review_level,
        share=config.promise_share,
        power=power,
    )
    if not config.stop_early:  # every look up to max_fits
        looks = look_schedule(config.max_fits)
        design_power = memorised_power(
            n_train=n_train,
            n_pool=n_pool,
            fits=looks[-1],
            level=final_level(review_level, looks[-1]),
            share=config.promise_share,
            n_draw=n_draw,
        )
    naming = min(config.max_fits, max(looks[-1], naming_fits(n_train, n_draw, q)))
    weights = look_weights(len(looks))
    labels = np.zeros(n_pool, dtype=bool)
    labels[:n_train] = True
    real = release_scores(context, synthetic)
    root = np.random.SeedSequence([int(seed), SEED_TAG])
    draws = [np.random.default_rng(child) for child in root.spawn(naming)]
    memberships = [rng.choice(n_draw, size=n_train, replace=False) for rng in draws]
    seeds = [int(rng.integers(2**31 - 1)) for rng in draws]
    run = mapper or default_mapper(config.jobs)
    columns: list[np.ndarray] = []
    look_p: list[float] = []
    parts: dict[str, float] = {"rank": 1.0, "tail": 1.0}
    stopped = "the design's last look"
    for j, k in enumerate(looks):
        done = len(columns)
        elapsed = time.perf_counter() - started
        per_fit = elapsed / max(done, 1) if done else 0.0
        if done and elapsed + per_fit * (k - done) / max(1, config.jobs) > config.max_seconds:
            stopped = (
                f"the time budget (shadow.max_seconds {config.max_seconds:g}) before look {j + 1}"
            )
            break
        jobs = [FitJob(context, memberships[i], seeds[i]) for i in range(done, k)]
        columns += list(run(fit_and_score, jobs))
        member = _member_matrix(memberships[:k], n_draw)
        z = calibrated_scores(real, np.column_stack(columns), member)
        p, parts_j = release_pvalue(z[:n_pool], labels, seed=seed + j)
        look_p.append(min(1.0, p / weights[j]))
        if look_p[-1] == min(look_p):
            parts = parts_j
        progress(
            f"shadow fits {k}/{looks[-1]} ({time.perf_counter() - started:.0f} s): look {j + 1}, "
            f"p {p:.3g} (weighted {look_p[-1]:.3g})"
        )
        if min(look_p) <= review_level and config.stop_early:
            stopped = f"significance at look {j + 1} (the decision cannot change)"
            break
    if (
        min(look_p) <= review_level and len(columns) < naming
    ):  # found: fits for naming, no more tests
        columns += list(
            run(
                fit_and_score,
                [FitJob(context, memberships[i], seeds[i]) for i in range(len(columns), naming)],
            )
        )
        progress(
            f"shadow fits {len(columns)}/{naming} ({time.perf_counter() - started:.0f} s): "
            "for naming"
        )
    fits = len(columns)
    shadow = np.column_stack(columns)
    member = _member_matrix(memberships[:fits], n_draw)
    rng = np.random.default_rng([int(seed), SEED_TAG, 1])
    pvalues, n_out = out_pvalues(real, shadow, member, rng=rng)
    z = calibrated_scores(real, shadow, member)
    named = name_records(pvalues[:n_train], q=q)
    top, top_lower = top_set(z[:n_pool], labels, max_share=0.05, seed=seed + 97)
    in_top = np.zeros(n_train, dtype=bool)
    in_top[top[top < n_train]] = True
    done_looks = len(look_p)
    reached_design = done_looks == len(looks)
    power_now = (
        design_power
        if reached_design
        else memorised_power(
            n_train=n_train,
            n_pool=n_pool,
            fits=looks[done_looks - 1],
            level=review_level * float(weights[done_looks - 1]) / 2.0,
            share=config.promise_share,
            n_draw=n_draw,
        )
    )
    needed = fits_needed(
        n_train=n_train,
        n_pool=n_pool,
        level_at=lambda kk: final_level(review_level, kk),
        share=config.promise_share,
        power=power,
        n_draw=n_draw,
    )
    records = pd.DataFrame(
        {
            "row_id": context.pool.index[:n_train].to_numpy(),
            "p_value": pvalues[:n_train],
            "z": z[:n_train],
            "n_out": n_out[:n_train],
            "n_in": fits - n_out[:n_train],
            "named": named.named,
            "in_top": in_top,
        }
    )
    return ShadowResult(
        pvalue=min(look_p),
        rank_pvalue=parts["rank"],
        tail_pvalue=parts["tail"],
        fits=fits,
        looks=done_looks,
        pool=n_pool,
        tested=n_train,
        out_median=float(np.median(n_out[:n_train])),
        records=records,
        named=int(named.named.sum()),
        named_threshold=named.threshold,
        top_set=int(top.size),
        top_members=int(in_top.sum()),
        top_exposed_lower=int(top_lower),
        power=power_now,
        fits_needed=needed,
        # a test that found the leak needs no more power: the decision is made
        sufficient=power_now >= power or min(look_p) <= review_level,
        seconds=time.perf_counter() - started,
        promise_share=config.promise_share,
        stopped=stopped,
        evidence=record_evidence(records, real, shadow, member),
    )


def _member_matrix(memberships: list[np.ndarray], n_pool: int) -> np.ndarray:
    member = np.zeros((n_pool, len(memberships)), dtype=bool)
    for k, rows in enumerate(memberships):
        member[rows, k] = True
    return member


__all__ = [
    "FitJob",
    "ScoringContext",
    "ShadowResult",
    "final_level",
    "fit_and_score",
    "release_scores",
    "run_shadow_test",
    "scoring_context",
]
