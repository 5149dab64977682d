"""Whole runs, recorded and published: a release run (load -> validate -> split -> fit -> sample ->
gate) and a gate-only run (files made elsewhere), each ending in :func:`finish`.

:func:`finish` is the only place that publishes, and it publishes last: the verdict is written to
the tracking store and read back first, so a release can never sit in the publish folder while
the record says anything but APPROVE. The Prefect flows call these functions with an executor
that maps stages to tasks; notebooks and tests can call them with the default local executor.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from privacy_gate import names, tracking
from privacy_gate.config import (
    GateConfig,
    GateOnlyConfig,
    ReleaseConfig,
    TargetsConfig,
    location_name,
)
from privacy_gate.data import Splits, read_table
from privacy_gate.data.types import conform_typed, restore_types
from privacy_gate.errors import (
    PrivacyGateError,
    disk_full,
    is_infrastructure_error,
    safe_reason,
)
from privacy_gate.experiment.inputs import (
    SPLIT_NAMES,
    GateInputs,
    check_disjoint,
    check_encoding_width,
    load_real_data_typed,
    read_split_files,
    split_release,
    splits_from_frames,
)
from privacy_gate.experiment.settings import (
    GateSettings,
    GeneratorKnowledge,
    settings_for_gate_only,
    settings_for_release,
)
from privacy_gate.gate import Verdict
from privacy_gate.generators import Generator, create_generator, progress, sample_synthetic
from privacy_gate.label_key import LabelKey
from privacy_gate.pipeline.executor import Executor, LocalExecutor
from privacy_gate.pipeline.gate_run import run_gate
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.pipeline.stages import (
    Stage,
    StageClock,
    check_stage_flow,
    failure_verdict,
    run_stages,
)
from privacy_gate.publication.publish import QuarantinedRelease, ReleaseStore
from privacy_gate.report.html import log_report
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.spec import DatasetSpec
from privacy_gate.studies.dp_audit_gate import apply_audit, audit_for_release
from privacy_gate.validation import validate_input
from privacy_gate.words.checks import headline_reason


@dataclass
class RunContext:
    """One recorded run in progress: its MLflow sink, release store, stage clock, and the
    quarantined release once there is one."""

    sink: MlflowSink
    store: ReleaseStore
    dataset: str
    clock: StageClock
    executor: Executor = field(default_factory=LocalExecutor)
    config_hash: str | None = None
    quarantined: QuarantinedRelease | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(
        default_factory=dict
    )  # where each input table came from (no values)
    infrastructure_failure: bool = False  # a service did not answer: a scheduled run may retry
    # the types the release is written in (``data.types``): the input's, so a published boolean
    # stays boolean and integer codes stay integers
    value_types: dict[str, str] | None = None

    @property
    def run_id(self) -> str:
        return self.sink.run_id

    def step(self, name: str, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        """One named step of the run through the executor (a task in Prefect; the seam a test's
        faulty executor breaks)."""
        return self.executor.run(name, fn, *args, **kwargs)

    def validate_input(self, df: pd.DataFrame, spec: DatasetSpec, what: str) -> None:
        logger = self.clock.logger
        report = self.step(
            "validate_input",
            validate_input,
            df,
            spec,
            progress=lambda line: logger.info("  validating %s: %s", what, line),
        )
        self.sink.record_validation(report)
        report.raise_if_failed(what)

    def quarantine(self, synthetic: pd.DataFrame, fmt: str) -> None:
        """Quarantine ``synthetic`` (conformed) written in ``value_types`` where that is
        lossless."""
        typed = restore_types(synthetic, self.value_types)
        self.quarantined = self.step("quarantine", self.store.quarantine, typed, fmt=fmt)
        self.hashes["synthetic_file_sha256"] = self.quarantined.sha256
        self.sink.record_quarantine(
            self.quarantined, target=self.store.target_label, workdir=self.store.workdir
        )

    def gate(self, inputs: GateInputs, settings: GateSettings) -> Verdict:
        # group labels hash record values with the workdir's key; the run seals which key (its
        # fingerprint, never the key), so --suppress refuses to resolve them with another one
        key = LabelKey.for_workdir(self.store.workdir)
        self.sink.seal[names.SEAL_LABEL_KEY] = key.fingerprint
        inputs = dataclasses.replace(inputs, label_key=key)
        self.sink.record_json(settings.to_record(), names.ART_SETTINGS)
        splits = inputs.splits
        tables = {
            "train": splits.train,
            "holdout": splits.holdout,
            "reference": splits.reference,
            "synthetic": inputs.synthetic,
        }
        sources = {k: k for k in tables} | self.sources
        if self.quarantined is not None:
            sources["synthetic"] = str(self.quarantined.path)
        self.sink.record_inputs(tables, sources=sources)
        return run_gate(
            inputs, settings, executor=self.executor, sinks=[self.sink], clock=self.clock
        ).verdict

    def fail(self, exc: BaseException) -> Verdict:
        self.infrastructure_failure = self.infrastructure_failure or is_infrastructure_error(exc)
        return failure_verdict(
            exc, stage=self.clock.current, data_hashes=self.hashes, where=self.store.workdir
        )


def fit_generator(
    config: ReleaseConfig,
    train: pd.DataFrame,
    reference: pd.DataFrame,
    progress_key: str | None = None,
) -> Generator:
    """Marginal (DP) generators take public bins from the reference split, never from train.
    ``progress_key``: the steps the generator reports (``generators.progress``) are kept under
    it."""
    params = dict(config.generator.params)
    if config.generator.seed is not None:
        params["seed"] = config.generator.seed
    with progress.tracking(progress_key):
        return create_generator(config.generator.name, **params).fit(
            train, config.dataset.spec, reference=reference
        )


def progress_seconds() -> float:
    """Seconds between a fit's progress lines (``PRIVACY_GATE_PROGRESS_SECONDS``, default 15)."""
    try:
        value = float(os.environ.get(names.ENV_PROGRESS_SECONDS, "15"))
    except ValueError:
        return 15.0
    return value if value > 0 else 15.0


