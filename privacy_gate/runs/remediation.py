"""The remediation ladder: when the gate BLOCKs the configured generator, try safer settings and
release the one the config's ``remediate.choose`` picks among those that pass.

Each attempt is a whole release run (its own MLflow run, nested under the ladder's parent run,
its own quarantined release); none publishes by itself. The parent records every attempt, the
choice and why, and the privacy budget; only the chosen release leaves quarantine, with the
ladder in its manifest. A REVIEW stops the ladder: that attempt waits for a reviewer like any
REVIEW run (``privacy-gate approve`` publishes it).

Honest accounting:

- **DP generators.** Attempts on the same data compose, so the budget spent is the *sum* of the
  epsilons of every attempt started, not the chosen one's. It is stated on the parent run, in its
  verdict metrics (``ladder.total_epsilon``) and in the manifest. A ladder whose planned total
  exceeds ``remediate.max_total_epsilon`` is refused before anything runs.
- **Non-DP generators.** Choosing among attempts by a privacy test is itself adaptive: the
  chosen attempt passed a test that others failed on the same targets, so its gate figures are
  optimistic. We say so on the parent run and in the manifest. We do not re-measure the chosen
  attempt on fresh targets (all holdout records are targets by default, so there are none to
  spare).

A **filter rung** (``{filter: copies}``) runs no generator: it takes the release of the attempt
just before it (the configured generator's, or a generator rung's; the config refuses a filter
rung after a filter rung), removes the rows that copy training records — the rows
``privacy-gate approve RUN --suppress copies`` removes (:func:`privacy_gate.experiment.agreement
.copy_rows`), read back and re-gated by the same machinery (:class:`privacy_gate.runs.regate
.SuppressedRelease`) — and gates what is left as an attempt of its own (its own nested run, its
own quarantined release). It spends no epsilon: it post-processes a release already made (a DP
release stays exactly as private). The ledger records how many rows it removed, a count only.
What it does not change: choosing it is adaptive like any other rung (``ADAPTIVE_CAVEAT``), and
more so — which rows it removes was calibrated on the holdout records, the gate's non-member
targets, so the re-gate's figures are optimistic for exactly the records it protected.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from privacy_gate import names, tracking
from privacy_gate.config import GeneratorConfig, ReleaseConfig
from privacy_gate.errors import ConfigError, PrivacyGateError, safe_reason
from privacy_gate.gate import Verdict
from privacy_gate.generators import create_generator
from privacy_gate.pipeline.executor import Executor, LocalExecutor
from privacy_gate.pipeline.result import RunOutcome
from privacy_gate.pipeline.stages import StageClock
from privacy_gate.publication.publish import ReleaseStore, quarantined_file
from privacy_gate.runs.mlflow_sink import MlflowSink, record_publishing
from privacy_gate.runs.regate import SuppressedRelease
from privacy_gate.runs.release import RunContext, finish, release_run
from privacy_gate.runs.run_record import RunRecord

ADAPTIVE_CAVEAT = (
    "the release was chosen among several attempts by a privacy test on the same targets: its gate "
    "figures are optimistic (adaptive selection); they were not re-measured on fresh targets"
)


@dataclass(frozen=True)
class FilterRung:
    """A rung that runs no generator: the previous attempt's release without the rows ``filter``
    removes (one of ``config.LADDER_FILTERS``, the same label as ``approve --suppress``)."""

    filter: str


#: One attempt of a ladder: generator settings, or a filter of the attempt before it.
Rung = GeneratorConfig | FilterRung


def ladder_rungs(config: ReleaseConfig) -> list[Rung]:
    """The configured generator, then each rung: a filter rung as a :class:`FilterRung` (checked
    when the config loaded), a generator rung as its settings (a rung without ``name`` changes only
    the given parameters of the configured generator)."""
    base = config.generator.model_dump()
    out: list[Rung] = [config.generator]
    for k, rung in enumerate(config.remediate.ladder if config.remediate else [], start=1):
        if "filter" in rung:
            out.append(FilterRung(filter=rung["filter"]))
            continue
        merged = {**base, **rung} if rung.get("name", base["name"]) == base["name"] else dict(rung)
        try:
            out.append(GeneratorConfig.model_validate(merged))
        except Exception as exc:  # noqa: BLE001 - a pydantic error: name the rung
            raise ConfigError(f"remediate.ladder[{k - 1}]: {exc}") from None
    return out


def ladder_generators(config: ReleaseConfig) -> list[GeneratorConfig]:
    """The generator attempts of the ladder: the configured generator, then each generator rung
    (filter rungs left out)."""
    return [r for r in ladder_rungs(config) if isinstance(r, GeneratorConfig)]


def planned_epsilons(rungs: list[Rung]) -> list[float | None]:
    """The epsilon each attempt would spend (None for non-DP generators and for filter rungs, which
    spend nothing); also checks every generator rung's name and parameters (a ConfigError names
    them)."""
    out: list[float | None] = []
    for k, g in enumerate(rungs):
        if isinstance(g, FilterRung):
            out.append(None)
            continue
        params = {
            a: v
            for a, v in g.model_dump().items()
            if a not in ("name", "n_samples") and v is not None
        }
        try:
            privacy = create_generator(g.name, **params).privacy
        except ConfigError as exc:
            raise ConfigError(
                f"{'generator' if k == 0 else f'remediate.ladder[{k - 1}]'}: {exc}"
            ) from None
        out.append(None if privacy is None else float(privacy["epsilon"]))
    return out


def check_ladder(config: ReleaseConfig) -> list[float | None]:
    """Refuse a ladder whose DP attempts could spend more than ``max_total_epsilon`` in total."""
    epsilons = planned_epsilons(ladder_rungs(config))
    cap = config.remediate.max_total_epsilon if config.remediate else None
    total = sum(e for e in epsilons if e is not None)
    if cap is not None and total > cap:
        raise ConfigError(
            f"remediate: the ladder could spend epsilon {total:g} in total (attempts on the same "
            "data "
            f"compose: {' + '.join(f'{e:g}' for e in epsilons if e is not None)}), over "
            f"remediate.max_total_epsilon {cap:g}; shorten the ladder or lower its epsilons"
        )
    return epsilons


def _attempt_record(
    k: int, what: dict[str, Any], epsilon: float | None, result: RunOutcome
) -> dict[str, Any]:
    """One attempt in the ledger. ``what`` the attempt was: ``{"generator": settings}``, or for a
    filter rung the filter, the rung it filtered and the row counts (counts only: no row's
    values)."""
    verdict = result.verdict.to_dict()  # the ledger is JSON: non-finite figures are None there
    return {
        "rung": k,
        **what,
        "epsilon": epsilon,
        "run_id": result.run_id,
        "verdict": verdict["verdict"],
        "status": verdict["status"],
        "utility_quality": verdict["metrics"].get(names.UTILITY_QUALITY),
        "reasons": [c["message"] for c in verdict["reasons"]],
    }


def _label(attempt: dict[str, Any]) -> str:
    """An attempt as the parent run's description names it."""
    if "filter" in attempt:
        removed = attempt.get("rows_removed")
        counts = (
            f", {removed} of {attempt['rows_before']} rows removed" if removed is not None else ""
        )
        return f"filter {attempt['filter']} of rung {attempt['filtered_rung']}{counts}"
    return attempt["generator"]["name"]


