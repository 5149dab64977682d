"""What every command shares: the Typer app, exit codes, the common options, one-line output and
usage errors, the progress logger, and the probes made before anything runs.

Nothing heavy is imported at module level: ``privacy-gate --version`` and ``--help`` load typer
and this package only; each command imports what it needs when it runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

EXIT_APPROVE = 0
EXIT_REVIEW = 3
EXIT_BLOCK = 4
EXIT_USAGE = 2

#: The help's "Exit codes" paragraphs. ``\b`` keeps click from re-wrapping the table's lines.
VERDICT_EXIT_CODES = f"""\b
Exit codes:
  {EXIT_APPROVE}  APPROVE: the release is published
  {EXIT_REVIEW}  REVIEW: a person decides (the output prints the commands)
  {EXIT_BLOCK}  BLOCK: nothing is published (also any failure inside the gate)
  {EXIT_USAGE}  refused before anything ran: usage, config or input problem"""

ROOT_EXIT_CODES = f"""\b
Exit codes (each command's --help lists its own):
  run, gate      {EXIT_APPROVE} APPROVE, {EXIT_REVIEW} REVIEW, {EXIT_BLOCK} BLOCK (also any failure inside the gate)
  approve        {EXIT_APPROVE} approved, {EXIT_BLOCK} the re-gate after --suppress BLOCKs
  review, reject {EXIT_APPROVE} done
  doctor         {EXIT_APPROVE} clean, 1 something found (or left after --fix)
  audit-dp       {EXIT_APPROVE} no violation shown, {EXIT_BLOCK} the bound exceeds the claim, 1 failed
  every command  {EXIT_USAGE} refused: usage, config or input problem, store unreachable"""  # noqa: E501 - a table printed as written (\b)


def exit_codes(*rows: tuple[int | str, str]) -> str:
    """An "Exit codes" help paragraph of ``(code, meaning)`` rows, always ending with the
    refusal (2) every command can return."""
    lines = [f"  {code}  {meaning}" for code, meaning in rows]
    lines.append(
        f"  {EXIT_USAGE}  refused: usage, config or input problem, or the store did not answer"
    )
    return "\b\nExit codes:\n" + "\n".join(lines)


def _print_version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        typer.echo(f"privacy-gate {version('privacy-gate')}")
    except PackageNotFoundError:  # run from a source tree that was never installed
        typer.echo("privacy-gate (version unknown: the package is not installed; pip install -e .)")
    raise typer.Exit(0)


# rich_markup_mode=None: click's own help formatter, which reflows each paragraph to the terminal
# (rich kept the docstrings' line breaks inside its narrower box) and shows plain flags without a
# "<bool>" type. No locals in tracebacks: a frame's locals may hold records of the real data.
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
    epilog=ROOT_EXIT_CODES,
    help="privacy-gate: a release gate for synthetic tabular data. It attacks a synthetic "
    "release with membership-inference attacks and approves, sends to review, or blocks "
    "its publication.",
)


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """privacy-gate: a release gate for synthetic tabular data."""


JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the verdict JSON as the last line of stdout.")
]
OrchestratorOpt = Annotated[
    str,
    typer.Option(
        "--orchestrator",
        help="prefect: run as a Prefect flow; local: the same pipeline in this process (no Prefect "
        "server); auto (default): prefect when a Prefect API is configured (PREFECT_API_URL) "
        "or the config needs it (review.mode pause, runner.kind dask), else local.",
    ),
]
WorkdirOpt = Annotated[
    Path, typer.Option("--workdir", help="MLflow store, quarantine and published files.")
]
TrackingOpt = Annotated[
    str | None,
    typer.Option(
        "--tracking-uri",
        help="MLflow store of the run (default: MLFLOW_TRACKING_URI, else the sqlite store "
        "in WORKDIR).",
    ),
]
ReviewerOpt = Annotated[
    str, typer.Option("--reviewer", help="Who decides (recorded with the decision).")
]
CommentOpt = Annotated[str, typer.Option("--comment", help="Why (recorded with the decision).")]


def quiet_env() -> None:
    for key, value in (
        ("MLFLOW_DISABLE_TELEMETRY", "true"),
        ("DO_NOT_TRACK", "true"),
        ("PREFECT_SERVER_ANALYTICS_ENABLED", "false"),
        ("GX_ANALYTICS_ENABLED", "false"),
        ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"),
    ):
        os.environ.setdefault(key, value)


def say(text: object, *, err: bool = False) -> None:
    """One line of output that may hold data (labels, values, names): through ``console_line``."""
    from privacy_gate.safe_text import console_line

    typer.echo(console_line(text), err=err)


def show(text: object, *, file: Any = None) -> None:
    """A block of output (several lines, line breaks kept) with the credentials of any URI in it
    masked: the verdict, the next steps, the JSON line. A tracking URI's password never reaches a
    terminal or a CI log."""
    from privacy_gate.safe_text import mask_secrets

    print(mask_secrets(text), file=file or sys.stdout)


def usage_error(message: str) -> None:
    say(f"error: {message}", err=True)
    raise typer.Exit(EXIT_USAGE)


def probe_tracking(uri: str, source: str) -> str:
    """The MLflow store every command talks to, probed first: an unreachable server is one line
    naming the URI and where it came from, exit 2, within seconds (not MLflow's minutes of
    retries)."""
    from privacy_gate.errors import ConfigError
    from privacy_gate.tracking.uri import check_reachable

    try:
        check_reachable(uri, source=source)
    except ConfigError as exc:
        usage_error(str(exc))
    return uri


def reconcile(uri: str, dataset: str, experiment: str | None) -> None:
    """Before a run: the dataset's runs left RUNNING by a gone process are marked KILLED (doctor's
    cheap part; a warning at most, never a failure)."""
    from privacy_gate.names import experiment_name
    from privacy_gate.review.doctor import reconcile_on_start

    reconcile_on_start(uri, experiment_name(dataset, experiment), cli_logger())


def use_prefect(orchestrator: str, *, needs_prefect: bool = False) -> bool:
    if orchestrator not in ("auto", "prefect", "local"):
        usage_error(f"--orchestrator must be auto, prefect or local, got {orchestrator!r}")
    if orchestrator != "auto":
        if orchestrator == "local" and needs_prefect:
            usage_error(
                "--orchestrator local: the config needs Prefect (review.mode pause or runner.kind "
                "dask)"
            )
        return orchestrator == "prefect"
    if needs_prefect or os.environ.get("PREFECT_API_URL"):
        return True
    from prefect.settings import PREFECT_API_URL  # a profile or a test harness may set it

    return bool(PREFECT_API_URL.value())


def cli_logger():
    """Progress lines on stderr for in-process runs (Prefect's logger does this for flows)."""
    import logging

    from privacy_gate.safe_text import console_line

    class StderrHandler(logging.StreamHandler):  # whatever sys.stderr is now (test runners swap it)
        stream = property(lambda self: sys.stderr, lambda self, value: None)

    class OneLine(
        logging.Formatter
    ):  # a progress line naming a group or a column holds data: one line
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


def store_uri(workdir: Path, uri: str | None) -> str:
    """The store of an existing run (--tracking-uri, else MLFLOW_TRACKING_URI, else the workdir's),
    probed; never created here (a typo in --workdir must not make an empty store and then report
    'no run')."""
    from privacy_gate.names import SQLITE_FILE
    from privacy_gate.tracking.uri import SOURCE_WORKDIR, tracking_source

    uri, source = tracking_source(None, workdir, option=uri)
    if source == SOURCE_WORKDIR and not (Path(workdir) / SQLITE_FILE).is_file():
        usage_error(
            f"--workdir {workdir}: no MLflow store there ({SQLITE_FILE} not found); pass the "
            "workdir "
            "the gate ran in, or --tracking-uri"
        )
    return probe_tracking(uri, source)
