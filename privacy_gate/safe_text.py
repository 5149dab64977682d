"""Data-derived text made safe where it is shown: a terminal line (:func:`console_line`) and
Markdown rendered by the MLflow UI (:func:`markdown_text`); credentials in URIs masked
wherever text is written (:func:`mask_secrets`).

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

#: terminal escape sequences: CSI (``ESC [ ... final``, and the 8-bit ``\x9b``), OSC (``ESC ] ...
#: BEL`` or ``ESC \``), DCS/SOS/PM/APC strings, and two-character escapes
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
#: characters that end a line on some terminal or viewer: shown escaped, so a value cannot start a
#: line
_LINE_BREAKS = {
    "\n": "\\n",
    "\r": "\\r",
    "\x0b": "\\v",
    "\x0c": "\\f",
    "\x1c": "\\x1c",
    "\x1d": "\\x1d",
    "\x1e": "\\x1e",
    "\x85": "\\x85",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
    "\t": "\\t",
}
#: bidirectional overrides and isolates: they reorder what is shown ("Trojan source")
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


#: a URI as it appears in running text: a scheme, ``://``, then everything up to a space, a quote or
#: an angle bracket (so a URI inside ``'...'``, ``"..."`` or ``<a href="...">`` ends where it
#: should)
_URI = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*")
#: the userinfo of a URI's authority (``user:password@``, or a bare token ``TOKEN@``): greedy up to
#: the last ``@`` before the path, so an unencoded ``@`` inside a password is masked too
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)@")
#: query (or matrix) parameters whose name says they hold a secret: ``token``, ``access_token``,
#: ``password``, ``pwd``, ``secret``, ``key``, ``api_key``, ``sig``/``signature`` (pre-signed URLs),
#: ``credential``, ``auth`` ... matched case-insensitively anywhere in the name; ``;`` also
#: separates, so a URI whose ``&`` was escaped as ``&amp;`` (HTML) is masked the same
_SECRET_PARAM = re.compile(
    r"([?&;])([\w.\-\\]*(?:token|passw|pwd|secret|key|sig|credential|auth|session)[\w.\-\\]*)=([^&#;]*)",
    re.IGNORECASE,
)
MASK = "***"


def mask_uri(uri: str) -> str:
    """``uri`` with its credentials masked, as MLflow masks a store's password when it prints a URI:
    the password of its userinfo (all of it when it is one bare token) and the value of every
    secret-looking query parameter. Everything else, the user name included, reads as it was.

    >>> mask_uri("postgresql://gate:s3cr3t@db.internal:5432/mlflow")
    'postgresql://gate:***@db.internal:5432/mlflow'
    >>> mask_uri("https://ghp_abc123@example.org/x?x-amz-signature=f00&part=2&access_token=t")
    'https://***@example.org/x?x-amz-signature=***&part=2&access_token=***'
    >>> mask_uri("sqlite:////srv/gate/mlflow.db")
    'sqlite:////srv/gate/mlflow.db'
    """

    def userinfo(m: re.Match) -> str:
        user, colon, _password = m.group(2).partition(":")
        return f"{m.group(1)}{user}:{MASK}@" if colon else f"{m.group(1)}{MASK}@"

    masked = _USERINFO.sub(userinfo, uri, count=1)
    return _SECRET_PARAM.sub(
        lambda m: f"{m.group(1)}{m.group(2)}={MASK}" if m.group(3) else m.group(0), masked
    )


def mask_secrets(text: object) -> str:
    """``text`` with the credentials of every URI in it masked (:func:`mask_uri`). The one function
    every writer of text that may quote a configured address goes through: console lines, error
    messages, the MLflow description, tags, params and text artifacts (summary, report, verdict,
    decision records), so a tracking or storage URI's password never lands in a file, a store or a
    log.

    >>> mask_secrets("store postgresql://u:pw@h/db (from --tracking-uri): not reachable")
    'store postgresql://u:***@h/db (from --tracking-uri): not reachable'
    >>> mask_secrets("<a href='sqlite:////w/mlflow.db?token=abc&amp;mode=ro'>")
    "<a href='sqlite:////w/mlflow.db?token=***&amp;mode=ro'>"
    >>> mask_secrets("race=Black&key=x, no URI here")
    'race=Black&key=x, no URI here'
    """
    text = str(text)
    return _URI.sub(lambda m: mask_uri(m.group(0)), text) if "://" in text else text


def console_line(text: object) -> str:
    """``text`` as one terminal line: escape sequences and other control characters removed, line
    breaks (and tabs) shown as ``\\n``, ``\\r``, ... and credentials in URIs masked. The one
    function every console output of data-derived text goes through (the verdict, ``review``,
    ``review --pending``, decisions, errors)."""
    text = mask_secrets(_ESCAPES.sub("", str(text)))
    return "".join(
        _LINE_BREAKS.get(ch) or ("" if ch in _BIDI or unicodedata.category(ch) == "Cc" else ch)
        for ch in text
    )


def console_lines(lines: list[str] | tuple[str, ...]) -> str:
    """Each of ``lines`` (one logical line each) through :func:`console_line`, joined by line
    breaks."""
    return "\n".join(console_line(line) for line in lines)


#: what starts inline markup in one line of Markdown: a backslash, code (backtick), emphasis and
#: strike-through (``*``, ``_``, ``~``), and the ``](`` / ``][`` that makes ``[..]`` a link or an
#: image; ``<``, ``>`` and ``&`` (HTML, autolinks, entities) become entities. Line-start markup
#: (headings, a closing code fence) cannot occur: the text is one line placed after a list marker.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_~]|\](?=[(\[]))")


def markdown_text(text: object) -> str:
    """``text`` (a user- or data-derived string) as literal Markdown inline text: one line
    (:func:`console_line`), no markup, links, images, code spans or HTML; ordinary text
    (``race=Black: AUC 0.68 [0.61, 0.75]``) reads as it is."""
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