def _choose(attempts: list[dict[str, Any]], how: str) -> tuple[int | None, str]:
    """The attempt to release (an index) and why; None when every attempt BLOCKed."""
    last = attempts[-1]
    if last["verdict"] == "REVIEW":
        return len(
            attempts
        ) - 1, f"rung {last['rung']} needs review: the ladder stops and waits for a reviewer"
    passing = [i for i, a in enumerate(attempts) if a["verdict"] == "APPROVE"]
    if not passing:
        return None, f"every attempt ({len(attempts)}) was blocked"
    if how == "first" or attempts[0]["verdict"] == "APPROVE":
        i = passing[0]
        return i, (
            "the configured generator passed"
            if i == 0
            else f"rung {attempts[i]['rung']} is the first that passed"
        )
    best = max(passing, key=lambda i: attempts[i]["utility_quality"] or 0.0)
    others = ", ".join(
        f"rung {attempts[i]['rung']}: {attempts[i]['utility_quality']:.3f}" for i in passing
    )
    return best, (
        f"rung {attempts[best]['rung']} has the highest utility.quality among those that passed "
        f"({others})"
    )


def _stop_after(result: RunOutcome, k: int, how: str) -> bool:
    decision = result.verdict.decision
    return decision == "REVIEW" or (decision == "APPROVE" and (k == 0 or how == "first"))


