"""``privacy-gate run`` (train, sample, attack, decide, publish) and ``privacy-gate gate`` (judge a
release made elsewhere). Both end with the verdict, where the release went, and the exact next
commands; the exit code is the verdict's."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from privacy_gate.cli.checks import (
    check_components,
    check_dataset_inputs,
    check_inputs,
    load_release,
    preflight,
    require_files,
)
from privacy_gate.cli.common import (
    VERDICT_EXIT_CODES,
    JsonOpt,
    OrchestratorOpt,
    WorkdirOpt,
    app,
    cli_logger,
    probe_tracking,
    quiet_env,
    reconcile,
    say,
    show,
    usage_error,
    use_prefect,
)

if TYPE_CHECKING:  # heavy: imported when a command runs
    from privacy_gate.pipeline.result import RunOutcome


def report_file(result: RunOutcome) -> str | None:
    """The run's HTML report as a local file, when its store keeps artifacts on this machine. Only
    a pointer for the person reading: a store that does not answer now costs the line, never the
    verdict or its exit code."""
    if result.verdict.decision == "APPROVE" or not result.tracking_uri or not result.run_id:
        return None
    try:
        from privacy_gate.names import ART_REPORT
        from privacy_gate.tracking import Tracker

        found = Tracker(uri=result.tracking_uri, experiment=None).artifact_file(
            result.run_id, ART_REPORT
        )
    except Exception:  # noqa: BLE001 - the line falls back to naming the artifact
        return None
    return str(found) if found else None


def report_outcome(
    result: RunOutcome | None, *, as_json: bool, workdir: Path, error: str | None = None
) -> None:
    """The verdict, where the release went and what to do next (the complete commands, pointed at
    ``workdir``); exit with the verdict's code."""
    from privacy_gate.gate.verdict import Verdict
    from privacy_gate.report.summary import run_outcome_console, verdict_console

    verdict = result.verdict if result else Verdict.error(error or "gate failed")
    out = sys.stderr if as_json else sys.stdout
    show("\n" + verdict_console(verdict), file=out)
    if result:
        show(
            run_outcome_console(result, workdir=str(workdir), report_file=report_file(result)),
            file=out,
        )
    if as_json:
        sys.stdout.flush()
        show(json.dumps(verdict.summary(), default=str))
    raise typer.Exit(verdict.exit_code)


def run_flow(start: Callable[[], RunOutcome], *, as_json: bool, workdir: Path) -> None:
    """Run a flow (``start()``); anything that escapes it still ends as a BLOCK (exit 4), never an
    approval. ``workdir``: the run's, named in the next steps printed after the verdict."""
    try:
        result = start()
    except Exception as exc:  # noqa: BLE001 - fail closed
        from privacy_gate.errors import safe_reason

        reason = safe_reason(exc, where=workdir) or f"unexpected {type(exc).__name__}"
        report_outcome(
            None, as_json=as_json, workdir=workdir, error=f"gate did not complete: {reason}"
        )
    report_outcome(result, as_json=as_json, workdir=workdir)


