"""Gate rules -> Verdict (APPROVE / REVIEW / BLOCK), fail closed."""

from privacy_gate.gate.rules import check_rule, decide
from privacy_gate.gate.verdict import EXIT_CODES, Check, Verdict

__all__ = ["EXIT_CODES", "Check", "Verdict", "check_rule", "decide"]
