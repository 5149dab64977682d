"""The Prefect flows. Fail closed: whatever goes wrong ends as a BLOCK verdict recorded in MLflow.

The ``release`` and ``gate`` flows end in their verdict's state (``verdict_states``: APPROVE
``Approved``, REVIEW ``Review pending``/``Review approved``/``Review rejected``, BLOCK ``Blocked``,
no verdict ``Failed``); their last log line is
the verdict with its reason, and the flow run is renamed to start with it (``BLOCK: The attack …``).
With ``review.mode: pause`` a deployment's release run is suspended on REVIEW and, once the
reviewer answers, run again from the top: it then decides the review instead of gating
(``review_wait``)."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.task_runners import ThreadPoolTaskRunner

from privacy_gate import names, tracking
from privacy_gate.config import (
    ReleaseConfig,
    TargetsConfig,
    load_judging,
    load_release_config,
    load_spec,
)
from privacy_gate.errors import PrivacyGateError, safe_reason
from privacy_gate.experiment.settings import GeneratorKnowledge
from privacy_gate.flows import review_wait
from privacy_gate.flows.coordination import GateSlotBusy, dataset_slot, emit_verdict_event
from privacy_gate.flows.prefect_executor import PrefectExecutor, task_runner_for
from privacy_gate.flows.verdict_states import (
    glance_name,
    skipped_state,
    verdict_flow,
    verdict_line,
    verdict_state,
)
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.report.summary import evidence_links, group_rows, rules_rows
from privacy_gate.review import prior_decision
from privacy_gate.runs.regate import regate_run
from privacy_gate.runs.release import gate_only_run
from privacy_gate.runs.remediation import remediated_release_run
from privacy_gate.runs.retrying import run_with_retries, unrecorded_block
from privacy_gate.tracking import resolve_tracking_uri


def _summarise(result: RunOutcome) -> RunOutcome:
    """The verdict as Prefect artifacts (the summary moves there, out of the flow's result): the
    summary in markdown, every rule check as a table, each flagged group's effect size as a table,
    and links to the MLflow run and its HTML report; a failure here never changes the verdict."""
    logger = get_run_logger()
    verdict, run = result.verdict, result.run_id
    try:
        create_markdown_artifact(
            result.summary_markdown,
            key="privacy-gate-verdict",
            description=f"verdict of MLflow run {run}",
        )
        create_table_artifact(
            rules_rows(verdict),
            key="privacy-gate-rules",
            description=f"{verdict.decision}: every rule check of MLflow run {run}, failing first",
        )
        if verdict.group_effects:
            create_table_artifact(
                group_rows(verdict),
                key="privacy-gate-flagged-groups",
                description=f"the flagged groups of MLflow run {run}: effect "
                "sizes with 95% intervals, share of the records "
                "named exposed",
            )
        for key, link, text in evidence_links(
            tracking_uri=result.tracking_uri, experiment_id=result.experiment_id, run_id=run
        ):
            create_link_artifact(link, link_text=text, key=f"privacy-gate-{key}", description=text)
    except Exception as exc:  # noqa: BLE001
        logger.warning(
            "could not create the Prefect verdict artifacts (%s); the verdict stands",
            type(exc).__name__,
        )
    return replace(result, summary_markdown=None)


def _announce(result: RunOutcome) -> RunOutcome:
    """The verdict event for automations; a failure to emit never changes the verdict."""
    try:
        emit_verdict_event(result)
    except Exception as exc:  # noqa: BLE001
        get_run_logger().warning(
            "could not emit the verdict event (%s); the verdict stands", type(exc).__name__
        )
    return result


def _named(state: Any) -> Any:
    """The flow run named after the start of its final state's message (``glance_name``: Prefect's
    flow run page shows a state's name, not its message, on its first screen); a failure to rename
    never changes the verdict. Outside a flow run (``.fn``) nothing is renamed."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    if not flow_run.id:
        return state
    try:
        with get_client(sync_client=True) as client:
            client.update_flow_run(
                flow_run.id, name=glance_name(state.message or state.name, flow_run.name or "")
            )
    except Exception as exc:  # noqa: BLE001
        get_run_logger().warning(
            "could not name the flow run after its verdict (%s); the verdict stands",
            type(exc).__name__,
        )
    return state


def _finish(result: RunOutcome) -> Any:
    """The run named after its verdict, its last log line (the verdict with its reason) and its
    final state."""
    state = _named(verdict_state(result))
    level = {"APPROVE": logging.INFO, "REVIEW": logging.WARNING}.get(
        result.verdict.decision, logging.ERROR
    )
    get_run_logger().log(level, "verdict: %s", verdict_line(result))
    return state


@verdict_flow(name="release", task_runner=ThreadPoolTaskRunner(max_workers=4))
def release_flow(config_path: str, workdir: str = ".privacy-gate") -> RunOutcome:
    """Train the configured generator on the train split, gate its sample, publish if approved.

    One gate per dataset at a time (a Prefect concurrency limit); a run that meets an outage of
    the tracking server or object store is attempted again (``retries``), and ends BLOCK when the
    attempts run out. The verdict is announced as a Prefect event."""
    from prefect.runtime import deployment, flow_run

    logger = get_run_logger()
    # a deployment's run suspended for its review and resumed by the reviewer runs from the top
    # again
    reviewed = review_wait.suspended_for(logger)
    try:
        config = load_release_config(config_path)
    except Exception as exc:  # noqa: BLE001 - fail closed: a config that became unreadable is a BLOCK, announced
        # (a served folder's file edited or corrupted after `serve` started: without the event, an
        # automation notifying on BLOCK would stay silent)
        if reviewed is not None:
            logger.error(
                "the review of MLflow run %s was not decided: the config cannot be loaded; it "
                "stays pending",
                reviewed,
            )
        return _finish(_unloadable_config(config_path, exc, logger=logger))
    dataset = config.dataset.spec.name
    tracking_uri = resolve_tracking_uri(config.tracking.uri, Path(workdir))
    if reviewed is not None:  # decide the review this run waited for; never gate again
        try:
            return _finish(
                review_wait.resume_review(
                    reviewed, tracking_uri=tracking_uri, workdir=workdir, regate=regate_flow
                )
            )
        except Exception as exc:  # noqa: BLE001 - fail closed: undecided, nothing published
            return review_wait.unapplied_state(
                reviewed, exc, tracking_uri=tracking_uri, dataset=dataset
            )
    finished = review_wait.finish_cancelled_resumptions(
        tracking_uri=tracking_uri, workdir=workdir, regate=regate_flow
    )
    if finished:  # this run's turn went to a review the server had cancelled when it resumed
        return _skip("; ".join(finished), tracking_uri=tracking_uri, dataset=dataset)
    origin = f"{flow_run.id}" + (f" (deployment {deployment.name})" if deployment.name else "")

    def attempt() -> RunOutcome:
        if not _on_configured_runner(config):
            on_runner = release_attempt_flow.with_options(
                task_runner=task_runner_for(config.runner)
            )
            return on_runner(
                config_path=config_path, workdir=workdir, origin=origin, release_key=key
            )
        return _attempt(config, workdir=workdir, origin=origin, logger=logger, release_key=key)

    waiting = review_wait.paused_sibling() if config.review.mode == "pause" else None
    if waiting is not None:  # one paused review per deployment: the next runs wait for its decision
        return _skip(
            f"flow run {waiting} of this deployment waits for its review; decide it first",
            tracking_uri=tracking_uri,
            dataset=dataset,
        )
    key, prior = _release_key_and_prior(
        config, workdir=workdir, scheduled=deployment.id is not None, logger=logger
    )
    if (
        prior is not None
    ):  # one decision per release: an unchanged release is not gated (or reviewed) again
        return _skip(prior.reason(), tracking_uri=tracking_uri, dataset=dataset)
    try:
        result = run_with_retries(
            attempt,
            retries=config.retries,
            logger=logger,
            dataset=dataset,
            tracking_uri=tracking_uri,
        )
    except GateSlotBusy as exc:
        return _skip(str(exc), tracking_uri=tracking_uri, dataset=dataset)
    except Exception as exc:  # noqa: BLE001 - fail closed: whatever escapes the run is a BLOCK, announced
        reason = safe_reason(exc, where=workdir) or f"unexpected {type(exc).__name__}"
        logger.error("the release run failed before its verdict (%s) — BLOCK", reason)
        result = replace(
            unrecorded_block(
                f"gate did not complete: {reason}", tracking_uri=tracking_uri, dataset=dataset
            ),
            retryable=False,
        )
    result = _summarise(_announce(result))
    if result.verdict.decision == "REVIEW" and config.review.mode == "pause":
        result = review_wait.wait_for_review(result, config, workdir, regate=regate_flow)
    return _finish(result)


def _release_key_and_prior(
    config: ReleaseConfig, *, workdir: str, scheduled: bool, logger: Any
) -> tuple[str | None, prior_decision.PriorDecision | None]:
    """The release's key (tagged on its runs) and, for a deployment's run with
    ``review.once_per_release``, the run that already decided it or awaits its review. A key or a
    search that fails is a warning: the run gates as before (the gate itself fails closed)."""
    try:
        key = prior_decision.release_key(config)
    except Exception as exc:  # noqa: BLE001 - unreadable data: the run's load step says so, as a BLOCK
        logger.warning(
            "could not compute the release key (%s); gating without it", type(exc).__name__
        )
        return None, None
    if not (scheduled and config.review.once_per_release):
        return key, None
    try:
        tracker = tracking.Tracker.for_workdir(
            workdir=Path(workdir),
            dataset=config.dataset.spec.name,
            uri=config.tracking.uri,
            experiment=config.tracking.experiment,
        )
        return key, prior_decision.prior_decision(tracker, key)
    except Exception as exc:  # noqa: BLE001
        logger.warning(
            "could not look for an earlier decision on this release (%s); gating it",
            type(exc).__name__,
        )
        return key, None


def _skip(reason: str, *, tracking_uri: str | None, dataset: str) -> Any:
    """A run that does not gate: logged, ended ``Skipped`` (no MLflow run, no verdict event)."""
    state = _named(
        skipped_state(
            replace(
                unrecorded_block(f"skipped: {reason}", tracking_uri=tracking_uri, dataset=dataset),
                retryable=False,
            ),
            reason,
        )
    )
    get_run_logger().warning("skipped: %s", reason)
    return state


def _unloadable_config(config_path: str, exc: Exception, *, logger: Any) -> RunOutcome:
    """The BLOCK of a release whose config cannot be loaded, announced like any verdict. Nothing can
    be recorded in MLflow (the config names the store); the dataset comes from the deployment's
    ``dataset:<slug>`` tag when the run has one."""
    from prefect.runtime import flow_run

    reason = (
        str(exc)
        if isinstance(exc, PrivacyGateError)
        else f"{config_path}: cannot be loaded ({type(exc).__name__})"
    )
    logger.error("release config unusable: %s — BLOCK", reason)
    tags = [t for t in (flow_run.tags or []) if isinstance(t, str) and t.startswith("dataset:")]
    dataset = tags[0].removeprefix("dataset:") if tags else None
    result = unrecorded_block(
        f"release config unusable: {reason}", tracking_uri=None, dataset=dataset
    )
    return _summarise(_announce(replace(result, retryable=False, attempts=1)))


def _on_configured_runner(config: ReleaseConfig) -> bool:
    """Whether this flow run's tasks already go where ``config.runner`` says. ``privacy-gate run``
    gives the flow the config's task runner; a served or deployed flow is loaded from its module
    with the default thread pool, which is right for ``kind: thread`` only."""
    if config.runner.kind != "dask":
        return True
    from prefect.context import FlowRunContext
    from prefect_dask import DaskTaskRunner

    context = FlowRunContext.get()
    return context is not None and isinstance(context.task_runner, DaskTaskRunner)


@flow(name="release-attempt", persist_result=False)
def release_attempt_flow(
    config_path: str, workdir: str, origin: str, release_key: str | None = None
) -> RunOutcome:
    """One attempt of a release as a subflow of ``release_flow``, started with the config's task
    runner (``runner.kind: dask``: each attack, the utility score and each shadow run is a task on
    the Dask cluster). A flow's task runner is fixed once it runs, so a served release flow on the
    default thread pool hands its attempts to this subflow. ``origin`` is the release flow run the
    MLflow run is tagged with (the run a reviewer resumes)."""
    return _attempt(
        load_release_config(config_path),
        workdir=workdir,
        origin=origin,
        logger=get_run_logger(),
        release_key=release_key,
    )


def _attempt(
    config: ReleaseConfig, *, workdir: str, origin: str, logger: Any, release_key: str | None = None
) -> RunOutcome:
    """One attempt of a release on the current flow's task runner, holding the dataset's slot;
    its MLflow runs are tagged with the release flow run ``origin`` and the ``release_key``."""
    tags = {names.TAG_FLOW_RUN: origin} | (
        {names.TAG_RELEASE_KEY: release_key} if release_key else {}
    )
    with dataset_slot(config.dataset.spec.name):
        return remediated_release_run(
            config, workdir=workdir, executor=PrefectExecutor(), logger=logger, tags=tags
        )


@verdict_flow(name="gate", task_runner=ThreadPoolTaskRunner(max_workers=4))
def gate_flow(
    *,
    train: str,
    holdout: str,
    reference: str,
    synthetic: str,
    spec_path: str,
    rules_path: str | None = None,
    config_path: str | None = None,
    workdir: str = ".privacy-gate",
    publish_to: str | None = None,
    targets_seed: int = 0,
    generator: str | None = None,
    generator_params: dict[str, Any] | None = None,
) -> RunOutcome:
    """Gate-only: judge synthetic data produced elsewhere from ``train`` (``config_path``: the
    targets / attacks / gate / audit / mace sections, as in a release config; ``generator`` and
    ``generator_params``: the registered recipe that made it, for the generator-aware test)."""
    judging = load_judging(rules=rules_path, config=config_path)  # the CLI's loader: one validation
    if (
        judging is not None and not config_path
    ):  # a --rules file: the other sections at their defaults
        judging = judging.model_copy(update={"targets": TargetsConfig(seed=targets_seed)})
    return _finish(
        _summarise(
            _announce(
                gate_only_run(
                    train=train,
                    holdout=holdout,
                    reference=reference,
                    synthetic=synthetic,
                    spec=load_spec(spec_path),
                    judging=judging,
                    workdir=workdir,
                    publish_to=publish_to,
                    targets_seed=targets_seed,
                    executor=PrefectExecutor(),
                    logger=get_run_logger(),
                    generator=None
                    if generator is None
                    else GeneratorKnowledge(name=generator, params=dict(generator_params or {})),
                )
            )
        )
    )


@flow(name="review-regate")
def regate_flow(
    *, run_id: str, suppress: list[str], tracking_uri: str, workdir: str, dry_run: bool = False
) -> RunOutcome:
    """Re-run the gate on the release of ``run_id`` without the suppressed subgroups' rows
    (``dry_run``: for ``approve --suppress --dry-run``, which decides nothing)."""
    return _summarise(
        regate_run(
            run_id=run_id,
            suppress=suppress,
            tracking_uri=tracking_uri,
            workdir=workdir,
            executor=PrefectExecutor(),
            logger=get_run_logger(),
            dry_run=dry_run,
        )
    )


@flow(name="dependency-study")
def dependency_study_flow(config_path: str, workdir: str = ".privacy-gate") -> dict[str, Any]:
    """The dependency study of a release config (README, "Dependency study"): one MLflow parent run
    with a nested run per setting, generator and epsilon."""
    from privacy_gate.studies.dependency_study import run_dependency_study

    result = run_dependency_study(
        load_release_config(config_path), workdir=workdir, logger=get_run_logger()
    )
    return {k: result[k] for k in ("run_id", "tracking_uri", "invariants", "summary")}


@flow(name="audit-dp", task_runner=ThreadPoolTaskRunner(max_workers=2))
def audit_dp_flow(
    config_path: str,
    workdir: str = ".privacy-gate",
    runs: int | None = None,
    use_cache: bool = True,
) -> dict[str, Any]:
    """The DP audit of a release config's generator (README, "DP audit"): its fits are Prefect
    tasks (``PrefectExecutor.map``); the result (bounds, never records) is the flow's return
    value."""
    from privacy_gate.studies.dp_audit_gate import run_dp_audit

    logger = get_run_logger()
    result, cached = run_dp_audit(
        load_release_config(config_path),
        workdir=workdir,
        executor=PrefectExecutor(),
        progress=logger.info,
        runs=runs,
        use_cache=use_cache,
    )
    return {**result.to_dict(), "cached": cached}
