"""Release configs as scheduled Prefect deployments of the ``release`` flow, and gate-mode configs
(a ``files`` section: a release made elsewhere, judged from its own files) as deployments of the
``gate`` flow (``flows/gate_deployments.py``).

- :func:`serve_folder` (``privacy-gate serve DIR``): one long-running process that serves every
  valid release config in a folder as a deployment and runs them on schedule; each invalid one is
  reported (one line: the file and the problem) and skipped, so one bad file cannot stop the
  others' releases. It refuses to start only when no config is valid.
- :func:`deploy_configs` (``privacy-gate deploy CONFIG... --pool P``): registers the same
  deployments with a work pool, for Prefect workers (``prefect worker start --pool P``) to run.
  A deployment of that name that exists already is replaced only with ``--replace``; without it
  the command refuses before registering anything, naming each one and what it runs now.

Each deployment is named after its config file; its parameters are the config's absolute path
and the workdir; its schedule comes from the config's ``schedule`` section or ``--cron`` /
``--interval``. The dataset's concurrency limit is created here (see ``coordination``).

Both need a Prefect server that answers (:func:`require_prefect_api`): without ``PREFECT_API_URL``
Prefect would start a temporary server that stops with the command (``deploy``) or serves
schedules nobody else sees (``serve``), so they refuse to start instead (exit 2, one line).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from privacy_gate.config import ReleaseConfig, is_gate_deployment, load_release_config
from privacy_gate.errors import ConfigError
from privacy_gate.flows.coordination import ensure_dataset_limit
from privacy_gate.flows.gate_deployments import build_gate_deployment, gate_deployment_dataset
from privacy_gate.flows.gate_flows import release_flow
from privacy_gate.names import ENV_SIGNING_KEY
from privacy_gate.publication.publish import dataset_slug
from privacy_gate.tracking.signing import signing_key

DEPLOYMENT_TAG = "privacy-gate"
CONFIG_SUFFIXES = (".yaml", ".yml")
#: Seconds the Prefect API has to answer its health check before serve / deploy refuse to start.
API_PROBE_SECONDS = 5.0


def deployment_concurrency() -> Any:
    """One active run per deployment; a run due while one is active is cancelled by the Prefect
    server ("Deployment concurrency limit reached."), never queued: a schedule faster than the
    gate cannot build a backlog of runs, each a process waiting for the dataset's slot."""
    from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy

    return ConcurrencyLimitConfig(limit=1, collision_strategy=ConcurrencyLimitStrategy.CANCEL_NEW)


def require_prefect_api(command: str, *, timeout: float = API_PROBE_SECONDS) -> str:
    """The configured Prefect API's URL once its health check answers; else a one-line
    :class:`ConfigError`: ``PREFECT_API_URL`` not set (and how to set it), or the URL that did
    not answer. Never starts a temporary server."""
    import httpx
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_KEY, PREFECT_API_URL

    url = (PREFECT_API_URL.value() or "").strip().rstrip("/")
    if not url:
        raise ConfigError(
            f"privacy-gate {command}: PREFECT_API_URL is not set, so there is no Prefect server to "
            f"{command} to; start one (prefect server start) and set PREFECT_API_URL, e.g. "
            "export PREFECT_API_URL=http://127.0.0.1:4200/api"
        )
    headers = {}
    if PREFECT_API_KEY.value():
        headers["Authorization"] = f"Bearer {PREFECT_API_KEY.value().get_secret_value()}"
    auth = PREFECT_API_AUTH_STRING.value()
    try:
        response = httpx.get(
            f"{url}/health",
            headers=headers,
            timeout=timeout,
            auth=tuple(auth.get_secret_value().split(":", 1)) if auth else None,
        )
        problem = None if response.status_code == 200 else f"HTTP {response.status_code}"
    except httpx.HTTPError as exc:
        problem = type(exc).__name__
    except ValueError as exc:  # not a URL httpx can request
        problem = f"not a usable URL: {exc}"
    if problem:
        raise ConfigError(
            f"privacy-gate {command}: the Prefect API at {url} (PREFECT_API_URL) did not answer "
            f"({problem}); start the server there or set PREFECT_API_URL to one that runs"
        )
    return url


# ---------------------------------------------------------------------------- deployments