@app.command(
    epilog=VERDICT_EXIT_CODES, short_help="Train, sample, attack, decide and publish a release."
)
def run(
    config: Annotated[
        Path,
        typer.Argument(metavar="CONFIG", help="Release config YAML (see examples/adult.yaml)."),
    ],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    as_json: JsonOpt = False,
    orchestrator: OrchestratorOpt = "auto",
) -> None:
    """Run the full release pipeline: train, sample, attack, decide, publish."""
    quiet_env()
    from privacy_gate.errors import ConfigError

    def check(cfg: Any) -> None:
        check_components(cfg.generator.name, cfg.generator.params, cfg.attacks)
        if cfg.remediate is not None:
            from privacy_gate.runs.remediation import check_ladder

            check_ladder(cfg)  # every rung's settings, and the ladder's total DP budget

    cfg = load_release(config, check)
    if cfg.schedule is not None:  # named, never dropped silently
        say(
            f"note: {config}: its schedule section is read by serve and deploy; a run started by "
            "hand runs now",
            err=True,
        )
    from privacy_gate.publication.objectstore import is_s3

    require_files(
        **{
            k: v
            for k, v in (
                ("dataset.path", cfg.dataset.path),
                ("dataset.reference_path", cfg.dataset.reference_path),
            )
            if not is_s3(v)
        }
    )
    check_dataset_inputs(cfg, config)
    preflight(
        workdir=workdir, publish_to=cfg.publish.target, publish_setting=f"{config}: publish.target"
    )
    from privacy_gate.tracking.uri import SOURCE_CONFIG, tracking_source

    tracking_uri, source = tracking_source(cfg.tracking.uri, workdir)
    probe_tracking(tracking_uri, f"{SOURCE_CONFIG} {config}" if source == SOURCE_CONFIG else source)
    reconcile(tracking_uri, cfg.dataset.spec.name, cfg.tracking.experiment)
    if not use_prefect(
        orchestrator, needs_prefect=cfg.review.mode == "pause" or cfg.runner.kind == "dask"
    ):
        from privacy_gate.pipeline.executor import LocalExecutor
        from privacy_gate.runs.remediation import remediated_release_run
        from privacy_gate.runs.retrying import run_with_retries

        logger = cli_logger()
        with LocalExecutor(max_workers=cfg.runner.workers) as executor:
            run_flow(
                lambda: run_with_retries(
                    retries=cfg.retries,
                    logger=logger,
                    dataset=cfg.dataset.spec.name,
                    tracking_uri=tracking_uri,
                    attempt=lambda: remediated_release_run(
                        cfg, workdir=workdir, executor=executor, logger=logger
                    ),
                ),
                as_json=as_json,
                workdir=workdir,
            )
    from privacy_gate.flows import release_flow, task_runner_for

    try:
        flow_fn = release_flow.with_options(task_runner=task_runner_for(cfg.runner))
    except ConfigError as exc:
        usage_error(f"{config}: {exc}")
    run_flow(
        lambda: flow_fn(config_path=str(config), workdir=str(workdir)),
        as_json=as_json,
        workdir=workdir,
    )


