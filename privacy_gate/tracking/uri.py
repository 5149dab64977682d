"""Where the MLflow store is: the tracking URI a command uses, where it came from, a fast probe
that it answers, and the links and commands that open it. Split from ``tracking`` (which talks to
the store) so every command can resolve and probe the store before importing MLflow.
"""

from __future__ import annotations

import os
from pathlib import Path

from privacy_gate.errors import ConfigError
from privacy_gate.names import ENV_TRACKING_URI, SQLITE_FILE
from privacy_gate.safe_text import mask_uri

#: MLflow 3.17's UI has a "GenAI / Model training" switch, read from the page's ``workflowType``
#: query parameter (else the browser's last choice, default GenAI): our links ask for the classic
#: view, where the run page shows the description, tags, metrics and artefacts.
UI_WORKFLOW = "workflowType=machine_learning"

#: where a tracking URI came from, as the one-line errors name it (``tracking_source``)
SOURCE_CONFIG = "tracking.uri in the config"
SOURCE_OPTION = "--tracking-uri"
SOURCE_ENV = f"the {ENV_TRACKING_URI} environment variable (it overrides the store in --workdir)"
SOURCE_WORKDIR = "the workdir's store"


def tracking_source(
    configured: str | None, workdir: Path, *, option: str | None = None
) -> tuple[str, str]:
    """The tracking URI :func:`resolve_tracking_uri` picks, with where it came from
    (``SOURCE_*``)."""
    if option:
        return option, SOURCE_OPTION
    if configured:
        return configured, SOURCE_CONFIG
    if os.environ.get(ENV_TRACKING_URI):
        return os.environ[ENV_TRACKING_URI], SOURCE_ENV
    return default_tracking_uri(workdir), SOURCE_WORKDIR


def check_reachable(uri: str, *, source: str = "tracking.uri", timeout: float = 5.0) -> None:
    """Fail fast (ConfigError naming the URI and ``source``) when an MLflow server (``/health``) or
    a database server (a TCP connect) does not answer, instead of MLflow's minutes of retries
    ending in an unclear BLOCK. Local stores (sqlite, files) are not probed."""
    import socket
    import urllib.error
    import urllib.parse
    import urllib.request

    where = f"MLflow tracking store {mask_uri(uri)} (from {source})"
    if uri.startswith(("http://", "https://")):
        try:
            with urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout) as response:
                if response.status >= 400:
                    raise ConfigError(
                        f"{where}: the MLflow server answered HTTP {response.status} on /health"
                    )
        except urllib.error.HTTPError as exc:
            raise ConfigError(
                f"{where}: the MLflow server answered HTTP {exc.code} on /health"
            ) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or type(exc).__name__
            raise ConfigError(
                f"{where}: not reachable within {timeout:g} s ({reason}); is the MLflow server "
                "running?"
            ) from None
        return
    parsed = urllib.parse.urlsplit(uri)
    if (
        parsed.scheme.split("+")[0] not in ("postgresql", "postgres", "mysql", "mssql")
        or not parsed.hostname
    ):
        return
    default_port = {"mysql": 3306, "mssql": 1433}.get(parsed.scheme.split("+")[0], 5432)
    try:
        with socket.create_connection(
            (parsed.hostname, parsed.port or default_port), timeout=timeout
        ):
            pass
    except (OSError, ValueError) as exc:
        # no password
        shown = f"{parsed.scheme}://{parsed.hostname}:{parsed.port or default_port}{parsed.path}"
        raise ConfigError(
            f"MLflow tracking store {shown} (from {source}): not reachable within {timeout:g} s "
            f"({type(exc).__name__}); is the database running?"
        ) from None


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI, else None. Its query (driver options,
    maybe a token) is not part of the file's name: a lock or seeded store beside it never carries
    it.

    >>> sqlite_path("sqlite:////tmp/wd/mlflow.db"), sqlite_path("http://127.0.0.1:5000")
    (PosixPath('/tmp/wd/mlflow.db'), None)
    >>> sqlite_path("sqlite:////tmp/wd/mlflow.db?token=abc")
    PosixPath('/tmp/wd/mlflow.db')
    """
    return (
        Path(uri.removeprefix("sqlite:///").split("?", 1)[0])
        if uri.startswith("sqlite:///")
        else None
    )


def default_tracking_uri(workdir: Path) -> str:
    return f"sqlite:///{(Path(workdir) / SQLITE_FILE).resolve()}"


def resolve_tracking_uri(configured: str | None, workdir: Path) -> str:
    """The config's ``tracking.uri``, else ``MLFLOW_TRACKING_URI`` (how a deployment points every
    run at the team's server), else the embedded sqlite store in ``workdir``."""
    return configured or os.environ.get(ENV_TRACKING_URI) or default_tracking_uri(workdir)


