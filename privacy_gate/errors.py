"""The small exception tree of privacy-gate.

Every message says what is wrong *and* names the file, column or setting, so a user can act on it
without a traceback. Messages never contain values of real records.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path


class PrivacyGateError(Exception):
    """Base class of all errors raised on purpose by privacy-gate."""


class ConfigError(PrivacyGateError):
    """A release config, dataset spec or rule set is invalid (bad key, value or combination)."""


class DataError(PrivacyGateError):
    """A data file is missing, unreadable, or does not match its dataset spec."""


class InsufficientDataError(DataError):
    """There are too few rows (or entities) for the requested split, targets or confidence."""


class ValidationFailed(PrivacyGateError):
    """A Great Expectations suite failed; ``failures`` lists the failed expectations."""

    def __init__(self, message: str, failures: list[str] | None = None):
        super().__init__(message)
        self.failures = list(failures or [])


class ReviewError(PrivacyGateError):
    """A review decision was refused (already decided, BLOCKed run, data hash changed, ...)."""


class IntegrityError(ReviewError):
    """A recorded artefact does not match what was recorded at decision time (edited or corrupt)."""


class InfrastructureError(PrivacyGateError):
    """A service the gate depends on (tracking server, object store) did not answer. The only kind
    of failure a scheduled run retries; it still ends in BLOCK when the retries run out."""


class DiskFullError(PrivacyGateError):
    """The disk holding the workdir (or a publish folder) is full: an OS write failed with ENOSPC
    or SQLite said "database or disk is full". Not retried by a scheduled run (a retry fills the
    same disk); the run BLOCKs and says which disk to free."""


#: what a full disk looks like in a message (SQLite through SQLAlchemy and MLflow; pyarrow and
#: other libraries that re-raise an OS error as text)
_DISK_FULL_MESSAGES = ("database or disk is full", "no space left on device", "disk quota exceeded")


def _is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return any(m in text for m in _DISK_FULL_MESSAGES)


def _free_mb(path: Path) -> str:
    """The space left on the filesystem holding ``path`` (its nearest existing folder), as MB."""
    for folder in (path, *path.parents):
        try:
            return f"{shutil.disk_usage(folder).free / 1e6:.0f}"
        except OSError:
            continue
    return "?"


def disk_full(
    exc: BaseException | None, *, where: str | os.PathLike | None = None
) -> DiskFullError | None:
    """``exc`` as a :class:`DiskFullError` when it (or anything in its cause/context chain) says
    the disk is full; else None. The message names the disk by the failing file (an OS error's
    own path) or else ``where`` (the workdir), with the space left on it.

    >>> import errno
    >>> str(disk_full(OSError(errno.ENOSPC, "No space left on device", "/"))).startswith(
    ...     "the disk holding / is full (")
    True
    >>> disk_full(ValueError("age=37")) is None
    True
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DiskFullError):
            return exc
        if _is_disk_full(exc):
            named = getattr(exc, "filename", None) if isinstance(exc, OSError) else None
            path = Path(os.fsdecode(named) if named else (where if where is not None else "."))
            path = path.absolute()
            return DiskFullError(
                f"the disk holding {path} is full ({_free_mb(path)} MB free): free space and "
                "run the gate again"
            )
        exc = exc.__cause__ or exc.__context__
    return None


# What a failure looks like when a service is down, across the client libraries in use (requests /
# urllib3 under MLflow, botocore, asyncio/httpx under Prefect): matched by class name along the
# exception chain, so this module needs none of those packages. Read only by
# :func:`service_error`, at the boundaries where the gate calls a service: everything past a
# boundary sees an :class:`InfrastructureError` or a :class:`DiskFullError`, never these.
_OUTAGE_CLASS_NAMES = frozenset(
    {
        "ConnectionError",
        "ConnectTimeout",
        "ConnectTimeoutError",
        "ReadTimeout",
        "ReadTimeoutError",
        "Timeout",
        "TimeoutError",
        "MaxRetryError",
        "NewConnectionError",
        "EndpointConnectionError",
        "RemoteDisconnected",
        "ProtocolError",
        "ConnectError",
        "ReadError",
        "ServerDisconnectedError",
        "ConnectionRefusedError",
        "ConnectionResetError",
        "ConnectionAbortedError",
        "BrokenPipeError",
    }
)
#: MLflow wraps a REST failure into an ``MlflowException`` whose text is all that is left of it
_OUTAGE_MESSAGES = (
    "max retries exceeded",
    "connection refused",
    "failed to establish a new connection",
    "timed out",
    "connection aborted",
    "connection reset",
    "remote end closed connection",
    "temporarily unavailable",
    "503 server error",
    "502 server error",
    "504 server error",
    "api request to",
    "too many 500 error responses",
    "too many 503 error responses",
)


