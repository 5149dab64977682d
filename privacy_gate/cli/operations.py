"""Operating the gate: ``doctor`` (reconcile what killed processes left), ``serve`` and ``deploy``
(scheduled Prefect deployments of the release flow, and of the gate flow for gate-mode configs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from privacy_gate.cli.checks import preflight
from privacy_gate.cli.common import (
    TrackingOpt,
    WorkdirOpt,
    app,
    exit_codes,
    probe_tracking,
    quiet_env,
    say,
    show,
    usage_error,
)


@app.command(
    epilog=exit_codes(
        (0, "clean (after --fix: nothing left)"),
        (1, "something found (after --fix: something left that it could not repair)"),
    ),
    short_help="Reconcile what killed processes left behind.",
)
def doctor(
    workdir: WorkdirOpt = Path(".privacy-gate"),
    tracking_uri: TrackingOpt = None,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Repair what can be: mark runs of gone processes KILLED, "
            "resolve decisions a killed approve/reject left half done, "
            "remove orphan release data and dead staging folders.",
        ),
    ] = False,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            help="Also check this publish folder or s3://bucket/prefix (repeatable; the workdir's "
            "published folder and every target recorded on a run are checked anyway).",
        ),
    ] = None,
    min_age: Annotated[
        float,
        typer.Option(
            "--min-age",
            help="Seconds: younger orphan release data may be a publication in progress; listed, "
            "not removed.",
        ),
    ] = 600.0,
) -> None:
    """Reconcile what killed processes left: runs left RUNNING, decisions left half done, approvals
    never published, release data without a manifest, staging folders. Reports only; --fix repairs
    what it can and says what it did."""
    quiet_env()
    from privacy_gate.names import SQLITE_FILE
    from privacy_gate.review.doctor import doctor as run_doctor
    from privacy_gate.tracking.uri import SOURCE_WORKDIR, tracking_source

    uri, source = tracking_source(None, workdir, option=tracking_uri)
    if source == SOURCE_WORKDIR and not (Path(workdir) / SQLITE_FILE).is_file():
        uri = None
    else:
        probe_tracking(uri, source)
    report = run_doctor(
        workdir, tracking_uri=uri, fix=fix, targets=list(target or []), min_age=min_age
    )
    for line in report.lines(fix=fix):
        show(line)
    raise typer.Exit(1 if report.remaining else 0)


CronOpt = Annotated[
    str | None,
    typer.Option(
        "--cron",
        help='Cron schedule for every config, e.g. "0 2 * * *" (default: each config\'s schedule '
        "section).",
    ),
]
IntervalOpt = Annotated[
    float | None, typer.Option("--interval", help="Run every N seconds instead of a cron schedule.")
]
AllowUnsignedOpt = Annotated[
    bool,
    typer.Option(
        "--allow-unsigned",
        help="Start without PRIVACY_GATE_SIGNING_KEY: verdicts are then unsigned, and a reviewer "
        "cannot detect a run rewritten by someone with write access to the tracking store.",
    ),
]


def prefect_command(fn, *args: Any, **kwargs: Any) -> Any:
    """Run a deployment command; a bad config or an unreachable Prefect API is a usage error."""
    from privacy_gate.errors import ConfigError, InfrastructureError
    from privacy_gate.flows.coordination import PrefectUnavailable, prefect_boundary

    try:
        with prefect_boundary():
            return fn(*args, **kwargs)
    except ConfigError as exc:
        usage_error(str(exc))
    except PrefectUnavailable as exc:
        usage_error(f"{exc}; start it (prefect server start) or set PREFECT_API_URL")
    except InfrastructureError as exc:  # another service the command reached (an object store)
        usage_error(str(exc))


@app.command(
    epilog=exit_codes(("-", "runs until stopped")),
    short_help="Serve release configs as scheduled Prefect deployments.",
)
def serve(
    folder: Annotated[
        Path,
        typer.Argument(
            metavar="FOLDER", help="Folder of release configs (*.yaml): one deployment each."
        ),
    ],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    cron: CronOpt = None,
    interval: IntervalOpt = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="At most N flow runs at once (all datasets).")
    ] = None,
    allow_unsigned: AllowUnsignedOpt = False,
) -> None:
    """Serve every release config in FOLDER as a scheduled Prefect deployment (runs until stopped).

    An invalid config is reported (one line: the file and the problem) and not served; the others
    are. Refuses to start when no config is valid. Needs a Prefect API (PREFECT_API_URL) and
    PRIVACY_GATE_SIGNING_KEY (or --allow-unsigned); runs of one dataset never overlap."""
    quiet_env()
    preflight(workdir=workdir)
    from privacy_gate.tracking.uri import SOURCE_ENV, tracking_source

    uri, source = tracking_source(None, workdir)
    if source == SOURCE_ENV:  # the flows served here record there (unless a config names its own)
        probe_tracking(uri, source)
    from privacy_gate.errors import ConfigError
    from privacy_gate.flows.deployments import config_files, serve_folder

    try:
        overridden(config_files(folder), cron=cron, interval=interval)
    except ConfigError:  # no folder, or no config in it: serve_folder says so
        pass

    prefect_command(
        serve_folder,
        folder,
        workdir=workdir,
        cron=cron,
        interval=interval,
        limit=limit,
        report=lambda line: say(f"warning: {line}", err=True),
        allow_unsigned=allow_unsigned,
    )


@app.command(
    epilog=exit_codes((0, "deployed")),
    short_help="Register release configs as deployments in a work pool.",
)
def deploy(
    configs: Annotated[
        list[Path], typer.Argument(metavar="CONFIG", help="Release config YAML files.")
    ],
    pool: Annotated[
        str,
        typer.Option("--pool", help="Prefect work pool (a process pool is created if missing)."),
    ],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    cron: CronOpt = None,
    interval: IntervalOpt = None,
    allow_unsigned: AllowUnsignedOpt = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Replace a deployment of the same name that exists already (its schedule, "
            "parameters and work pool are overwritten); without it, deploy refuses and names it.",
        ),
    ] = False,
) -> None:
    """Register release configs (or gate-mode configs: a files section naming a release made
    elsewhere) as scheduled deployments in a work pool; a Prefect worker (prefect worker start
    --pool POOL) runs them. Needs PRIVACY_GATE_SIGNING_KEY (or --allow-unsigned); the worker needs
    the same key. A deployment that exists already is replaced only with --replace."""
    quiet_env()
    for path in configs:
        if not path.is_file():
            usage_error(f"{path}: file not found")
    preflight(workdir=workdir)
    overridden(configs, cron=cron, interval=interval)
    from privacy_gate.flows.deployments import deploy_configs

    registered = prefect_command(
        deploy_configs,
        configs,
        work_pool=pool,
        workdir=workdir,
        cron=cron,
        interval=interval,
        allow_unsigned=allow_unsigned,
        replace=replace,
    )
    for name, dep_id in registered:
        typer.echo(f"deployed {name} ({dep_id}) to work pool {pool!r}")
    typer.echo(f"start a worker: prefect worker start --pool {pool}")


def overridden(configs: list[Path], *, cron: str | None, interval: float | None) -> None:
    """Say (stderr) which configs' own ``schedule`` sections --cron / --interval override."""
    if cron is None and interval is None:
        return
    from privacy_gate.config.loading import has_section

    given = f"--cron {cron!r}" if cron is not None else f"--interval {interval}"
    for path in configs:
        if has_section(path, "schedule"):
            say(f"note: {path}: its schedule section is not used: {given} overrides it", err=True)
