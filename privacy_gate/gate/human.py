"""Numbers for people: counts as integers with thousands separators, no exponent notation for
anything a report or log line shows at ordinary magnitudes.

>>> human_number(5000.0), human_number(20025), human_number(12345.678), human_number(0.68321, 2)
('5,000', '20,025', '12,346', '0.68')
>>> human_number(0.00002), human_number(0.0008), human_number(1e-9), human_number(None), human_number(float("nan"))
('0.00002', '0.0008', '1e-09', '—', '—')
>>> human_number(0.5), human_number(-3.0), human_number(True)
('0.5', '-3', 'True')
"""

from __future__ import annotations

import math
from typing import Any


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
    magnitude = math.floor(math.log10(abs(v)))
    if abs(v) < 1e-6:
        return f"{v:.{max(digits - 3, 1)}g}"  # far below anything a reader compares: keep it short
    decimals = max(0, digits - 1 - magnitude)
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def human_percent(share: Any) -> str:
    """A share in [0, 1] as a rounded percentage: ``0.3125`` -> ``31%``, ``0.004`` -> ``0.4%``.

    >>> human_percent(0.3125), human_percent(0.004), human_percent(1.0)
    ('31%', '0.4%', '100%')
    """
    p = 100 * float(share)
    return f"{p:.0f}%" if p >= 10 or p == 0 or p.is_integer() else f"{human_number(p, 1)}%"