@dataclass(eq=False)
class ReleaseState:
    """A release run as it goes: the config and its record, then what each stage adds."""

    config: ReleaseConfig
    ctx: RunContext
    real: pd.DataFrame | None = None
    public_reference: pd.DataFrame | None = None
    splits: Splits | None = None
    generator: Generator | None = None
    synthetic: pd.DataFrame | None = None
    verdict: Verdict | None = None
    workdir: Path | None = None
    dp_audit: tuple[Any, bool] | None = (
        None  # (DPAuditResult, from_cache) when audit_dp is configured
    )


def _load(state: ReleaseState, executor: Executor, logger: Any) -> None:
    state.real, state.public_reference, state.ctx.value_types = executor.run(
        "load_input", load_real_data_typed, state.config
    )
    check_encoding_width(
        state.real,
        state.config.dataset.spec,
        source=f"real data {location_name(state.config.dataset.path)}",
    )


def _validate_input(state: ReleaseState, executor: Executor, logger: Any) -> None:
    state.ctx.validate_input(
        state.real,
        state.config.dataset.spec,
        f"input data {location_name(state.config.dataset.path)}",
    )


def _split(state: ReleaseState, executor: Executor, logger: Any) -> None:
    state.splits = executor.run(
        "split_data", split_release, state.config, state.real, state.public_reference
    )
    if (
        state.public_reference is not None
    ):  # splits of one table are disjoint; a public file may not be
        dataset = state.config.dataset
        check_disjoint(
            {k: getattr(state.splits, k) for k in SPLIT_NAMES},
            dataset.spec,
            sources={
                "train": location_name(dataset.path),
                "holdout": location_name(dataset.path),
                "reference": location_name(dataset.reference_path),
            },
        )
    state.ctx.sink.record_params({f"n_{k}": v for k, v in state.splits.sizes().items()})


def _fit(state: ReleaseState, executor: Executor, logger: Any) -> None:
    """The fit, with a progress line every ``progress_seconds()``: the time so far and, when the
    generator reports it and runs in this process, its epoch or step."""
    name = state.config.generator.name
    key = f"fit-{uuid.uuid4().hex}"
    with progress.FitHeartbeat(
        key,
        lambda line: logger.info("  fitting generator '%s': %s", name, line),
        every=progress_seconds(),
    ):
        state.generator = executor.run(
            "fit_generator",
            fit_generator,
            state.config,
            state.splits.train,
            state.splits.reference,
            key,
        )


def _n_samples(state: ReleaseState) -> int:
    return state.config.generator.n_samples or len(state.splits.train)


def _sample_line(state: ReleaseState) -> str:
    """What the sample stage will do, as the generator says when it does not simply sample n rows
    (the ``file`` generator releases its whole file)."""
    describe = getattr(state.generator, "describe_sample", None)
    return (
        describe(_n_samples(state))
        if describe
        else f"sampling {_n_samples(state):,} synthetic rows"
    )


