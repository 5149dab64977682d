"""The commands a person runs next on a run, complete and ready to paste: the one place they are
written (the CLI after ``gate``/``run``/``review``, the report's "How to decide" box, the MLflow
run description).

They name the real run id and the workdir the run used (absolute, shell-quoted): the decision
commands need its quarantine and label key, and, unless the store is elsewhere, its MLflow store.
The reviewer is ``"$USER"``, which the shell fills in with whoever runs the command.

>>> decision_commands("r1", tracking_uri="sqlite:////w/x/mlflow.db", workdir="/w/x",
...                   flagged=["race=Other|Asian"])  # doctest: +NORMALIZE_WHITESPACE
['privacy-gate review r1 --workdir /w/x',
 'privacy-gate approve r1 --reviewer "$USER" --workdir /w/x',
 'privacy-gate approve r1 --reviewer "$USER" --suppress \\'race=Other|Asian\\' --workdir /w/x',
 'privacy-gate reject r1 --reviewer "$USER" --workdir /w/x']
>>> store_options(tracking_uri="http://mlflow:5000", workdir="/srv/gate")
'--tracking-uri http://mlflow:5000 --workdir /srv/gate'
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlparse

from privacy_gate.names import SQLITE_FILE
from privacy_gate.tracking.uri import default_tracking_uri

#: The reviewer of a suggested decision: whoever runs it (the shell expands it; never a
#: placeholder).
REVIEWER = '"$USER"'
#: Said once beside the decision commands: a reason is optional, and worth recording.
COMMENT_HINT = "add --comment 'TEXT' to record why with the decision"


def _shown_uri(uri: str) -> str | None:
    """``uri`` when it may be printed: never one carrying a password (a database URI); such a
    store is reached through MLFLOW_TRACKING_URI, as the gate's own host reaches it."""
    try:
        return None if urlparse(uri).password else uri
    except ValueError:
        return None


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
            shown = _shown_uri(tracking_uri)
            if shown:
                opts += ["--tracking-uri", shlex.quote(shown)]
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
    where = store_options(tracking_uri=tracking_uri, workdir=workdir)
    run = shlex.quote(run_id)

    def command(*parts: str) -> str:
        return " ".join(filter(None, ["privacy-gate", *parts, where]))

    lines = (
        [review_command(run_id, tracking_uri=tracking_uri, workdir=workdir)] if with_review else []
    )
    lines.append(command("approve", run, "--reviewer", REVIEWER))
    lines += [
        command("approve", run, "--reviewer", REVIEWER, "--suppress", shlex.quote(g))
        for g in flagged[:3]
    ]
    lines.append(command("reject", run, "--reviewer", REVIEWER))
    return lines


__all__ = ["COMMENT_HINT", "REVIEWER", "decision_commands", "review_command", "store_options"]
