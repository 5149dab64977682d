"""The DP audit: empirical lower bounds on the epsilon (and Gaussian-DP mu) a generator delivers.

``audit_dp`` plays the distinguishing game of ``experiment/dp_game.py``: for each target, R fits
on the "out" dataset and R on the "in" dataset (each fit with a fresh seed spawned from the
audit's seed: fresh DP randomness every run, the whole audit reproducible), through the executor
(``map`` in batches, a progress line with an ETA after each). Every run is scored white-box (the
log-likelihood ratio of the generator's ``measurements_``) and black-box (the synthetic rows); the
first ``select_share`` of the runs of each side choose the threshold, the rest give the
Clopper-Pearson bounds (``estimators/dp_audit.py``). The strongest (target, score) is reported.

What it proves: a lower bound. An ``epsilon_lower`` above the claimed epsilon shows, at confidence
1 - alpha, that the implementation is not (epsilon, delta)-DP; a bound below the claim proves
nothing about DP (a stronger attack might do better). The gate blocks on the epsilon bound only;
mu is reported beside the claim's mu (a GDP figure of merit, not a DP guarantee).

Audits are cached (``cached_audit``) under ``<workdir>/dp_audits/<key>.json``; the key hashes the
generator's name, its implementation (the source of its module), its parameters without the seed,
the audit's settings and the public domain (the discretiser's bins), so a scheduled release
re-uses it and any change to code, settings or domain runs it again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.errors import ConfigError
from privacy_gate.estimators.dp_audit import (
    AuditBound,
    audit_bound,
    gdp_mu_for_dp,
    max_certifiable_epsilon,
    mean_shift_mu,
    zcdp_mu,
)
from privacy_gate.experiment.dp_game import (
    TARGET_KINDS,
    AuditTarget,
    blackbox_score,
    outlier_target,
    rarity_weights,
    whitebox_score,
    worst_case_target,
)
from privacy_gate.generators import create_generator
from privacy_gate.generators.accounting import cdp_rho
from privacy_gate.generators.marginal import ZCDPGenerator
from privacy_gate.pipeline.executor import Executor, LocalExecutor
from privacy_gate.spec import DatasetSpec

SCORES = ("whitebox", "blackbox")
_PURE_DP_DELTA = (
    1e-9  # pure DP implies (epsilon, delta) for every delta: the mu is read at this one
)
GeneratorFactory = Callable[[int], Any]  # seed -> an unfitted DP generator


@dataclass(frozen=True)
class DPAuditSettings:
    runs: int = 200  # fits per side and target (threshold selection + evaluation)
    select_share: float = 0.5
    alpha: float = 0.05
    seed: int = 0
    targets: tuple[str, ...] = TARGET_KINDS
    scores: tuple[str, ...] = SCORES
    n_synthetic: int | None = None  # rows sampled per run for the black-box score (None: |D|)
    batch: int | None = None  # runs per executor.map call (None: ~20 progress lines)

    def __post_init__(self) -> None:
        if self.runs < 4:
            raise ConfigError(f"audit_dp.runs must be at least 4, got {self.runs}")
        if not 0 < self.select_share < 1:
            raise ConfigError(f"audit_dp.select_share must be in (0, 1), got {self.select_share}")
        if not 0 < self.alpha < 1:
            raise ConfigError(f"audit_dp.alpha must be in (0, 1), got {self.alpha}")
        for key, got, known in (
            ("targets", self.targets, TARGET_KINDS),
            ("scores", self.scores, SCORES),
        ):
            if not got or set(got) - set(known):
                raise ConfigError(
                    f"audit_dp.{key} must be a non-empty subset of {known}, got {list(got)}"
                )

    @property
    def n_select(self) -> int:
        return min(self.runs - 2, max(2, round(self.runs * self.select_share)))


@dataclass(frozen=True)
class ScoreAudit:
    target: str  # kind
    target_label: str  # public description (a real record only by row position and hash)
    score: str
    bound: AuditBound
    mu_shift: tuple[float, float, float] | None  # white-box Gaussian scores: (estimate, low, high)
    curve: tuple[tuple[float, float], ...]  # (FPR, FNR) of every threshold on the evaluation runs

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "target_label": self.target_label,
            "score": self.score,
            "bound": dataclasses.asdict(self.bound),
            "mu_shift": self.mu_shift,
            "curve": self.curve,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ScoreAudit:
        shift = tuple(d["mu_shift"]) if d.get("mu_shift") else None
        return cls(
            d["target"],
            d["target_label"],
            d["score"],
            AuditBound(**d["bound"]),
            shift,
            tuple(tuple(p) for p in d["curve"]),
        )


@dataclass(frozen=True)
class DPAuditResult:
    generator: str
    version: str  # hash of the generator's implementation
    epsilon: float
    delta: float
    claimed_mu: float
    mu_basis: str
    runs: int
    seconds: float
    max_certifiable_epsilon: float
    audits: tuple[ScoreAudit, ...]

    def __post_init__(self) -> None:
        if not self.audits:
            raise ValueError("an audit result needs at least one (target, score)")

    @property
    def best(self) -> ScoreAudit:
        """The strongest (target, score): highest epsilon bound, then highest mu lower bound."""
        return max(
            self.audits,
            key=lambda a: (a.bound.epsilon_lower, a.bound.mu_lower, a.bound.mu_estimate),
        )

    @property
    def epsilon_lower(self) -> float:
        return self.best.bound.epsilon_lower

    def exceeds(self, max_ratio: float = 1.0) -> bool:
        """True when the epsilon lower bound is above the claim x ``max_ratio`` (a DP violation)."""
        return self.epsilon_lower > self.epsilon * max_ratio

    def reason(self) -> str:
        b = self.best
        return (
            f"DP audit: the {self.generator} implementation is broken: empirical epsilon >= "
            f"{b.bound.epsilon_lower:.3g} at {100 * (1 - b.bound.alpha):.0f}% confidence "
            f"({b.score} score, {b.target_label}, {self.runs} runs per side) exceeds the "
            f"claimed epsilon {self.epsilon:g} (delta {self.delta:g})"
        )

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "audits"}
        return d | {"audits": [a.to_dict() for a in self.audits], "best": self.best.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DPAuditResult:
        kw = {f.name: d[f.name] for f in dataclasses.fields(cls) if f.name != "audits"}
        return cls(**kw, audits=tuple(ScoreAudit.from_dict(a) for a in d["audits"]))


def claimed_mu(generator: Any) -> tuple[float, str]:
    """(mu, basis): zCDP generators sqrt(2 rho); others the largest mu whose GDP curve the
    (epsilon, delta) curve dominates."""
    p = generator.privacy
    if isinstance(
        generator, ZCDPGenerator
    ):  # the rho its claim converts to, not what a subclass spends
        rho = cdp_rho(p["epsilon"], p["delta"])
        return zcdp_mu(rho), f"zCDP rho={rho:.4g}: mu = sqrt(2 rho)"
    if p["delta"] > 0:
        return gdp_mu_for_dp(
            p["epsilon"], p["delta"]
        ), "largest mu-GDP implying the (epsilon, delta) claim"
    return (
        gdp_mu_for_dp(p["epsilon"], _PURE_DP_DELTA),
        f"pure epsilon-DP: largest mu-GDP implying (epsilon, {_PURE_DP_DELTA:g})",
    )


def generator_version(generator: Any) -> str:
    """sha256 of the source of the generator's class module (changes with its implementation)."""
    src = inspect.getsource(inspect.getmodule(type(generator)))
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def _factory(generator: str | GeneratorFactory, params: dict[str, Any]) -> GeneratorFactory:
    if callable(generator):
        return generator
    return lambda seed: create_generator(generator, **{**params, "seed": seed})


