"""One-run DP audit (Steinke, Nasr & Jagielski, "Privacy auditing with one (1) training run",
NeurIPS 2023) for generators too slow for hundreds of fits (privGAN, SDV).

``m`` canaries -- distinct records drawn uniformly from the *public* domain (the discretiser of the
spec and reference; synthetic records, never real ones), each a combination absent from D -- are
each added to D independently with probability 1/2; the generator is fitted once and sampled. Each
canary is scored black-box (the synthetic rows that hold its values, column by column, exact copies
weighing most); the auditor guesses "in" for the ``guesses / 2`` highest scores and "out" for the
lowest, abstaining on the rest. Under epsilon-DP the number of correct guesses is dominated by
Binomial(guesses, e^eps / (1 + e^eps)), so the count gives a lower bound on epsilon
(``estimators.dp_audit.one_run_epsilon_lower_bound``); under (epsilon, delta)-DP the paper's delta
term (Theorem 5.2: 2 m delta times the largest mean binomial mass just below the count) is added
to the p-value, at the generator's claimed delta (0 for pure DP).

One run is cheap but weak: the bound is limited by m and by how often single canaries are
detectable at all; with honest generators it is typically 0. It complements the multi-run game.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.errors import ConfigError
from privacy_gate.estimators.dp_audit import one_run_epsilon_lower_bound
from privacy_gate.experiment.dp_game import blackbox_score, rarity_weights
from privacy_gate.generators import create_generator
from privacy_gate.generators.discretize import Discretizer
from privacy_gate.spec import DatasetSpec


@dataclass(frozen=True)
class OneRunAudit:
    generator: str
    epsilon_claimed: float | None
    delta: float  # the claim's delta, used in the bound (Steinke et al.'s delta term)
    canaries: int
    included: int
    guesses: int
    correct: int
    alpha: float
    epsilon_lower: float
    seconds: float

    def __post_init__(self) -> None:
        if not 0 <= self.correct <= self.guesses <= self.canaries:
            raise ValueError("need correct <= guesses <= canaries")

    def exceeds(self, max_ratio: float = 1.0) -> bool:
        return (
            self.epsilon_claimed is not None
            and self.epsilon_lower > self.epsilon_claimed * max_ratio
        )


def _canaries(
    discretizer: Discretizer,
    spec: DatasetSpec,
    like: pd.DataFrame,
    m: int,
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, np.ndarray]:
    """m distinct public-domain records whose combination of values no record of D has."""
    sizes = [discretizer.domain_[c] for c in discretizer.columns_]
    codes = np.unique(np.column_stack([rng.integers(0, s, 20 * m) for s in sizes]), axis=0)
    seen = {tuple(r) for r in discretizer.transform(like).tolist()}
    codes = np.array([r for r in codes.tolist() if tuple(r) not in seen], dtype=np.int64).reshape(
        -1, len(sizes)
    )
    if len(codes) < m:
        raise ConfigError(
            f"one-run audit: the public domain has fewer than {m} records absent from the data"
        )
    codes = codes[rng.permutation(len(codes))[:m]]
    values = discretizer.inverse_transform(codes, rng=rng)
    rows = like.iloc[np.zeros(m, dtype=int)].reset_index(drop=True).copy()
    for c in discretizer.columns_:
        rows[c] = values[c].to_numpy()
    if spec.entity_id is not None:
        rows[spec.entity_id] = [f"dp-audit-canary-{i}" for i in range(m)]
    return rows, codes


def one_run_audit(
    *,
    generator: str | Callable[[int], Any],
    params: dict[str, Any] | None = None,
    data: pd.DataFrame,
    spec: DatasetSpec,
    reference: pd.DataFrame | None,
    canaries: int = 200,
    guesses: int | None = None,
    n_synthetic: int | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    n_bins: int = 20,
) -> OneRunAudit:
    """One fit of ``generator`` (a registered name with ``params``, or a seed -> generator factory)
    on D + a random half of ``canaries`` public-domain canaries."""
    if canaries < 2:
        raise ConfigError(f"one-run audit: canaries must be at least 2, got {canaries}")
    guesses = guesses or canaries // 5 * 2 or 2
    if not 2 <= guesses <= canaries:
        raise ConfigError(f"one-run audit: guesses must be in [2, canaries], got {guesses}")
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    public = Discretizer(spec=spec, n_bins=n_bins).fit(reference)
    rows, codes = _canaries(public, spec, data, canaries, rng)
    inside = rng.random(canaries) < 0.5
    train = pd.concat([data, rows[inside]], ignore_index=True)
    gen_seed = int(np.random.SeedSequence(seed).generate_state(1)[0])
    make = (
        generator
        if callable(generator)
        else (lambda s: create_generator(generator, **{**(params or {}), "seed": s}))
    )
    gen = make(gen_seed).fit(train, spec, reference=reference)
    syn = public.transform(gen.sample(n_synthetic or len(train)))
    base = public.transform(data)
    scores = np.array(
        [blackbox_score(syn, codes[i], rarity_weights(base, codes[i])) for i in range(canaries)]
    )
    order = np.argsort(scores + rng.random(canaries) * 1e-9)  # random tie-breaking
    k = guesses // 2
    correct = int((~inside[order[:k]]).sum() + inside[order[-k:]].sum())
    privacy = getattr(gen, "privacy", None)
    delta = float(privacy.get("delta", 0.0)) if privacy else 0.0
    return OneRunAudit(
        generator=getattr(gen, "name", str(generator)),
        epsilon_claimed=None if not privacy else float(privacy["epsilon"]),
        delta=delta,
        canaries=canaries,
        included=int(inside.sum()),
        guesses=2 * k,
        correct=correct,
        alpha=alpha,
        epsilon_lower=one_run_epsilon_lower_bound(
            correct=correct, guesses=2 * k, alpha=alpha, delta=delta, canaries=canaries
        ),
        seconds=time.perf_counter() - started,
    )
