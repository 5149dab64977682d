"""Data-derived text made safe where it is shown: a terminal line (:func:`console_line`) and
Markdown rendered by the MLflow UI (:func:`markdown_text`).

Column names, category values (group labels), reviewers' comments and the messages built from them
come from users and records. On a terminal an ANSI escape sequence can recolour, move the cursor
or clear the screen, and a line break can start a line that looks like the gate's own
(``VERDICT: APPROVE``); in Markdown a backtick run can close a code fence and ``![..](..)`` or
``<img>`` render. A leaf module: every layer that shows text may import it.

>>> console_line("race=x\\n\\x1b[32mVERDICT: APPROVE")
'race=x\\\\nVERDICT: APPROVE'
>>> print(markdown_text("`a` **b** <img src=x> ![p](http://x) race=Black: AUC 0.68 [0.61, 0.75]"))
\\`a\\` \\*\\*b\\*\\* &lt;img src=x&gt; ![p\\](http://x) race=Black: AUC 0.68 [0.61, 0.75]
"""

from __future__ import annotations

import re
import unicodedata

#: terminal escape sequences: CSI (``ESC [ ... final``, and the 8-bit ``\x9b``), OSC (``ESC ] ... BEL``
#: or ``ESC \``), DCS/SOS/PM/APC strings, and two-character escapes
_ESCAPES = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
                      r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
                      r"|\x1b[ -~]?")
#: characters that end a line on some terminal or viewer: shown escaped, so a value cannot start a line
_LINE_BREAKS = {"\n": "\\n", "\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\x1c": "\\x1c", "\x1d": "\\x1d",
                "\x1e": "\\x1e", "\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029", "\t": "\\t"}
#: bidirectional overrides and isolates: they reorder what is shown ("Trojan source")
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def console_line(text: object) -> str:
    """``text`` as one terminal line: escape sequences and other control characters removed, line
    breaks (and tabs) shown as ``\\n``, ``\\r``, ... The one function every console output of
    data-derived text goes through (the verdict, ``review``, ``review --pending``, decisions, errors)."""
    text = _ESCAPES.sub("", str(text))
    return "".join(_LINE_BREAKS.get(ch) or ("" if ch in _BIDI or unicodedata.category(ch) == "Cc" else ch)
                   for ch in text)


def console_lines(lines: list[str] | tuple[str, ...]) -> str:
    """Each of ``lines`` (one logical line each) through :func:`console_line`, joined by line breaks."""
    return "\n".join(console_line(line) for line in lines)


#: what starts inline markup in one line of Markdown: a backslash, code (backtick), emphasis and
#: strike-through (``*``, ``_``, ``~``), and the ``](`` / ``][`` that makes ``[..]`` a link or an image;
#: ``<``, ``>`` and ``&`` (HTML, autolinks, entities) become entities. Line-start markup (headings, a
#: closing code fence) cannot occur: the text is one line placed after a list marker.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_~]|\](?=[(\[]))")


def markdown_text(text: object) -> str:
    """``text`` (a user- or data-derived string) as literal Markdown inline text: one line
    (:func:`console_line`), no markup, links, images, code spans or HTML; ordinary text (``race=Black:
    AUC 0.68 [0.61, 0.75]``) reads as it is."""
    line = console_line(text)
    line = line.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", line)


def markdown_code(text: object) -> str:
    """``text`` as an inline code span that no backtick inside it can close (one line).

    >>> markdown_code("race=Black"), markdown_code("a`` ![x](y)")
    ('`race=Black`', '``` a`` ![x](y) ```')
    """
    line = console_line(text)
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", line)), default=0) + 1)
    return f"{ticks}{line}{ticks}" if ticks == "`" else f"{ticks} {line} {ticks}"


def markdown_fence(lines: list[str] | tuple[str, ...]) -> list[str]:
    """``lines`` as a fenced code block none of them can close: each one line, the fence longer than
    any backtick run inside."""
    shown = [console_line(line) for line in lines]
    longest = max((len(r) for line in shown for r in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, *shown, fence]
