"""Markdown and console summaries of a verdict (Prefect artifact, CLI output)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from privacy_gate.gate.budget import TestOutcome
from privacy_gate.gate.human import human_number, human_percent, human_pvalue
from privacy_gate.gate.rules import TWIN_LIMIT_METRIC
from privacy_gate.gate.verdict import Verdict
from privacy_gate.names import (
    ART_REPORT,
    ART_SUBGROUPS,
    COMBINED,
    LEAKAGE_METRICS,
    UTILITY_QUALITY,
    split_attack_metric,
)
from privacy_gate.report.commands import COMMENT_HINT, decision_commands
from privacy_gate.safe_text import console_lines, markdown_code, markdown_fence, markdown_text
from privacy_gate.tracking import artifact_url, experiment_url, run_url, ui_command
from privacy_gate.words.checks import reasons_in_words
from privacy_gate.words.evidence import (
    effect_headline,
    evidence_by_group,
    first_effect,
    flagged_evidence,
    lead_effect,
)
from privacy_gate.words.figures import (
    auc_figure,
    exposed_figure,
    mace_figure,
    mace_query,
    strongest_attack,
)
from privacy_gate.words.what_if import what_if

if TYPE_CHECKING:  # the pipeline is a layer above: the outcome is only read here
    from privacy_gate.pipeline.result import RunOutcome

_ICON = {"APPROVE": "✅", "REVIEW": "🟡", "BLOCK": "⛔"}


def attack_metric_table(verdict: Verdict) -> list[tuple[str, dict[str, float]]]:
    """Release-level figures per attack (subgroup/entity/dependency figures live in the report)."""
    attacks: dict[str, dict[str, float]] = {}
    for key, value in verdict.metrics.items():
        parts = split_attack_metric(key)
        if parts:
            attacks.setdefault(parts[0], {})[parts[1]] = value
    return sorted(attacks.items())


def description_markdown(
    verdict: Verdict,
    *,
    evidence: Sequence[str],
    summary: str,
    tracking_uri: str | None,
    workdir: str | None = None,
    decided: str | None = None,
) -> str:
    """The MLflow run page's description, which the UI shows folded after its first lines: the
    verdict (and ``decided``: a reviewer's decision on it,
    :func:`~privacy_gate.tracking.review_records.decision_words`) with the flagged group the
    evidence points at and its effect size, its first reason in words (a BLOCK's first blocking
    one: what the folded description shows at a glance, tests/report/test_glance.py), then the
    evidence on each flagged group, then (a pending REVIEW) the commands that decide it (pointed at
    the run's ``workdir`` and store), then the whole summary."""
    shown = first_effect(verdict.to_dict())
    lead = f"{markdown_text(effect_headline(*shown))} · " if shown else ""
    stamp = f"**{markdown_text(decided)}** · " if decided else ""
    # the decision and the group with its effect size on the first line: the run page folds the rest
    head = [
        f"**{verdict.decision}** (status {verdict.status}) · {stamp}{lead}"
        f"{len(verdict.reasons)} reason(s) · full report: artifact `{ART_REPORT}`",
        "",
    ]
    # evidence, sentences and group labels hold category values: literal text, never markup
    first = [reasons_in_words(verdict)[0].sentence] if verdict.reasons else []
    if first or evidence:
        head += [f"- {markdown_text(sentence)}" for sentence in [*first, *evidence]] + [""]
    if verdict.decision == "REVIEW" and verdict.flagged_subgroups:
        head += [f"- {markdown_text(w.sentence())}" for w in what_if(verdict)] + [""]
    if verdict.decision == "REVIEW" and verdict.run_id and not decided:
        commands = decision_commands(
            verdict.run_id,
            tracking_uri=tracking_uri,
            workdir=workdir,
            flagged=verdict.flagged_subgroups,
        )
        head += [f"Decide ({COMMENT_HINT}):", "", *markdown_fence(commands), ""]
    return "\n".join(head) + "\n" + summary


def run_description(
    tracker: Any,
    run_id: str,
    verdict: Verdict,
    *,
    summary: str,
    workdir: str | None,
    decided: str | None = None,
) -> str:
    """:func:`description_markdown` of a recorded run: the evidence on its flagged groups from
    its effect records, else its audit rows (``audit/subgroups.json``)."""
    rows: list = []
    if verdict.flagged_subgroups and tracker.artifact_exists(run_id, ART_SUBGROUPS):
        rows = tracker.read_json(run_id, ART_SUBGROUPS) or []
    return description_markdown(
        verdict.with_run_id(verdict.run_id or run_id),
        evidence=flagged_evidence(rows, verdict.to_dict()),
        summary=summary,
        tracking_uri=tracker.uri,
        workdir=workdir,
        decided=decided,
    )


def verdict_markdown(
    verdict: Verdict,
    *,
    ui_hint: str | None = None,
    tracking_uri: str | None = None,
    experiment_id: str | None = None,
) -> str:
    """``tracking_uri`` + ``experiment_id``: on an MLflow server (http/https) the run is linked;
    otherwise ``ui_hint`` (the ``mlflow ui`` command) is shown with the run id. Either way the
    HTML report's artifact path is named."""
    lines = [f"# {_ICON[verdict.decision]} {verdict.decision} (status: {verdict.status})", ""]
    if verdict.run_id:
        url = run_url(tracking_uri or "", experiment_id, verdict.run_id)
        if url:
            lines.append(f"MLflow run: [{verdict.run_id}]({url}) — report: artifact `{ART_REPORT}`")
            runs = experiment_url(tracking_uri or "", experiment_id)
            if runs:
                lines.append(f"All runs of the experiment: [runs]({runs})")
        else:
            lines.append(
                f"MLflow run: `{verdict.run_id}`"
                + (f" — open with `{ui_hint}`" if ui_hint else "")
                + f", then the run's artifact `{ART_REPORT}` (the full report)"
            )
        lines.append("")
    # the headline figures first, each beside its no-leak level; then why the gate decided
    figures = headline_figures(verdict)
    if figures:
        lines += (
            ["## Figures beside their no-leak levels", ""]
            + [f"- {markdown_text(x)}" for x in figures]
            + [""]
        )
    lines += ["## Reasons", ""]
    lines += [
        f"- **{r.action}** {markdown_text(r.sentence)} ({markdown_code(r.key)})"
        for r in reasons_in_words(verdict)
    ] or ["- every rule passed"]
    if verdict.flagged_subgroups:
        lines += ["", "## Flagged subgroups (approve or suppress each)", ""]
        lines += [f"- {markdown_text(x)}" for x in _effect_sentences(verdict)]
        lines += [f"- {markdown_text(w.sentence())}" for w in what_if(verdict)]
    table = attack_metric_table(verdict)
    if table:
        lines += [
            "",
            "## Attacks",
            "",
            "| attack | "
            + " | ".join(LEAKAGE_METRICS)
            + " | MACE advantage [95% bounds] | no-leak MACE level |",
            "|---|" + "---|" * (len(LEAKAGE_METRICS) + 2),
        ]
        for name, m in table:
            cells = [human_number(m[k]) if k in m else "–" for k in LEAKAGE_METRICS]
            bias = verdict.metrics.get(f"{name}.mace.bias")
            lines.append(
                f"| {name} | "
                + " | ".join(cells)
                + f" | {_mace_cell(m)} | {human_number(bias, 3)} |"
            )
    if UTILITY_QUALITY in verdict.metrics:
        lines += [
            "",
            "Utility (1 - mean marginal TVD vs holdout): "
            f"**{human_number(verdict.metrics[UTILITY_QUALITY], 3)}**",
        ]
    return "\n".join(lines) + "\n"


def _effect_sentences(verdict: Verdict) -> list[str]:
    """The evidence on each flagged group the run recorded an effect for (the group the evidence
    points at first); the others are in the report."""
    return [s for g, s in evidence_by_group([], verdict.to_dict()) if g in verdict.group_effects]


def _mace_cell(m: dict[str, float]) -> str:
    if "mace.advantage" not in m:
        return "–"
    bounds = [human_number(m.get(k), 3) for k in ("mace.advantage_lower", "mace.advantage_upper")]
    return f"{human_number(m['mace.advantage'], 3)} [{bounds[0]}, {bounds[1]}]"


def headline_figures(verdict: Verdict) -> list[str]:
    """The strongest attack's AUC, the best attacker's MACE advantage and the exposed share, each
    beside its no-leak level (``words.figures``): a bare figure on a clean release reads like a
    leak."""
    metrics, out = verdict.metrics, []
    best = strongest_attack(metrics)
    if best is not None:
        out.append(auc_figure(best).line(f"strongest attack, {best.attack}: AUC"))
    query = mace_query(metrics)
    mace = mace_figure(metrics, query) if query else None
    if mace is not None:
        out.append(
            mace.line(
                "best attacker on "
                + ("all attacks' scores" if query == COMBINED else f"{query}'s scores")
                + ": MACE advantage"
            )
        )
    exposed = exposed_figure(metrics)
    if exposed is not None:
        out.append(exposed.line("exposed records:"))
    return out


def verdict_console(verdict: Verdict) -> str:
    lines = [
        f"VERDICT: {verdict.decision}  (status: {verdict.status}, run: {verdict.run_id or '-'})"
    ]
    lead = lead_effect(verdict.to_dict())
    if lead:  # the group the evidence points at, with its effect size, before the reasons
        lines.append(f"  the evidence points at {lead}")
    for r in reasons_in_words(verdict):
        lines.append(f"  - [{r.action}] {r.sentence} ({r.key})")
    lines += [f"  {x}" for x in headline_figures(verdict)]
    # what natural twins hid: an APPROVE says how small a verbatim-copy leak could have passed
    # unseen
    lines += [f"  {c.message}" for c in verdict.checks if c.metric == TWIN_LIMIT_METRIC]
    for name, m in attack_metric_table(verdict):
        line = f"  {name:<16} " + "  ".join(
            f"{k}={human_number(m[k])}" for k in LEAKAGE_METRICS if k in m
        )
        if "mace.advantage" in m:
            bias = verdict.metrics.get(f"{name}.mace.bias")
            line += f"  MACE advantage={_mace_cell(m)}" + (
                f" (no-leak level {human_number(bias, 3)})" if bias else ""
            )
        lines.append(line.rstrip())
    if verdict.flagged_subgroups:
        lines.append(f"  flagged subgroups: {', '.join(verdict.flagged_subgroups)}")
        lines += [f"    {x}" for x in _effect_sentences(verdict)]
        lines += [f"    {w.sentence()}" for w in what_if(verdict)]
    if UTILITY_QUALITY in verdict.metrics:
        lines.append(f"  utility.quality={human_number(verdict.metrics[UTILITY_QUALITY])}")
    if verdict.budget:
        b = verdict.budget
        hit = [t["name"] for t in b.get("tests", []) if TestOutcome.from_dict(t).review]
        lines.append(
            f"  error budget: a leak-free release is held back at most {100 * b['review']:g}% of "
            "the time, "
            f"blocked at most {100 * b['block']:g}%; {len(b.get('tests', []))} tests, significant: "
            f"{', '.join(hit) or 'none'}"
        )
    for key, why in sorted(verdict.disabled.items()):
        lines.append(f"  turned off: {key} ({why})")
    return console_lines(lines)  # group labels and messages hold data: no escapes, no forged lines


def run_outcome_console(
    result: RunOutcome, *, workdir: str | None = None, report_file: str | None = None
) -> str:
    """Where a run's release went (published or quarantined), the ladder's choice, how to see it,
    and what to do next: the complete commands that decide a REVIEW (pointed at ``workdir``), or,
    after a BLOCK, where the quarantined release and the report are. ``report_file``: the
    report's local file when the store keeps artifacts on this machine."""
    verdict, run_id = result.verdict, result.verdict.run_id or result.run_id
    lines = []
    if result.published:
        lines.append(f"published:   {result.published}")
    elif result.quarantined:
        lines.append(f"quarantined: {result.quarantined} (not published)")
    if result.ladder:
        lines.append(f"remediation: {result.ladder['why']} (ladder run {result.ladder_run_id})")
    lines.append(f"MLflow UI:   {ui_command(result.tracking_uri)}")
    runs = experiment_url(result.tracking_uri or "", result.experiment_id)
    if runs:
        lines.append(f"MLflow runs: {runs}")
    if run_id and verdict.decision != "APPROVE":
        lines.append(
            "report:      "
            f"{report_file or f'artifact {ART_REPORT} of run {run_id} (MLflow UI above)'}"
        )
    if verdict.decision == "REVIEW" and run_id and result.review is None:
        lines.append(
            "next:        a person decides: read the evidence, then approve or reject "
            f"({COMMENT_HINT})"
        )
        lines += [
            f"  {c}"
            for c in decision_commands(
                run_id,
                tracking_uri=result.tracking_uri,
                workdir=workdir,
                flagged=verdict.flagged_subgroups,
            )
        ]
    elif verdict.decision == "BLOCK":
        lines.append(
            "next:        nothing was published"
            + (" (the release stays in quarantine, above)" if result.quarantined else "")
            + "; fix what the reasons name and run the gate again"
        )
    return console_lines(lines)


def suppression_console(result: RunOutcome) -> str:
    """What a re-gate after ``approve --suppress`` did: the rows removed out of how many, per
    ``--suppress`` label (labelled as the gate labels groups: hashed where it hides values), and
    the filtered release's verdict with its run."""
    lines = []
    removed = result.suppression or {}
    if removed:
        before, gone = int(removed["rows_before"]), int(removed["removed"])
        share = f" ({100 * gone / before:.1f} %)" if before else ""
        lines.append(
            f"suppressed:  {gone:,} of {before:,} synthetic rows{share}; {before - gone:,} left"
        )
        lines += [f"  {label}: {int(n):,} rows" for label, n in removed.get("by_label", {}).items()]
        if sum(int(n) for n in removed.get("by_label", {}).values()) > gone:
            lines.append("  (a row several labels remove counts under each)")
    verdict = result.verdict
    why = (
        "; ".join(c.message for c in verdict.reasons if c.action == "block")
        if verdict.decision == "BLOCK"
        else ""
    )
    lines.append(
        f"re-gate:     {verdict.decision} (status {verdict.status}, run {result.run_id})"
        + (f": {why}" if why else "")
    )
    return console_lines(lines)


def rules_rows(verdict: Verdict) -> list[dict[str, str]]:
    """Every rule check of ``verdict`` as a table row (a Prefect table artifact): in words, its
    key, the observed figure, the bar, the action and the result; failing checks first."""
    from privacy_gate.words.checks import VerdictContext, check_words

    context = VerdictContext.of(verdict)
    checks = sorted(verdict.checks or verdict.reasons, key=lambda c: c.passed)
    return [
        {
            "result": "pass" if c.passed else f"FAIL ({c.action})",
            "check": c.key or c.rule,
            "in words": check_words(c, context).sentence,
            "observed": human_number(c.observed),
            "bar": human_number(c.threshold),
            "action": c.action,
        }
        for c in checks
    ]


def group_rows(verdict: Verdict) -> list[dict[str, str]]:
    """One row per flagged group with an effect record (a Prefect table artifact): its targets,
    strongest attack, AUC and members caught with their 95% intervals, its share of the records
    named exposed, its adjusted p-value and what suppressing it gives."""
    whatifs = {w.group: w.short() for w in what_if(verdict)}
    rows = []
    for group, e in verdict.group_effects.items():
        auc = [human_number(e.get(k), 2) for k in ("auc", "auc_lower", "auc_upper")]
        tpr = [human_percent(e.get(k)) for k in ("tpr", "tpr_lower", "tpr_upper")]
        named = "—" if e.get("named_all") is None else f"{e.get('named')} of {e.get('named_all')}"
        rows.append(
            {
                "group": group,
                "members / non-members": f"{e.get('members')} / {e.get('non_members')}",
                "attack": str(e.get("attack", "—")),
                "AUC [95%]": f"{auc[0]} [{auc[1]}, {auc[2]}]",
                "members caught [95%]": f"{tpr[0]} [{tpr[1]}, {tpr[2]}]",
                "named exposed": named,
                "p (Holm)": human_pvalue(e.get("p_adjusted")),
                "suppressing it": whatifs.get(group, "—"),
            }
        )
    return rows


def evidence_links(
    *, tracking_uri: str | None, experiment_id: str | None, run_id: str | None
) -> list[tuple[str, str, str]]:
    """(key, link, text) of the run's MLflow page and its HTML report: on a tracking server its
    own pages; on a local store the pages ``mlflow ui`` serves (the text names the command)."""
    if not (tracking_uri and experiment_id and run_id):
        return []
    page = run_url(tracking_uri, experiment_id, run_id, local=True)
    report = artifact_url(tracking_uri, experiment_id, run_id, ART_REPORT)
    served = run_url(tracking_uri, experiment_id, run_id)
    where = "" if served else f" (served by: {ui_command(tracking_uri)})"
    return [
        ("mlflow-run", page, f"MLflow run {run_id}{where}"),
        ("verdict-report", report, f"HTML report of run {run_id}{where}"),
    ]
