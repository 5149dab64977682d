"""One decision per run: the exclusive hold a review decision takes around its check-then-act.

Two holds, both per run id:

- a local MLflow store (sqlite file or ``file:`` folder): a ``file_lock`` in ``locks/`` beside
  the store, held across processes for the whole decision — a second decider waits, then re-reads
  the run and is refused ("already rejected by ana at ...");
- every store, including a remote tracking server: a claim tag (``approval.claim``) with a unique
  token, written and then re-read after a settle time; whoever does not read back their own token
  lost the race. On a local store (under the file lock) a claim left by a killed decider is stale
  and taken over; on a server it is refused, naming who holds it. The token names the decider's
  host, PID and process start, so this host can tell whether it is gone (``claim_owner_gone``:
  what ``decision_recovery`` checks before resolving a half-done decision on a server store).

The decision itself re-checks the run's decisions after the hold is taken. A claim is released
when its decision did not get recorded (so a refused re-gate can be retried); once a decision is
recorded the claim stays, naming who decided.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urlparse

from privacy_gate import names
from privacy_gate.errors import PrivacyGateError, ReviewError
from privacy_gate.locking import file_lock
from privacy_gate.processes import owner_gone, process_start, this_host
from privacy_gate.tracking.uri import sqlite_path

log = logging.getLogger("privacy_gate")

#: how long a second decider waits for the first (a decision may re-run the gate)
LOCK_TIMEOUT_S = 1800.0
#: between writing a claim and reading it back on a remote store: a rival's claim written after
#: ours within this time replaces it, and we see that
SETTLE_S = 1.0
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def check_run_id(run_id: str) -> str:
    """An MLflow run id (letters, digits, '-', '_'); anything else is refused before it names a
    file."""
    if not _RUN_ID.match(run_id or ""):
        raise ReviewError(f"{run_id!r} is not an MLflow run id")
    return run_id


def local_store_dir(tracking_uri: str) -> Path | None:
    """The folder beside a local MLflow store (sqlite file or file store), else None (a server).
    Beside, not inside: a file store would read a folder inside it as an experiment."""
    db = sqlite_path(tracking_uri)
    if db is not None:
        return db.resolve().parent
    if tracking_uri.startswith("file:"):
        return Path(unquote(urlparse(tracking_uri).path)).resolve().parent
    if "://" not in tracking_uri:  # a plain path is a file store
        return Path(tracking_uri).resolve().parent
    return None


def lock_path(tracking_uri: str, run_id: str) -> Path | None:
    folder = local_store_dir(tracking_uri)
    return (
        None
        if folder is None
        else folder / names.LOCK_DIR / names.decision_lock_file(check_run_id(run_id))
    )


class DecisionBusy(ReviewError):
    """Another process holds the decision lock of the run (a decision is in progress)."""


@contextlib.contextmanager
def _cross_process_lock(path: Path | None, run_id: str, timeout: float) -> Iterator[None]:
    if path is None:
        yield
        return
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(file_lock(path, timeout=timeout))
        except PrivacyGateError:
            raise DecisionBusy(
                f"another decision on run {run_id} has held {path} for {timeout:g} s; wait for "
                "it to finish (or check for a hung privacy-gate process)"
            ) from None
        yield


#: the claim token's tail: who holds it (this host's name, PID and process start) and a random part
_OWNER = re.compile(
    r"\(host (?P<host>[A-Za-z0-9._-]+), pid (?P<pid>\d+) started (?P<start>[^;() ]+); [0-9a-f]+\)$"
)


def claim_owner_gone(token: str | None) -> bool | None:
    """Whether the process that wrote the claim ``token`` is gone: True / False, None when this host
    cannot tell (another host's claim, or a claim of an older version). No claim: True.

    >>> claim_owner_gone(None), claim_owner_gone("approve by ana at 2025 (elsewhere:ab12)")
    (True, None)
    """
    if not token:
        return True
    found = _OWNER.search(token)
    if not found:
        return None
    return owner_gone(
        found["host"], found["pid"], None if found["start"] == "unknown" else found["start"]
    )


class DecisionHold:
    """The claim of one decider on one run (see the module doc)."""

    def __init__(self, tracker, run_id: str, *, reviewer: str, action: str, local: bool):
        self.tracker, self.run_id, self.local = tracker, run_id, local
        at = datetime.now(UTC).isoformat(timespec="seconds")
        pid = (
            os.getpid()
        )  # the claim names its process: a recovery can tell a dead decider (claim_owner_gone)
        self.token = (
            f"{action} by {reviewer} at {at} (host {this_host()}, pid {pid} started "
            f"{process_start(pid) or 'unknown'}; {secrets.token_hex(8)})"
        )

    def claim(self) -> None:
        """Write our claim and read it back; ReviewError when another decider holds the run."""
        held = self.tracker.run_tags(self.run_id).get(names.TAG_DECISION_CLAIM)
        if held and not self.local:
            raise ReviewError(
                f"run {self.run_id} is being decided ({held}); decisions are final — see "
                f"`privacy-gate review {self.run_id}` (if that process died, delete the tag "
                f"{names.TAG_DECISION_CLAIM} of the run and decide again)"
            )
        if held:
            log.warning(
                "run %s: taking over the claim of a decision that did not finish (%s)",
                self.run_id,
                held,
            )
        self.tracker.set_tags(self.run_id, {names.TAG_DECISION_CLAIM: self.token})
        if not self.local:
            time.sleep(SETTLE_S)
        now = self.tracker.run_tags(self.run_id).get(names.TAG_DECISION_CLAIM)
        if now != self.token:
            raise ReviewError(
                f"run {self.run_id} is being decided by someone else ({now}); decisions are final "
                "— "
                f"see `privacy-gate review {self.run_id}`"
            )

    def release(self) -> None:
        """Withdraw our claim (the decision was not recorded); never someone else's."""
        try:
            if self.tracker.run_tags(self.run_id).get(names.TAG_DECISION_CLAIM) == self.token:
                self.tracker.delete_tag(self.run_id, names.TAG_DECISION_CLAIM)
        except Exception as exc:  # noqa: BLE001 - a claim left behind blocks, never publishes
            log.warning(
                "could not withdraw the decision claim on run %s (%s)",
                self.run_id,
                type(exc).__name__,
            )


@contextlib.contextmanager
def decision_lock(
    tracking_uri: str, run_id: str, *, timeout: float = LOCK_TIMEOUT_S
) -> Iterator[bool]:
    """The cross-process lock of a decision on ``run_id``; yields whether the store is local
    (then the lock alone serialises deciders; on a server the claim tag does). Not taken within
    ``timeout`` seconds: :class:`DecisionBusy`."""
    path = lock_path(tracking_uri, run_id)
    if path is None:
        check_run_id(run_id)
    with _cross_process_lock(path, run_id, timeout):
        yield path is not None