def _targets(
    data: pd.DataFrame, spec: DatasetSpec, gen: Any, settings: DPAuditSettings
) -> list[AuditTarget]:
    rng = np.random.default_rng(settings.seed)
    kind = getattr(gen, "neighbours", "add_remove")
    out = []
    if "worst_case" in settings.targets:
        out.append(worst_case_target(data, spec, gen.discretizer_, neighbours=kind, rng=rng))
    if "outlier" in settings.targets:
        out.append(outlier_target(data, gen.discretizer_, neighbours=kind))
    return out


def _play(
    factory: GeneratorFactory,
    target: AuditTarget,
    public: Any,
    pub_codes: dict[str, np.ndarray],
    *,
    spec: DatasetSpec,
    reference: pd.DataFrame | None,
    inside: bool,
    seed: int,
    settings: DPAuditSettings,
) -> dict[str, float]:
    """One fit of the game, its scores (the data, target and seed are the only inputs)."""
    gen = factory(seed).fit(
        target.in_data if inside else target.out_data, spec, reference=reference
    )
    scores: dict[str, float] = {}
    if "whitebox" in settings.scores:
        dz = gen.discretizer_
        same = dz.bins_ == public.bins_
        scores["whitebox"] = whitebox_score(
            gen.measurements_,
            out_codes=pub_codes["out"] if same else dz.transform(target.out_data),
            target_codes=pub_codes["target"] if same else dz.transform(target.record),
            replaced_codes=None
            if target.replaced is None
            else (pub_codes["replaced"] if same else dz.transform(target.replaced)),
        )
    if "blackbox" in settings.scores:
        n = settings.n_synthetic or len(target.out_data)
        syn = public.transform(gen.sample(n))
        scores["blackbox"] = blackbox_score(syn, pub_codes["target"][0], pub_codes["weights"])
    return scores


