"""``run_gate``: judge one synthetic release — validate it, attack it, estimate, audit, decide.

The order of one gate run (each step a named stage, timed, with progress on the log):

1. ``validate_synthetic`` — the synthetic Great Expectations suite (incl. the verbatim-copy share);
2. ``targets`` — members from train, non-members from holdout (and the dependency targets);
3. ``attacks`` — every configured attack, concurrently, plus the utility score;
4. ``mace`` — confidence-bounded advantage per gated attack and for the combined query;
5. ``exposure`` — exposed-record discovery over the member targets (FDR-controlled) and the
   exposed-share bounds;
6. ``audit`` — every subgroup's rank test and metrics, entities, dependency stress test;
7. ``decide`` — the rules -> :class:`~privacy_gate.gate.Verdict`;
8. ``logging`` — each sink records the result (e.g. the MLflow run).

Fail closed: any exception becomes a BLOCK verdict naming the stage that failed.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from privacy_gate.errors import PrivacyGateError, ValidationFailed, is_infrastructure_error
from privacy_gate.estimators.exposure import discover_exposed
from privacy_gate.estimators.mace_queries import mace_for_attacks
from privacy_gate.estimators.utility import marginal_quality
from privacy_gate.gate import Verdict, decide
from privacy_gate.gate.audit import dependence_clause, source_shift
from privacy_gate.gate.power import TARGET_RADIUS, default_targets_per_class, mace_radius, targets_needed
from privacy_gate.gate.findings import attack_invalid, dp_bound_exceeded, validation_failures
from privacy_gate.names import COMBINED, STRONGEST, UTILITY, exposure_metric, mace_metric, metric_name
from privacy_gate.pipeline.attacking import run_attack, strongest
from privacy_gate.pipeline.auditing import audit
from privacy_gate.pipeline.executor import Executor, LocalExecutor
from privacy_gate.pipeline.inputs import GateInputs
from privacy_gate.pipeline.result import GateResult
from privacy_gate.pipeline.scanning import scan_members
from privacy_gate.pipeline.settings import GateSettings
from privacy_gate.pipeline.targets import choose_dependency_targets, choose_targets
from privacy_gate.validation import validate_synthetic

log = logging.getLogger("privacy_gate")

#: Stages whose failure means the *input* was bad (status ``invalid_input``), not the gate.
INPUT_STAGES = ("load", "validate_input")


class Sink(Protocol):
    """Where a gate run's results go (the MLflow run, a test's list, ...)."""

    def record_gate(self, result: GateResult) -> None: ...


@dataclass
class StageClock:
    """The running stage of a run, its timings, and progress lines on ``logger``. A failure is
    labelled with the stage that was running when it happened."""

    logger: Any = field(default_factory=lambda: log)
    timings: dict[str, float] = field(default_factory=dict)
    current: str = "start"

    @contextlib.contextmanager
    def stage(self, name: str, what: str) -> Iterator[None]:
        self.current = name
        self.logger.info("▶ %s ...", what)
        start = time.perf_counter()
        yield
        self.timings[name] = time.perf_counter() - start
        self.logger.info("✔ %s done in %.1f s", what, self.timings[name])


def failure_verdict(exc: BaseException, *, stage: str, data_hashes: dict[str, str] | None = None) -> Verdict:
    """Turn any exception into a BLOCK. Our own errors carry safe messages; for anything else only
    the type and stage are reported, since foreign messages may quote data values."""
    if isinstance(exc, PrivacyGateError):
        msg = f"{stage}: {exc}"
    elif is_infrastructure_error(exc):
        msg = f"{stage}: infrastructure failure ({type(exc).__name__}: a service the gate needs did not answer)"
    else:
        msg = f"{stage}: unexpected {type(exc).__name__} (set PRIVACY_GATE_DEBUG=1 for the traceback)"
        if os.environ.get("PRIVACY_GATE_DEBUG"):
            traceback.print_exception(exc)
    status = "invalid_input" if isinstance(exc, ValidationFailed) or stage in INPUT_STAGES else "error"
    return Verdict.error(msg, status=status, data_hashes=dict(data_hashes or {}))


def run_gate(inputs: GateInputs, settings: GateSettings, *, executor: Executor | None = None,
             sinks: Sequence[Sink] = (), clock: StageClock | None = None) -> GateResult:
    """Judge ``inputs.synthetic`` with ``settings``; never raises (a failure is a BLOCK)."""
    clock = clock or StageClock()
    own_executor = executor is None
    executor = executor or LocalExecutor()
    hashes: dict[str, str] = {}
    result = GateResult(verdict=Verdict.error("gate did not start"), settings=settings, timings=clock.timings)
    try:
        hashes = inputs.data_hashes()
        result = _judge(inputs, settings, executor=executor, clock=clock, hashes=hashes)
        with clock.stage("logging", "recording the gate results"):
            for sink in sinks:
                sink.record_gate(result)
    except Exception as exc:  # noqa: BLE001 - fail closed
        result = result.with_verdict(failure_verdict(exc, stage=clock.current, data_hashes=hashes))
    finally:
        if own_executor:
            executor.shutdown()  # type: ignore[attr-defined]
    return result


def _warn_if_underpowered(logger: Any, n_targets: int, settings: GateSettings) -> None:
    """Say up front when no release, however safe, could pass an upper-bound rule at this N."""
    radius = mace_radius(n_targets, settings.mace.delta)
    for rule in settings.gate.rules:
        if rule.metric.endswith("mace.advantage_upper") and rule.max is not None and radius >= rule.max:
            logger.warning("  %d targets: the MACE upper bound is at least %.3f, so '%s' cannot pass for any release; "
                           "about %d targets would let a release with no leakage pass it", n_targets, radius,
                           rule.describe(), math.ceil(targets_needed(threshold=rule.max, delta=settings.mace.delta)))


def _judge(inputs: GateInputs, settings: GateSettings, *, executor: Executor, clock: StageClock,
           hashes: dict[str, str]) -> GateResult:
    logger, spec, splits, synthetic = clock.logger, settings.spec, inputs.splits, inputs.synthetic
    with clock.stage("validate_synthetic", "validating synthetic data (Great Expectations)"):
        syn_report = executor.run("validate_synthetic", validate_synthetic, synthetic, splits.train, spec,
                                  max_copy_share=settings.gate.max_verbatim_copy_share)
    with clock.stage("targets", "choosing targets"):
        cap = settings.targets.max_per_class or default_targets_per_class(delta=settings.mace.delta,
                                                                          prior=settings.mace.prior)
        targets = choose_targets(splits, settings.targets, max_per_class=cap)
        logger.info("  %d member and %d non-member targets", int(targets.labels.sum()),
                    int((targets.labels == 0).sum()))
        if settings.targets.n_non_members is None and len(splits.holdout) > cap:
            why = ("targets.max_per_class" if settings.targets.max_per_class
                   else f"enough for a MACE radius of {TARGET_RADIUS}")
            logger.info("  (%d of %d holdout records as non-members: %s; set targets.n_non_members to use more)",
                        cap, len(splits.holdout), why)
        _warn_if_underpowered(logger, len(targets.labels), settings)
        dependency = None
        if settings.audit.dependency_test:
            dependency = choose_dependency_targets(splits, spec, settings.targets,
                                                   value=settings.audit.dependency_source_value,
                                                   min_per_class=settings.targets.min_per_class)
            logger.info("  dependency test: members from %s=%r, %d targets per class", spec.source, dependency[0],
                        int(dependency[1].labels.sum()))
    extra = {"dependency": dependency[1]} if dependency else {}
    generator = settings.generator
    oracle = settings.oracle()
    with clock.stage("attacks", f"running {len(settings.attacks)} attack(s) concurrently + utility"):
        futures = [executor.submit(f"attack-{a.key}", run_attack, a, synthetic=synthetic, splits=splits, spec=spec,
                                   targets=targets, generator=generator.name if generator else None,
                                   generator_params=generator.params if generator else {}, extra_targets=extra,
                                   oracle=oracle if a.params.get("variant") == "oracle" else None,
                                   mapper=lambda fn, jobs, _k=a.key: executor.map(f"shadow-run-{_k}", fn, jobs),
                                   score_chunks=settings.score_chunks,
                                   score_mapper=lambda fn, jobs, _k=a.key: executor.map(f"score-{_k}", fn, jobs))
                   for a in settings.attacks]
        util_future = executor.submit("utility", marginal_quality, synthetic, splits.holdout, spec=spec)
        outcomes = tuple(f.result() for f in futures)
        util = util_future.result()
    for o in outcomes:
        clock.timings[f"attack.{o.name}"] = o.seconds
        logger.info("  %-8s AUC %.4f  TPR@1%%FPR %.4f  advantage %.4f  (%.1f s)", o.name, o.metrics["auc"],
                    o.metrics["tpr_at_fpr_0.01"], o.metrics["advantage"], o.seconds)

    metrics: dict[str, float] = {}
    for o in outcomes:
        metrics.update({metric_name(o.name, k): v for k, v in o.metrics.items()})
    gated = [o for o, a in zip(outcomes, settings.attacks) if a.gate]
    top = strongest(gated)
    metrics.update({metric_name(STRONGEST, k): v for k, (v, _) in top.items()})
    metrics.update({metric_name(UTILITY, k): float(v) for k, v in util.items() if isinstance(v, (int, float))})
    metrics.update(syn_report.metrics())
    mace_cfg = settings.mace
    with clock.stage("mace", "MACE: confidence-bounded advantage per attack and combined"):
        mres = executor.run("mace", mace_for_attacks, {o.name: o.scores for o in gated}, targets.labels,
                            targets.row_ids, prior=mace_cfg.prior, delta=mace_cfg.delta,
                            n_permutations=mace_cfg.n_permutations, epsilon=settings.epsilon)
        metrics.update(mres.metrics)
        for name in [o.name for o in gated] + [COMBINED]:
            if mace_metric(name, "advantage") in mres.metrics:
                bias = mres.metrics.get(mace_metric(name, "bias"))
                logger.info("  %-8s MACE advantage %.3f  [%.3f, %.3f]  (null bias %s)", name,
                            mres.metrics[mace_metric(name, "advantage")],
                            mres.metrics[mace_metric(name, "advantage_lower")],
                            mres.metrics[mace_metric(name, "advantage_upper")],
                            "-" if bias is None else f"{bias:.3f}")
    exp_cfg = settings.exposure
    with clock.stage("exposure", "exposed-record discovery over the member targets"):
        exposure = executor.run("exposure", discover_exposed, {o.name: o.scores for o in gated}, targets.labels,
                                targets.row_ids, q=exp_cfg.fdr, level=exp_cfg.level, delta=exp_cfg.delta,
                                method=exp_cfg.method)
        metrics.update({exposure_metric(k): v for k, v in exposure.metrics().items()})
        logger.info("  %d of %d member targets exposed at FDR %g (about %.1f false); exposed share %.4f "
                    "[%.4f, %.4f] at %g false alarms", exposure.count, exposure.tested, exp_cfg.fdr,
                    exposure.false_expected, exposure.share, exposure.share_lower, exposure.share_upper,
                    exp_cfg.level)
    scan = None
    if exp_cfg.scan_members:
        with clock.stage("scan", f"member scan: all {len(splits.train):,} training records against the holdout"):
            scan = executor.run("scan", scan_members, splits, synthetic, spec, q=exp_cfg.fdr, method=exp_cfg.method,
                                seed=settings.targets.seed)
            metrics.update({exposure_metric(k): v for k, v in scan.metrics().items()})
            logger.info("  member scan (%s search): %d of %d training records exposed at FDR %g", scan.search,
                        scan.count, scan.tested, exp_cfg.fdr)
    with clock.stage("audit", "auditing subgroups, entities and dependency"):
        shift = (source_shift(splits.train[spec.source], splits.reference[spec.source])
                 if spec.source is not None else None)
        audited = audit(outcomes, targets, spec, settings.audit, dependency, mace=mace_cfg,
                        gated=[o.name for o in gated], exposed=exposure.target_mask(targets.labels), shift=shift,
                        epsilon=settings.epsilon)
        metrics.update(audited.metrics)
        for note in audited.notes:
            logger.info("  %s", note)
    with clock.stage("decide", "applying the gate rules"):
        dependence = dependence_clause(shift, source=spec.source, alpha=settings.audit.dependency_alpha)
        dp_warnings = [dp_bound_exceeded(q, lower=c.lower, bound=c.bound, epsilon=c.epsilon, message=c.message,
                                         dependence=dependence) for q, c in mres.dp.items() if c.exceeds]
        invalid = [attack_invalid(o.name, o.invalid) for o in gated if o.invalid]
        verdict = decide(settings.gate.rules, metrics, attacks=settings.gated_attacks, groups=audited.groups,
                         extra_failures=validation_failures(syn_report.suite_name, syn_report.failures()) + invalid,
                         warnings=audited.warnings + dp_warnings, data_hashes=hashes,
                         rules_hash=settings.gate.rules_hash())
        if verdict.flagged_subgroups:
            logger.warning("flagged subgroups: %s", ", ".join(verdict.flagged_subgroups))
    return GateResult(verdict=verdict, settings=settings, targets=targets, outcomes=outcomes, utility=util,
                      mace=mres, exposure=exposure, scan=scan, audit=audited, validation=syn_report,
                      strongest={k: name for k, (_, name) in top.items()}, timings=clock.timings)
