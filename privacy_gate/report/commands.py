"""The commands a reviewer runs to decide a REVIEW run, pointed at the run's store (the report's
"How to decide" box, the MLflow run description)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from privacy_gate.names import SQLITE_FILE


def store_options(uri: str | None) -> str:
    """The options that point a decision command at the run's store (``--workdir`` of a sqlite
    store, ``--tracking-uri`` of a server)."""
    if uri and uri.startswith("sqlite:///") and uri.endswith("/" + SQLITE_FILE):
        return " --workdir " + shlex.quote(str(Path(uri.removeprefix("sqlite:///")).parent))
    if uri and uri.startswith(("http://", "https://")):
        return " --tracking-uri " + shlex.quote(uri) + " --workdir WORKDIR"
    return ""


def decision_commands(run_id: str, tracking_uri: str | None, flagged: Sequence[str]) -> list[str]:
    """The commands that decide a REVIEW run: review, approve (and approve suppressing each of the
    first three flagged groups), reject."""
    opt = store_options(tracking_uri)
    lines = [f"privacy-gate review {run_id}{opt}",
             f"privacy-gate approve {run_id} --reviewer NAME --comment 'why'{opt}"]
    lines += [f"privacy-gate approve {run_id} --reviewer NAME --suppress {shlex.quote(g)}{opt}" for g in flagged[:3]]
    lines.append(f"privacy-gate reject {run_id} --reviewer NAME --comment 'why'{opt}")
    return lines


__all__ = ["decision_commands", "store_options"]
