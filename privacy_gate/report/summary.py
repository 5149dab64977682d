"""Markdown and console summaries of a verdict (Prefect artifact, CLI output)."""

from __future__ import annotations

from privacy_gate.gate.verdict import Verdict

_ICON = {"APPROVE": "✅", "REVIEW": "🟡", "BLOCK": "⛔"}
MAIN_METRICS = ("auc", "tpr_at_fpr_0.01", "tpr_at_fpr_0.001", "advantage")


MACE_METRICS = ("mace.advantage", "mace.advantage_lower", "mace.advantage_upper")


def attack_metric_table(verdict: Verdict) -> list[tuple[str, dict[str, float]]]:
    """Release-level figures per attack (subgroup/entity/dependency figures live in the report)."""
    attacks: dict[str, dict[str, float]] = {}
    for key, value in verdict.metrics.items():
        head, _, metric = key.partition(".")
        if "/" not in head and metric in MAIN_METRICS + MACE_METRICS:
            attacks.setdefault(head, {})[metric] = value
    return sorted(attacks.items())


def verdict_markdown(verdict: Verdict, *, ui_hint: str | None = None, tracking_uri: str | None = None,
                     experiment_id: str | None = None) -> str:
    """``tracking_uri`` + ``experiment_id``: on an MLflow server (http/https) the run is linked;
    otherwise ``ui_hint`` (the ``mlflow ui`` command) is shown with the run id. Either way the
    HTML report's artifact path is named."""
    from privacy_gate.tracking import ART_REPORT, run_url

    lines = [f"# {_ICON[verdict.decision]} {verdict.decision} (status: {verdict.status})", ""]
    if verdict.run_id:
        url = run_url(tracking_uri or "", experiment_id, verdict.run_id)
        if url:
            lines.append(f"MLflow run: [{verdict.run_id}]({url}) — report: artifact `{ART_REPORT}`")
        else:
            lines.append(f"MLflow run: `{verdict.run_id}`" + (f" — open with `{ui_hint}`" if ui_hint else "")
                         + f", then the run's artifact `{ART_REPORT}` (the full report)")
        lines.append("")
    lines += ["## Reasons", ""]
    lines += [f"- **{c.action}** {c.message}" for c in verdict.reasons] or ["- every rule passed"]
    table = attack_metric_table(verdict)
    if table:
        lines += ["", "## Attacks", "", "| attack | " + " | ".join(MAIN_METRICS) + " | MACE advantage [95% bounds] |",
                  "|---|" + "---|" * (len(MAIN_METRICS) + 1)]
        for name, m in table:
            cells = [f"{m[k]:.4f}" if k in m else "–" for k in MAIN_METRICS]
            mace = (f"{m['mace.advantage']:.3f} [{m['mace.advantage_lower']:.3f}, {m['mace.advantage_upper']:.3f}]"
                    if "mace.advantage" in m else "–")
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {mace} |")
    if "utility.quality" in verdict.metrics:
        lines += ["", f"Utility (1 - mean marginal TVD vs holdout): **{verdict.metrics['utility.quality']:.3f}**"]
    return "\n".join(lines) + "\n"


def verdict_console(verdict: Verdict) -> str:
    lines = [f"VERDICT: {verdict.decision}  (status: {verdict.status}, run: {verdict.run_id or '-'})"]
    for c in verdict.reasons:
        lines.append(f"  - [{c.action}] {c.message}")
    for name, m in attack_metric_table(verdict):
        line = f"  {name:<16} " + "  ".join(f"{k}={m[k]:.4f}" for k in MAIN_METRICS if k in m)
        if "mace.advantage" in m:
            line += (f"  MACE advantage={m['mace.advantage']:.3f} "
                     f"[{m['mace.advantage_lower']:.3f}, {m['mace.advantage_upper']:.3f}]")
        lines.append(line.rstrip())
    if verdict.flagged_subgroups:
        lines.append(f"  flagged subgroups: {', '.join(verdict.flagged_subgroups)}")
    if "utility.quality" in verdict.metrics:
        lines.append(f"  utility.quality={verdict.metrics['utility.quality']:.4f}")
    return "\n".join(lines)