def _progress_line(done: int, total: int, started: float) -> str:
    elapsed = time.perf_counter() - started
    eta = elapsed / done * (total - done) if done else math.nan
    return f"dp-audit: {done}/{total} fits, {elapsed:.0f} s elapsed, ETA {eta:.0f} s"


def audit_dp(
    *,
    generator: str | GeneratorFactory,
    params: dict[str, Any] | None = None,
    data: pd.DataFrame,
    spec: DatasetSpec,
    reference: pd.DataFrame | None = None,
    settings: DPAuditSettings = DPAuditSettings(),
    executor: Executor | None = None,
    progress: Callable[[str], None] | None = print,
) -> DPAuditResult:
    """Audit ``generator`` (a registered name with ``params``, or a seed -> generator factory)."""
    started = time.perf_counter()
    factory = _factory(generator, dict(params or {}))
    probe = factory(0)
    if not getattr(probe, "capabilities", None) or not probe.capabilities.differentially_private:
        raise ConfigError(
            f"audit_dp: generator '{getattr(probe, 'name', generator)}' claims no DP guarantee"
        )
    probe.configure(spec, reference=reference)
    privacy = probe.privacy
    mu, basis = claimed_mu(probe)
    public = probe.discretizer_
    targets = _targets(data, spec, probe, settings)
    seeds = np.random.SeedSequence(settings.seed).generate_state(
        len(targets) * 2 * settings.runs, dtype=np.uint32
    )
    jobs = [
        (t, inside, int(seeds[(t * 2 + inside) * settings.runs + r]))
        for t in range(len(targets))
        for r in range(settings.runs)
        for inside in (False, True)
    ]
    codes = []
    for tg in targets:
        out_codes, tcodes = public.transform(tg.out_data), public.transform(tg.record)
        codes.append(
            {
                "out": out_codes,
                "target": tcodes,
                "weights": rarity_weights(out_codes, tcodes[0]),
                "replaced": None if tg.replaced is None else public.transform(tg.replaced),
            }
        )

    def run(job: tuple[int, bool, int]) -> dict[str, float]:
        t, inside, seed = job
        return _play(
            factory,
            targets[t],
            public,
            codes[t],
            spec=spec,
            reference=reference,
            inside=inside,
            seed=seed,
            settings=settings,
        )

    own = executor is None
    ex = executor or LocalExecutor(max_workers=2)
    batch = settings.batch or max(2, math.ceil(len(jobs) / 20))
    results: list[dict[str, float]] = []
    try:
        for i in range(0, len(jobs), batch):
            results.extend(ex.map("dp-audit-fits", run, jobs[i : i + batch]))
            if progress is not None:
                progress(_progress_line(len(results), len(jobs), started))
    finally:
        if own:
            ex.shutdown()
    audits = [
        _score_audit(tg, ti, name, jobs, results, settings, privacy["delta"])
        for ti, tg in enumerate(targets)
        for name in settings.scores
    ]
    return DPAuditResult(
        generator=getattr(probe, "name", str(generator)),
        version=generator_version(probe),
        epsilon=float(privacy["epsilon"]),
        delta=float(privacy["delta"]),
        claimed_mu=mu,
        mu_basis=basis,
        runs=settings.runs,
        seconds=time.perf_counter() - started,
        max_certifiable_epsilon=max_certifiable_epsilon(
            settings.runs - settings.n_select, alpha=settings.alpha, delta=privacy["delta"]
        ),
        audits=tuple(audits),
    )