def _sample(state: ReleaseState, executor: Executor, logger: Any) -> None:
    state.synthetic = executor.run(
        "sample_synthetic",
        sample_synthetic,
        state.generator,
        _n_samples(state),
        state.config.dataset.spec,
    )
    logger.info("  %s synthetic rows to judge", f"{len(state.synthetic):,}")
    state.ctx.quarantine(state.synthetic, state.config.publish.format)


def _dp_audit(state: ReleaseState, executor: Executor, logger: Any) -> None:
    """``audit_dp``: the generator's DP claim audited (or its cached audit), recorded as a nested
    run; any error fails the stage, so the release BLOCKs (fail closed)."""
    result, cached = audit_for_release(
        state.config,
        state.splits,
        workdir=state.workdir,
        executor=executor,
        progress=lambda line: logger.info("  %s", line),
    )
    logger.info(
        "  DP audit%s: epsilon >= %.3g (claimed %g), mu estimate %.3g (claimed %.3g)",
        " (cached)" if cached else "",
        result.epsilon_lower,
        result.epsilon,
        result.best.bound.mu_estimate,
        result.claimed_mu,
    )
    state.ctx.sink.record_dp_audit(result, cached=cached)
    state.dp_audit = (result, cached)


#: What a release run's state holds before its first stage: the config, its record, the workdir.
RELEASE_PROVIDED = ("config", "ctx", "workdir")

#: A release run up to its gate (whose own stages follow: ``gate_run.GATE_STAGES``). Each stage
#: declares the fields of :class:`ReleaseState` it reads and writes (checked below, at import).
#: ``ctx`` counts as written by the stages that record through it (its sink's seal, the
#: quarantined release, the value types): what ``finish`` reads of the run.
RELEASE_STAGES: tuple[Stage[ReleaseState], ...] = (
    Stage(
        "load",
        lambda s: f"loading {location_name(s.config.dataset.path)}",
        _load,
        reads=("config",),
        writes=("real", "public_reference", "ctx"),
    ),
    Stage(
        "validate_input",
        lambda s: "validating input data (Great Expectations)",
        _validate_input,
        reads=("config", "ctx", "real"),
        writes=("ctx",),
    ),
    Stage(
        "split",
        lambda s: "splitting train / holdout / reference by entity",
        _split,
        reads=("config", "ctx", "real", "public_reference"),
        writes=("splits", "ctx"),
    ),
    Stage(
        "fit",
        lambda s: f"fitting generator '{s.config.generator.name}' on {len(s.splits.train):,} rows",
        _fit,
        reads=("config", "splits"),
        writes=("generator",),
    ),
    Stage(
        "sample",
        _sample_line,
        _sample,
        reads=("config", "ctx", "splits", "generator"),
        writes=("synthetic", "ctx"),
    ),
    Stage(
        "dp_audit",
        lambda s: (
            f"auditing the DP claim of '{s.config.generator.name}' ({s.config.audit_dp.runs} "
            "fits per side and target, or the cached audit)"
        ),
        _dp_audit,
        when=lambda s: s.config.audit_dp is not None,
        reads=("config", "ctx", "splits", "workdir"),
        writes=("dp_audit", "ctx"),
    ),
)
check_stage_flow(RELEASE_STAGES, state_type=ReleaseState, provided=RELEASE_PROVIDED)


