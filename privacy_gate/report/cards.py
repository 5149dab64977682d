"""What the report's first screen holds: the summary cards (verdict and its reason in words, the
strongest attack with its interval, the best attacker's MACE advantage beside its null level, the
exposed share, the disclosure risks, utility, the flagged groups and what suppressing them would
do), then every reason in words and the run's identity. The rest of the report (tables, plots,
the full rules table) follows below them (:mod:`privacy_gate.report.html`).

The cards are a fixed grid of short texts: a long sentence or group label is clipped in its card
(the full text is in the reasons right below), so the cards fit the first 900 px of a 1280 px wide
window (tests/report/test_first_screen.py measures it in Chromium).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privacy_gate import tracking
from privacy_gate.gate.human import human_number, human_percent
from privacy_gate.names import COMBINED, DISCLOSURE_FAMILIES, EXPOSURE, UTILITY_QUALITY
from privacy_gate.report.inputs import ReportInputs
from privacy_gate.report.markup import escape, short
from privacy_gate.tracking.review_records import decision_words
from privacy_gate.words.checks import reasons_in_words
from privacy_gate.words.evidence import (
    effect_headline,
    effect_parts,
    first_effect,
    flagged_evidence,
)
from privacy_gate.words.figures import (
    auc_figure,
    exposed_figure,
    mace_figure,
    mace_query,
    risk_figure,
    strongest_attack,
    tpr_figure,
)
from privacy_gate.words.what_if import what_if

CARDS_CSS = """
.cards{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:10px;margin:10px 0 4px}
@media (max-width:900px){.cards{grid-template-columns:repeat(2,minmax(0,1fr))}}
.card{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:10px 12px;min-width:0;overflow:hidden}
.card h3{font-size:12px;font-weight:600;text-transform:uppercase;letter-spacing:.04em;color:#5b6475;margin:0 0 4px}
.card .big{font-size:21px;font-weight:600;margin:0 0 4px;font-variant-numeric:tabular-nums;line-height:1.2}
.card p{margin:0 0 4px;font-size:13px;line-height:1.4}
.card .clamp{display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:5;overflow:hidden}
.card.wide{grid-column:span 2}
.card.wide .clamp{-webkit-line-clamp:6}
.card.APPROVE{border-left:6px solid #1e7d32}.card.REVIEW{border-left:6px solid #b86e00}
.card.BLOCK{border-left:6px solid #b3261e}
.card .label{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.card dl{display:grid;grid-template-columns:auto 1fr;gap:0 8px;margin:0;font-size:13px}
.card dt{color:#5b6475} .card dd{margin:0;font-variant-numeric:tabular-nums}
.card p.lead{font-weight:600}
code.key{font-size:11px;color:#5b6475;background:none;padding:0}
ul.words li{margin:0 0 6px}
"""

#: reasons listed in words above the tables (the blocking ones come first); the rules table has all
MAX_REASONS = 12

_MEANING = {
    "APPROVE": "the release may be published",
    "REVIEW": "a human decides; nothing is published before",
    "BLOCK": "nothing is published",
}


def decision_state(inp: ReportInputs) -> str | None:
    """A REVIEW's decision in a few words once a reviewer took it (``approved by ana:
    published``); None while it is pending (or not a REVIEW)."""
    if not inp.decisions:
        return None
    return decision_words(inp.decisions[0], published=inp.published, short=True)


def _card(title: str, big: str, body: str = "", cls: str = "") -> str:
    """A card: its title, its headline (escaped already) and its body (markup built here)."""
    return f'<div class="card {cls}"><h3>{escape(title)}</h3><p class="big">{big}</p>{body}</div>'


def _words(text: str, cls: str = "") -> str:
    return f'<p class="{cls}">{escape(text)}</p>'


def _verdict_card(inp: ReportInputs) -> str:
    v = inp.verdict
    decision = str(v.get("verdict", "BLOCK"))
    cls = decision if decision in _MEANING else "BLOCK"
    reasons = reasons_in_words(v)
    decided = decision_state(inp)  # in the card's headline, instead of "a human decides"
    body = ""
    lead = v.get("points_at")
    effect = (v.get("group_effects") or {}).get(lead) if lead else None
    if effect:  # the group the evidence points at, with its effect size, before the reason
        body += f'<p class="lead">{escape(effect_headline(lead, effect))}</p>'
    if reasons:
        main = reasons[0]
        key = f'<code class="key">{escape(main.key)}</code>'
        body += f'<p class="clamp">{escape(main.sentence)} {key}</p>'
        if len(reasons) > 1:
            body += (
                f'<p><a href="#reasons">{len(reasons) - 1} more '
                f"reason{'s' if len(reasons) > 2 else ''} below</a></p>"
            )
    else:
        review = (v.get("budget") or {}).get("review")
        budget = f" at its share of the {100 * float(review):g}% review budget" if review else ""
        body += _words(f"Every check passed: no test found evidence of leakage{budget}.")
    if inp.published:
        body += f'<p class="label">published to <code>{escape(inp.published)}</code></p>'
    meaning = decided or _MEANING.get(decision, "")
    return _card(
        "Verdict",
        f'{escape(decision)} <span style="font-weight:400;font-size:14px">· '
        f"{escape(meaning)}</span>",
        body,
        f"wide {cls}",
    )


def _attack_card(metrics: Mapping[str, Any]) -> str:
    best = strongest_attack(metrics)
    if best is None:
        return _card("Strongest attack", "—", _words("No gated attack was measured."))
    auc = auc_figure(best)
    body = _words(f"{best.attack}: {auc.meaning}", "clamp")
    tpr = tpr_figure(best)
    if tpr:
        body += _words(f"{tpr.value} {tpr.meaning}", "clamp")
    return _card("Strongest attack", f"AUC {escape(auc.value)}", body)


def _mace_card(metrics: Mapping[str, Any]) -> str:
    query = mace_query(metrics)
    figure = mace_figure(metrics, query) if query else None
    if figure is None:
        return _card("Best attacker (MACE)", "—", _words("No MACE bounds were measured."))
    who = "all attacks' scores together" if query == COMBINED else f"{query}'s scores"
    body = _words(f"On {who}, 0 is guessing; {figure.meaning}.", "clamp")
    return _card("Best attacker (MACE)", escape(figure.value), body)


def _exposed_card(metrics: Mapping[str, Any]) -> str:
    figure = exposed_figure(metrics)
    if figure is None:
        return _card("Exposed records", "—", _words("No exposure figures for this run."))
    named = []
    for prefix, what in (("", "member targets"), ("scan_", "training records scanned")):
        count, tested = (
            metrics.get(f"{EXPOSURE}.{prefix}count"),
            metrics.get(f"{EXPOSURE}.{prefix}tested"),
        )
        if count is not None and tested is not None:
            named.append(f"{human_number(count)} of {human_number(tested)} {what}")
    body = _words(
        figure.meaning[:1].upper() + figure.meaning[1:] + ".", "clamp"
    )  # the share's own words
    if named:
        body += _words("Named: " + "; ".join(named) + ".", "clamp")
    return _card("Exposed records", escape(figure.value), body)


def _disclosure_card(metrics: Mapping[str, Any], disabled: Mapping[str, str]) -> str:
    rows = []
    for family in DISCLOSURE_FAMILIES:
        figure = risk_figure(metrics, family)
        if figure is not None:
            rows.append(
                f"<dt>{escape(family.replace('_', ' '))}</dt><dd>{escape(figure.value)}</dd>"
            )
    if not rows:
        why = next((r for k, r in disabled.items() if "disclosure" in k), None)
        return _card(
            "Disclosure risks",
            "—",
            _words("Not measured" + (f": {why}." if why else " in this run.")),
        )
    highest = max(float(metrics.get(f"{f}.risk_lower", float("-inf"))) for f in DISCLOSURE_FAMILIES)
    verdict = "above 0 for certain" if highest > 0 else "none above 0 for certain"
    body = f"<dl>{''.join(rows)}</dl>" + _words(
        "Risk and 95% interval; 0 is no better than for people outside the training data.", "clamp"
    )
    return _card("Disclosure risks", escape(verdict), body)


def _utility_card(inp: ReportInputs) -> str:
    metrics = inp.verdict.get("metrics") or {}
    quality = (inp.utility or {}).get("quality", metrics.get(UTILITY_QUALITY))
    if quality is None:
        return _card("Utility", "—", _words("No utility figures for this run."))
    bar = next(
        (
            c.get("threshold")
            for c in inp.verdict.get("checks") or []
            if c.get("metric") == UTILITY_QUALITY
        ),
        None,
    )
    body = _words(
        "One- and two-column distributions against the holdout (1 is identical)"
        + (f"; at least {human_number(bar)} required." if bar is not None else "."),
        "clamp",
    )
    worst = (inp.utility or {}).get("worst_1way_column")
    if worst:
        body += _words(
            f"Least alike: {worst} (TVD "
            f"{human_number((inp.utility or {}).get('worst_1way_tvd'), 2)})",
            "label",
        )
    return _card("Utility", escape(human_number(quality, 3)), body)


def _groups_card(inp: ReportInputs) -> str:
    v = inp.verdict
    flagged = list(v.get("flagged_subgroups") or [])
    if not flagged:
        n = len({str(r.get("group")) for r in inp.subgroups or []})
        return _card(
            "Subgroups",
            "none flagged",
            _words(
                f"{human_number(n)} groups audited." if n else "No subgroup audit for this run."
            ),
        )
    shown = first_effect(v)
    if shown is None:
        labels = "".join(_label(g) for g in flagged[:2])
        more = _words(f"and {len(flagged) - 2} more") if len(flagged) > 2 else ""
        first = what_if(v)[0]
    else:  # the group the evidence points at (or the first), with its effect size
        group, effect = shown
        labels = _label(group, bold=True) + _effect_lines(effect)
        more = _words(f"and {len(flagged) - 1} more") if len(flagged) > 1 else ""
        first = next(w for w in what_if(v) if w.group == group)
    body = (
        labels
        + more
        + (
            f'<p class="clamp">{escape(first.short())} <a href="#whatif">What suppressing '
            "does</a></p>"
        )
    )
    return _card("Flagged subgroups", escape(human_number(len(flagged))), body)


def _label(group: str, *, bold: bool = False) -> str:
    """A group label on one line of a card (cut with an ellipsis; its title holds it whole)."""
    shown = f"<b>{escape(group)}</b>" if bold else escape(group)
    return f'<p class="label" title="{escape(group)}">{shown}</p>'


def _effect_lines(effect: Mapping[str, Any]) -> str:
    """A flagged group's effect size in the groups card: its AUC with the interval, its share of
    the records named exposed (the full sentence is in the evidence below)."""
    lines = ""
    for part in effect_parts(effect):
        if part.startswith("AUC"):
            part += f" ({effect.get('attack')})"
        elif effect.get("named_all") and part.endswith("named records"):
            part += f" ({human_percent(effect['named'] / effect['named_all'])})"
        lines += _words(part)
    return lines


def summary_cards(inp: ReportInputs) -> str:
    """The cards of the first screen, in reading order."""
    metrics = inp.verdict.get("metrics") or {}
    cards = [
        _verdict_card(inp),
        _attack_card(metrics),
        _mace_card(metrics),
        _exposed_card(metrics),
        _disclosure_card(metrics, inp.verdict.get("disabled") or {}),
        _utility_card(inp),
        _groups_card(inp),
    ]
    return '<div id="summary" class="cards">' + "\n".join(cards) + "</div>"


def reasons_section(inp: ReportInputs) -> str:
    """Every reason in words (its key small beside it), what suppressing each flagged group would
    do, and the evidence on each flagged group."""
    v = inp.verdict
    reasons = reasons_in_words(v)
    parts = []
    if reasons:
        items = "".join(
            f"<li><b>{escape(r.action)}</b> {escape(r.sentence)} <code "
            f'class="key">{escape(r.key)}</code>'
            "</li>"
            for r in reasons[:MAX_REASONS]
        )
        if len(reasons) > MAX_REASONS:
            items += (
                f"<li>… and {len(reasons) - MAX_REASONS} more: the rules table below has "
                "every check in words</li>"
            )
        parts.append(f'<ul class="words reasons">{items}</ul>')
    else:
        parts.append("<p>Every rule passed.</p>")
    flagged = list(v.get("flagged_subgroups") or [])
    if flagged:
        explained = v.get("explained") or {}
        listed = ", ".join(
            f"{g} (flagged through {explained[g]}: not significant without it)"
            if g in explained
            else g
            for g in flagged
        )
        parts.append(f"<p>flagged subgroups: <b>{escape(listed)}</b></p>")
        evidence = flagged_evidence(inp.subgroups or [], v)
        parts.append(
            "<h3>The evidence on each flagged group</h3>"
            + '<ul class="words evidence">'
            + "".join(f"<li>{escape(s)}</li>" for s in evidence)
            + "</ul>"
        )
        parts.append(
            "<h3>What suppressing a group would do</h3>"
            + '<ul id="whatif" class="words whatif">'
            + "".join(f"<li>{escape(w.sentence())}</li>" for w in what_if(v))
            + "</ul>"
        )
    return f'<section id="reasons"><h2>Why: the reasons in words</h2>\n{"".join(parts)}\n</section>'


def run_section(inp: ReportInputs, *, approval: str, publication: str) -> str:
    """The run's identity: dataset, run (linked on a tracking server), when, rule-set and data
    hashes, review state and publication (``publication``: markup built by the page)."""
    v = inp.verdict
    run_id = inp.run_id or v.get("run_id")
    hashes = v.get("data_hashes") or {}
    hash_txt = (
        ", ".join(
            f"{escape(k.removesuffix('_sha256'))} <code>{escape(short(h))}</code>"
            for k, h in sorted(hashes.items())
        )
        or "none recorded"
    )
    link = ""
    url = tracking.run_url(inp.tracking_uri or "", inp.experiment_id, run_id)
    if url:
        link = f' · <a class="runlink" href="{escape(url)}">open the run in MLflow</a>'
        runs = tracking.experiment_url(inp.tracking_uri or "", inp.experiment_id)
        link += f' · <a class="runslink" href="{escape(runs)}">all runs</a>' if runs else ""
    rows = [
        f"dataset <b>{escape(inp.dataset or '—')}</b>",
        f"run <code>{escape(run_id or '—')}</code>{link}",
        f"status {escape(v.get('status'))}",
        f"review {escape(approval)}",
        f"created {escape(v.get('created_at') or '—')}",
        f"rules <code>{escape(short(v.get('rules_hash')))}</code>",
        f"data sha256: {hash_txt}",
        publication,
    ]
    return (
        '<section id="run" class="meta-section"><h2>This run</h2><div class="meta">'
        + "".join(f"<span>{r}</span>" for r in rows)
        + "</div></section>"
    )


__all__ = ["CARDS_CSS", "reasons_section", "run_section", "summary_cards"]
