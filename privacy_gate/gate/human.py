"""Numbers for people: the one formatter of every number a report, summary or log line shows.
Counts as integers with thousands separators, never exponent notation (the README promises it),
p-values below 0.0001 as "< 0.0001".

>>> human_number(5000.0), human_number(20025), human_number(12345.678), human_number(0.68321, 2)
('5,000', '20,025', '12,346', '0.68')
>>> [human_number(x) for x in (0.00002, 0.0008, 1e-9, None, float("nan"))]
['0.00002', '0.0008', '< 0.000001', '—', '—']
>>> human_number(0.5), human_number(-3.0), human_number(True), human_number(9e-17)
('0.5', '-3', 'True', '< 0.000001')
"""

from __future__ import annotations

import math
from typing import Any

#: below this a figure is shown as "< 0.000001": nothing a reader compares is that small, and
#: positional notation of 1e-17 is unreadable (exponent notation is not for people)
TINY = 1e-6
#: the smallest p-value shown as a number; below it "< 0.0001" (the exact figure is in verdict.json)
SMALLEST_P = 1e-4


def human_number(value: Any, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits (integers in full), separators above 999."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return "—"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 1e15:
        return f"{v:,.0f}"
    if abs(v) < TINY:
        return ("> -" if v < 0 else "< ") + f"{TINY:.6f}"
    magnitude = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def human_percent(share: Any) -> str:
    """A share in [0, 1] as a rounded percentage: ``0.3125`` -> ``31%``, ``0.004`` -> ``0.4%``.

    >>> human_percent(0.3125), human_percent(0.004), human_percent(1.0), human_percent(None)
    ('31%', '0.4%', '100%', '—')
    """
    try:
        p = 100 * float(share)
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(p):
        return "—"
    return f"{p:.0f}%" if p >= 10 or p == 0 or p.is_integer() else f"{human_number(p, 1)}%"


def human_pvalue(p: Any) -> str:
    """A p-value for people: two significant digits, "< 0.0001" below that.

    >>> [human_pvalue(p) for p in (0.0008, 0.02524, 9e-17, 1.0, None)]
    ['0.0008', '0.025', '< 0.0001', '1', '—']
    """
    try:
        v = float(p)
    except (TypeError, ValueError):
        return "—"
    if not math.isfinite(v):
        return "—"
    return f"< {human_number(SMALLEST_P)}" if v < SMALLEST_P else human_number(v, 2)


def p_equals(p: Any) -> str:
    """``p = 0.0008`` or ``p < 0.0001`` (never ``p = < 0.0001``).

    >>> p_equals(0.0008), p_equals(2e-181)
    ('p = 0.0008', 'p < 0.0001')
    """
    text = human_pvalue(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"