def run_url(
    uri: str, experiment_id: str | None, run_id: str | None, *, local: bool = False
) -> str | None:
    """The MLflow UI page of a run when the store is an MLflow server (http/https), else None;
    ``local``: on a local store, the page as served by :func:`ui_command`.

    >>> run_url("sqlite:////w/mlflow.db", "1", "ab", local=True)
    'http://127.0.0.1:5000/#/experiments/1/runs/ab?workflowType=machine_learning'
    """
    served = uri.startswith(("http://", "https://"))
    if not ((served or local) and experiment_id and run_id):
        return None
    base = uri.rstrip("/") if served else LOCAL_UI
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}?{UI_WORKFLOW}"


#: where ``ui_command`` serves the UI of a local store
LOCAL_UI = "http://127.0.0.1:5000"


def experiment_url(uri: str, experiment_id: str | None) -> str | None:
    """The runs page of an experiment in MLflow 3's model-training view
    (``#/experiments/<id>/runs?workflowType=machine_learning``; without the parameter the UI opens
    the browser's last view, GenAI traces by default). On a local store: the page as served by
    :func:`ui_command`. None without an experiment."""
    if not experiment_id:
        return None
    base = uri.rstrip("/") if uri.startswith(("http://", "https://")) else LOCAL_UI
    return f"{base}/#/experiments/{experiment_id}/runs?{UI_WORKFLOW}"


def artifact_url(uri: str, experiment_id: str | None, run_id: str | None, path: str) -> str | None:
    """The run page's Artifacts tab opened on ``path`` (MLflow 3's
    ``.../runs/<id>/artifacts/<path>`` route); on a local store, as served by :func:`ui_command`.
    None without an experiment or run.

    >>> artifact_url("http://mlflow:5000", "3", "ab12", "metrics/all.json")
    'http://mlflow:5000/#/experiments/3/runs/ab12/artifacts/metrics/all.json?workflowType=machine_learning'
    """
    if not (experiment_id and run_id):
        return None
    base = uri.rstrip("/") if uri.startswith(("http://", "https://")) else LOCAL_UI
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}/artifacts/{path}?{UI_WORKFLOW}"


def ui_command(uri: str) -> str:
    """The exact command that opens the MLflow UI on this store."""
    if uri.startswith(("http://", "https://")):
        return f"open {uri}"
    import shutil
    import sys

    # the mlflow next to this interpreter (the project's .venv), so the command works unactivated
    local = Path(sys.executable).parent / "mlflow"
    exe = str(local) if local.exists() else (shutil.which("mlflow") or "mlflow")
    return (
        f"{exe} ui --backend-store-uri '{uri}' --workers 1 --host 127.0.0.1 --port "
        f"{LOCAL_UI.rsplit(':', 1)[1]}"
    )


__all__ = [
    "LOCAL_UI",
    "artifact_url",
    "SOURCE_CONFIG",
    "SOURCE_ENV",
    "SOURCE_OPTION",
    "SOURCE_WORKDIR",
    "UI_WORKFLOW",
    "check_reachable",
    "default_tracking_uri",
    "experiment_url",
    "resolve_tracking_uri",
    "run_url",
    "sqlite_path",
    "tracking_source",
    "ui_command",
]