@app.command(
    epilog=VERDICT_EXIT_CODES, short_help="Judge synthetic data produced elsewhere (gate only)."
)
def gate(
    train: Annotated[
        Path, typer.Option(help="Training data the synthetic data was made from (CSV/Parquet).")
    ],
    holdout: Annotated[
        Path, typer.Option(help="Real records NOT used for training (non-member targets).")
    ],
    reference: Annotated[
        Path, typer.Option(help="Real records the attacker may know (auxiliary data).")
    ],
    synthetic: Annotated[Path, typer.Option(help="The candidate synthetic release.")],
    spec: Annotated[
        Path, typer.Option(help="Dataset spec YAML (or a release config holding one).")
    ],
    rules: Annotated[
        Path | None, typer.Option(help="Gate rules YAML (default rules if omitted).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            help="YAML with the targets / attacks / gate / audit / mace / exposure / disclosure "
            "sections of a release config. Small tables: the floors are targets.min_per_class "
            "(100) and disclosure.min_control (200). Input budgets: the inputs section "
            "(max_file_bytes, max_columns, max_field_bytes)."
        ),
    ] = None,
    # a string, not a Path: a Path collapses the '//' of s3://bucket/prefix into a local folder
    # 's3:/bucket'
    publish_to: Annotated[
        str | None,
        typer.Option(help="Publication folder or s3://bucket/prefix (default WORKDIR/published)."),
    ] = None,
    generator: Annotated[
        str | None,
        typer.Option(
            help="The registered generator that made the release (privacy-gate list generators): "
            "the gate refits it for the generator-aware test (the --config file's shadow "
            "section)."
        ),
    ] = None,
    generator_params: Annotated[
        str | None,
        typer.Option(
            help="That generator's settings as JSON, e.g. '{\"epsilon\": 1}' (with --generator)."
        ),
    ] = None,
    workdir: WorkdirOpt = Path(".privacy-gate"),
    as_json: JsonOpt = False,
    orchestrator: OrchestratorOpt = "auto",
) -> None:
    """Gate-only: judge synthetic data produced elsewhere.

    With --generator (and --generator-params) naming the recipe that made the release, the gate
    can refit it on training sets drawn from the records it holds and compare each training
    record's score with its own scores in refits that never saw it: the generator-aware test,
    which gives a table too small for the targets a verdict (docs/shadow.md).

    Small tables (under about 1,000 rows): when a stage's floor cannot be met (the --config file's
    targets: {min_per_class: 100} and disclosure: {min_control: 200}, or the non-member targets
    exposure.level needs), the gate still runs and answers REVIEW for "insufficient evidence",
    naming the setting, the count available and how many more records would meet it. Lowering a
    floor does not make a small table APPROVE: the power check (gate.budget.power, promise_auc)
    still asks for about 300 targets per class. Fewer than 30 targets per class (or 20 control
    records) are refused: a BLOCK naming the setting.
    """
    quiet_env()
    require_files(
        train=train,
        holdout=holdout,
        reference=reference,
        synthetic=synthetic,
        spec=spec,
        rules=rules,
        config=config,
    )
    from privacy_gate.config import InputLimits, load_judging, load_spec
    from privacy_gate.errors import ConfigError

    if rules and config:
        usage_error(
            "--rules and --config both set the rules; put them in the --config file's gate section"
        )
    recipe = _recipe(generator, generator_params)
    try:
        spec_model = load_spec(spec)
        # --rules and --config: one loader, one validation (a rule naming an attack that does not
        # run is refused here, naming the file and the rule, whichever option brought it)
        judging = load_judging(rules=rules, config=config)
        if judging is not None:
            judging.check_against(spec_model, str(rules or config))
            check_components(None, {}, judging.attacks)
    except ConfigError as exc:
        usage_error(str(exc))
    if config:
        from privacy_gate.config.loading import ignored_sections

        ignored = ignored_sections(config)
        if ignored:
            say(
                f"note: {config}: section(s) {', '.join(ignored)} are not read by a gate-only run "
                "(they configure privacy-gate run, or a deployment); the judging sections are",
                err=True,
            )
    if rules:
        from privacy_gate.config.loading import ignored_rules_sections

        ignored = ignored_rules_sections(rules)
        if ignored:
            say(
                f"note: {rules}: a --rules file is read for its gate section only; section(s) "
                f"{', '.join(ignored)} are not read (give the file as --config to use them)",
                err=True,
            )
    limits = judging.inputs if judging is not None else InputLimits()
    check_inputs(
        {
            "--train": train,
            "--holdout": holdout,
            "--reference": reference,
            "--synthetic": synthetic,
        },
        spec_model,
        limits,
        where=f"in the --config file {config}" if config else "in a --config file (section inputs)",
        spec_source=f"--spec {spec}",
    )
    preflight(
        workdir=workdir,
        publish_to=publish_to,
        split_files={"train": train, "holdout": holdout, "reference": reference},
        spec=spec_model,
        limits=limits,
    )
    from privacy_gate.tracking.uri import tracking_source

    reconcile(probe_tracking(*tracking_source(None, workdir)), spec_model.name, None)
    if not use_prefect(orchestrator):
        from privacy_gate.runs.release import gate_only_run

        run_flow(
            lambda: gate_only_run(
                train=str(train),
                holdout=str(holdout),
                reference=str(reference),
                synthetic=str(synthetic),
                spec=spec_model,
                judging=judging,
                workdir=workdir,
                publish_to=publish_to or None,
                logger=cli_logger(),
                generator=recipe,
            ),
            as_json=as_json,
            workdir=workdir,
        )
    from privacy_gate.flows import gate_flow

    run_flow(
        lambda: gate_flow(
            train=str(train),
            holdout=str(holdout),
            reference=str(reference),
            synthetic=str(synthetic),
            spec_path=str(spec),
            rules_path=str(rules) if rules else None,
            config_path=str(config) if config else None,
            workdir=str(workdir),
            publish_to=publish_to or None,
            generator=recipe.name if recipe else None,
            generator_params=dict(recipe.params) if recipe else None,
        ),
        as_json=as_json,
        workdir=workdir,
    )


def _recipe(generator: str | None, params: str | None):
    """``--generator`` / ``--generator-params`` as the generator knowledge of a gate-only run
    (checked now: an unknown generator or a setting it refuses is a usage error)."""
    if generator is None:
        if params is not None:
            usage_error("--generator-params needs --generator")
        return None
    try:
        values = json.loads(params) if params else {}
    except json.JSONDecodeError as exc:
        usage_error(f"--generator-params is not JSON: {exc}")
    if not isinstance(values, dict):
        usage_error("--generator-params must be a JSON object, e.g. '{\"epsilon\": 1}'")
    from privacy_gate.errors import ConfigError
    from privacy_gate.experiment.settings import GeneratorKnowledge

    try:
        check_components(generator, values, [])
    except ConfigError as exc:
        usage_error(str(exc))
    return GeneratorKnowledge(name=generator, params=values)