def config_files(folder: Path) -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` file directly in ``folder``, sorted (not loaded)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder of release configs")
    paths = sorted(p for p in folder.iterdir() if p.suffix in CONFIG_SUFFIXES and p.is_file())
    if not paths:
        raise ConfigError(f"{folder}: no release configs (*.yaml) to serve")
    return paths


def release_configs(folder: Path) -> list[Path]:
    """Every release config (``*.yaml`` / ``*.yml``) directly in ``folder``, sorted; each must
    load."""
    paths = config_files(folder)
    for p in paths:
        load_release_config(p)  # a ConfigError names the file and key
    return paths


def config_problem(path: Path, exc: BaseException) -> str:
    """One line naming the file and what is wrong with it (a ConfigError already names the file)."""
    text = str(exc) if isinstance(exc, ConfigError) else f"cannot be loaded ({type(exc).__name__})"
    text = " ".join(text.split())  # one line, whatever the parser said
    return text if text.startswith(str(path)) else f"{path}: {text}"


@dataclass
class FolderDeployments:
    """What ``serve DIR`` serves: one deployment (with its dataset) per valid config, and one
    line per config left out (the file and the problem)."""

    deployments: list[tuple[Any, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def folder_deployments(
    folder: Path, *, workdir: Path, cron: str | None = None, interval: float | None = None
) -> FolderDeployments:
    """A deployment for each valid release config in ``folder``; each invalid one (unreadable,
    not a valid config, no or a bad schedule, a deployment name taken by another file) becomes a
    problem line instead of stopping the others. Raises :class:`ConfigError` only when the folder
    is missing or empty, or when ``--cron`` and ``--interval`` are both given (they apply to
    all)."""
    if cron is not None and interval is not None:
        raise ConfigError("--cron and --interval: give one schedule, not both")
    out = FolderDeployments()
    names: dict[str, Path] = {}
    for path in config_files(folder):
        path = path.resolve()
        if path.stem in names:
            out.problems.append(
                f"{path}: deployment name {path.stem!r} is already used by "
                f"{names[path.stem].name}; "
                "rename one of the files"
            )
            continue
        try:
            deployment = build_deployment(path, workdir=workdir, cron=cron, interval=interval)
            dataset = config_dataset(path)
        except Exception as exc:  # noqa: BLE001 - any failure to load one config leaves it out, reported
            out.problems.append(config_problem(path, exc))
            continue
        names[path.stem] = path
        out.deployments.append((deployment, dataset))
    return out


def config_dataset(path: Path) -> str:
    """The dataset a release or gate-mode config is about (its spec's name)."""
    if is_gate_deployment(path):
        return gate_deployment_dataset(path)
    return load_release_config(path).dataset.spec.name


def deployment_schedule(
    config: Any, path: Path, *, cron: str | None, interval: float | None
) -> Any:
    """The schedule of a deployment of ``config`` (its ``schedule`` section), or ``cron`` /
    ``interval`` given on the command line, which override it."""
    try:
        return _schedule(config, path, cron=cron, interval=interval)
    except ValueError as exc:  # croniter refuses the expression
        given = (
            f"--cron {cron!r}"
            if cron
            else f"--interval {interval}"
            if interval
            else "the schedule section"
        )
        raise ConfigError(f"{path}: invalid schedule in {given} ({exc})") from None


def _schedule(
    config: ReleaseConfig, path: Path, *, cron: str | None, interval: float | None
) -> Any:
    from prefect.schedules import Cron, Interval

    if cron is not None and interval is not None:
        raise ConfigError("--cron and --interval: give one schedule, not both")
    timezone = config.schedule.timezone if config.schedule else "UTC"
    if cron is not None:
        return Cron(cron, timezone=timezone)
    if interval is not None:
        return Interval(timedelta(seconds=interval), timezone=timezone)
    if config.schedule is None:
        raise ConfigError(
            f'{path}: no schedule (add schedule: {{cron: "0 2 * * *"}} or pass --cron / --interval)'
        )
    if config.schedule.cron is not None:
        return Cron(config.schedule.cron, timezone=timezone)
    return Interval(timedelta(seconds=config.schedule.interval_seconds), timezone=timezone)


def build_deployment(
    config_path: Path,
    *,
    workdir: Path,
    cron: str | None = None,
    interval: float | None = None,
    work_pool: str | None = None,
) -> Any:
    """The release flow as a deployment named after the config file, with its schedule (a
    gate-mode config: the gate flow, ``gate_deployments.build_gate_deployment``)."""
    from prefect.deployments.runner import EntrypointType

    path = Path(config_path).resolve()
    if is_gate_deployment(path):
        from privacy_gate.config import load_gate_deployment

        schedule = deployment_schedule(
            load_gate_deployment(path), path, cron=cron, interval=interval
        )
        return build_gate_deployment(
            path,
            workdir=workdir,
            schedule=schedule,
            work_pool=work_pool,
            concurrency=deployment_concurrency(),
        )
    config = load_release_config(path)
    schedule = deployment_schedule(config, path, cron=cron, interval=interval)
    dataset = config.dataset.spec.name
    return release_flow.to_deployment(
        name=path.stem,
        schedules=[schedule],
        work_pool_name=work_pool,
        parameters={"config_path": str(path), "workdir": str(Path(workdir).resolve())},
        description=f"privacy-gate release of dataset {dataset!r} from {path.name}",
        tags=[DEPLOYMENT_TAG, f"dataset:{dataset_slug(dataset)}"],
        # one active run per deployment; a run due while it runs is cancelled, never queued
        concurrency_limit=deployment_concurrency(),
        # the flow is loaded by module path, so a worker finds it wherever the package is installed
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


def require_signing_key(command: str, *, allow_unsigned: bool) -> None:
    """Scheduled gates sign their verdicts: without a key a reviewer could not tell a rewritten
    run from a real one. ``allow_unsigned``: the operator's explicit choice
    (``--allow-unsigned``)."""
    if not allow_unsigned and signing_key() is None:
        raise ConfigError(
            f"privacy-gate {command}: {ENV_SIGNING_KEY} is not set, so scheduled verdicts would be "
            f"unsigned; set {ENV_SIGNING_KEY} (the same key where runs are approved) or pass "
            "--allow-unsigned"
        )


def serve_folder(
    folder: Path,
    *,
    workdir: Path,
    cron: str | None = None,
    interval: float | None = None,
    limit: int | None = None,
    report: Callable[[str], None] | None = None,
    allow_unsigned: bool = False,
) -> None:
    """Serve every valid release config in ``folder`` until interrupted. ``report`` gets one line
    per config left out (default: the ``privacy_gate`` logger's warnings); a ConfigError when no
    config is valid, or without a signing key unless ``allow_unsigned``."""
    from prefect import serve

    found = prepare_folder(
        folder,
        workdir=workdir,
        cron=cron,
        interval=interval,
        report=report,
        allow_unsigned=allow_unsigned,
    )
    serve(*(d for d, _ in found.deployments), limit=limit)


def prepare_folder(
    folder: Path,
    *,
    workdir: Path,
    cron: str | None = None,
    interval: float | None = None,
    report: Callable[[str], None] | None = None,
    allow_unsigned: bool = False,
) -> FolderDeployments:
    """Everything ``serve_folder`` does before it serves: the deployments of the valid configs,
    each problem reported, the signing key required, the datasets' concurrency limits created."""
    if report is None:
        import logging

        report = logging.getLogger("privacy_gate").warning
    found = folder_deployments(folder, workdir=workdir, cron=cron, interval=interval)
    for line in found.problems:
        report(f"not served: {line}")
    if not found.deployments:
        raise ConfigError(
            f"{folder}: none of its {len(found.problems)} release config(s) is valid; nothing to "
            "serve"
        )
    require_signing_key("serve", allow_unsigned=allow_unsigned)
    require_prefect_api("serve")
    for _, dataset in found.deployments:
        ensure_dataset_limit(dataset)
    return found


def deploy_configs(
    configs: list[Path],
    *,
    work_pool: str,
    workdir: Path,
    cron: str | None = None,
    interval: float | None = None,
    allow_unsigned: bool = False,
    replace: bool = False,
) -> list[tuple[str, str]]:
    """Register each config as a deployment in ``work_pool`` (created as a process pool if
    missing); returns each deployment's name (``release/<stem>``, ``gate/<stem>``) and id.
    Refused without a signing key unless
    ``allow_unsigned`` (the workers that run them need the key in their environment too), and,
    unless ``replace``, when a deployment of one of these names exists already."""
    from prefect.client.schemas.actions import WorkPoolCreate

    # every config and schedule is checked before anything is registered
    deployments = [
        (
            build_deployment(p, workdir=workdir, cron=cron, interval=interval, work_pool=work_pool),
            config_dataset(p),
        )
        for p in configs
    ]
    require_signing_key("deploy", allow_unsigned=allow_unsigned)
    require_prefect_api("deploy")
    with get_client(sync_client=True) as client:
        existing = [line for d, _ in deployments if (line := _existing(client, d)) is not None]
        if existing and not replace:
            them = "it" if len(existing) == 1 else "them"
            raise ConfigError(
                "privacy-gate deploy: " + "; ".join(existing) + " — pass --replace "
                f"to replace {them} (schedule, parameters and work pool are "
                "overwritten); nothing was registered"
            )
        try:
            client.read_work_pool(work_pool)
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):
                client.create_work_pool(WorkPoolCreate(name=work_pool, type="process"))
    registered = []
    for deployment, dataset in deployments:
        ensure_dataset_limit(dataset)
        registered.append((f"{deployment.flow_name}/{deployment.name}", str(deployment.apply())))
    return registered


def _existing(client: Any, deployment: Any) -> str | None:
    """What the deployment of ``deployment``'s name runs now, when one exists (else None)."""
    name = f"{deployment.flow_name}/{deployment.name}"
    try:
        current = client.read_deployment_by_name(name)
    except ObjectNotFound:
        return None
    config = (current.parameters or {}).get("config_path") or "no config"
    when = [
        getattr(s.schedule, "cron", None) or getattr(s.schedule, "interval", "?")
        for s in current.schedules or []
    ]
    schedules = ", ".join(map(str, when)) or "no schedule"
    pool = current.work_pool_name
    return f"deployment {name} exists already ({config}, work pool {pool}, {schedules})"


__all__ = [
    "FolderDeployments",
    "build_deployment",
    "config_dataset",
    "config_files",
    "deploy_configs",
    "deployment_concurrency",
    "deployment_schedule",
    "folder_deployments",
    "prepare_folder",
    "release_configs",
    "require_prefect_api",
    "require_signing_key",
    "serve_folder",
]
