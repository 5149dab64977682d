"""``run_gate``: judge one synthetic release — validate it, attack it, estimate, audit, decide.

The run is the declared list :data:`GATE_STAGES`, executed by
:func:`~privacy_gate.pipeline.stages.run_stages` on one typed :class:`GateState`:

1. ``validate_synthetic`` — the synthetic Great Expectations suite (incl. the verbatim-copy share);
2. ``targets`` — members from train, non-members from holdout (and the dependency targets);
3. ``attacks`` — every configured attack on the threat model, concurrently, plus the utility score;
4. ``mace`` — confidence-bounded advantage per gated attack and for the combined query;
5. ``exposure`` — exposed-record discovery over the member targets (FDR-controlled) and the
   exposed-share bounds;
6. ``scan`` (on by default) — every training record against the holdout (and the reference when
   it is exchangeable with it): copy-multiplicity p-values and the tail-excess test;
7. ``copies`` and ``agreement`` — verbatim copies against the holdout's twins, and partial /
   quasi-identifier copies by column agreement (:mod:`privacy_gate.experiment.copies`,
   ``.agreement``);
8. ``disclosure`` (on by default) — singling out, linkability and inference risks, training
   records against control records (:mod:`privacy_gate.experiment.disclosure`);
9. ``shadow`` (when the recipe is known and the holdout alone lacks the power) — the
   generator-aware test (:mod:`privacy_gate.pipeline.shadow_stage`);
10. ``audit`` — every subgroup's rank test and metrics, entities, dependency stress test;
11. ``decide`` — the error budget's tests, the rules' bars and the findings ->
    :class:`~privacy_gate.gate.Verdict` (:mod:`privacy_gate.gate.budget`);
12. ``logging`` — each sink records the result (e.g. the MLflow run).

Stages 2-8 are the membership experiment (:mod:`privacy_gate.experiment`: numbers only); stage 8
is the gate's (:mod:`privacy_gate.gate`). Fail closed: any exception becomes a BLOCK verdict
naming the stage that failed.

It is one module because the stages share one mutable :class:`GateState` and the order of
:data:`GATE_STAGES` is the design: each stage body is short and reads what earlier ones set, so
splitting them apart would scatter one sequence over files (the longer stages already live
beside it: ``group_blame``, ``shadow_stage``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from privacy_gate.attacks import ThreatModel
from privacy_gate.config import budget_tests
from privacy_gate.estimators.exposure import ExposureResult, discover_exposed
from privacy_gate.estimators.group_tests import membership_figures
from privacy_gate.estimators.mace.queries import MaceResult, mace_for_attacks
from privacy_gate.estimators.power import (
    TARGET_RADIUS,
    default_targets_per_class,
    mace_radius,
    targets_needed,
)
from privacy_gate.estimators.utility import marginal_quality
from privacy_gate.experiment import GateInputs, GateSettings, Targets
from privacy_gate.experiment.agreement import AgreementResult
from privacy_gate.experiment.attack_runs import AttackOutcome, run_attack, strongest, threat_model
from privacy_gate.experiment.copies import CopyTest
from privacy_gate.experiment.dependency import SourceShift, source_shift
from privacy_gate.experiment.disclosure import (
    DisclosureInputs,
    DisclosureResult,
    control_records,
    measure_disclosure,
)
from privacy_gate.experiment.floors import (
    Shortfall,
    calibration_level,
    control_shortfall,
    level_shortfall,
)
from privacy_gate.experiment.grouping import label_values, rare_values
from privacy_gate.experiment.member_scan import POOL_LIMIT, ScanResult
from privacy_gate.experiment.shadow_gate import ShadowResult
from privacy_gate.experiment.subgroups import AuditResult, audit
from privacy_gate.experiment.targets import choose_dependency_targets, choose_targets
from privacy_gate.gate import Verdict, decide
from privacy_gate.gate.findings import (
    attack_invalid,
    dependence_clause,
    dependency_findings,
    dp_bound_exceeded,
    validation_failures,
)
from privacy_gate.names import (
    COMBINED,
    SHADOW,
    STRONGEST,
    UTILITY,
    exposure_metric,
    mace_metric,
    metric_name,
)
from privacy_gate.pipeline.executor import Executor, LocalExecutor
from privacy_gate.pipeline.group_blame import READS as BLAME_READS
from privacy_gate.pipeline.group_blame import blame_groups
from privacy_gate.pipeline.group_effects import READS as EFFECTS_READS
from privacy_gate.pipeline.group_effects import group_effects
from privacy_gate.pipeline.release_tests import (
    agreement_figures,
    agreement_of,
    copies_figures,
    copies_of,
    scan_figures,
    scan_of,
)
from privacy_gate.pipeline.result import GateResult
from privacy_gate.pipeline.shadow_stage import run_shadow_stage
from privacy_gate.pipeline.stages import (
    Stage,
    StageClock,
    check_stage_flow,
    failure_verdict,
    run_stages,
)
from privacy_gate.safe_text import console_line
from privacy_gate.validation import validate_synthetic


class Sink(Protocol):
    """Where a gate run's results go (the MLflow run, a test's list, ...)."""

    def record_gate(self, result: GateResult) -> None: ...


@dataclass(eq=False)
class GateState:
    """One gate run as it goes: the inputs and settings, then what each stage adds."""

    inputs: GateInputs
    settings: GateSettings
    hashes: dict[str, str]
    threat: ThreatModel | None = None
    validation: Any = None  # the synthetic suite's ValidationReport
    targets: Targets | None = None
    dependency: tuple[str, Targets] | None = None  # (source value, targets) of the dependency test
    outcomes: tuple[AttackOutcome, ...] = ()
    utility: dict[str, Any] | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    strongest: dict[str, tuple[float, str]] = field(default_factory=dict)
    mace: MaceResult | None = None
    exposure: ExposureResult | None = None
    scan: ScanResult | None = None
    disclosure: DisclosureResult | None = None
    copies: CopyTest | None = None
    agreement: AgreementResult | None = None
    disclosure_inputs: DisclosureInputs | None = (
        None  # kept for blame, which re-measures without a group
    )
    shift: SourceShift | None = None
    audit: AuditResult | None = None
    shadow: ShadowResult | None = None  # the generator-aware test, when it ran
    verdict: Verdict | None = None
    shortfalls: list[Shortfall] = field(
        default_factory=list
    )  # stage floors a small table did not meet
    attack_seconds: dict[str, float] = field(default_factory=dict)  # "attack.<key>" -> wall seconds

    @property
    def tests(self) -> list[str]:
        """The budget's tests of this run: the settings' and the ones the run decided to add."""
        return budget_tests(
            self.settings.disabled, ran=(SHADOW,) if self.shadow is not None else ()
        )

    @property
    def gated(self) -> list[AttackOutcome]:
        keys = set(self.settings.gated_attacks)
        return [o for o in self.outcomes if o.name in keys]

    def result(self, timings: dict[str, float]) -> GateResult:
        return GateResult(
            verdict=self.verdict or Verdict.error("gate did not decide"),
            settings=self.settings,
            targets=self.targets,
            outcomes=self.outcomes,
            utility=self.utility,
            mace=self.mace,
            exposure=self.exposure,
            scan=self.scan,
            shadow=self.shadow,
            disclosure=self.disclosure,
            audit=self.audit,
            validation=self.validation,
            strongest={k: name for k, (_, name) in self.strongest.items()},
            timings=timings,
        )


# ------------------------------------------------------------------------------------ the stages


def _validate(state: GateState, executor: Executor, logger: Any) -> None:
    state.validation = executor.run(
        "validate_synthetic",
        validate_synthetic,
        state.inputs.synthetic,
        state.inputs.splits.train,
        state.settings.spec,
        # the copy share is recorded here and judged by the copy test
        # against the holdout's twins (stage ``copies``), not by a bar
        max_copy_share=1.0,
        progress=lambda line: logger.info("  validating synthetic data: %s", line),
    )
    state.metrics.update(state.validation.metrics())


def _targets(state: GateState, executor: Executor, logger: Any) -> None:
    settings, splits = state.settings, state.inputs.splits
    cap = settings.targets.max_per_class or default_targets_per_class(
        delta=settings.mace.delta, prior=settings.mace.prior
    )
    state.targets = targets = executor.run(
        "targets",
        choose_targets,
        splits,
        settings.targets,
        max_per_class=cap,
        entity_id=settings.spec.entity_id,
    )  # a panel: whole people
    logger.info(
        "  %d member and %d non-member targets",
        int(targets.labels.sum()),
        int((targets.labels == 0).sum()),
    )
    if settings.targets.n_non_members is None and len(splits.holdout) > cap:
        why = (
            "targets.max_per_class"
            if settings.targets.max_per_class
            else f"enough for a MACE radius of {TARGET_RADIUS}"
        )
        logger.info(
            "  (%d of %d holdout records as non-members: %s; set targets.n_non_members to use "
            "more)",
            cap,
            len(splits.holdout),
            why,
        )
    _warn_if_underpowered(logger, len(targets.labels), settings)
    if settings.audit.dependency_test:
        state.dependency = executor.run(
            "dependency_targets",
            choose_dependency_targets,
            splits,
            settings.spec,
            settings.targets,
            value=settings.audit.dependency_source_value,
        )
        logger.info(
            "  dependency test: members from %s=%r, %d targets per class",
            settings.spec.source,
            state.dependency[0],
            int(state.dependency[1].labels.sum()),
        )
    _short(
        state,
        logger,
        targets.shortfall,
        state.dependency[1].shortfall if state.dependency else None,
    )


def _short(state: GateState, logger: Any, *shortfalls: Shortfall | None) -> None:
    """Record the stage floors a small table did not meet (the gate REVIEWs for insufficient
    evidence)."""
    for s in shortfalls:
        if s is not None:
            state.shortfalls.append(s)
            logger.warning(
                "  small table: %s; the stage runs with what there is (a REVIEW for insufficient "
                "evidence)",
                s.sentence(),
            )


def _warn_if_underpowered(logger: Any, n_targets: int, settings: GateSettings) -> None:
    """Say up front when no release, however safe, could pass an upper-bound rule at this N."""
    radius = mace_radius(n_targets, settings.mace.delta)
    for rule in settings.active_rules:
        if (
            rule.metric.endswith("mace.advantage_upper")
            and rule.max is not None
            and radius >= rule.max
        ):
            logger.warning(
                "  %d targets: the MACE upper bound is at least %.3f, so '%s' cannot pass for any "
                "release; "
                "about %d targets would let a release with no leakage pass it",
                n_targets,
                radius,
                rule.describe(),
                math.ceil(targets_needed(threshold=rule.max, delta=settings.mace.delta)),
            )


def _attacks(state: GateState, executor: Executor, logger: Any) -> None:
    timings = state.attack_seconds
    settings = state.settings
    state.threat = threat = threat_model(
        state.inputs, settings
    )  # once per run, shared by every attack
    extra = {"dependency": state.dependency[1]} if state.dependency else {}
    oracle = settings.oracle()
    futures = [
        executor.submit(
            f"attack-{a.key}",
            run_attack,
            a,
            threat,
            state.targets,
            extra_targets=extra,
            oracle=oracle if a.params.get("variant") == "oracle" else None,
            mapper=lambda fn, jobs, _k=a.key: executor.map(f"shadow-run-{_k}", fn, jobs),
            score_chunks=settings.score_chunks,
            score_mapper=lambda fn, jobs, _k=a.key: executor.map(f"score-{_k}", fn, jobs),
        )
        for a in settings.attacks
    ]
    util_future = executor.submit(
        "utility",
        marginal_quality,
        state.inputs.synthetic,
        state.inputs.splits.holdout,
        spec=settings.spec,
    )
    state.outcomes = tuple(f.result() for f in futures)
    state.utility = util_future.result()
    for o in state.outcomes:
        timings[f"attack.{o.name}"] = o.seconds
        logger.info(
            "  %-8s AUC %.4f  TPR@1%%FPR %.4f  advantage %.4f  (%.1f s)",
            o.name,
            o.metrics["auc"],
            o.metrics["tpr_at_fpr_0.01"],
            o.metrics["advantage"],
            o.seconds,
        )
        state.metrics.update({metric_name(o.name, k): v for k, v in o.metrics.items()})
    labels, entity = state.targets.labels, settings.spec.entity_id
    entities = (
        None if entity is None else state.targets.records[entity].to_numpy()
    )  # a panel: count people
    # each attack's rank test, and the gated attacks' mean-rank ensemble tested both ways (a
    # release can reveal its members by avoiding them)
    state.metrics.update(
        membership_figures(
            {o.name: o.scores for o in state.outcomes},
            labels,
            entities,
            gated=settings.gated_attacks,
            seed=settings.targets.seed,
        )
    )
    state.strongest = strongest(state.gated)
    state.metrics.update({metric_name(STRONGEST, k): v for k, (v, _) in state.strongest.items()})
    state.metrics.update(
        {
            metric_name(UTILITY, k): float(v)
            for k, v in state.utility.items()
            if isinstance(v, (int, float))
        }
    )


def _mace(state: GateState, executor: Executor, logger: Any) -> None:
    cfg, gated = state.settings.mace, state.gated
    state.mace = mres = executor.run(
        "mace",
        mace_for_attacks,
        {o.name: o.scores for o in gated},
        state.targets.labels,
        state.targets.row_ids,
        prior=cfg.prior,
        delta=cfg.delta,
        n_permutations=cfg.n_permutations,
        epsilon=state.settings.epsilon,
        units=state.targets.units,
    )  # a panel: people
    state.metrics.update(mres.metrics)
    for name in [o.name for o in gated] + [COMBINED]:
        if mace_metric(name, "advantage") in mres.metrics:
            logger.info("  %s", mace_line(name, mres.metrics))


def mace_line(name: str, metrics: dict[str, float]) -> str:
    """One query's MACE figures for the progress log: the estimate inside its own bounds (the
    recorded ``mace.advantage``), and the raw plug-in when it differs (it lies outside them).

    >>> mace_line("dcr", {"dcr.mace.advantage": 0.983, "dcr.mace.advantage_lower": 0.983,
    ...                   "dcr.mace.advantage_upper": 0.997, "dcr.mace.advantage_plugin": 0.937})
    'dcr      MACE advantage 0.983 [0.983, 0.997] (plug-in 0.937 is below its certified lower bound:
    smoothing loses advantage at strong leakage)  (null bias -)'
    """

    def get(figure: str) -> float | None:
        return metrics.get(mace_metric(name, figure))

    estimate, lower, upper, plugin, bias = (
        get(f)
        for f in ("advantage", "advantage_lower", "advantage_upper", "advantage_plugin", "bias")
    )
    line = f"{name:<8} MACE advantage {estimate:.3f} [{lower:.3f}, {upper:.3f}]"
    if plugin is not None and abs(plugin - estimate) > 5e-4:
        side = "below its certified lower bound" if plugin < estimate else "above its upper bound"
        line += f" (plug-in {plugin:.3f} is {side}: smoothing loses advantage at strong leakage)"
    return line + f"  (null bias {'-' if bias is None else f'{bias:.3f}'})"


def _exposure(state: GateState, executor: Executor, logger: Any) -> None:
    cfg = state.settings.exposure
    n_calibration = state.targets.count(members=False)  # too few place no threshold at cfg.level
    _short(state, logger, level_shortfall(cfg.level, n_calibration))
    state.exposure = e = executor.run(
        "exposure",
        discover_exposed,
        {o.name: o.scores for o in state.gated},
        state.targets.labels,
        state.targets.row_ids,
        q=cfg.fdr,
        level=calibration_level(cfg.level, n_calibration),
        delta=cfg.delta,
        method=cfg.method,
        tail_max_share=cfg.tail_max_share,
        seed=state.settings.targets.seed,
        units=state.targets.units,
    )
    state.metrics.update({exposure_metric(k): v for k, v in e.metrics().items()})
    logger.info(
        "  %d of %d member targets exposed at FDR %g (about %.1f false); exposed share %.4f [%.4f, "
        "%.4f] at "
        "%g false alarms; tail-excess p %.4f (top %d)",
        e.count,
        e.tested,
        cfg.fdr,
        e.false_expected,
        e.share,
        e.share_lower,
        e.share_upper,
        e.level,
        e.tail_pvalue,
        e.tail_top,
    )
    if e.count == 0:
        logger.info(
            "  (no member target named: p-values start at %.2g, and BH at FDR %g needs %d members "
            "at that "
            "floor in %s, the attack given the largest share of the naming level)",
            e.min_pvalue,
            cfg.fdr,
            e.naming_needs,
            e.favourite or "-",
        )


def _scan(state: GateState, executor: Executor, logger: Any) -> None:
    cfg = state.settings.exposure
    state.scan = s = executor.run("scan", scan_of, state, state.inputs.synthetic)
    state.metrics.update(scan_figures(s))
    logger.info(
        "  member scan (%s search, %d calibration records%s): %d of %d training records exposed at "
        "FDR %g; "
        "tail-excess p %.4f (top %d)",
        s.search,
        s.calibration,
        " incl. the reference" if s.reference_calibrates else "",
        s.count,
        s.tested,
        cfg.fdr,
        s.tail_pvalue,
        s.tail_top,
    )
    if s.pool_share < 1:
        logger.info(
            "  (the scan tested a seeded, equal-rate sample of %.0f%% of the pool's "
            "records: above %d records the sample keeps it within the time bound, and "
            "copies outside it go unscanned)",
            100 * s.pool_share,
            POOL_LIMIT,
        )
    if s.count == 0:
        logger.info(
            "  (no training record named: p-values start at %.2g, and BH at FDR %g needs "
            "%d records at that floor)",
            s.min_pvalue,
            cfg.fdr,
            s.naming_needs,
        )
    if s.top_exposed_lower:
        logger.info(
            "  top set: %d training records among the %d highest scores; at least %d of them "
            "exposed (95%%)",
            s.top_members,
            s.top_set,
            s.top_exposed_lower,
        )


def _copies(state: GateState, executor: Executor, logger: Any) -> None:
    state.copies = c = executor.run("copies", copies_of, state, state.inputs.synthetic)
    state.metrics.update(copies_figures(c))
    logger.info(
        "  verbatim copies: %.2f%% of synthetic rows equal a training row, %.2f%% a holdout row "
        "(%d records "
        "each side); sign test p %.4g",
        100 * c.train_share,
        100 * c.holdout_share,
        c.compared,
        c.pvalue,
    )


def _agreement(state: GateState, executor: Executor, logger: Any) -> None:
    cfg = state.settings.exposure
    state.agreement = a = executor.run("agreement", agreement_of, state, state.inputs.synthetic)
    state.metrics.update(agreement_figures(a))
    logger.info(
        "  column agreement: %d of %d training records reproduced beyond the holdout's twins at "
        "FDR %g; "
        "tail-excess p %.4g, Simes p %.4g",
        a.count,
        a.tested,
        cfg.fdr,
        a.tail_pvalue,
        a.simes_pvalue,
    )


def _disclosure(state: GateState, executor: Executor, logger: Any) -> None:
    settings, splits, spec = state.settings, state.inputs.splits, state.settings.spec
    control, source = control_records(
        splits.holdout,
        state.targets.row_ids,
        splits.reference if settings.exposure.reference_calibrates else None,
        min_control=settings.disclosure.min_control,
    )
    public = label_values(
        list(spec.subgroups),
        {c: spec.columns[c].categories for c in spec.subgroups},
        [splits.holdout, splits.reference],
        min_count=settings.audit.label_min_count,
    )
    state.disclosure_inputs = DisclosureInputs(control=control, source=source, public=public)
    _short(
        state,
        logger,
        control_shortfall(
            settings.disclosure,
            n_control=len(control),
            reference_counts=bool(settings.exposure.reference_calibrates),
        ),
    )
    state.disclosure = d = executor.run(
        "disclosure",
        measure_disclosure,
        state.inputs.synthetic,
        splits.train,
        control,
        spec,
        settings.disclosure,
        seed=settings.targets.seed,
        control_source=source,
        subgroups=spec.subgroups,
        public=public,
        label_key=state.inputs.label_key,
    )
    state.metrics.update(d.metrics())
    for note in d.attacker.assumed:
        logger.info("  (assumed) %s", note)


def _audit(state: GateState, executor: Executor, logger: Any) -> None:
    settings, splits, spec = state.settings, state.inputs.splits, state.settings.spec
    if spec.source is not None:
        state.shift = source_shift(splits.train[spec.source], splits.reference[spec.source])
    categorical = [
        c for c, col in spec.columns.items() if not col.is_numeric and c != spec.entity_id
    ]
    rare = (
        rare_values(splits.train, categorical, max_count=settings.audit.rare_value_max_count)
        if settings.audit.rare_value_max_count
        else None
    )
    state.audit = executor.run(
        "audit",
        audit,
        state.outcomes,
        state.targets,
        spec,
        settings.audit,
        state.dependency,
        mace=settings.mace,
        gated=[o.name for o in state.gated],
        exposed=state.exposure.target_mask(state.targets.labels),
        shift=state.shift,
        epsilon=settings.epsilon,
        rare=rare,
        public=label_values(
            [c for c in spec.columns if c != spec.entity_id],
            {c: col.categories for c, col in spec.columns.items()},
            [splits.holdout, splits.reference],
            min_count=settings.audit.label_min_count,
        ),
        label_key=state.inputs.label_key,
        scan_named=None if state.scan is None else (splits.train, state.scan.discoveries),
    )
    state.metrics.update(state.audit.metrics)
    for note in state.audit.notes:
        logger.info("  %s", note)


def _decide(state: GateState, executor: Executor, logger: Any) -> None:
    state.verdict = executor.run("decide", judge, state)
    if state.verdict.flagged_subgroups:
        logger.warning(
            "flagged subgroups: %s", console_line(", ".join(state.verdict.flagged_subgroups))
        )


def judge(state: GateState) -> Verdict:
    """The gate's half: rules on the measured figures, plus the findings outside the rules (a
    failed synthetic suite, an attack that could not rank, advantages above the DP bound, the
    dependency stress test)."""
    settings, audited, spec = state.settings, state.audit, state.settings.spec
    dependence = dependence_clause(
        state.shift, source=spec.source, alpha=settings.audit.dependency_alpha
    )
    dp_warnings = [
        dp_bound_exceeded(
            q,
            lower=c.lower,
            bound=c.bound,
            epsilon=c.epsilon,
            message=c.message,
            dependence=dependence,
        )
        for q, c in state.mace.dp.items()
        if c.exceeds
    ]
    dependency = dependency_findings(
        audited.dependency,
        max_gap=settings.audit.dependency_max_auc_gap,
        dp_review=settings.audit.dependency_dp_review,
    )
    invalid = [attack_invalid(o.name, o.invalid) for o in state.gated if o.invalid]
    failures = (
        validation_failures(state.validation.suite_name, state.validation.failures()) + invalid
    )
    verdict = decide(
        settings.active_rules,
        state.metrics,
        attacks=settings.gated_attacks,
        # the dependency stress test is opt-in (audit.dependency_test) and reviews at
        # its own level (MACE's delta); a DP-bound excess needs a significant
        # membership test
        groups=audited.groups,
        extra_failures=failures + dependency,
        warnings=dp_warnings,
        data_hashes=state.hashes,
        rules_hash=settings.gate.rules_hash(),
        tests=state.tests,
        budget=settings.gate.budget,
        disabled=settings.disabled,
        shortfalls=state.shortfalls,
    )
    # which flag explains which; a BLOCK one flagged group explains goes to a human (suppressible)
    verdict = blame_groups(state, verdict, extra_failures=failures)
    if verdict.flagged_subgroups:  # each flagged group's effect size, for every surface to show
        verdict = dataclasses.replace(verdict, group_effects=group_effects(state, verdict))
    return verdict


#: What ``decide`` reads: :func:`judge`'s own fields, and those of blame and the group effects,
#: which it hands the whole state.
_JUDGE_READS = (
    "settings",
    "hashes",
    "validation",
    "outcomes",
    "metrics",
    "mace",
    "audit",
    "shift",
    "shadow",
    "shortfalls",
)
#: Of those, the fields that may hold their default at ``decide``: written by opt-in stages, or
#: (``shift``) by ``audit`` only when the spec names a source column; judge, blame and the
#: effects each handle None.
_DECIDE_IF_SET = ("shift", "scan", "disclosure_inputs", "shadow")
_DECIDE_READS = tuple(
    n
    for n in dict.fromkeys((*_JUDGE_READS, *BLAME_READS, *EFFECTS_READS))
    if n not in _DECIDE_IF_SET
)
#: Every stage starts from these: the run's inputs, and the empty records the stages fill in place.
GATE_PROVIDED = ("inputs", "settings", "hashes", "metrics", "shortfalls", "attack_seconds")

#: One gate run, in order. Every name labels a failure, a timing and the executor call it makes;
#: each stage declares the fields of :class:`GateState` it reads and writes (checked below, at
#: import, and its writes as it runs: :mod:`privacy_gate.pipeline.stages`). ``dependency`` is
#: set by ``targets`` only with ``audit.dependency_test``: its readers handle None.
GATE_STAGES: tuple[Stage[GateState], ...] = (
    Stage(
        "validate_synthetic",
        lambda s: "validating synthetic data (Great Expectations)",
        _validate,
        reads=("inputs", "settings"),
        writes=("validation", "metrics"),
    ),
    Stage(
        "targets",
        lambda s: "choosing targets",
        _targets,
        reads=("inputs", "settings"),
        writes=("targets", "dependency", "shortfalls"),
    ),
    Stage(
        "attacks",
        lambda s: f"running {len(s.settings.attacks)} attack(s) concurrently + utility",
        _attacks,
        reads=("inputs", "settings", "targets"),
        reads_if_set=("dependency",),
        writes=("threat", "outcomes", "utility", "metrics", "strongest", "attack_seconds"),
    ),
    Stage(
        "mace",
        lambda s: "MACE: confidence-bounded advantage per attack and combined",
        _mace,
        reads=("settings", "targets", "outcomes"),
        writes=("mace", "metrics"),
    ),
    Stage(
        "exposure",
        lambda s: "exposed-record discovery over the member targets",
        _exposure,
        reads=("settings", "targets", "outcomes"),
        writes=("exposure", "metrics", "shortfalls"),
    ),
    Stage(
        "scan",
        lambda s: (
            f"member scan: all {len(s.inputs.splits.train):,} training records against the "
            f"holdout{' and reference' if s.settings.exposure.reference_calibrates else ''}"
        ),
        _scan,
        when=lambda s: s.settings.exposure.scan_members,
        reads=("inputs", "settings"),
        writes=("scan", "metrics"),
    ),
    Stage(
        "copies",
        lambda s: "verbatim copies against the holdout's twins at the same size",
        _copies,
        when=lambda s: "copies" in s.settings.budget_tests,
        reads=("inputs", "settings"),
        writes=("copies", "metrics"),
    ),
    Stage(
        "agreement",
        lambda s: "partial copies: column agreement of training and holdout records",
        _agreement,
        when=lambda s: "agreement" in s.settings.budget_tests,
        reads=("inputs", "settings"),
        writes=("agreement", "metrics"),
    ),
    Stage(
        "disclosure",
        lambda s: "disclosure risks: singling out, linkability, inference (training vs control)",
        _disclosure,
        when=lambda s: s.settings.disclosure.enabled,
        reads=("inputs", "settings", "targets"),
        writes=("disclosure_inputs", "disclosure", "metrics", "shortfalls"),
    ),
    Stage(
        "shadow",
        lambda s: "generator-aware test: refits of the recipe",
        run_shadow_stage,
        when=lambda s: s.settings.generator is not None and s.settings.shadow.enabled is not False,
        # ``shortfalls``: a stage floor missed by any stage before it is a reason to run
        reads=("inputs", "settings", "targets", "shortfalls"),
        writes=("shadow", "metrics"),
    ),
    Stage(
        "audit",
        lambda s: "auditing subgroups, entities and dependency",
        _audit,
        reads=("inputs", "settings", "targets", "outcomes", "exposure"),
        reads_if_set=("dependency", "scan"),
        writes=("shift", "audit", "metrics"),
    ),
    Stage(
        "decide",
        lambda s: "applying the gate rules",
        _decide,
        reads=_DECIDE_READS,
        reads_if_set=_DECIDE_IF_SET,
        writes=("verdict",),
    ),
)
check_stage_flow(GATE_STAGES, state_type=GateState, provided=GATE_PROVIDED)


def run_gate(
    inputs: GateInputs,
    settings: GateSettings,
    *,
    executor: Executor | None = None,
    sinks: Sequence[Sink] = (),
    clock: StageClock | None = None,
) -> GateResult:
    """Judge ``inputs.synthetic`` with ``settings``; never raises (a failure is a BLOCK)."""
    clock = clock or StageClock()
    own_executor = executor is None
    executor = executor or LocalExecutor()
    state: GateState | None = None
    result = GateResult(
        verdict=Verdict.error("gate did not start"), settings=settings, timings=clock.timings
    )
    try:
        state = GateState(inputs=inputs, settings=settings, hashes=inputs.data_hashes())
        try:
            run_stages(GATE_STAGES, state, executor=executor, clock=clock)
        finally:
            clock.timings.update(state.attack_seconds)
        result = state.result(clock.timings)
        with clock.stage("logging", "recording the gate results"):
            for sink in sinks:
                executor.run("logging", sink.record_gate, result)
    except Exception as exc:  # noqa: BLE001 - fail closed
        hashes = state.hashes if state is not None else {}
        # a full disk is named by the sinks' workdir (an MLflow sink's), else the failing file
        where = next((w for s in sinks if (w := getattr(s, "workdir", None))), None)
        result = result.with_verdict(
            failure_verdict(exc, stage=clock.current, data_hashes=hashes, where=where)
        )
    finally:
        if own_executor:
            executor.shutdown()  # type: ignore[attr-defined]
    return result