def release_run(
    config: ReleaseConfig,
    *,
    workdir: str | Path,
    executor: Executor | None = None,
    logger: Any = None,
    tags: dict[str, str] | None = None,
    publish: bool = True,
) -> RunOutcome:
    """Train the configured generator on the train split, gate its sample, publish if approved.
    ``tags``: extra MLflow run tags (the flow records its Prefect flow run). ``publish=False``:
    an APPROVE stays in quarantine (a remediation ladder publishes only the attempt it chooses)."""
    executor = executor or LocalExecutor()
    spec, wd = config.dataset.spec, Path(workdir)
    tracker = tracking.Tracker.for_workdir(
        workdir=wd,
        dataset=spec.name,
        uri=config.tracking.uri,
        experiment=config.tracking.experiment,
    )
    ctx = RunContext(
        sink=MlflowSink.start(
            tracker, name=f"release-{spec.name}", kind="release", dataset=spec.name, tags=tags
        ),
        store=ReleaseStore(workdir=wd, target=config.publish.target),
        dataset=spec.name,
        clock=StageClock(logger) if logger else StageClock(),
        executor=executor,
        config_hash=config.config_hash(),
    )
    ctx.sources = {
        k: f"{config.dataset.path} ({k} split)" for k in ("train", "holdout", "reference")
    }
    try:
        ctx.sink.record_params(
            {
                "generator": config.generator.name,
                **{f"generator.{k}": v for k, v in config.generator.params.items()},
                "generator.seed": config.generator.seed,
                "split.seed": config.split.seed,
                "split.fractions": f"{config.split.train}/{config.split.holdout}"
                f"/{config.split.reference}",
                "targets.seed": config.targets.seed,
                "attacks": ",".join(a.name for a in config.attacks),
                "rules_hash": config.gate.rules_hash(),
                "config_hash": ctx.config_hash,
            }
        )
        ctx.sink.record_json(config.model_dump(mode="json"), names.ART_CONFIG)
        state = run_stages(
            RELEASE_STAGES,
            ReleaseState(config=config, ctx=ctx, workdir=wd),
            executor=executor,
            clock=ctx.clock,
        )
        verdict = ctx.gate(
            GateInputs(
                splits=state.splits,
                synthetic=state.synthetic,
                synthetic_file_sha256=ctx.quarantined.sha256,
            ),
            settings_for_release(config, state.generator),
        )
        if state.dp_audit is not None:
            verdict = apply_audit(
                verdict,
                state.dp_audit[0],
                max_ratio=config.audit_dp.max_ratio,
                cached=state.dp_audit[1],
            )
    except Exception as exc:  # noqa: BLE001 - fail closed
        verdict = ctx.fail(exc)
    return finish(ctx, verdict, publish=publish)


def gate_only_run(
    *,
    train: str,
    holdout: str,
    reference: str,
    synthetic: str,
    spec: DatasetSpec,
    gate: GateConfig | None = None,
    judging: GateOnlyConfig | None = None,
    workdir: str | Path,
    publish_to: str | None = None,
    targets_seed: int = 0,
    executor: Executor | None = None,
    logger: Any = None,
    generator: GeneratorKnowledge | None = None,
) -> RunOutcome:
    """Gate-only: judge synthetic data produced elsewhere from ``train``. ``judging``: the targets,
    attacks, gate, audit and MACE sections (default: a release config's defaults, with ``gate``
    and ``targets_seed`` when given). ``generator``: the registered generator and settings the user
    says made the release (the generator-aware test refits it; None: the recipe is unknown)."""
    executor = executor or LocalExecutor()
    judging = judging or GateOnlyConfig(
        gate=gate or GateConfig(), targets=TargetsConfig(seed=targets_seed)
    )
    gate = judging.gate
    wd = Path(workdir)
    tracker = tracking.Tracker.for_workdir(workdir=wd, dataset=spec.name)
    ctx = RunContext(
        sink=MlflowSink.start(
            tracker, name=f"gate-{spec.name}", kind="gate_only", dataset=spec.name
        ),
        store=ReleaseStore(workdir=wd, target=publish_to or None),  # a folder or s3://...
        dataset=spec.name,
        clock=StageClock(logger) if logger else StageClock(),
        executor=executor,
    )
    clock = ctx.clock
    paths = {"train": Path(train), "holdout": Path(holdout), "reference": Path(reference)}
    ctx.sources = {k: str(p.resolve()) for k, p in paths.items()}
    try:
        ctx.sink.record_params(
            {
                "mode": "gate_only",
                "rules_hash": gate.rules_hash(),
                "synthetic_file": Path(synthetic).name,
            }
        )
        ctx.sink.record_json(
            {
                "mode": "gate_only",
                "spec": spec.model_dump(mode="json"),
                "gate": gate.model_dump(mode="json"),
                "targets_seed": judging.targets.seed,
                "judging": judging.model_dump(mode="json"),
                "inputs": {k: str(p.resolve()) for k, p in paths.items()},
            },
            names.ART_CONFIG,
        )
        with clock.stage("load", "loading train / holdout / reference"):
            parts = executor.run("load_input", read_split_files, paths, spec, judging.inputs)
            check_encoding_width(
                parts["reference"], spec, source=f"reference data {paths['reference'].name}"
            )
        with clock.stage("validate_input", "validating input data (Great Expectations)"):
            for k, df in parts.items():
                ctx.validate_input(df, spec, f"{k} data {paths[k].name}")
            check_disjoint(parts, spec, sources={k: p.name for k, p in paths.items()})
        splits = splits_from_frames(parts)
        ctx.sink.record_params({f"n_{k}": v for k, v in splits.sizes().items()})
        with clock.stage("load_synthetic", f"loading synthetic data {Path(synthetic).name}"):
            # published in the types it was given in
            synth, ctx.value_types = conform_typed(
                read_table(synthetic, limits=judging.inputs),
                spec,
                source=str(synthetic),
                check_identifiers=False,
            )
            ctx.quarantine(synth, "parquet")
        settings = settings_for_gate_only(
            spec=spec,
            gate=gate,
            attacks=judging.attacks,
            targets=judging.targets,
            audit=judging.audit,
            mace=judging.mace,
            exposure=judging.exposure,
            disclosure=judging.disclosure,
            shadow=judging.shadow,
            generator=generator,
        )
        verdict = ctx.gate(
            GateInputs(
                splits=splits, synthetic=synth, synthetic_file_sha256=ctx.quarantined.sha256
            ),
            settings,
        )
    except Exception as exc:  # noqa: BLE001 - fail closed
        verdict = ctx.fail(exc)
    return finish(ctx, verdict)


