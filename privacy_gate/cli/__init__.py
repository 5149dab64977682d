"""The ``privacy-gate`` command: the command-line contract, one module per command group.

- :mod:`.common`: the Typer app, exit codes, shared options, output, probes;
- :mod:`.checks`: what is checked before a command runs anything (exit 2, one line);
- :mod:`.gating`: ``run`` and ``gate``; :mod:`.review`: ``review``, ``approve``, ``reject``;
- :mod:`.operations`: ``doctor``, ``serve``, ``deploy``; :mod:`.studies`: ``dependency-study``,
  ``audit-dp``; :mod:`.inspection`: ``check-config``, ``list``.

Exit codes: 0 APPROVE, 3 REVIEW, 4 BLOCK (including any failure inside the gate), 2 invalid usage,
config or input before anything ran. With ``--json`` the last line of stdout is the verdict JSON.
The logic lives in the pipeline and the flows; heavy packages (Prefect, MLflow, Great
Expectations, SDV, torch, scikit-learn) are imported inside the commands that need them, so
``--version``, ``--help`` and the review commands start fast.
"""

from __future__ import annotations

# the command modules register their commands on ``app`` when imported, in the order ``--help``
# lists them: run and gate, then the review, operations, studies and inspection commands
from privacy_gate.cli import (
    gating,  # noqa: F401
    inspection,  # noqa: F401
    operations,  # noqa: F401
    review,  # noqa: F401
    studies,  # noqa: F401
)
from privacy_gate.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    app(prog_name="privacy-gate")  # the same usage line from ``python -m privacy_gate.cli``
