"""The commands a person runs next on a run, complete and ready to paste: the one place they are
written (the CLI after ``gate``/``run``/``review``, the report's "How to decide" box, the MLflow
run description).

They name the real run id and the workdir the run used (absolute, shell-quoted): the decision
commands need its quarantine and label key, and, unless the store is elsewhere, its MLflow store.
They depend on no shell variable that may be unset: the reviewer is ``"$(id -un)"``, which the
shell fills in with the login name of whoever runs the command (``$USER`` is unset in many
containers and cron jobs, and an empty name is refused). A store whose URI carries a credential
is never printed; the command reads it from ``MLFLOW_TRACKING_URI`` as
``"${MLFLOW_TRACKING_URI:?...}"``, which the shell refuses to run, saying what to set, when it is
unset (rather than reach the workdir's own store and not find the run).

>>> decision_commands("r1", tracking_uri="sqlite:////w/x/mlflow.db", workdir="/w/x",
...                   flagged=["race=Other|Asian"])  # doctest: +NORMALIZE_WHITESPACE
['privacy-gate review r1 --workdir /w/x',
 'privacy-gate approve r1 --reviewer "$(id -un)" --workdir /w/x',
 'privacy-gate approve r1 --reviewer "$(id -un)" --suppress \\'race=Other|Asian\\' --workdir /w/x',
 'privacy-gate reject r1 --reviewer "$(id -un)" --workdir /w/x']
>>> store_options(tracking_uri="http://mlflow:5000", workdir="/srv/gate")
'--tracking-uri http://mlflow:5000 --workdir /srv/gate'
>>> secret = store_options(tracking_uri="postgresql://gate:pw@db/mlflow", workdir="/srv/gate")
>>> print(secret)  # doctest: +ELLIPSIS
--tracking-uri "${MLFLOW_TRACKING_URI:?set it to the store URI, ...}" --workdir /srv/gate
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from privacy_gate.names import SQLITE_FILE
from privacy_gate.safe_text import mask_secrets
from privacy_gate.tracking.uri import default_tracking_uri

#: The reviewer of a suggested decision: whoever runs it (the shell expands it; never a placeholder,
#: and no variable that may be unset).
REVIEWER = '"$(id -un)"'
#: A store URI that carries a credential, in a printed command: read from the environment, and
#: refused by the shell (naming what to set) when it is not there.
STORE_FROM_ENV = '"${MLFLOW_TRACKING_URI:?set it to the store URI, credentials included}"'
#: Said once beside the decision commands: a reason is optional, and worth recording.
COMMENT_HINT = "add --comment 'TEXT' to record why with the decision"


def _shown_uri(uri: str) -> str:
    """``uri`` (shell-quoted) when it may be printed; else (a password, a token: anything
    ``mask_secrets`` hides) :data:`STORE_FROM_ENV`: such a store is reached through
    MLFLOW_TRACKING_URI, as the gate's own host reaches it."""
    try:
        secret = bool(urlparse(uri).password) or mask_secrets(uri) != uri
    except ValueError:
        secret = True
    return STORE_FROM_ENV if secret else shlex.quote(uri)


def store_options(*, tracking_uri: str | None, workdir: str | Path | None) -> str:
    """The options that point a command at a run: ``--workdir`` (absolute), and ``--tracking-uri``
    when the store is not the workdir's own sqlite file. Without a recorded workdir (runs recorded
    before it was), the workdir of a sqlite store in one."""
    opts = []
    if workdir is not None:
        workdir = Path(workdir).resolve()
    if tracking_uri and (workdir is None or tracking_uri != default_tracking_uri(workdir)):
        if (
            workdir is None
            and tracking_uri.startswith("sqlite:///")
            and tracking_uri.endswith("/" + SQLITE_FILE)
        ):
            workdir = Path(tracking_uri.removeprefix("sqlite:///")).parent
        else:
            opts += ["--tracking-uri", _shown_uri(tracking_uri)]
    if workdir is not None:
        opts += ["--workdir", shlex.quote(str(workdir))]
    return " ".join(opts)


def review_command(run_id: str, *, tracking_uri: str | None, workdir: str | Path | None) -> str:
    """``privacy-gate review RUN --workdir W``: the run's evidence and decisions."""
    return " ".join(
        filter(
            None,
            [
                "privacy-gate review",
                shlex.quote(run_id),
                store_options(tracking_uri=tracking_uri, workdir=workdir),
            ],
        )
    )


def decision_command(
    action: str,
    run_id: str,
    *,
    tracking_uri: str | None,
    workdir: str | Path | None,
    suppress: Sequence[str] = (),
    reviewer: str | None = None,
) -> str:
    """``privacy-gate approve|reject RUN --reviewer ... [--suppress G]... --workdir W`` (the
    reviewer :data:`REVIEWER` unless a name is given, shell-quoted)."""
    who = REVIEWER if reviewer is None else shlex.quote(reviewer)
    parts = ["privacy-gate", action, shlex.quote(run_id), "--reviewer", who]
    for group in suppress:
        parts += ["--suppress", shlex.quote(group)]
    where = store_options(tracking_uri=tracking_uri, workdir=workdir)
    return " ".join(filter(None, [*parts, where]))


def decision_commands(
    run_id: str,
    *,
    tracking_uri: str | None,
    workdir: str | Path | None,
    flagged: Sequence[str],
    with_review: bool = True,
) -> list[str]:
    """The commands that decide a REVIEW run: review (unless ``with_review`` is False: the reader is
    looking at it), approve (and approve suppressing each of the first three flagged groups,
    labelled as the gate shows them), reject."""
    where = dict(tracking_uri=tracking_uri, workdir=workdir)
    lines = [review_command(run_id, **where)] if with_review else []
    lines.append(decision_command("approve", run_id, **where))
    lines += [decision_command("approve", run_id, suppress=[g], **where) for g in flagged[:3]]
    lines.append(decision_command("reject", run_id, **where))
    return lines


__all__ = [
    "COMMENT_HINT",
    "REVIEWER",
    "STORE_FROM_ENV",
    "decision_command",
    "decision_commands",
    "review_command",
    "store_options",
]
