"""Gate rules -> Verdict (APPROVE / REVIEW / BLOCK), fail closed: the pure decision (how a verdict
is said to a reader is :mod:`privacy_gate.words`).

``Verdict``, ``Check`` and ``EXIT_CODES`` are loaded with the package (a verdict is read back by
every review command); ``decide`` and ``check_rule`` — the rules, the error budget and its
statistics (SciPy, the estimators) — only when asked for, so reading a verdict stays fast.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from privacy_gate.gate.verdict import EXIT_CODES, Check, Verdict

if TYPE_CHECKING:
    from privacy_gate.gate.rules import check_rule, decide

__all__ = ["EXIT_CODES", "Check", "Verdict", "check_rule", "decide"]

_LAZY = {"check_rule": "privacy_gate.gate.rules", "decide": "privacy_gate.gate.rules"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