def _score_audit(
    target: AuditTarget,
    ti: int,
    name: str,
    jobs: list,
    results: list,
    settings: DPAuditSettings,
    delta: float,
) -> ScoreAudit:
    s_in = np.array([r[name] for (t, inside, _), r in zip(jobs, results) if t == ti and inside])
    s_out = np.array(
        [r[name] for (t, inside, _), r in zip(jobs, results) if t == ti and not inside]
    )
    k = settings.n_select
    bound = audit_bound(
        select_in=s_in[:k],
        select_out=s_out[:k],
        eval_in=s_in[k:],
        eval_out=s_out[k:],
        delta=delta,
        alpha=settings.alpha,
    )
    ev_in, ev_out = s_in[k:], s_out[k:]
    curve = tuple(
        (float((ev_out >= t).mean()), float((ev_in < t).mean()))
        for t in np.unique(np.concatenate([ev_in, ev_out, [np.inf]]))
    )
    shift = (
        mean_shift_mu(s_in, s_out, alpha=settings.alpha) if name == "whitebox" else None
    )  # no threshold: all runs
    return ScoreAudit(target.kind, target.label, name, bound, shift, curve)


def audit_key(
    *,
    generator: str,
    params: dict[str, Any],
    version: str,
    settings: DPAuditSettings,
    domain: dict[str, Any],
) -> str:
    """The cache key: generator, implementation, parameters (without the seed), settings, domain."""
    payload = {
        "generator": generator,
        "version": version,
        "params": {k: v for k, v in sorted(params.items()) if k != "seed"},
        "settings": dataclasses.asdict(settings),
        "domain": domain,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[
        :24
    ]


def cached_audit(
    *,
    workdir: Path,
    generator: str,
    params: dict[str, Any],
    data: pd.DataFrame,
    spec: DatasetSpec,
    reference: pd.DataFrame | None,
    settings: DPAuditSettings,
    executor: Executor | None = None,
    progress: Callable[[str], None] | None = print,
) -> tuple[DPAuditResult, bool]:
    """(result, from_cache): the cached audit for this generator version, settings and domain, or
    a fresh one (then cached). A cache file that does not parse is ignored and replaced."""
    probe = create_generator(generator, **{**params, "seed": 0}).configure(
        spec, reference=reference
    )
    domain = {c: dataclasses.asdict(b) for c, b in probe.discretizer_.bins_.items()}
    key = audit_key(
        generator=generator,
        params=params,
        version=generator_version(probe),
        settings=settings,
        domain=domain,
    )
    path = Path(workdir) / "dp_audits" / f"{key}.json"
    if path.exists():
        try:
            return DPAuditResult.from_dict(json.loads(path.read_text())), True
        except (ValueError, KeyError, TypeError):
            pass
    result = audit_dp(
        generator=generator,
        params=params,
        data=data,
        spec=spec,
        reference=reference,
        settings=settings,
        executor=executor,
        progress=progress,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.to_dict(), default=float))
    tmp.replace(path)
    return result, False
