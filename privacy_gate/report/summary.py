"""Markdown and console summaries of a verdict (Prefect artifact, CLI output)."""

from __future__ import annotations

from privacy_gate.gate.verdict import Verdict

_ICON = {"APPROVE": "✅", "REVIEW": "🟡", "BLOCK": "⛔"}
MAIN_METRICS = ("auc", "tpr_at_fpr_0.01", "tpr_at_fpr_0.001", "advantage")


def attack_metric_table(verdict: Verdict) -> list[tuple[str, dict[str, float]]]:
    attacks: dict[str, dict[str, float]] = {}
    for key, value in verdict.metrics.items():
        head, _, metric = key.partition(".")
        if metric in MAIN_METRICS:
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
        lines += ["", "## Attacks", "", "| attack | " + " | ".join(MAIN_METRICS) + " |",
                  "|---|" + "---|" * len(MAIN_METRICS)]
        for name, m in table:
            lines.append(f"| {name} | " + " | ".join(f"{m.get(k, float('nan')):.4f}" for k in MAIN_METRICS) + " |")
    if "utility.quality" in verdict.metrics:
        lines += ["", f"Utility (1 - mean marginal TVD vs holdout): **{verdict.metrics['utility.quality']:.3f}**"]
    return "\n".join(lines) + "\n"


def verdict_console(verdict: Verdict) -> str:
    lines = [f"VERDICT: {verdict.decision}  (status: {verdict.status}, run: {verdict.run_id or '-'})"]
    for c in verdict.reasons:
        lines.append(f"  - [{c.action}] {c.message}")
    for name, m in attack_metric_table(verdict):
        lines.append(f"  {name:<10} " + "  ".join(f"{k}={m[k]:.4f}" for k in MAIN_METRICS if k in m))
    if "utility.quality" in verdict.metrics:
        lines.append(f"  utility.quality={verdict.metrics['utility.quality']:.4f}")
    return "\n".join(lines)