def _looks_like_outage(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(cls.__name__ in _OUTAGE_CLASS_NAMES for cls in type(current).__mro__):
            return True
        text = str(current).lower()
        if type(current).__name__ == "MlflowException" and any(m in text for m in _OUTAGE_MESSAGES):
            return True
        current = current.__cause__ or current.__context__
    return False


def service_error(
    exc: BaseException,
    *,
    service: str,
    where: str | os.PathLike | None = None,
    unavailable: type[InfrastructureError] = InfrastructureError,
) -> PrivacyGateError | None:
    """What a failure of a call to ``service`` (named as the message should name it: "the MLflow
    store sqlite:///w/mlflow.db") is in the project's own terms: a :class:`DiskFullError` when the
    disk behind it is full, an :class:`InfrastructureError` when the service did not answer, our
    own error unchanged, else None (a failure of the call itself, left as it is). ``unavailable``:
    the boundary's own kind of outage (``StorageUnavailable``, ``PrefectUnavailable``), so a caller
    tells services apart by type. The one place that reads third-party class names and message
    fragments: every boundary converts through it.

    >>> service_error(ConnectionRefusedError(111, "refused"), service="the MLflow store s")
    InfrastructureError('the MLflow store s did not answer (ConnectionRefusedError)')
    >>> service_error(KeyError("run"), service="the MLflow store s") is None
    True
    """
    if isinstance(exc, PrivacyGateError):
        return exc
    full = disk_full(exc, where=where)
    if full is not None:
        return full
    if _looks_like_outage(exc):
        return unavailable(f"{service} did not answer ({type(exc).__name__})")
    return None


@contextlib.contextmanager
def service_boundary(
    service: str,
    *,
    where: str | os.PathLike | None = None,
    unavailable: type[InfrastructureError] = InfrastructureError,
) -> Iterator[None]:
    """Convert a failure inside the block at the boundary (:func:`service_error`): a service that
    did not answer raises :class:`InfrastructureError` and a full disk :class:`DiskFullError`, each
    chained to the original; anything else propagates unchanged.

    >>> try:
    ...     with service_boundary("the Prefect API at http://127.0.0.1:9"):
    ...         raise TimeoutError("read timed out")
    ... except InfrastructureError as exc:
    ...     print(exc, "| from", type(exc.__cause__).__name__)
    the Prefect API at http://127.0.0.1:9 did not answer (TimeoutError) | from TimeoutError
    """
    try:
        yield
    except PrivacyGateError:
        raise
    except Exception as exc:
        converted = service_error(exc, service=service, where=where, unavailable=unavailable)
        if converted is None:
            raise
        raise converted from exc


def is_infrastructure_error(exc: BaseException | None) -> bool:
    """True when ``exc`` (or anything in its cause/context chain) is a service that did not answer:
    an :class:`InfrastructureError` (what every boundary converts an outage into,
    :func:`service_boundary`) or one of Python's own connection errors and timeouts (a socket the
    gate opened itself). No class names or messages are matched here: that happened at the boundary.

    >>> is_infrastructure_error(ConnectionRefusedError(111, "Connection refused"))
    True
    >>> is_infrastructure_error(ConfigError("gate.rules: bad metric"))
    False
    >>> try:
    ...     with service_boundary("the MLflow store s"):
    ...         raise OSError("Max retries exceeded with url")  # not an outage by its type
    ... except OSError as exc:
    ...     is_infrastructure_error(exc)
    False
    >>> try:
    ...     try:
    ...         raise TimeoutError("read timed out")
    ...     except TimeoutError as inner:
    ...         raise RuntimeError("logging failed") from inner
    ... except RuntimeError as outer:
    ...     is_infrastructure_error(outer)
    True
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, InfrastructureError):
            return True
        if isinstance(exc, DiskFullError) or disk_full(exc) is not None:
            return False  # a retry fills the same disk: the operator frees space first
        if isinstance(exc, (ConfigError, DataError, ValidationFailed, ReviewError)):
            return False  # the user's input or a decision: retrying cannot change it
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def safe_reason(exc: BaseException, *, where: str | os.PathLike | None = None) -> str | None:
    """What may be said of ``exc`` in a verdict or on the console: a full disk (named by the
    failing path, else ``where``), our own errors' messages, and a failing path with the OS's
    reason (a path the operator chose, never a data value); None for anything else, whose message
    may quote data.

    >>> denied = PermissionError(13, "Permission denied", "/srv/out")
    >>> safe_reason(denied), safe_reason(ValueError("age=37"))
    ('Permission denied: /srv/out', None)
    """
    full = disk_full(exc, where=where)
    if full is not None:
        return str(full)
    if isinstance(exc, PrivacyGateError):
        return str(exc)
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.strerror or type(exc).__name__}: {exc.filename}"
    return None