def finish(ctx: RunContext, verdict: Verdict, *, publish: bool = True) -> RunOutcome:
    """Record the verdict (and read it back), then — only on APPROVE, and only if ``publish`` —
    publish the quarantined release. A review re-run passes ``publish=False``: its release is
    published with the approval record instead."""
    logger, clock = ctx.clock.logger, ctx.clock
    verdict = verdict.with_run_id(ctx.run_id)
    try:
        with clock.stage("record_verdict", "recording the verdict"):
            recorded = ctx.step(
                "record_verdict", ctx.sink.record_verdict, verdict, timings=clock.timings
            )
            if Verdict.from_dict(recorded) != verdict:
                raise PrivacyGateError(
                    "the verdict read back from the tracking store differs from the one written"
                )
    except Exception as exc:  # noqa: BLE001 - fail closed: an unrecorded verdict publishes nothing
        verdict = _failed(ctx, exc)
    published = None
    missed: list[str] = []  # records that could not be written after the decision
    if verdict.decision == "APPROVE" and publish:
        published, verdict = _publish(ctx, verdict)
    if published is not None:  # doctor derives it from the target when this cannot be written
        _try(
            ctx,
            missed,
            "tag the run with the publication",
            ctx.step,
            "publication_tag",
            ctx.sink.record_published,
            published,
        )
    if published is None and ctx.quarantined is not None:
        logger.info("release stays in quarantine: %s", ctx.quarantined.location)
    # derived records after the decision: each failure is a warning, never a change of the verdict
    _try(ctx, missed, "name the run with its verdict", ctx.sink.record_run_name, verdict)
    summary = f"{verdict.decision} (status {verdict.status}), MLflow run {ctx.run_id}"
    try:
        summary = ctx.step("summary", ctx.sink.summary_markdown, verdict)
    except Exception as exc:  # noqa: BLE001
        logger.warning(
            "could not render the verdict summary (%s); the verdict stands", type(exc).__name__
        )
    _try(ctx, missed, f"record {names.ART_SUMMARY}", ctx.sink.record_summary, summary)
    _try(ctx, missed, "set the run description", ctx.sink.record_description, verdict, summary)
    _try(
        ctx,
        missed,
        f"render the HTML report {names.ART_REPORT}",
        ctx.step,
        "report",
        log_report_of,
        ctx.sink,
        clock=clock,
    )
    _try(
        ctx,
        missed,
        "close the MLflow run",
        ctx.step,
        "end_run",
        ctx.sink.end,
        failed=verdict.status != "ok",
    )
    if published is not None and missed:
        ctx.clock.logger.error("%s", _unfinished_line(ctx, published, missed))
    logger.info(
        "%s", verdict_line(verdict, run_id=ctx.run_id)
    )  # the run's last line: what was decided, and why
    return RunOutcome(
        verdict=verdict,
        published=str(published) if published else None,
        quarantined=str(ctx.quarantined.path) if ctx.quarantined else None,
        tracking_uri=ctx.sink.tracker.uri,
        run_id=ctx.run_id,
        timings=clock.timings,
        experiment_id=ctx.sink.tracker.experiment_id,
        summary_markdown=summary,
        dataset=ctx.dataset,
        retryable=verdict.decision == "BLOCK" and ctx.infrastructure_failure,
    )