def remediated_release_run(
    config: ReleaseConfig,
    *,
    workdir: str | Path,
    executor: Executor | None = None,
    logger: Any = None,
    tags: dict[str, str] | None = None,
) -> RunOutcome:
    """``release_run``, with the config's remediation ladder when it has one."""
    if config.remediate is None:
        return release_run(config, workdir=workdir, executor=executor, logger=logger, tags=tags)
    rungs, epsilons = ladder_rungs(config), check_ladder(config)
    spec, how = config.dataset.spec, config.remediate.choose
    tracker = tracking.Tracker.for_workdir(
        workdir=Path(workdir),
        dataset=spec.name,
        uri=config.tracking.uri,
        experiment=config.tracking.experiment,
    )
    parent = MlflowSink.start(
        tracker, name=f"ladder-{spec.name}", kind="ladder", dataset=spec.name, tags=tags
    )
    attempts: list[dict[str, Any]] = []
    results: list[RunOutcome] = []
    for k, (rung, eps) in enumerate(zip(rungs, epsilons)):
        attempt_tags = {
            **(tags or {}),
            "mlflow.parentRunId": parent.run_id,
            names.TAG_LADDER: parent.run_id,
            names.TAG_LADDER_RUNG: str(k),
        }
        if isinstance(rung, FilterRung):
            source = attempts[-1][
                "rung"
            ]  # the config puts a generator attempt before every filter rung
            if logger:
                logger.info(
                    "remediation attempt %d of %d: filter %s of rung %d's release",
                    k + 1,
                    len(rungs),
                    rung.filter,
                    source,
                )
            result, counts = filter_attempt(
                config,
                rung=rung,
                previous=results[-1],
                tracker=parent.tracker,
                workdir=workdir,
                executor=executor,
                logger=logger,
                tags=attempt_tags,
            )
            what: dict[str, Any] = {"filter": rung.filter, "filtered_rung": source, **counts}
        else:
            what = {"generator": rung.model_dump(exclude_none=True)}
            if logger:
                logger.info(
                    "remediation attempt %d of %d: generator %s",
                    k + 1,
                    len(rungs),
                    ", ".join(f"{a}={b}" for a, b in what["generator"].items()),
                )
            result = release_run(
                config.model_copy(update={"generator": rung, "remediate": None}),
                workdir=workdir,
                executor=executor,
                logger=logger,
                tags=attempt_tags,
                publish=False,
            )
        results.append(result)
        attempts.append(_attempt_record(k, what, eps, result))
        if _stop_after(result, k, how):
            break
    chosen, why = _choose(attempts, how)
    spent = [a["epsilon"] for a in attempts if a["epsilon"] is not None]
    ledger = {
        "choose": how,
        "attempts": attempts,
        "chosen_rung": None if chosen is None else attempts[chosen]["rung"],
        "why": why,
        "total_epsilon": sum(spent) if spent else None,
        "max_total_epsilon": config.remediate.max_total_epsilon,
        "caveat": ADAPTIVE_CAVEAT if len(attempts) > 1 else None,
    }
    final = results[chosen] if chosen is not None else results[-1]
    if chosen is not None and attempts[chosen]["verdict"] == "APPROVE":
        try:
            published = _publish_chosen(config, final, ledger, workdir, logger=logger)
            final = replace(final, published=str(published))
        except Exception as exc:  # noqa: BLE001 - fail closed: publication is atomic, nothing is visible
            reason = safe_reason(exc, where=workdir) or type(exc).__name__
            ledger["why"] += f"; publishing it failed ({reason}), nothing was published"
            final = replace(
                final, verdict=Verdict.error(f"publish: {reason}").with_run_id(final.run_id)
            )
            chosen = None
    parent.record_json(ledger, names.ART_LADDER)
    record = _parent_verdict(final.verdict, ledger, chosen)
    parent.tracker.log_metrics(
        parent.run_id, {k: v for k, v in record["metrics"].items() if k.startswith("ladder.")}
    )
    parent.tracker.log_verdict(parent.run_id, record)
    lines = "\n".join(
        f"- rung {a['rung']} ({_label(a)}): **{a['verdict']}**, run `{a['run_id']}`"
        for a in ledger["attempts"]
    )
    parent.record_description(
        Verdict.from_dict(record), f"## Remediation ladder\n\n{ledger['why']}.\n\n{lines}\n"
    )
    parent.end(failed=chosen is None)
    if logger:
        logger.info("remediation ladder: %s", why)
    return replace(final, ladder=ledger, ladder_run_id=parent.run_id)


