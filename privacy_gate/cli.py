"""The ``privacy-gate`` command. Heavy packages (Prefect, MLflow, GE, SDV, torch) are imported
inside the commands so ``--help`` is instant.

One module because it is the command-line contract: every command with its options, usage errors
and exit codes, read in one place (the logic lives in the pipeline and the flows).

Exit codes: 0 APPROVE, 3 REVIEW, 4 BLOCK (including any failure inside the gate), 2 invalid usage
or config before anything ran. With ``--json`` the last line of stdout is the verdict JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:  # heavy: imported inside the commands
    from privacy_gate.pipeline.result import RunOutcome

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="privacy-gate: a release gate for synthetic tabular data.")

EXIT_USAGE = 2
EXIT_BLOCK = 4

JsonOpt = Annotated[bool, typer.Option("--json", help="Print the verdict JSON as the last line of stdout.")]
OrchestratorOpt = Annotated[str, typer.Option(
    "--orchestrator", help="prefect: run as a Prefect flow; local: the same pipeline in this process (no Prefect "
                           "server); auto (default): prefect when a Prefect API is configured (PREFECT_API_URL) "
                           "or the config needs it (review.mode pause, runner.kind dask), else local.")]
WorkdirOpt = Annotated[Path, typer.Option("--workdir", help="MLflow store, quarantine and published files.")]


def _quiet_env() -> None:
    for key, value in (("MLFLOW_DISABLE_TELEMETRY", "true"), ("DO_NOT_TRACK", "true"),
                       ("PREFECT_SERVER_ANALYTICS_ENABLED", "false"), ("GX_ANALYTICS_ENABLED", "false"),
                       ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")):
        os.environ.setdefault(key, value)


def _say(text: object, *, err: bool = False) -> None:
    """One line of output that may hold data (labels, values, names): through ``console_line``."""
    from privacy_gate.safe_text import console_line

    typer.echo(console_line(text), err=err)


def _usage_error(message: str) -> None:
    _say(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def _probe_tracking(uri: str, source: str) -> str:
    """The MLflow store every command talks to, probed first: an unreachable server is one line
    naming the URI and where it came from, exit 2, within seconds (not MLflow's minutes of retries)."""
    from privacy_gate.errors import ConfigError
    from privacy_gate.tracking import check_reachable

    try:
        check_reachable(uri, source=source)
    except ConfigError as exc:
        _usage_error(str(exc))
    return uri


def _reconcile(uri: str, dataset: str, experiment: str | None) -> None:
    """Before a run: the dataset's runs left RUNNING by a gone process are marked KILLED (doctor's
    cheap part; a warning at most, never a failure)."""
    from privacy_gate.names import experiment_name
    from privacy_gate.pipeline.doctor import reconcile_on_start

    reconcile_on_start(uri, experiment_name(dataset, experiment), _cli_logger())


def _require_files(**paths: Path | None) -> None:
    """``name=path``: options are named ``--name``, config keys (with a dot) by their key."""
    for name, path in paths.items():
        if path is not None and not Path(path).is_file():
            label = name if "." in name else f"--{name.replace('_', '-')}"
            _usage_error(f"{label}: file not found: {path}")


def _load_release(config: Path, check: Any = None) -> Any:
    """The release config at ``config``, then ``check(cfg)``; a ConfigError from either is a usage
    error (exit 2, one line naming the file)."""
    from privacy_gate.config import load_release_config
    from privacy_gate.errors import ConfigError

    try:
        cfg = load_release_config(config)
        if check is not None:
            check(cfg)
    except ConfigError as exc:
        _usage_error(str(exc) if str(exc).startswith(str(config)) else f"{config}: {exc}")
    return cfg


def _preflight(*, workdir: Path | None = None, publish_to: Any = None, publish_setting: str = "--publish-to",
               split_files: dict[str, Path] | None = None, spec: Any = None, limits: Any = None) -> None:
    """Folders the run writes and split files it compares (read within the run's input ``limits``),
    checked before it starts (exit 2, one line naming the path) rather than as a BLOCK minutes later."""
    from privacy_gate.errors import ConfigError
    from privacy_gate.label_key import LabelKey
    from privacy_gate.names import LABEL_KEY_FILE
    from privacy_gate.pipeline.preflight import check_split_files, require_writable_dir

    try:
        require_writable_dir(workdir, setting="--workdir")
        if workdir is not None and (Path(workdir) / LABEL_KEY_FILE).exists():
            # a label key others may read, or a damaged one: refused now, not as a BLOCK after the run
            LabelKey.for_workdir(workdir, create=False)
        require_writable_dir(publish_to, setting=publish_setting)
        if split_files is not None:
            check_split_files(split_files, spec, limits)
    except ConfigError as exc:
        _usage_error(str(exc))


def _check_dataset_inputs(cfg: Any, config: Path) -> None:
    """A release config's data files (dataset.path, dataset.reference_path): ``_check_inputs``."""
    _check_inputs({"dataset.path": cfg.dataset.path, "dataset.reference_path": cfg.dataset.reference_path},
                  cfg.dataset.spec, cfg.inputs, where=f"in {config}", spec_source=f"{config}: dataset.spec")


def _check_inputs(files: dict[str, Any], spec: Any, limits: Any, *, where: str, spec_source: str) -> None:
    """Data files against the spec's columns and the input budgets (size, width, longest field),
    from their headers and sizes, before anything runs: exit 2, one line naming every file with a
    problem, every missing and extra column, or the figure and the setting to change."""
    from privacy_gate.errors import ConfigError
    from privacy_gate.pipeline.preflight import check_input_files

    try:
        check_input_files(files, spec, limits, where=where, spec_source=spec_source)
    except ConfigError as exc:
        _usage_error(str(exc))


def _check_components(generator: str | None, generator_params: dict, attacks: Any) -> None:
    """Registry names and parameters, checked before anything runs (a ConfigError names them)."""
    from privacy_gate.attacks import create_attack
    from privacy_gate.generators import create_generator

    if generator is not None:
        create_generator(generator, **generator_params)
    for a in attacks:
        create_attack(a.name, **a.params)


def _report(result: RunOutcome | None, *, as_json: bool, error: str | None = None) -> None:
    from privacy_gate.gate import Verdict
    from privacy_gate.report.summary import run_outcome_console, verdict_console

    verdict = result.verdict if result else Verdict.error(error or "gate failed")
    out = sys.stderr if as_json else sys.stdout
    print("\n" + verdict_console(verdict), file=out)
    if result:
        print(run_outcome_console(result), file=out)
    if as_json:
        sys.stdout.flush()
        print(json.dumps(verdict.summary(), default=str))
    raise typer.Exit(verdict.exit_code)


def _use_prefect(orchestrator: str, *, needs_prefect: bool = False) -> bool:
    if orchestrator not in ("auto", "prefect", "local"):
        _usage_error(f"--orchestrator must be auto, prefect or local, got {orchestrator!r}")
    if orchestrator != "auto":
        if orchestrator == "local" and needs_prefect:
            _usage_error("--orchestrator local: the config needs Prefect (review.mode pause or runner.kind dask)")
        return orchestrator == "prefect"
    if needs_prefect or os.environ.get("PREFECT_API_URL"):
        return True
    from prefect.settings import PREFECT_API_URL  # a profile or a test harness may set it

    return bool(PREFECT_API_URL.value())


def _cli_logger():
    """Progress lines on stderr for in-process runs (Prefect's logger does this for flows)."""
    import logging

    from privacy_gate.safe_text import console_line

    class StderrHandler(logging.StreamHandler):  # whatever sys.stderr is now (test runners swap it)
        stream = property(lambda self: sys.stderr, lambda self, value: None)

    class OneLine(logging.Formatter):  # a progress line naming a group or a column holds data: one line
        def formatMessage(self, record: logging.LogRecord) -> str:
            record.message = console_line(record.message)
            return super().formatMessage(record)

    logger = logging.getLogger("privacy_gate")
    if not logger.handlers:
        handler = StderrHandler()
        handler.setFormatter(OneLine("%(asctime)s | %(levelname)-7s | %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def _run_flow(fn, as_json: bool, **kwargs: Any) -> None:
    """Run a flow; anything that escapes it still ends as a BLOCK (exit 4), never an approval."""
    try:
        result = fn(**kwargs)
    except Exception as exc:  # noqa: BLE001 - fail closed
        from privacy_gate.errors import safe_reason

        reason = safe_reason(exc) or f"unexpected {type(exc).__name__}"
        _report(None, as_json=as_json, error=f"gate did not complete: {reason}")
    _report(result, as_json=as_json)


@app.command()
def run(
    config: Annotated[Path, typer.Argument(help="Release config YAML (see examples/adult.yaml).")],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    as_json: JsonOpt = False,
    orchestrator: OrchestratorOpt = "auto",
) -> None:
    """Run the full release pipeline: train, sample, attack, decide, publish."""
    _quiet_env()
    from privacy_gate.errors import ConfigError

    def check(cfg: Any) -> None:
        _check_components(cfg.generator.name, cfg.generator.params, cfg.attacks)
        if cfg.remediate is not None:
            from privacy_gate.pipeline.remediation import check_ladder

            check_ladder(cfg)  # every rung's settings, and the ladder's total DP budget

    cfg = _load_release(config, check)
    from privacy_gate.objectstore import is_s3

    _require_files(**{k: v for k, v in (("dataset.path", cfg.dataset.path),
                                         ("dataset.reference_path", cfg.dataset.reference_path)) if not is_s3(v)})
    _check_dataset_inputs(cfg, config)
    _preflight(workdir=workdir, publish_to=cfg.publish.target, publish_setting=f"{config}: publish.target")
    from privacy_gate.tracking import SOURCE_CONFIG, tracking_source

    tracking_uri, source = tracking_source(cfg.tracking.uri, workdir)
    _probe_tracking(tracking_uri, f"{SOURCE_CONFIG} {config}" if source == SOURCE_CONFIG else source)
    _reconcile(tracking_uri, cfg.dataset.spec.name, cfg.tracking.experiment)
    if not _use_prefect(orchestrator, needs_prefect=cfg.review.mode == "pause" or cfg.runner.kind == "dask"):
        from privacy_gate.pipeline import LocalExecutor
        from privacy_gate.pipeline.remediation import remediated_release_run

        from privacy_gate.pipeline.retrying import run_with_retries

        logger = _cli_logger()
        with LocalExecutor(max_workers=cfg.runner.workers) as executor:
            _run_flow(run_with_retries, as_json, retries=cfg.retries, logger=logger, dataset=cfg.dataset.spec.name,
                      tracking_uri=tracking_uri,
                      attempt=lambda: remediated_release_run(cfg, workdir=workdir, executor=executor, logger=logger))
    from privacy_gate.flows import release_flow, task_runner_for

    try:
        flow_fn = release_flow.with_options(task_runner=task_runner_for(cfg.runner))
    except ConfigError as exc:
        _usage_error(f"{config}: {exc}")
    _run_flow(flow_fn, as_json, config_path=str(config), workdir=str(workdir))


@app.command()
def gate(
    train: Annotated[Path, typer.Option(help="Training data the synthetic data was made from (CSV/Parquet).")],
    holdout: Annotated[Path, typer.Option(help="Real records NOT used for training (non-member targets).")],
    reference: Annotated[Path, typer.Option(help="Real records the attacker may know (auxiliary data).")],
    synthetic: Annotated[Path, typer.Option(help="The candidate synthetic release.")],
    spec: Annotated[Path, typer.Option(help="Dataset spec YAML (or a release config holding one).")],
    rules: Annotated[Optional[Path], typer.Option(help="Gate rules YAML (default rules if omitted).")] = None,
    config: Annotated[Optional[Path], typer.Option(
        help="YAML with the targets / attacks / gate / audit / mace / exposure / disclosure sections of a release "
             "config. Small tables: the floors are targets.min_per_class (100) and disclosure.min_control (200). "
             "Input budgets: the inputs section (max_file_bytes, max_columns, max_field_bytes).")] = None,
    # a string, not a Path: a Path collapses the '//' of s3://bucket/prefix into a local folder 's3:/bucket'
    publish_to: Annotated[Optional[str], typer.Option(
        help="Publication folder or s3://bucket/prefix (default WORKDIR/published).")] = None,
    workdir: WorkdirOpt = Path(".privacy-gate"),
    as_json: JsonOpt = False,
    orchestrator: OrchestratorOpt = "auto",
) -> None:
    """Gate-only: judge synthetic data produced elsewhere.

    Small tables (under about 1,000 rows): when a stage's floor cannot be met (the --config file's
    targets: {min_per_class: 100} and disclosure: {min_control: 200}, or the non-member targets
    exposure.level needs), the gate still runs and answers REVIEW for "insufficient evidence",
    naming the setting, the count available and how many more records would meet it. Lowering a
    floor does not make a small table APPROVE: the power check (gate.budget.power, promise_auc)
    still asks for about 300 targets per class. Fewer than 30 targets per class (or 20 control
    records) are refused: a BLOCK naming the setting.
    """
    _quiet_env()
    _require_files(train=train, holdout=holdout, reference=reference, synthetic=synthetic, spec=spec, rules=rules,
                   config=config)
    from privacy_gate.config import load_judging, load_spec
    from privacy_gate.errors import ConfigError

    if rules and config:
        _usage_error("--rules and --config both set the rules; put them in the --config file's gate section")
    try:
        spec_model = load_spec(spec)
        # --rules and --config: one loader, one validation (a rule naming an attack that does not run
        # is refused here, naming the file and the rule, whichever option brought it)
        judging = load_judging(rules=rules, config=config)
        if judging is not None:
            judging.check_against(spec_model, str(rules or config))
            _check_components(None, {}, judging.attacks)
    except ConfigError as exc:
        _usage_error(str(exc))
    from privacy_gate.config import InputLimits

    limits = judging.inputs if judging is not None else InputLimits()
    _check_inputs({"--train": train, "--holdout": holdout, "--reference": reference, "--synthetic": synthetic},
                  spec_model, limits,
                  where=f"in the --config file {config}" if config else "in a --config file (section inputs)",
                  spec_source=f"--spec {spec}")
    _preflight(workdir=workdir, publish_to=publish_to,
               split_files={"train": train, "holdout": holdout, "reference": reference}, spec=spec_model,
               limits=limits)
    from privacy_gate.tracking import tracking_source

    _reconcile(_probe_tracking(*tracking_source(None, workdir)), spec_model.name, None)
    if not _use_prefect(orchestrator):
        from privacy_gate.pipeline.release import gate_only_run

        _run_flow(gate_only_run, as_json, train=str(train), holdout=str(holdout), reference=str(reference),
                  synthetic=str(synthetic), spec=spec_model, judging=judging, workdir=workdir,
                  publish_to=publish_to or None, logger=_cli_logger())
    from privacy_gate.flows import gate_flow

    _run_flow(gate_flow, as_json, train=str(train), holdout=str(holdout), reference=str(reference),
              synthetic=str(synthetic), spec_path=str(spec), rules_path=str(rules) if rules else None,
              config_path=str(config) if config else None,
              workdir=str(workdir), publish_to=publish_to or None)


TrackingOpt = Annotated[Optional[str], typer.Option("--tracking-uri",
                        help="MLflow store of the run (default: MLFLOW_TRACKING_URI, else the sqlite store "
                             "in WORKDIR).")]
ReviewerOpt = Annotated[str, typer.Option("--reviewer", help="Who decides (recorded with the decision).")]
CommentOpt = Annotated[str, typer.Option("--comment", help="Why (recorded with the decision).")]


def _store_uri(workdir: Path, uri: str | None) -> str:
    """The store of an existing run (--tracking-uri, else MLFLOW_TRACKING_URI, else the workdir's),
    probed; never created here (a typo in --workdir must not make an empty store and then report
    'no run')."""
    from privacy_gate.names import SQLITE_FILE
    from privacy_gate.tracking import SOURCE_WORKDIR, tracking_source

    uri, source = tracking_source(None, workdir, option=uri)
    if source == SOURCE_WORKDIR and not (Path(workdir) / SQLITE_FILE).is_file():
        _usage_error(f"--workdir {workdir}: no MLflow store there ({SQLITE_FILE} not found); pass the workdir "
                     "the gate ran in, or --tracking-uri")
    return _probe_tracking(uri, source)


def _decide(run_id: str, action: str, *, reviewer: str, comment: str, suppress: list[str], workdir: Path,
            tracking_uri: str | None) -> None:
    _quiet_env()
    from privacy_gate.errors import PrivacyGateError, is_infrastructure_error

    uri = _store_uri(workdir, tracking_uri)
    # the re-gate after a suppression is a Prefect flow only when a Prefect API is there to record it;
    # otherwise it runs in this process (never a temporary Prefect server that may not come up)
    regate = None
    if suppress and _use_prefect("auto"):
        from privacy_gate.flows import regate_flow as regate
    try:
        from privacy_gate.pipeline.review import decide_run

        decision = decide_run(run_id, action=action, reviewer=reviewer, comment=comment, suppress=suppress,
                              tracking_uri=uri, workdir=str(workdir), regate=regate)
    except PrivacyGateError as exc:
        _say(f"refused: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except Exception as exc:  # noqa: BLE001 - a store that stopped answering mid-decision: one line
        if not is_infrastructure_error(exc):
            raise
        typer.echo(f"error: the MLflow store {uri} stopped answering ({type(exc).__name__}); run {run_id} may be "
                   f"undecided — check it with: privacy-gate review {run_id}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    done = {"approve": "approved", "reject": "rejected"}[decision.action]
    _say(f"{done} run {run_id} as {decision.reviewer} at {decision.at}")
    if decision.suppress:
        _say(f"suppressed: {', '.join(decision.suppress)} (gate re-run {decision.rerun_id})")
    _say(f"published: {decision.published}" if decision.published else "nothing published")


@app.command()
def review(
    run_id: Annotated[Optional[str], typer.Argument(help="MLflow run id of a gate run.")] = None,
    pending: Annotated[bool, typer.Option("--pending", help="List the REVIEW runs awaiting a decision "
                                                             "(run id, dataset, when, flagged groups).")] = False,
    workdir: WorkdirOpt = Path(".privacy-gate"),
    tracking_uri: TrackingOpt = None,
) -> None:
    """Show a run's evidence, verdict, what is pending review and the decisions taken; or, with
    --pending, every run awaiting a decision."""
    _quiet_env()
    from privacy_gate.errors import PrivacyGateError

    if pending == (run_id is not None):
        _usage_error("review: give a RUN_ID, or --pending to list the runs awaiting a decision")
    try:
        from privacy_gate.pipeline.review import pending_runs_text, review_text

        uri = _store_uri(workdir, tracking_uri)
        typer.echo(pending_runs_text(tracking_uri=uri) if pending else review_text(run_id, tracking_uri=uri))
    except PrivacyGateError as exc:
        _say(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_USAGE) from None


@app.command()
def approve(
    run_id: Annotated[str, typer.Argument(help="MLflow run id of a REVIEW verdict.")],
    reviewer: ReviewerOpt,
    comment: CommentOpt = "",
    suppress: Annotated[Optional[list[str]], typer.Option(
        "--suppress", help='Publish without this subgroup\'s synthetic rows, e.g. "race=Black" (repeatable), or '
                           '"exposed": without the exposed records\' closest synthetic rows; the gate re-runs on '
                           "the filtered release first.")] = None,
    workdir: WorkdirOpt = Path(".privacy-gate"),
    tracking_uri: TrackingOpt = None,
) -> None:
    """Approve a REVIEW verdict and publish the release (optionally without some subgroups)."""
    _decide(run_id, "approve", reviewer=reviewer, comment=comment, suppress=list(suppress or []), workdir=workdir,
            tracking_uri=tracking_uri)


@app.command()
def reject(
    run_id: Annotated[str, typer.Argument(help="MLflow run id of a REVIEW verdict.")],
    reviewer: ReviewerOpt,
    comment: CommentOpt = "",
    workdir: WorkdirOpt = Path(".privacy-gate"),
    tracking_uri: TrackingOpt = None,
) -> None:
    """Reject a REVIEW verdict: nothing is published; the release stays in quarantine."""
    _decide(run_id, "reject", reviewer=reviewer, comment=comment, suppress=[], workdir=workdir,
            tracking_uri=tracking_uri)


@app.command()
def doctor(
    workdir: WorkdirOpt = Path(".privacy-gate"),
    tracking_uri: TrackingOpt = None,
    fix: Annotated[bool, typer.Option("--fix", help="Repair what can be: mark runs of gone processes KILLED, "
                                                    "resolve decisions a killed approve/reject left half done, "
                                                    "remove orphan release data and dead staging folders.")] = False,
    target: Annotated[Optional[list[str]], typer.Option(
        "--target", help="Also check this publish folder or s3://bucket/prefix (repeatable; the workdir's "
                         "published folder and every target recorded on a run are checked anyway).")] = None,
    min_age: Annotated[float, typer.Option(
        "--min-age", help="Seconds: younger orphan release data may be a publication in progress; listed, "
                          "not removed.")] = 600.0,
) -> None:
    """Reconcile what killed processes left: runs left RUNNING, decisions left half done, approvals
    never published, release data without a manifest, staging folders. Reports only (exit 0 clean, 1 found something);
    --fix repairs what it can (exit 1 if anything is left) and says what it did."""
    _quiet_env()
    from privacy_gate.names import SQLITE_FILE
    from privacy_gate.pipeline.doctor import doctor as run_doctor
    from privacy_gate.tracking import SOURCE_WORKDIR, tracking_source

    uri, source = tracking_source(None, workdir, option=tracking_uri)
    if source == SOURCE_WORKDIR and not (Path(workdir) / SQLITE_FILE).is_file():
        uri = None
    else:
        _probe_tracking(uri, source)
    report = run_doctor(workdir, tracking_uri=uri, fix=fix, targets=list(target or []), min_age=min_age)
    for line in report.lines(fix=fix):
        typer.echo(line)
    raise typer.Exit(1 if report.remaining else 0)


CronOpt = Annotated[Optional[str], typer.Option(
    "--cron", help='Cron schedule for every config, e.g. "0 2 * * *" (default: each config\'s schedule section).')]
IntervalOpt = Annotated[Optional[float], typer.Option(
    "--interval", help="Run every N seconds instead of a cron schedule.")]
AllowUnsignedOpt = Annotated[bool, typer.Option(
    "--allow-unsigned", help="Start without PRIVACY_GATE_SIGNING_KEY: verdicts are then unsigned, and a reviewer "
                             "cannot detect a run rewritten by someone with write access to the tracking store.")]


def _prefect_command(fn, *args: Any, **kwargs: Any) -> Any:
    """Run a deployment command; a bad config or an unreachable Prefect API is a usage error."""
    from privacy_gate.errors import ConfigError, is_infrastructure_error

    try:
        return fn(*args, **kwargs)
    except ConfigError as exc:
        _usage_error(str(exc))
    except Exception as exc:  # noqa: BLE001
        if not is_infrastructure_error(exc):
            raise
        from prefect.settings import PREFECT_API_URL

        _usage_error(f"the Prefect API at {PREFECT_API_URL.value() or '(PREFECT_API_URL not set)'} did not answer "
                     f"({type(exc).__name__}); start it (prefect server start) or set PREFECT_API_URL")


@app.command()
def serve(
    folder: Annotated[Path, typer.Argument(help="Folder of release configs (*.yaml): one deployment each.")],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    cron: CronOpt = None,
    interval: IntervalOpt = None,
    limit: Annotated[Optional[int], typer.Option("--limit", help="At most N flow runs at once (all datasets).")] = None,
    allow_unsigned: AllowUnsignedOpt = False,
) -> None:
    """Serve every release config in FOLDER as a scheduled Prefect deployment (runs until stopped).

    An invalid config is reported (one line: the file and the problem) and not served; the others
    are. Refuses to start when no config is valid. Needs a Prefect API (PREFECT_API_URL) and
    PRIVACY_GATE_SIGNING_KEY (or --allow-unsigned); runs of one dataset never overlap."""
    _quiet_env()
    _preflight(workdir=workdir)
    from privacy_gate.tracking import SOURCE_ENV, tracking_source

    uri, source = tracking_source(None, workdir)
    if source == SOURCE_ENV:  # the flows served here record there (unless a config names its own)
        _probe_tracking(uri, source)
    from privacy_gate.flows.deployments import serve_folder

    _prefect_command(serve_folder, folder, workdir=workdir, cron=cron, interval=interval, limit=limit,
                     report=lambda line: _say(f"warning: {line}", err=True), allow_unsigned=allow_unsigned)


@app.command()
def deploy(
    configs: Annotated[list[Path], typer.Argument(help="Release config YAML files.")],
    pool: Annotated[str, typer.Option("--pool", help="Prefect work pool (a process pool is created if missing).")],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    cron: CronOpt = None,
    interval: IntervalOpt = None,
    allow_unsigned: AllowUnsignedOpt = False,
) -> None:
    """Register release configs as scheduled deployments in a work pool; a Prefect worker
    (prefect worker start --pool POOL) runs them. Needs PRIVACY_GATE_SIGNING_KEY (or
    --allow-unsigned); the worker needs the same key."""
    _quiet_env()
    for path in configs:
        if not path.is_file():
            _usage_error(f"{path}: file not found")
    _preflight(workdir=workdir)
    from privacy_gate.flows.deployments import deploy_configs

    ids = _prefect_command(deploy_configs, configs, work_pool=pool, workdir=workdir, cron=cron, interval=interval,
                           allow_unsigned=allow_unsigned)
    for path, dep_id in zip(configs, ids):
        typer.echo(f"deployed release/{path.stem} ({dep_id}) to work pool {pool!r}")
    typer.echo(f"start a worker: prefect worker start --pool {pool}")


@app.command("dependency-study")
def dependency_study(
    config: Annotated[Path, typer.Argument(help="Release config with a dependency_study section "
                                                "(see examples/adult-dependency.yaml).")],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    as_json: JsonOpt = False,
    orchestrator: OrchestratorOpt = "auto",
) -> None:
    """Retrain on dependent splits and their IID counterparts, attack both, compare with the DP bound."""
    _quiet_env()
    from privacy_gate.errors import ConfigError, PrivacyGateError

    def check(cfg: Any) -> None:
        if cfg.dependency_study is None:
            raise ConfigError(f"{config}: no 'dependency_study' section (README: 'Dependency study')")
        _check_components(None, {}, cfg.attacks)

    cfg = _load_release(config, check)
    _require_files(**{"dataset.path": cfg.dataset.path})
    _check_dataset_inputs(cfg, config)
    _preflight(workdir=workdir)
    from privacy_gate.tracking import tracking_source

    _probe_tracking(*tracking_source(cfg.tracking.uri, workdir))
    try:
        if _use_prefect(orchestrator):
            from privacy_gate.flows import dependency_study_flow

            result = dependency_study_flow(config_path=str(config), workdir=str(workdir))
        else:
            from privacy_gate.pipeline.dependency_study import run_dependency_study

            result = run_dependency_study(cfg, workdir=workdir, logger=_cli_logger())
    except PrivacyGateError as exc:
        _say(f"error: dependency study did not complete: {exc}", err=True)
        raise typer.Exit(1) from None
    from privacy_gate.pipeline.dependency_summary import invariant_lines
    from privacy_gate.tracking import ui_command

    out = sys.stderr if as_json else sys.stdout
    print("\n".join(["", *invariant_lines(result["invariants"]), f"study run:   {result['run_id']}",
                      f"MLflow UI:   {ui_command(result['tracking_uri'])}"]), file=out)
    if as_json:
        print(json.dumps({"run_id": result["run_id"], "invariants": result["invariants"]}, default=str))


@app.command("audit-dp")
def audit_dp(
    config: Annotated[Path, typer.Argument(help="Release config of a DP generator (its audit_dp section, if any, "
                                                "gives the settings).")],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    runs: Annotated[Optional[int], typer.Option("--runs", help="Fits per side and target (default: "
                                                "audit_dp.runs, else 200).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Run the audit afresh even if cached.")] = False,
    figure: Annotated[Optional[Path], typer.Option("--figure", help="Write the trade-off figure (PNG) here.")] = None,
    as_json: JsonOpt = False,
    orchestrator: OrchestratorOpt = "auto",
) -> None:
    """Audit the DP claim of the config's generator: a lower bound on the epsilon it delivers."""
    _quiet_env()
    from privacy_gate.errors import PrivacyGateError

    if runs is not None and runs < 4:
        _usage_error(f"--runs must be at least 4, got {runs}")
    cfg = _load_release(config, lambda cfg: _check_components(cfg.generator.name, cfg.generator.params, []))
    _require_files(**{"dataset.path": cfg.dataset.path})
    _check_dataset_inputs(cfg, config)
    try:
        if _use_prefect(orchestrator):
            from privacy_gate.flows import audit_dp_flow

            record = audit_dp_flow(config_path=str(config), workdir=str(workdir), runs=runs, use_cache=not no_cache)
        else:
            from privacy_gate.pipeline.dp_audit_gate import run_dp_audit

            log = _cli_logger()
            result, cached = run_dp_audit(cfg, workdir=workdir, progress=log.info, runs=runs, use_cache=not no_cache)
            record = {**result.to_dict(), "cached": cached}
    except PrivacyGateError as exc:
        _say(f"error: DP audit did not complete: {exc}", err=True)
        raise typer.Exit(1) from None
    from privacy_gate.pipeline.dp_audit import DPAuditResult

    result = DPAuditResult.from_dict(record)
    if figure is not None:
        from privacy_gate.report.plots import dp_audit_figure, dp_audit_figure_inputs

        dp_audit_figure(**dp_audit_figure_inputs(record)).savefig(figure, dpi=110)
    b = result.best.bound
    out = sys.stderr if as_json else sys.stdout
    print("\n".join([
        f"generator:   {result.generator} (implementation {result.version}), claimed epsilon {result.epsilon:g}, "
        f"delta {result.delta:g}, mu {result.claimed_mu:.3g} ({result.mu_basis})",
        f"strongest:   {result.best.score} score, {result.best.target_label}; {result.runs} fits per side"
        + (" (cached)" if record.get("cached") else ""),
        f"epsilon >=   {b.epsilon_lower:.3g} at {100 * (1 - b.alpha):.0f}% confidence "
        f"(at most {result.max_certifiable_epsilon:.3g} can be shown with these runs)",
        f"mu:          {b.mu_estimate:.3g} [{b.mu_lower:.3g}, {b.mu_upper:.3g}] (claimed {result.claimed_mu:.3g})",
        "verdict:     " + (result.reason() if result.exceeds() else
                           "no violation shown (a lower bound: this never certifies DP)")]), file=out)
    if as_json:
        print(json.dumps(record, default=float))
    if result.exceeds():
        raise typer.Exit(4)


@app.command("check-config")
def check_config(
    config: Annotated[Path, typer.Argument(help="a release config or a gate-only config (YAML)")],
) -> None:
    """The effective gate of a config: error budget, each test's level, every rule, and what is off."""
    from privacy_gate.config import active_rules, budget_tests, load_gate_only_config, protections_off
    from privacy_gate.errors import ConfigError
    from privacy_gate.gate.budget import describe_gate

    _require_files(config=config)
    try:
        cfg = load_gate_only_config(config)
    except ConfigError as exc:
        _usage_error(str(exc) if str(exc).startswith(str(config)) else f"{config}: {exc}")
    off = protections_off(cfg.gate, cfg.exposure, cfg.disclosure)
    typer.echo(describe_gate(cfg.gate, tests=budget_tests(off), disabled=off, rules=active_rules(cfg.gate, off)),
               nl=False)


@app.command("list")
def list_components(
    kind: Annotated[str, typer.Argument(help="attacks or generators")],
) -> None:
    """Every registered attack or generator with its parameters, types, defaults and help."""
    from privacy_gate.registry import format_components

    if kind == "attacks":
        from privacy_gate.attacks import describe_attacks as describe
    elif kind == "generators":
        from privacy_gate.generators import describe_generators as describe
    else:
        _usage_error(f"list: expected 'attacks' or 'generators', got {kind!r}")
    typer.echo(format_components(describe()), nl=False)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