def verdict_line(verdict: Verdict, *, run_id: str | None) -> str:
    """The last log line of a run: the verdict with its main reason (the first blocking one for a
    BLOCK, else the first reason), how many more, and the run to look at.

    >>> print(verdict_line(Verdict(decision="APPROVE", status="ok", reasons=()), run_id="abc"))
    verdict APPROVE — every rule passed (run abc)
    """
    reasons = list(verdict.reasons)
    why = headline_reason(verdict) or "every rule passed"
    more = (
        f" (+{len(reasons) - 1} more reason{'s' if len(reasons) > 2 else ''})"
        if len(reasons) > 1
        else ""
    )
    flagged = (
        f"; flagged: {', '.join(verdict.flagged_subgroups)}" if verdict.flagged_subgroups else ""
    )
    return f"verdict {verdict.decision} — {why}{more}{flagged} (run {run_id or '—'})"


def log_report_of(sink: MlflowSink, *, clock: StageClock | None = None) -> None:
    """Render and log the HTML report (a timed stage when ``clock`` is given: its plots are a
    visible share of a small gate's wall time)."""
    if clock is None:
        log_report(sink.tracker, sink.run_id)
        return
    with clock.stage("report", "rendering the HTML report"):
        log_report(sink.tracker, sink.run_id)


def _try(ctx: RunContext, missed: list[str], what: str, fn: Any, *args: Any, **kwargs: Any) -> None:
    """Derived or after-the-fact records: a failure is a warning (a full disk named), never a
    change of the verdict; ``what`` is added to ``missed``."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        missed.append(what)
        full = disk_full(exc, where=ctx.store.workdir)
        ctx.clock.logger.warning(
            "could not %s (%s); the verdict stands", what, full or type(exc).__name__
        )


def _failed(ctx: RunContext, exc: BaseException) -> Verdict:
    """The BLOCK ``exc`` makes of the run, recorded if the store can still take it (a warning if
    not: the verdict stands either way)."""
    verdict = ctx.fail(exc).with_run_id(ctx.run_id)
    _try(
        ctx,
        [],
        "record the failure verdict",
        ctx.sink.record_verdict,
        verdict,
        timings=ctx.clock.timings,
    )
    return verdict


def _unfinished_line(ctx: RunContext, published: Any, missed: list[str]) -> str:
    """What a published run could not record after its release went out, and what to do."""
    line = f"the release IS published ({published}), but the run could not {'; '.join(missed)}"
    if any(m in ("tag the run with the publication", "close the MLflow run") for m in missed):
        return (
            f"{line}: free space if the disk is full, then run privacy-gate doctor --fix "
            f"--workdir {ctx.store.workdir} to record the publication and close the run"
        )
    return f"{line}; the decision and the publication are recorded"


def _publish(ctx: RunContext, verdict: Verdict) -> tuple[Any, Verdict]:
    """Publish the approved release: (where, verdict). Before it leaves quarantine the run records
    where it is going (``gate.publishing``, read back): a store that cannot take that write (a
    full disk) publishes nothing and the verdict becomes a BLOCK. A failure reported after the
    release became visible (the target's fsync) leaves it published, and says so."""
    logger, clock = ctx.clock.logger, ctx.clock
    started = False
    try:
        with clock.stage("publish", "publishing the approved release"):
            if ctx.quarantined is None:
                raise PrivacyGateError("no quarantined release to publish")
            release = ctx.quarantined
            ctx.step(
                "publication_intent",
                ctx.sink.record_publishing,
                ctx.store.release_dir(release, ctx.dataset),
            )
            started = True
            published = ctx.step(
                "publish",
                ctx.store.publish,
                release,
                dataset=ctx.dataset,
                verdict=verdict.decision,
                run_id=ctx.run_id,
                config_hash=ctx.config_hash,
            )
        logger.info("published %s", published)
    except Exception as exc:  # noqa: BLE001 - fail closed; publication is atomic
        published = ctx.store.visible(ctx.quarantined, ctx.dataset) if started else None
        if published is None:  # nothing visible: the release stays in quarantine
            return None, _failed(ctx, exc)
        logger.warning(
            "publishing reported %s after the release became visible; it is published: %s",
            safe_reason(exc, where=ctx.store.workdir) or type(exc).__name__,
            published,
        )
    return published, verdict
