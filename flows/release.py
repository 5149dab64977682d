"""Prefect flows: ``release`` (load -> validate -> split -> fit -> sample -> gate -> publish) and
``gate`` (gate-only, for synthetic data made elsewhere). Thin orchestration over privacy_gate.

Fail closed: whatever goes wrong after the run started ends as a BLOCK verdict recorded in MLflow,
never as an approval. Nothing here logs values of real records.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner

from privacy_gate import release, tracking
from privacy_gate.config import (AttackConfig, AuditConfig, DatasetSpec, GateConfig, MaceConfig, ReleaseConfig,
                                 RunnerConfig, TargetsConfig)
from privacy_gate.estimators.mace_gate import COMBINED
from privacy_gate.data import Splits, conform, data_hash, read_table
from privacy_gate.errors import ConfigError, PrivacyGateError, ValidationFailed
from privacy_gate.gate import Check, Verdict, decide
from privacy_gate.publish import QuarantinedRelease, ReleaseStore
from privacy_gate.report.summary import verdict_markdown

# Tasks take DataFrames: never hash them for caching, never persist them as results.
_task = task(cache_policy=NO_CACHE, persist_result=False)


@_task
def load_input(config: ReleaseConfig) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    return release.load_real_data(config)


@_task
def validate_input(df: pd.DataFrame, spec: DatasetSpec):
    from privacy_gate.validation import validate_input as run

    return run(df, spec)


@_task
def split_data(config: ReleaseConfig, real: pd.DataFrame, reference: pd.DataFrame | None) -> Splits:
    return release.split(config, real, reference)


@_task
def fit_generator(config: ReleaseConfig, train: pd.DataFrame, reference: pd.DataFrame):
    from privacy_gate.generators import create_generator

    gen_cfg = config.generator
    params = dict(gen_cfg.params)
    if gen_cfg.seed is not None:
        params["seed"] = gen_cfg.seed
    generator = create_generator(gen_cfg.name, **params)
    # marginal (DP) generators take public bins from the reference split, never from train
    if "reference" in inspect.signature(generator.fit).parameters:
        return generator.fit(train, config.dataset.spec, reference=reference)
    return generator.fit(train, config.dataset.spec)


@_task
def sample_synthetic(generator, n: int, spec: DatasetSpec) -> pd.DataFrame:
    # generators return spec-typed frames; conform() re-checks that contract
    return conform(generator.sample(n), spec, source=f"synthetic data from generator '{generator.name}'")


@_task
def validate_synthetic(synthetic: pd.DataFrame, train: pd.DataFrame, spec: DatasetSpec, max_copy_share: float):
    from privacy_gate.validation import validate_synthetic as run

    return run(synthetic, train, spec, max_copy_share=max_copy_share)


def prefect_mapper(fn, jobs) -> list:
    """Map independent sub-runs (MAMA-MIA shadow runs) as Prefect tasks on the flow's task runner:
    thread pool locally, Dask workers with ``runner: {kind: dask}``."""
    sub = task(fn, name="shadow-run", cache_policy=NO_CACHE, persist_result=False)
    return [f.result() for f in sub.map(list(jobs))]


@_task
def attack(attack_cfg: AttackConfig, synthetic: pd.DataFrame, splits: Splits, spec: DatasetSpec,
           targets: release.Targets, generator: str | None, generator_params: dict,
           extra_targets: dict[str, release.Targets], focal_points: tuple | None) -> release.AttackOutcome:
    return release.run_attack(attack_cfg, synthetic=synthetic, splits=splits, spec=spec, targets=targets,
                              generator=generator, generator_params=generator_params, extra_targets=extra_targets,
                              focal_points=focal_points, mapper=prefect_mapper)


def task_runner_for(runner: RunnerConfig):
    """The Prefect task runner the config asks for (the flows are the same either way)."""
    if runner.kind == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise ConfigError("runner.kind 'dask' needs prefect-dask (pip install prefect-dask)") from None
        if runner.dask_address:
            return DaskTaskRunner(address=runner.dask_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": runner.workers, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    return ThreadPoolTaskRunner(max_workers=runner.workers)


def with_oracle(attacks: list[AttackConfig], generator: Any) -> list[AttackConfig]:
    """For a marginal generator, also report MAMA-MIA with the focal points the generator really
    used — the upper bound of black-box knowledge (reported, not gated)."""
    if getattr(generator, "focal_points_", None) is None or any(a.key == ORACLE for a in attacks):
        return list(attacks)
    if not any(a.name == "mama_mia" for a in attacks):
        return list(attacks)
    return [*attacks, AttackConfig(name="mama_mia", variant="oracle", label=ORACLE, gate=False)]


ORACLE = "mama_mia_oracle"


@_task
def utility(synthetic: pd.DataFrame, holdout: pd.DataFrame, spec: DatasetSpec) -> dict:
    from privacy_gate.estimators.utility import marginal_quality

    return marginal_quality(synthetic, holdout, spec=spec)


# --------------------------------------------------------------------------------- run context


@dataclass
class _Run:
    """What one gate run accumulates: tracker + run id, timings, hashes, the quarantined file."""

    tracker: tracking.Tracker
    run_id: str
    store: ReleaseStore
    dataset: str
    config_hash: str | None
    publish_fmt: str = "parquet"
    timings: dict[str, float] = field(default_factory=dict)
    hashes: dict[str, str] = field(default_factory=dict)
    quarantined: QuarantinedRelease | None = None
    current_stage: str = "start"

    @contextlib.contextmanager
    def stage(self, name: str, what: str):
        logger = get_run_logger()
        self.current_stage = name
        logger.info("▶ %s ...", what)
        start = time.perf_counter()
        yield
        self.timings[name] = time.perf_counter() - start
        logger.info("✔ %s done in %.1f s", what, self.timings[name])


def _log_validation(run: _Run, report) -> None:
    run.tracker.log_json(run.run_id, report.to_dict(), tracking.validation_artifact(report.suite_name))


def _quarantine(run: _Run, synthetic: pd.DataFrame) -> None:
    run.quarantined = run.store.quarantine(synthetic, fmt=run.publish_fmt)
    run.hashes["synthetic_file_sha256"] = run.quarantined.sha256
    run.tracker.set_tags(run.run_id, {tracking.TAG_SYNTHETIC_SHA: run.quarantined.sha256,
                                      tracking.TAG_QUARANTINE: str(run.quarantined.path.resolve()),
                                      tracking.TAG_PUBLISH_TARGET: str(run.store.target.resolve())})


@_task
def mace(scores: dict, labels, row_ids, mace_cfg: MaceConfig, epsilon: float | None):
    from privacy_gate.estimators.mace_gate import mace_for_attacks

    return mace_for_attacks(scores, labels, row_ids, prior=mace_cfg.prior, delta=mace_cfg.delta,
                            n_permutations=mace_cfg.n_permutations, epsilon=epsilon)


def _judge(run: _Run, *, spec: DatasetSpec, splits: Splits, synthetic: pd.DataFrame, gate: GateConfig,
           attacks: list[AttackConfig], targets_cfg: TargetsConfig, audit_cfg: AuditConfig, generator: str | None,
           generator_params: dict, focal_points: tuple | None = None, mace_cfg: MaceConfig | None = None,
           privacy: dict | None = None) -> Verdict:
    """Validate the synthetic data, run the attacks concurrently, decide, and log it all."""
    logger = get_run_logger()
    run.hashes.update({f"{k}_sha256": data_hash(v) for k, v in
                       (("train", splits.train), ("holdout", splits.holdout), ("reference", splits.reference),
                        ("synthetic", synthetic))})
    with run.stage("validate_synthetic", "validating synthetic data (Great Expectations)"):
        syn_report = validate_synthetic(synthetic, splits.train, spec, gate.max_verbatim_copy_share)
        _log_validation(run, syn_report)
    with run.stage("targets", "choosing targets"):
        targets = release.choose_targets(splits, targets_cfg)
        logger.info("  %d member and %d non-member targets", int(targets.labels.sum()),
                    int((targets.labels == 0).sum()))
        dependency = None
        if audit_cfg.dependency_test:
            dependency = release.choose_dependency_targets(splits, spec, targets_cfg,
                                                           value=audit_cfg.dependency_source_value,
                                                           min_per_class=targets_cfg.min_per_class)
            logger.info("  dependency test: members from %s=%r, %d targets per class", spec.source, dependency[0],
                        int(dependency[1].labels.sum()))
    extra = {"dependency": dependency[1]} if dependency else {}
    with run.stage("attacks", f"running {len(attacks)} attack(s) concurrently + utility"):
        futures = [attack.with_options(name=f"attack-{a.key}").submit(a, synthetic, splits, spec, targets,
                                                                        generator, generator_params, extra,
                                                                        focal_points)
                   for a in attacks]
        util_future = utility.submit(synthetic, splits.holdout, spec)
        outcomes = [f.result() for f in futures]
        util = util_future.result()
    for o in outcomes:
        run.timings[f"attack.{o.name}"] = o.seconds
        logger.info("  %-8s AUC %.4f  TPR@1%%FPR %.4f  advantage %.4f  (%.1f s)", o.name, o.metrics["auc"],
                    o.metrics["tpr_at_fpr_0.01"], o.metrics["advantage"], o.seconds)

    metrics: dict[str, float] = {}
    for o in outcomes:
        metrics.update({tracking.metric_name(o.name, k): v for k, v in o.metrics.items()})
    gated = [o for o, a in zip(outcomes, attacks) if a.gate]
    top = release.strongest(gated)
    metrics.update({tracking.metric_name(tracking.STRONGEST, k): v for k, (v, _) in top.items()})
    run.tracker.set_tags(run.run_id, {tracking.strongest_tag(k): name for k, (_, name) in top.items()})
    metrics.update({tracking.metric_name("utility", k): float(v) for k, v in util.items()
                    if isinstance(v, (int, float))})
    metrics.update(syn_report.metrics())
    mace_cfg = mace_cfg or MaceConfig()
    epsilon = (privacy or {}).get("epsilon")
    with run.stage("mace", "MACE: confidence-bounded advantage per attack and combined"):
        mres = mace({o.name: o.scores for o in gated}, targets.labels, targets.row_ids, mace_cfg, epsilon)
        metrics.update(mres.metrics)
        for name in [o.name for o in gated] + [COMBINED]:
            if f"{name}.mace.advantage" in mres.metrics:
                logger.info("  %-8s MACE advantage %.3f  [%.3f, %.3f]  (null bias %s)", name,
                            mres.metrics[f"{name}.mace.advantage"], mres.metrics[f"{name}.mace.advantage_lower"],
                            mres.metrics[f"{name}.mace.advantage_upper"],
                            f"{mres.metrics[f'{name}.mace.bias']:.3f}" if f"{name}.mace.bias" in mres.metrics else "-")
    with run.stage("audit", "auditing subgroups, entities and dependency"):
        audited = release.audit(outcomes, targets, spec, audit_cfg, dependency, mace=mace_cfg)
        metrics.update(audited.metrics)
    failures = [Check(rule=f"suite {syn_report.suite_name}", metric="validation.synthetic", observed=None,
                      threshold=None, bound="none", action="block", passed=False, message=msg)
                for msg in syn_report.failures()]
    verdict = decide(gate.rules, metrics, attacks=[a.key for a in attacks if a.gate], groups=audited.groups,
                     extra_failures=failures, warnings=audited.warnings + mres.warnings, data_hashes=run.hashes,
                     rules_hash=gate.rules_hash())
    if verdict.flagged_subgroups:
        logger.warning("flagged subgroups: %s", ", ".join(verdict.flagged_subgroups))

    with run.stage("logging", "logging attacks to MLflow"):
        _log_attacks(run, outcomes, targets)
        run.tracker.log_json(run.run_id, util, tracking.ART_UTILITY)
        run.tracker.log_json(run.run_id, audited.group_rows, tracking.ART_SUBGROUPS)
        _log_mace(run, mres)
    return verdict


def _log_attacks(run: _Run, outcomes: list[release.AttackOutcome], targets: release.Targets) -> None:
    from privacy_gate.estimators.metrics import roc_curve_points
    from privacy_gate.report.plots import roc_figure

    curves = []
    for o in outcomes:
        child = run.tracker.start_run(name=f"attack-{o.name}", kind="attack", parent=run.run_id)
        run.tracker.log_params(child, {"attack": o.name, **o.params})
        run.tracker.log_metrics(child, {**o.metrics, tracking.timing_metric("attack"): o.seconds})
        run.tracker.end_run(child)
        fpr, tpr = roc_curve_points(o.scores, targets.labels)
        curves.append((o.name, fpr, tpr, o.metrics["auc"]))
    run.tracker.log_frame(run.run_id, release.scores_frame(targets, outcomes), tracking.ART_SCORES)
    fig = roc_figure(curves)
    run.tracker.log_figure(run.run_id, fig, tracking.ART_ROC)
    import matplotlib.pyplot as plt

    plt.close(fig)


def _log_mace(run: _Run, mres) -> None:
    run.tracker.log_json(run.run_id, {"per_record_attack": mres.risk_attack, "estimates": mres.estimates},
                         tracking.ART_MACE_ESTIMATES)
    if mres.per_record is not None:
        import matplotlib.pyplot as plt

        run.tracker.log_frame(run.run_id, mres.per_record, tracking.ART_MACE)
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.hist(mres.per_record["risk"], bins=40, color="#4a7ab0")
        ax.set_xlabel(f"individual risk |f_p| ({mres.risk_attack})")
        ax.set_ylabel("targets")
        ax.set_title("MACE per-record membership risk")
        fig.tight_layout()
        run.tracker.log_figure(run.run_id, fig, tracking.ART_MACE_PLOT)
        plt.close(fig)


def _failure(run: _Run | None, exc: BaseException) -> Verdict:
    """Turn any exception into a BLOCK. Our own errors carry safe messages; for anything else only
    the type and stage are reported, since foreign messages may quote data values."""
    stage = run.current_stage if run else "start"
    if isinstance(exc, PrivacyGateError):
        msg = f"{stage}: {exc}"
    else:
        msg = f"{stage}: unexpected {type(exc).__name__} (set PRIVACY_GATE_DEBUG=1 for the traceback)"
        if os.environ.get("PRIVACY_GATE_DEBUG"):
            traceback.print_exc()
    status = "invalid_input" if isinstance(exc, ValidationFailed) or stage in ("load", "validate_input") else "error"
    return Verdict.error(msg, status=status, data_hashes=dict(run.hashes) if run else {})


def _finish(run: _Run, verdict: Verdict, *, publish: bool = True) -> dict[str, Any]:
    """Publish on APPROVE (unless ``publish`` is False: a review re-run publishes with the approval
    record instead), then log the verdict, tags, summary and the Prefect markdown artifact."""
    logger = get_run_logger()
    verdict = verdict.with_run_id(run.run_id)
    published = None
    if verdict.decision == "APPROVE" and publish:
        try:
            if run.quarantined is None:
                raise PrivacyGateError("no quarantined release to publish")
            published = run.store.publish(run.quarantined, dataset=run.dataset, verdict=verdict.decision,
                                          run_id=run.run_id, config_hash=run.config_hash)
            logger.info("published %s", published)
        except Exception as exc:  # noqa: BLE001 - fail closed
            verdict = _failure(run, exc).with_run_id(run.run_id)
    if published is None and run.quarantined is not None:
        logger.info("release stays in quarantine: %s", run.quarantined.path)
    run.tracker.log_metrics(run.run_id, {**verdict.metrics,
                                         **{tracking.timing_metric(k): v for k, v in run.timings.items()}})
    run.tracker.log_json(run.run_id, run.timings, tracking.ART_TIMINGS)
    run.tracker.log_verdict(run.run_id, verdict.to_dict())
    markdown = verdict_markdown(verdict, ui_hint=tracking.ui_command(run.tracker.uri), tracking_uri=run.tracker.uri,
                                experiment_id=run.tracker.experiment_id)
    run.tracker.log_text(run.run_id, markdown, tracking.ART_SUMMARY)
    try:  # derived data: a report failure is a warning, never a change of the recorded verdict
        from privacy_gate.report.html import log_report

        log_report(run.tracker, run.run_id)
    except Exception as exc:  # noqa: BLE001
        logger.warning("could not render the HTML report %s (%s); the verdict stands", tracking.ART_REPORT,
                       type(exc).__name__)
    create_markdown_artifact(markdown, key="privacy-gate-verdict", description=f"verdict of MLflow run {run.run_id}")
    run.tracker.end_run(run.run_id, failed=verdict.status != "ok")
    return {"verdict": verdict.to_dict(), "published": str(published) if published else None,
            "quarantined": str(run.quarantined.path) if run.quarantined else None,
            "tracking_uri": run.tracker.uri, "timings": run.timings}


# ---------------------------------------------------------------------------------------- flows


@flow(name="release", task_runner=ThreadPoolTaskRunner(max_workers=4))
def release_flow(config_path: str, workdir: str = ".privacy-gate") -> dict[str, Any]:
    """Train the configured generator on the train split, gate its sample, publish if approved."""
    from privacy_gate.config import load_release_config

    config = load_release_config(config_path)
    spec = config.dataset.spec
    wd = Path(workdir)
    tracker = tracking.Tracker.for_workdir(workdir=wd, dataset=spec.name, uri=config.tracking.uri,
                                           experiment=config.tracking.experiment)
    run = _Run(tracker=tracker, run_id=tracker.start_run(name=f"release-{spec.name}", kind="release",
                                                         tags={tracking.TAG_DATASET: spec.name}),
               store=ReleaseStore(workdir=wd, target=config.publish.target), dataset=spec.name,
               config_hash=config.config_hash(), publish_fmt=config.publish.format)
    try:
        tracker.log_params(run.run_id, {
            "generator": config.generator.name, **{f"generator.{k}": v for k, v in config.generator.params.items()},
            "generator.seed": config.generator.seed, "split.seed": config.split.seed,
            "split.fractions": f"{config.split.train}/{config.split.holdout}/{config.split.reference}",
            "targets.seed": config.targets.seed, "attacks": ",".join(a.name for a in config.attacks),
            "rules_hash": config.gate.rules_hash(), "config_hash": run.config_hash})
        tracker.log_json(run.run_id, config.model_dump(mode="json"), tracking.ART_CONFIG)
        with run.stage("load", f"loading {config.dataset.path.name}"):
            real, public_reference = load_input(config)
        with run.stage("validate_input", "validating input data (Great Expectations)"):
            report = validate_input(real, spec)
            _log_validation(run, report)
            report.raise_if_failed(f"input data {config.dataset.path.name}")
        with run.stage("split", "splitting train / holdout / reference by entity"):
            splits = split_data(config, real, public_reference)
            tracker.log_params(run.run_id, {f"n_{k}": v for k, v in splits.sizes().items()})
        with run.stage("fit", f"fitting generator '{config.generator.name}' on {len(splits.train)} rows"):
            generator = fit_generator(config, splits.train, splits.reference)
        n = config.generator.n_samples or len(splits.train)
        with run.stage("sample", f"sampling {n} synthetic rows"):
            synthetic = sample_synthetic(generator, n, spec)
            _quarantine(run, synthetic)
        focal = getattr(generator, "focal_points_", None)
        verdict = _judge(run, spec=spec, splits=splits, synthetic=synthetic, gate=config.gate,
                         attacks=with_oracle(config.attacks, generator), targets_cfg=config.targets,
                         audit_cfg=config.audit, generator=config.generator.name,
                         generator_params={**config.generator.params, "seed": config.generator.seed},
                         focal_points=tuple(focal) if focal else None, mace_cfg=config.mace,
                         privacy=getattr(generator, "privacy", None))
    except Exception as exc:  # noqa: BLE001 - fail closed
        verdict = _failure(run, exc)
    result = _finish(run, verdict)
    if verdict.decision == "REVIEW" and config.review.mode == "pause":
        result.update(_pause_for_review(run, verdict, config, workdir))
    return result


def _pause_for_review(run: _Run, verdict: Verdict, config: ReleaseConfig, workdir: str) -> dict[str, Any]:
    """Pause the flow until a reviewer answers with a typed ``ReviewInput`` (or the timeout passes:
    then the run stays pending and can still be decided with ``privacy-gate approve``)."""
    from prefect.exceptions import FlowPauseTimeout
    from prefect.flow_runs import pause_flow_run

    from flows.review import ReviewInput, decide_run

    logger = get_run_logger()
    logger.warning("REVIEW: waiting up to %d s for a reviewer (flagged: %s)", config.review.timeout_seconds,
                   ", ".join(verdict.flagged_subgroups) or "none")
    try:
        answer = pause_flow_run(wait_for_input=ReviewInput, timeout=config.review.timeout_seconds,
                                poll_interval=min(10, config.review.poll_seconds))
    except FlowPauseTimeout:
        logger.warning("no review within %d s; run %s stays pending", config.review.timeout_seconds, run.run_id)
        return {"review": "timeout"}
    try:
        decision = decide_run(run.run_id, action=answer.decision, reviewer=answer.reviewer, comment=answer.comment,
                              subgroups=dict(answer.subgroups), via="flow", tracking_uri=run.tracker.uri,
                              workdir=workdir)
    except PrivacyGateError as exc:
        logger.error("review decision refused: %s", exc)
        return {"review": "refused", "review_error": str(exc)}
    logger.info("review: %sd by %s; published: %s", decision.action, decision.reviewer, decision.published)
    return {"review": decision.action, "decision": decision.to_dict(), "published": decision.published}


@flow(name="gate", task_runner=ThreadPoolTaskRunner(max_workers=4))
def gate_flow(*, train: str, holdout: str, reference: str, synthetic: str, spec_path: str,
              rules_path: str | None = None, workdir: str = ".privacy-gate", publish_to: str | None = None,
              targets_seed: int = 0) -> dict[str, Any]:
    """Gate-only: judge synthetic data produced elsewhere from ``train``."""
    from privacy_gate.config import GateConfig, load_rules, load_spec

    spec = load_spec(spec_path)
    gate = load_rules(rules_path) if rules_path else GateConfig()
    wd = Path(workdir)
    tracker = tracking.Tracker.for_workdir(workdir=wd, dataset=spec.name)
    run = _Run(tracker=tracker, run_id=tracker.start_run(name=f"gate-{spec.name}", kind="gate_only",
                                                         tags={tracking.TAG_DATASET: spec.name}),
               store=ReleaseStore(workdir=wd, target=Path(publish_to) if publish_to else None), dataset=spec.name,
               config_hash=None)
    try:
        tracker.log_params(run.run_id, {"mode": "gate_only", "rules_hash": gate.rules_hash(),
                                        "synthetic_file": Path(synthetic).name})
        tracker.log_json(run.run_id, {"mode": "gate_only", "spec": spec.model_dump(mode="json"),
                                      "gate": gate.model_dump(mode="json"), "targets_seed": targets_seed,
                                      "inputs": {"train": str(Path(train).resolve()),
                                                 "holdout": str(Path(holdout).resolve()),
                                                 "reference": str(Path(reference).resolve())}},
                         tracking.ART_CONFIG)
        with run.stage("load", "loading train / holdout / reference"):
            paths = {"train": Path(train), "holdout": Path(holdout), "reference": Path(reference)}
            parts = {k: conform(read_table(p), spec, source=str(p)) for k, p in paths.items()}
        with run.stage("validate_input", "validating input data (Great Expectations)"):
            for k, df in parts.items():
                report = validate_input(df, spec)
                _log_validation(run, report)
                report.raise_if_failed(f"{k} data {paths[k].name}")
        splits = release.splits_from_files(parts)
        tracker.log_params(run.run_id, {f"n_{k}": v for k, v in splits.sizes().items()})
        with run.stage("load_synthetic", f"loading synthetic data {Path(synthetic).name}"):
            synth = conform(read_table(synthetic), spec, source=str(synthetic))
            _quarantine(run, synth)
        verdict = _judge(run, spec=spec, splits=splits, synthetic=synth, gate=gate,
                         attacks=list(ReleaseConfig.model_fields["attacks"].default_factory()),
                         targets_cfg=TargetsConfig(seed=targets_seed), audit_cfg=AuditConfig(), generator=None,
                         generator_params={})
    except Exception as exc:  # noqa: BLE001 - fail closed
        verdict = _failure(run, exc)
    return _finish(run, verdict)