def filter_attempt(
    config: ReleaseConfig,
    *,
    rung: FilterRung,
    previous: RunOutcome,
    tracker: tracking.Tracker,
    workdir: str | Path,
    executor: Executor | None = None,
    logger: Any = None,
    tags: dict[str, str] | None = None,
) -> tuple[RunOutcome, dict[str, int]]:
    """A filter rung's attempt: ``previous``'s sealed release read back, the rows ``rung.filter``
    removes taken out (:class:`~privacy_gate.runs.regate.SuppressedRelease`, as ``approve
    --suppress``), and the rest gated with the settings ``previous`` recorded, in a run of its own
    (kind ``ladder_filter``, tagged ``gate.rerun_of``) that publishes nothing by itself.

    Fails closed: a previous attempt without a release, or one that cannot be read back unchanged,
    ends this attempt BLOCK with the reason. Returns the outcome and the row counts
    (``rows_removed``, ``rows_before``; empty when nothing was filtered)."""
    spec = config.dataset.spec
    sink = MlflowSink.start(
        tracker,
        name=f"ladder-filter-{spec.name}",
        kind=names.KIND_LADDER_FILTER,
        dataset=spec.name,
        tags={**(tags or {}), names.TAG_RERUN_OF: str(previous.run_id)},
    )
    ctx = RunContext(
        sink=sink,
        store=ReleaseStore(workdir=Path(workdir), target=config.publish.target),
        dataset=spec.name,
        clock=StageClock(logger) if logger else StageClock(),
        executor=executor or LocalExecutor(),
        config_hash=config.config_hash(),
    )
    counts: dict[str, int] = {}
    try:
        with ctx.clock.stage(
            "filter", f"removing the '{rung.filter}' rows from the release of run {previous.run_id}"
        ):
            if previous.quarantined is None or previous.run_id is None:
                raise PrivacyGateError(
                    f"filter {rung.filter}: the attempt before it made no release to filter "
                    f"({previous.verdict.decision}, status {previous.verdict.status})"
                )
            release = SuppressedRelease.read(
                RunRecord(tracker, previous.run_id),
                suppress=[rung.filter],
                workdir=workdir,
                logger=ctx.clock.logger,
            )
        counts = {"rows_removed": release.removed, "rows_before": release.rows_before}
        verdict = release.regate(ctx)
    except Exception as exc:  # noqa: BLE001 - fail closed
        verdict = ctx.fail(exc)
    return finish(ctx, verdict, publish=False), counts


def _parent_verdict(
    chosen_verdict: Verdict, ledger: dict[str, Any], chosen: int | None
) -> dict[str, Any]:
    """The ladder's own verdict: the chosen attempt's decision (BLOCK when none passed), with the
    ladder's figures and a note naming the attempts."""
    base = (
        chosen_verdict
        if chosen is not None
        else Verdict.error(f"remediation ladder: {ledger['why']}")
    )
    d = base.to_dict()
    d["run_id"] = None
    d["metrics"] = {
        **d["metrics"],
        "ladder.attempts": float(len(ledger["attempts"])),
        **(
            {"ladder.total_epsilon": ledger["total_epsilon"]}
            if ledger["total_epsilon"] is not None
            else {}
        ),
        **(
            {"ladder.chosen_rung": float(ledger["chosen_rung"])}
            if ledger["chosen_rung"] is not None
            else {}
        ),
    }
    return d


def _publish_chosen(
    config: ReleaseConfig,
    result: RunOutcome,
    ledger: dict[str, Any],
    workdir: str | Path,
    *,
    logger: Any = None,
) -> Any:
    """Only the chosen release leaves quarantine; the manifest carries the ladder and its budget.
    Where it is going is recorded on the chosen run and read back first (a store that cannot take
    the write, a full disk, publishes nothing); once it is out, a publication tag that cannot be
    written is a warning, as doctor reads the publication from that target."""
    verdict = result.verdict
    quarantined = Path(result.quarantined)
    release = quarantined_file(quarantined, verdict.data_hashes["synthetic_file_sha256"])
    store = ReleaseStore(workdir=Path(workdir), target=config.publish.target)
    tracker = tracking.Tracker(uri=result.tracking_uri, experiment=None)
    record_publishing(tracker, result.run_id, store.release_dir(release, config.dataset.spec.name))
    published = store.publish(
        release,
        dataset=config.dataset.spec.name,
        verdict=verdict.decision,
        run_id=result.run_id,
        config_hash=config.config_hash(),
        extra={
            "remediation": {
                k: ledger[k]
                for k in ("chosen_rung", "why", "total_epsilon", "max_total_epsilon", "caveat")
            },
            "attempts": [
                {
                    k: a[k]
                    for k in (
                        "rung",
                        "run_id",
                        "verdict",
                        "epsilon",
                        "filter",
                        "filtered_rung",
                        "rows_removed",
                    )
                    if k in a
                }
                for a in ledger["attempts"]
            ],
        },
    )
    try:
        tracker.set_tags(result.run_id, {names.TAG_PUBLISHED: str(published)})
    except Exception as exc:  # noqa: BLE001 - published: the record follows from gate.publishing
        if logger:
            logger.warning(
                "the release IS published (%s), but the run could not be tagged with it (%s): run "
                "privacy-gate doctor --fix --workdir %s to record it",
                published,
                safe_reason(exc, where=workdir) or type(exc).__name__,
                workdir,
            )
    return published


__all__ = [
    "ADAPTIVE_CAVEAT",
    "FilterRung",
    "Rung",
    "check_ladder",
    "filter_attempt",
    "ladder_generators",
    "ladder_rungs",
    "planned_epsilons",
    "remediated_release_run",
]
