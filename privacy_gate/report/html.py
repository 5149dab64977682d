"""The self-contained HTML report of one gate run (``report/index.html`` in the MLflow run).

One module because the report is one document: its sections share the escaping helpers, the CSS
and the inputs record, and splitting them would scatter one page's markup over several files.

One file, nothing external: inline CSS, figures as base64 PNG (matplotlib Agg), no scripts, no
fonts — the MLflow artifact viewer shows it offline in a sandboxed iframe. It is derived data:
re-rendered from the run's artifacts after the gate and after every review decision.

Only aggregates go in: metrics, rule checks, subgroup labels and counts, score *distributions*.
No record values, and no row ids either (the per-record parquet files are read only to plot
distributions).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate import names, tracking
from privacy_gate.estimators.metrics import roc_curve_points
from privacy_gate.gate.budget import TestOutcome
from privacy_gate.gate.human import human_number
from privacy_gate.names import LEAKAGE_METRICS, MACE_METRICS, dependency_figure, split_attack_metric
from privacy_gate.report.cards import CARDS_CSS, reasons_section, run_section, summary_cards
from privacy_gate.report.commands import COMMENT_HINT, decision_commands
from privacy_gate.report.inputs import ReportInputs
from privacy_gate.report.markup import escape as _e
from privacy_gate.report.markup import note as _note
from privacy_gate.report.markup import note_markup as _note_markup
from privacy_gate.report.markup import number as _num
from privacy_gate.report.markup import png as _png
from privacy_gate.report.markup import pvalue as _p
from privacy_gate.report.markup import section as _section
from privacy_gate.report.markup import short as _short
from privacy_gate.report.markup import table as _table
from privacy_gate.report.plots import (
    comparison_bars_figure,
    dp_audit_figure,
    dp_audit_figure_inputs,
    group_roc_figure,
    risk_profile_figure,
    roc_figure,
    score_histograms_figure,
    shadow_figure,
    subgroup_bars_figure,
)
from privacy_gate.words.checks import VerdictContext, check_words
from privacy_gate.words.evidence import auc_interval, hanley_mcneil_interval  # noqa: F401

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------ helpers


def _attack_metrics(metrics: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """``<attack>.<metric>`` (not subgroup / entity / dependency / utility / timing) by attack."""
    out: dict[str, dict[str, float]] = {}
    for key, value in metrics.items():
        parts = split_attack_metric(key)
        if parts:
            out.setdefault(parts[0], {})[parts[1]] = value
    return dict(sorted(out.items()))


def _nested(metrics: Mapping[str, Any], kind: str) -> dict[str, dict[str, float]]:
    """``<attack>.<kind>.<metric>`` -> {attack: {metric: value}}."""
    out: dict[str, dict[str, float]] = {}
    pattern = re.compile(rf"^([^/.]+)\.{kind}\.(.+)$")
    for key, value in metrics.items():
        m = pattern.match(key)
        if m:
            out.setdefault(m.group(1), {})[m.group(2)] = value
    return dict(sorted(out.items()))


def _failed_group_attacks(checks: Sequence[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Failing subgroup checks: group -> the attacks that failed there."""
    out: dict[str, set[str]] = {}
    for c in checks:
        if c.get("group") and not c.get("passed", True):
            out.setdefault(c["group"], set()).add(c.get("attack") or "")
    return out


def _subgroup_thresholds(
    checks: Sequence[Mapping[str, Any]], metrics: Sequence[str]
) -> list[float]:
    return sorted(
        {
            float(c["threshold"])
            for c in checks
            if c.get("group") and c.get("threshold") is not None and c.get("metric") in metrics
        }
    )


def _check_key(c: Mapping[str, Any]) -> str:
    return names.check_key(
        attack=c.get("attack"), metric=c.get("metric") or "", group=c.get("group")
    )


# ------------------------------------------------------------------------------------ sections

_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1d2330;
 margin:0;padding:0 0 40px;background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:0 18px}
h1{font-size:26px;margin:0 0 6px} h2{font-size:18px;margin:0 0 10px;border-bottom:1px solid #dde1e7;padding-bottom:4px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:14px 16px;margin:14px 0}
.banner{border-radius:0 0 8px 8px;padding:10px 20px;color:#fff;margin:0 0 6px;overflow-wrap:anywhere}
.banner h1{margin:0}
li,p{overflow-wrap:anywhere}
.banner.APPROVE{background:#1e7d32}.banner.REVIEW{background:#b86e00}.banner.BLOCK{background:#b3261e}
.meta{display:flex;flex-wrap:wrap;gap:4px 22px;font-size:13px}
ul.words{margin:6px 0 6px 18px;padding:0}
details.all-checks>summary{cursor:pointer;font-weight:600;margin:4px 0}
code{font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace;background:#eef0f3;padding:1px 4px;border-radius:3px}
pre{font:12.5px/1.5 ui-monospace,Menlo,Consolas,monospace;background:#1d2330;color:#e8eaf0;padding:10px 12px;
 border-radius:5px;overflow-x:auto;white-space:pre-wrap}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%;font-size:13px;margin:6px 0}
th,td{border-bottom:1px solid #e6e9ee;padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
td code{white-space:normal;word-break:break-word}
table.rules{table-layout:fixed;min-width:640px}
table.rules th:nth-child(1){width:44%} table.rules th:nth-child(2){width:20%}
table.rules th:nth-child(n+3){width:7.2%}
th{background:#f0f2f5;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.fail td{background:#fde8e7} tr.fail td:first-child{border-left:4px solid #b3261e}
tr.flagged td{background:#fff1dc} tr.flagged td:first-child{border-left:4px solid #b86e00}
.pill{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;color:#fff}
.pill.pass{background:#1e7d32}.pill.fail{background:#b3261e}.pill.review{background:#b86e00}
.pill.pending{background:#b86e00}.pill.muted{background:#8a93a3}
.howto{border-left:5px solid #b86e00;background:#fff8ec}
.note{color:#5b6475;font-size:12.5px;margin:4px 0}
img.fig{max-width:100%;height:auto;display:block;margin:6px 0}
nav{font-size:13px;margin:8px 0}
nav a{margin-right:12px;color:#2a5db0}
footer{color:#5b6475;font-size:12px;text-align:center;margin-top:20px}
"""


def _banner(inp: ReportInputs) -> str:
    """The verdict in one line; its reason, figures and the run's identity follow (cards, reasons,
    run)."""
    v = inp.verdict
    decision = str(v.get("verdict", "BLOCK"))
    cls = decision if decision in ("APPROVE", "REVIEW", "BLOCK") else "BLOCK"
    return f"""<header class="banner {cls}">
<h1>{_e(decision)} <span style="font-weight:400;font-size:16px">· {_e(inp.dataset or "dataset")} · status
 {_e(v.get("status"))} · review {_e(_approval_state(inp))}</span></h1>
</header>"""


def _approval_state(inp: ReportInputs) -> str:
    if inp.decisions:
        d = inp.decisions[0]
        done = {"approve": "approved", "reject": "rejected"}.get(
            str(d.get("action")), str(d.get("action"))
        )
        return f"{done} by {d.get('reviewer')}"
    return "pending" if inp.verdict.get("verdict") == "REVIEW" else "not required"


def _howto(inp: ReportInputs) -> str:
    v = inp.verdict
    if v.get("verdict") != "REVIEW" or inp.decisions:
        return ""
    run_id = inp.run_id or v.get("run_id") or "RUN_ID"
    lines = decision_commands(
        run_id,
        tracking_uri=inp.tracking_uri,
        workdir=inp.workdir,
        flagged=list(v.get("flagged_subgroups") or []),
    )
    return f"""<section id="decide" class="howto"><h2>How to decide</h2>
<p>This release needs a human decision. Check the flagged subgroups and the reasons above, then either
approve it (optionally <b>suppressing</b> a flagged subgroup: its synthetic rows are removed and the gate
re-runs on the filtered release before anything is published) or reject it (nothing is published;
the release stays in quarantine). Decisions are final and recorded with this run. Each command
below is complete ({_e(COMMENT_HINT)}; the shell fills in <code>$(id -un)</code> with your login
name).</p>
<pre>{_e(chr(10).join(lines))}</pre></section>"""


def _budget(inp: ReportInputs) -> str:
    """The error budget first: every test's p-value against its shares, then what is turned off."""
    budget = inp.verdict.get("budget") or {}
    disabled = inp.verdict.get("disabled") or {}
    if not budget and not disabled:
        return ""
    parts = []
    if budget:
        parts.append(
            _note(
                f"A release that leaks nothing is held back (REVIEW or BLOCK) at most "
                f"{100 * float(budget.get('review', 0)):g}% of the time and blocked at most "
                f"{100 * float(budget.get('block', 0)):g}%, over all the tests below together "
                "(each has a fixed share of both budgets)."
            )
        )
        rows = []
        for t in budget.get("tests") or []:
            p = t.get("pvalue")
            hit = TestOutcome.from_dict(t).review
            rows.append(
                (
                    [
                        _e(t.get("name")),
                        _e(t.get("what")),
                        _p(p) if p is not None else "missing",
                        _num(t.get("review_level"), 3),
                        _num(t.get("block_level"), 3),
                        "evidence of leakage" if hit else "no evidence",
                    ],
                    "fail" if hit else "pass",
                )
            )
        parts.append(
            _table(["test", "asks whether", "p-value", "review at", "block at", "result"], rows)
        )
        power = budget.get("power_check")
        if power:
            parts.append(
                _note(
                    f"Power: the membership test detects an attack AUC of {float(power['detectable_auc']):.3f} "
                    f"with {100 * float(budget.get('power', 0.9)):g}% power; the gate promises "
                    f"{float(power['promise_auc']):.2f}"
                    + (
                        "."
                        if power.get("sufficient")
                        else f" — insufficient evidence: about {power['per_class_needed']} targets per class needed."
                    )
                )
            )
        for floor in budget.get("floors") or []:  # a small table: a stage ran below its floor
            parts.append(
                _note(
                    f"Insufficient evidence (a small table, not a leak signal): {floor.get('message')}."
                )
            )
    if disabled:
        parts.append(
            _table(
                ["turned off", "reason"],
                [([_e(k), _e(v)], "warn") for k, v in sorted(disabled.items())],
            )
        )
    return _section("Error budget", "\n".join(parts), "budget")


def _is_pvalue(c: Mapping[str, Any]) -> bool:
    """A check whose observed figure is a p-value (a budget test, a subgroup's rank test)."""
    metric = str(c.get("metric") or "")
    return metric.startswith("test:") or metric.endswith("p_adjusted")


def _rules(inp: ReportInputs) -> str:
    """Every check, in words with its key and figures, collapsed: the reasons above say what
    decided."""
    checks = list(inp.verdict.get("checks") or [])
    if not checks:
        checks = list(inp.verdict.get("reasons") or [])
    if not checks:
        return _section("Rules", _note("No rule was evaluated."), "rules")
    context = VerdictContext.of(inp.verdict)
    rows = []
    for c in checks:
        passed = bool(c.get("passed"))
        pill = (
            '<span class="pill pass">pass</span>'
            if passed
            else (
                f'<span class="pill {"fail" if c.get("action") == "block" else "review"}">FAIL</span>'
            )
        )
        fmt = _p if _is_pvalue(c) else _num
        rows.append(
            (
                [
                    _e(check_words(c, context).sentence),
                    f'<code>{_e(_check_key(c) or "—")}</code><br><span class="note">{_e(c.get("rule"))}</span>',
                    f'<span class="num">{fmt(c.get("observed"))}</span>',
                    fmt(c.get("threshold")),
                    _e(c.get("bound")),
                    _e(c.get("action")),
                    pill,
                ],
                "" if passed else "fail",
            )
        )
    n_fail = sum(1 for c in checks if not c.get("passed"))
    head = _note(
        f"{len(checks)} checks, {n_fail} failed. Failing checks are highlighted; "
        "a failing 'block' check blocks, a failing 'review' check needs a human."
    )
    table = _table(
        ["in words", "metric and rule", "observed", "threshold", "bound", "action", "result"],
        rows,
        "rules",
    )
    return _section(
        "Rules",
        head + f'<details class="all-checks"><summary>All {len(checks)} checks ({n_fail} '
        f"failed)</summary>{table}</details>",
        "rules",
    )


def _attacks(inp: ReportInputs) -> str:
    table = _attack_metrics(inp.verdict.get("metrics") or {})
    parts = []
    if table:
        cols = list(LEAKAGE_METRICS) + [
            m for m in MACE_METRICS if any(m in t for t in table.values())
        ]
        metrics = inp.verdict.get("metrics") or {}
        # the MACE advantage beside its null level: what a release with no leakage scores at this N
        bias = {a: metrics.get(f"{a}.mace.bias") for a in table}
        heads = ["attack", *cols] + (
            ["no-leak MACE level"] if any(b is not None for b in bias.values()) else []
        )
        parts.append(
            _table(
                heads,
                [
                    (
                        [_e(a)]
                        + [_num(t.get(k)) for k in cols]
                        + ([_num(bias[a], 3)] if len(heads) > len(cols) + 1 else []),
                        "",
                    )
                    for a, t in table.items()
                ],
            )
        )
        parts.append(
            _note(
                "0.5 is guessing for an AUC, 0 for an advantage. The no-leak MACE level is the mean "
                "advantage estimate with the membership labels shuffled (mace.bias): an estimate at or "
                "below it shows no excess over chance, however large it looks."
            )
        )
        if any(k.endswith(".mace.ppv_upper") for k in metrics):
            parts.append(
                _note(
                    "The run's every-figure record (metrics/all.json, the attack table) also holds "
                    "<attack>.mace.ppv_upper: at most this share of an attacker's confident "
                    "'member' claims are right (a 95% upper bound at the membership prior; guessing is right as often "
                    "as the prior, 0.5 by default). It is an upper bound, not a finding: with a few hundred targets per "
                    "class it stays well above 0.5 on releases that leak nothing (0.71 to 0.83 for the independent "
                    "sample of the golden scenarios, 600 targets per class), so it is not shown here as a figure; the "
                    "leak figures are the AUC, the TPR at 1% false alarms and the MACE lower bound."
                )
            )
    scores = inp.scores
    if scores is not None and "member" in scores.columns:
        labels = scores["member"].to_numpy().astype(int)
        curves, hists = [], []
        for col in [c for c in scores.columns if c.endswith("_score")]:
            name = col.removesuffix("_score")
            s = scores[col].to_numpy(dtype=float)
            ok = np.isfinite(s)
            y = labels[ok]
            if ok.sum() < 2 or len(set(y.tolist())) < 2:
                continue
            fpr, tpr = roc_curve_points(s[ok], y)
            auc = (table.get(name) or {}).get("auc")
            if auc is None or not math.isfinite(float(auc)):
                from sklearn.metrics import roc_auc_score

                auc = float(roc_auc_score(y, s[ok]))
            curves.append((name, fpr, tpr, float(auc)))
            hists.append((name, s[ok][y == 1], s[ok][y == 0]))
        if curves:
            parts.append(
                "<h3>ROC curves</h3>"
                + _note(
                    "Left: a logarithmic false-positive axis — the low false-positive regime (1% and 0.1% dotted), "
                    "where an attacker is confident; a curve far above the dashed diagonal there means some records "
                    "are exposed, even when the AUC is close to 0.5. Right: linear axes."
                )
                + _png(roc_figure(curves))
            )
            parts.append(
                "<h3>Attack score distributions</h3>"
                + _note(
                    "Members (training records) vs non-members (holdout). Overlapping histograms = the attack "
                    "cannot tell them apart."
                )
                + _png(score_histograms_figure(hists))
            )
    else:
        parts.append(_note("No per-record attack scores were logged for this run (no ROC curves)."))
    if not parts:
        return ""
    return _section("Membership-inference attacks", "\n".join(parts), "attacks")


def _mace(inp: ReportInputs) -> str:
    df = inp.mace
    if df is None or "risk" not in df.columns or df.empty:
        return ""
    risk = df["risk"].to_numpy(dtype=float)
    lower = df["risk_lower"].to_numpy(dtype=float) if "risk_lower" in df.columns else None
    upper = df["risk_upper"].to_numpy(dtype=float) if "risk_upper" in df.columns else None
    ok = risk[np.isfinite(risk)]
    stats = _table(
        ["records", "mean risk", "median", "95th percentile", "max"],
        [
            (
                [
                    _num(len(risk)),
                    _num(ok.mean() if ok.size else None),
                    _num(np.median(ok) if ok.size else None),
                    _num(np.quantile(ok, 0.95) if ok.size else None),
                    _num(ok.max() if ok.size else None),
                ],
                "",
            )
        ],
    )
    return _section(
        "Per-record risk (MACE)", stats + _png(risk_profile_figure(risk, lower, upper)), "mace"
    )


def _exposure(inp: ReportInputs) -> str:
    m = inp.verdict.get("metrics") or {}
    if m.get("exposed.tested") is None:
        return ""

    def f(key: str, digits: int = 4) -> str:
        return _num(m.get(f"exposed.{key}"), digits)

    level = m.get("exposed.level")
    table = _table(
        [
            "member targets tested",
            "exposed records found",
            "of which false (estimate)",
            "tail-excess p (top k)",
            "exposed share",
            "lower bound",
            "upper bound",
        ],
        [
            (
                [
                    f("tested", 0),
                    f("count", 0),
                    f("false_expected", 2),
                    f"{_p(m.get('exposed.tail_pvalue'))} ({f('tail_top', 0)})",
                    f("share"),
                    f("share_lower"),
                    f("share_upper"),
                ],
                "",
            )
        ],
    )
    note = _note_markup(
        "Each member target gets one combined score — the highest rank any attack gives it among all targets — "
        "and its conformal p-value among the non-member targets. <b>Exposed records</b> are selected by "
        "Benjamini–Hochberg (or –Yekutieli) so that the expected share of false ones among them is at most the "
        "configured FDR; they are listed by row id in the run's <code>risk/exposed_records.parquet</code>. The "
        "<b>tail-excess test</b> asks whether more members than chance sit among the most extreme scores (the top k "
        "where the excess is most significant): exact under no leakage, and it sees a handful of exposed records "
        "that no per-record test can name. The <b>exposed share</b> is the share of members singled out at a "
        f"false-alarm rate of {_num(level, 3)} beyond chance; its bounds account for the randomness of the "
        "non-member scores the threshold comes from. The lower bound is a lower confidence bound on the share of "
        "exposed training records; the upper bound covers only what the attacks can detect. A reviewer can "
        "suppress the exposed records (<code>--suppress exposed</code>): their closest synthetic rows are removed "
        "and the gate re-runs."
    )
    note += _naming_note(m, "", "member target")
    if m.get("exposed.scan_tested") is not None:
        table += _table(
            [
                "training records scanned",
                "calibration records",
                "exposed records found",
                "false among them at most (expected)",
                "tail-excess p (top k)",
            ],
            [
                (
                    [
                        f("scan_tested", 0),
                        f("scan_calibration", 0),
                        f("scan_count", 0),
                        f("scan_false_bound", 1),
                        f"{_p(m.get('exposed.scan_tail_pvalue'))} ({f('scan_tail_top', 0)})",
                    ],
                    "",
                )
            ],
        )
        note += _note_markup(
            "<b>Member scan</b>: every training record, not only the member targets, gets a conformal p-value of "
            "its copy-multiplicity score (how many synthetic rows lie closer to it than any other real record, "
            "weighted by how much closer) among the scores of the calibration records (the holdout, and the "
            "reference when it is a split the generator never read); the exposed ones are selected at the same FDR "
            "and listed by row id in <code>risk/exposed_members.parquet</code> (also suppressed by "
            "<code>--suppress exposed</code>). Its tail-excess test sees a few people copied many times."
            + (
                ""
                if m.get("exposed.scan_pool_share", 1.0) >= 1
                else f" On a pool this large it tested a seeded, equal-rate sample of {100 * m['exposed.scan_pool_share']:.0f} %"
                " of the records (the same chance for every split, so its tests stay valid); copies outside the "
                "sample go unscanned."
            )
        )
        note += _naming_note(m, "scan_", "training record")
    return _section("Exposed records", note + table, "exposure")


def _shadow(inp: ReportInputs) -> str:
    """The generator-aware test: its figures, and the named records' scores against their own
    shadow scores (numbered here; their row ids are in ``risk/shadow_records.parquet``)."""
    m = inp.verdict.get("metrics") or {}
    if m.get("shadow.fits") is None:
        return ""

    def f(key: str, digits: int = 4) -> str:
        return _num(m.get(f"shadow.{key}"), digits)

    table = _table(
        [
            "fits",
            "out-shadows per record (median)",
            "p-value",
            "training records named",
            "power against the promise",
            "fits that reach it",
        ],
        [
            (
                [
                    f("fits", 0),
                    f("out_median", 0),
                    _p(m.get("shadow.pvalue")),
                    f("named", 0),
                    f("power", 2),
                    f("fits_needed", 0),
                ],
                "",
            )
        ],
    )
    note = _note_markup(
        "The generator was refitted on training sets drawn from the records the gate holds. Each "
        "training record's score on the release is set against its own scores in the refits that "
        "never saw it: a p-value no other record calibrates. The members' standardised scores are "
        "then tested against the other records' by exact permutation, and the records are named by "
        "Benjamini–Hochberg over their own p-values (row ids in "
        "<code>risk/shadow_records.parquet</code>)."
    )
    evidence = list(inp.shadow_evidence)
    if evidence:
        labels = [
            f"{'named' if e.get('named') else 'most exposed'} #{i + 1}"
            for i, e in enumerate(evidence)
        ]
        for label, e in zip(labels, evidence):
            n_out, below = len(e["out"]), int(e["out_below"])
            share = f"all {n_out}" if below == n_out else f"{below} of the {n_out}"
            note += _note(
                f"{label}: its score on the release is higher than in {share} refits "
                "that never saw it."
            )
        note += _png(shadow_figure(evidence, labels=labels))
    return _section("Generator-aware test", note + table, "shadow")


def _disclosure(inp: ReportInputs) -> str:
    d = inp.disclosure
    if not d:
        return ""
    rows = [
        (
            [
                _e(r["attack"]),
                _e(r["knew"]),
                f"{_num(r['risk'], 3)} [{_num(r['risk_lower'], 3)}, {_num(r['risk_upper'], 3)}]",
                _num(r["train_rate"], 3),
                _num(r["control_rate"], 3),
                _num(r.get("baseline_rate"), 3),
                _num(r["n_train"], 0),
                _e(r.get("note", "")),
            ],
            "flagged" if r["risk_lower"] > 0.10 else "",
        )
        for r in d["rows"]
    ]
    table = _table(
        [
            "attack",
            "what the attacker knew",
            "risk [interval]",
            "success on training",
            "on control",
            "naive baseline",
            "attacks per side",
            "note",
        ],
        rows,
    )
    note = _note_markup(
        "Each attack uses the synthetic data only. Its <b>risk</b> is (success on training records - success on "
        "control records) / (1 - success on control records): the share of what the attacker could not get "
        "right from the population alone that it gets right on the people in the training data. "
        "<b>Singling out</b>: predicates written from the synthetic data that isolate exactly one record; "
        "<b>linkability</b>: the nearest synthetic records of two parts of a record are the same; "
        "<b>inference</b>: the secret of the nearest synthetic record on the known columns is right. The naive "
        "baseline guesses from the synthetic marginal (inference) or at random (linkability)."
    )
    note += _note(f"Control records: {d.get('control')}. Interval: {d.get('interval')}.")
    for assumed in d.get("assumed", []):
        note += _note(f"Assumed: {assumed}.")
    return _section("Disclosure risks", note + table, "disclosure")


def _naming_note(m: dict, prefix: str, what: str) -> str:
    """Why no record is named when none is: the smallest p-value possible and what BH needs
    there."""
    count, floor, needs = (
        m.get(f"exposed.{prefix}{k}") for k in ("count", "min_pvalue", "naming_needs")
    )
    if count is None or floor is None or needs is None or count > 0:
        return ""
    return _note(
        f"No {what} is named: with this many calibration records the smallest p-value possible is "
        f"{_num(floor, 6)}, and Benjamini–Hochberg needs at least {int(needs)} {what}s at that level "
        "together to name any. Fewer exposed records than that show only in the tail-excess test."
    )


def _subgroups(inp: ReportInputs) -> str:
    rows = [dict(r) for r in inp.subgroups or []]
    if not rows:
        return _section("Subgroups", _note("No subgroup audit for this run."), "subgroups")
    checks = list(inp.verdict.get("checks") or [])
    flagged = set(inp.verdict.get("flagged_subgroups") or [])
    failed = _failed_group_attacks(checks)
    has_mace = any("mace.advantage_lower" in r and "mace.advantage_upper" in r for r in rows)
    parts = [
        _note(
            "One row per audited subgroup and attack. Every value of every audited column is its own group, "
            "however small: each gets a rank test of member vs non-member scores over the gated attacks "
            "(exact at small sizes), Holm-adjusted over all groups; groups with enough targets also get "
            "point estimates, and so does every flagged group (its AUC inside the "
            "group). AUC interval: Hanley & McNeil 95% normal approximation (Wilson's "
            "score interval where it collapses to a point, at AUC 0 or 1). Exposed "
            "targets: the group's member targets named exposed; named by the scan: the "
            "group's training records the member scan named. Flagged groups (failing a "
            "subgroup rule) are highlighted and can be suppressed by name."
        )
    ]
    bars, mace_bars, table_rows = [], [], []
    flagged_aucs = _flagged_aucs(inp)
    for r in rows:
        group, attack = str(r.get("group")), str(r.get("attack"))
        n_m, n_n = int(r.get("n_members") or 0), int(r.get("n_non_members") or 0)
        auc = r.get("auc")
        # a flagged group below audit.min_group_size has no point estimate in the audit; its
        # curves inside the group (audit/flagged_roc.json) give its AUC all the same
        auc = float(auc) if auc is not None else flagged_aucs.get((group, attack), math.nan)
        lo, hi = auc_interval(auc, n_m, n_n)
        is_bad = attack in failed.get(group, set())
        if math.isfinite(
            auc
        ):  # every bar of a flagged group is red, whichever attack failed its rule
            bars.append((group, attack, auc, lo, hi, is_bad or group in flagged))
        estimate = (
            f"{_num(auc, 3)} [{_num(lo, 3)}, {_num(hi, 3)}]"
            if math.isfinite(auc)
            else "— (small group)"
        )
        cells = [
            _e(group),
            _e(attack),
            _num(n_m),
            _num(n_n),
            _p(r.get("test_p_adjusted")),
            _num(r.get("exposed"), 0),
            _num(r.get("scan_named"), 0),
            estimate,
            _num(r.get("tpr_at_fpr_0.01")),
            _num(r.get("advantage")),
        ]
        if has_mace:
            ml, mu, mv = (
                r.get("mace.advantage_lower"),
                r.get("mace.advantage_upper"),
                r.get("mace.advantage"),
            )
            cells.append(f"{_num(mv, 3)} [{_num(ml, 3)}, {_num(mu, 3)}]")
            if (
                ml is not None
                and mu is not None
                and math.isfinite(float(ml))
                and math.isfinite(float(mu))
            ):
                mid = (
                    float(mv)
                    if mv is not None and math.isfinite(float(mv))
                    else (float(ml) + float(mu)) / 2
                )
                mace_bars.append(
                    (group, attack, mid, float(ml), float(mu), is_bad or group in flagged)
                )
        status = (
            '<span class="pill review">flagged</span>'
            if is_bad
            else '<span class="pill review">group flagged</span>'
            if group in flagged
            else '<span class="pill pass">ok</span>'
        )
        cells.append(status)
        table_rows.append((cells, "flagged" if group in flagged else ""))
    if bars:
        parts.append(
            "<h3>Attack AUC per subgroup (95% interval)</h3>"
            + _png(
                subgroup_bars_figure(
                    bars,
                    metric="AUC",
                    thresholds=_subgroup_thresholds(checks, ["auc"]),
                    reference=0.5,
                )
            )
        )
    if mace_bars:
        parts.append(
            "<h3>MACE advantage per subgroup (confidence bounds)</h3>"
            + _png(
                subgroup_bars_figure(
                    mace_bars,
                    metric="MACE advantage",
                    thresholds=_subgroup_thresholds(
                        checks, ["mace.advantage_upper", "mace.advantage"]
                    ),
                )
            )
        )
    head = [
        "group",
        "attack",
        "members",
        "non-members",
        "rank test p (Holm)",
        "exposed targets",
        "named by the scan",
        "AUC [95%]",
        "TPR@1%FPR",
        "advantage",
    ]
    head += ["MACE advantage [bounds]"] if has_mace else []
    parts.append(_table([*head, "status"], table_rows, "subgroups"))
    return _section("Subgroups", "\n".join(parts), "subgroups")


def _flagged_aucs(inp: ReportInputs) -> dict[tuple[str, str], float]:
    """(group, attack) -> the attack's AUC inside each flagged group (audit/flagged_roc.json)."""
    return {
        (str(g["group"]), str(c["attack"])): float(c["auc"])
        for g in (inp.group_rocs or {}).get("groups") or []
        for c in g.get("curves") or []
    }


def _flagged(inp: ReportInputs) -> str:
    """Right after the reasons: the ROC inside each flagged group, where the evidence is read."""
    rocs = _group_rocs(inp)
    return _section("Flagged groups", rocs, "flagged") if rocs else ""


def _group_rocs(inp: ReportInputs) -> str:
    """ROC curves inside each flagged group (its members vs its non-members), log-FPR axis."""
    record = inp.group_rocs or {}
    panels = [
        (
            str(g["group"]),
            [
                (
                    c["attack"],
                    np.asarray(c["fpr"], float),
                    np.asarray(c["tpr"], float),
                    float(c["auc"]),
                )
                for c in g.get("curves") or []
            ],
            int(g.get("n_members") or 0),
            int(g.get("n_non_members") or 0),
        )
        for g in record.get("groups") or []
        if g.get("curves")
    ]
    if not panels:
        return ""
    omitted = int(record.get("omitted") or 0)
    note = (
        "Inside each flagged group, its members vs its non-members, one curve per attack (the strongest "
        "in red); the false-positive axis is logarithmic: a curve far above the dashed diagonal at the "
        "left (1% and 0.1% false alarms dotted) means the attacker singles out members of this group "
        "with confidence."
    )
    if omitted:
        note += (
            f" {human_number(omitted)} more flagged group(s) are not drawn (at most "
            f"{len(panels)} are): the table below has their figures."
        )
    return "<h3>ROC inside each flagged group</h3>" + _note(note) + _png(group_roc_figure(panels))


def _entity(inp: ReportInputs) -> str:
    table = _nested(inp.verdict.get("metrics") or {}, "entity")
    if not table:
        return ""
    cols = [m for m in LEAKAGE_METRICS if any(m in t for t in table.values())]
    cols += sorted({m for t in table.values() for m in t} - set(cols))
    body = _note(
        "Set-level view: one score per entity (the mean of its records' scores), members vs non-members."
    )
    body += _table(
        ["attack", *cols],
        [([_e(a)] + [_num(t.get(k)) for k in cols], "") for a, t in table.items()],
    )
    return _section("Entity-level results", body, "entity")


def _dependency(inp: ReportInputs) -> str:
    metrics = inp.verdict.get("metrics") or {}
    table = _nested(metrics, "dependency")
    shift_p, tv = (
        metrics.get(dependency_figure("source_shift_pvalue")),
        metrics.get(dependency_figure("source_tv")),
    )
    excess = metrics.get(dependency_figure("dp_bound_excess"))
    if not table and shift_p is None:
        return ""
    head = ""
    if shift_p is not None:
        dependent = metrics.get(dependency_figure("plausibly_dependent")) == 1.0
        head += _note(
            f"Sources of the training split vs the reference split: total variation {_num(tv)}, "
            f"chi-square p {_p(shift_p)} — "
            + (
                "the training records are plausibly dependent (not an independent sample of the "
                "population): an IID DP bound on membership advantage may not hold."
                if dependent
                else "no evidence that the training records are dependent."
            )
        )
    if excess is not None:
        head += _note(
            f"Largest MACE lower bound with members from one source minus the IID DP bound: "
            f"{_num(excess)} ({'above' if excess > 0 else 'within'} the bound)."
        )
    if not table:
        return _section("Dependency", head, "dependency")
    rows, plot = [], []
    failing = {
        (c.get("attack"), c.get("metric"))
        for c in inp.verdict.get("checks") or []
        if not c.get("passed", True)
    }
    for attack, t in table.items():
        iid, dep = metrics.get(f"{attack}.auc"), t.get("auc")
        gap = (float(dep) - float(iid)) if iid is not None and dep is not None else None
        rows.append(
            (
                [
                    _e(attack),
                    _num(iid),
                    _num(dep),
                    _num(gap),
                    _num(t.get("tpr_at_fpr_0.01")),
                    _num(t.get("advantage")),
                ],
                "fail" if (attack, "dependency.auc") in failing else "",
            )
        )
        if (
            iid is not None
            and dep is not None
            and math.isfinite(float(iid))
            and math.isfinite(float(dep))
        ):
            plot.append((attack, float(iid), float(dep)))
    body = head + _note(
        "Members drawn from one source (dependent records) vs the IID targets: a higher AUC "
        "under dependency means the IID figures understate the risk."
    )
    body += _table(
        [
            "attack",
            "IID AUC",
            "dependency AUC",
            "gap",
            "dependency TPR@1%FPR",
            "dependency advantage",
        ],
        rows,
    )
    if plot:
        body += _png(
            comparison_bars_figure(plot, labels=("IID", "dependency"), metric="AUC", reference=0.5)
        )
    return _section("Dependency stress test", body, "dependency")


def _dp_audit(inp: ReportInputs) -> str:
    d = inp.dp_audit
    if not d:
        return ""
    rows = []
    for a in d.get("audits", []):
        b = a["bound"]
        shift = a.get("mu_shift")
        exceeds = b["epsilon_lower"] > d["epsilon"]
        rows.append(
            (
                [
                    _e(a["score"]),
                    _e(a["target_label"]),
                    _num(b["epsilon_lower"]),
                    _num(d["epsilon"]),
                    _num(b["mu_lower"]),
                    _num(b["mu_estimate"]),
                    _num(shift[0] if shift else None),
                    _num(d["claimed_mu"]),
                    f"{int(b['false_positives'])}/{int(b['negatives'])}",
                    f"{int(b['false_negatives'])}/{int(b['positives'])}",
                ],
                "fail" if exceeds else "",
            )
        )
    body = _note(
        f"Distinguishing game for generator {d['generator']} (implementation {d['version']}): {d['runs']} fits "
        f"with and without each target. The epsilon figure is a lower bound at "
        f"{100 * (1 - float(d['audits'][0]['bound']['alpha'])):.0f}% confidence (Clopper-Pearson, threshold chosen "
        f"on separate runs; at most {_num(d['max_certifiable_epsilon'])} can be shown with these runs): above the "
        "claim it proves the DP implementation broken; below it, it proves nothing (it never certifies DP). "
        f"Claimed mu: {d['mu_basis']}."
    )
    body += _table(
        [
            "score",
            "target",
            "epsilon ≥",
            "claimed epsilon",
            "mu ≥",
            "mu (threshold)",
            "mu (mean shift)",
            "claimed mu",
            "false positives",
            "false negatives",
        ],
        rows,
    )
    body += _note(
        "The figure: each score's (FPR, FNR) points on the evaluation runs; the claim allows only points "
        "on or above the red curve. A cross is the chosen threshold's 95% corner (both rates at their "
        "upper bounds): a cross below the red curve is a violation."
    )
    body += _png(dp_audit_figure(**dp_audit_figure_inputs(d)))
    return _section("DP audit", body, "dp_audit")


def _utility(inp: ReportInputs) -> str:
    u = dict(inp.utility or {})
    metrics = inp.verdict.get("metrics") or {}
    for k in ("quality", "tvd_1way", "tvd_2way"):
        if k not in u and f"utility.{k}" in metrics:
            u[k] = metrics[f"utility.{k}"]
    if not u:
        return _section("Utility", _note("No utility figures for this run."), "utility")
    pair = u.get("worst_2way_pair")
    rows = [
        (["quality (1 − mean TVD)", _num(u.get("quality"))], ""),
        (["mean 1-way TVD", _num(u.get("tvd_1way"))], ""),
        (["mean 2-way TVD", _num(u.get("tvd_2way"))], ""),
        (
            [
                "worst column",
                f"{_e(u.get('worst_1way_column') or '—')} (TVD {_num(u.get('worst_1way_tvd'))})",
            ],
            "",
        ),
        (
            [
                "worst pair",
                f"{_e(' × '.join(map(str, pair)) if pair else '—')} (TVD {_num(u.get('worst_2way_tvd'))})",
            ],
            "",
        ),
    ]
    body = _note(
        "Marginal fidelity of the synthetic data to the holdout (total variation distance, 0 = identical)."
    )
    return _section("Utility", body + _table(["measure", "value"], rows), "utility")


def _timings(inp: ReportInputs) -> str:
    if not inp.timings:
        return ""
    rows = [([_e(k), _num(v, 3)], "") for k, v in inp.timings.items()]
    return _section("Timings (seconds)", _table(["stage", "seconds"], rows), "timings")


#: what each metrics/ artifact holds (the run's MLflow metrics are only its headline figures)
_FIGURE_FILES = {
    names.ART_METRICS_ALL: "every figure of the run by its full key (JSON)",
    names.ART_METRICS_ATTACKS: "per attack, the combined query and the strongest attack: every figure",
    names.ART_METRICS_DISCLOSURE: "per disclosure evaluator, each inference column",
    names.ART_METRICS_RELEASE: "every other release-level figure (tests, copies, exposed records, timings)",
    names.ART_METRICS_SUBGROUPS: "per audited group: rank test, sizes, exposed records (most significant first)",
    names.ART_METRICS_SUBGROUP_ATTACKS: "per group and attack: ROC and MACE figures",
    names.ART_METRICS_SUBGROUP_DISCLOSURE: "per group and disclosure evaluator: risks",
}


def _all_figures(inp: ReportInputs) -> str:
    """Links to the artifacts that hold every figure (MLflow's metrics are the headline ones)."""
    present = [p for p in _FIGURE_FILES if p in inp.metric_files]
    if not present:
        return ""
    run_id = inp.run_id or inp.verdict.get("run_id")
    rows = []
    for path in present:
        url = tracking.artifact_url(inp.tracking_uri or "", inp.experiment_id, run_id, path)
        cell = (
            f'<a href="{_e(url)}"><code>{_e(path)}</code></a>'
            if url
            else f"<code>{_e(path)}</code>"
        )
        rows.append(([cell, _e(_FIGURE_FILES[path])], ""))
    body = _note(
        "The run's MLflow metrics are its headline figures; every figure (per subgroup, per column, per "
        "test) is in these artifacts of the run (the Artifacts tab shows the tables)."
    )
    return _section("All figures", body + _table(["artifact", "what it holds"], rows), "figures")


def _history(inp: ReportInputs) -> str:
    decisions = list(inp.decisions or [])
    if not decisions:
        state = _approval_state(inp)
        pill = "pending" if state == "pending" else "muted"
        text = (
            "No decision yet: this REVIEW run is waiting for a reviewer."
            if state == "pending"
            else "No review required: the gate decided this run on its own."
        )
        return _section(
            "Review history",
            f'<p><span class="pill {pill}">{_e(state)}</span> {_e(text)}</p>',
            "review",
        )
    rows = []
    for d in decisions:
        groups = ", ".join(f"{g}: {a}" for g, a in (d.get("subgroups") or {}).items()) or "—"
        rows.append(
            (
                [
                    _e(d.get("reviewer")),
                    _e(d.get("at")),
                    f"<b>{_e(d.get('action'))}</b>",
                    _e(d.get("comment") or "—"),
                    _e(groups),
                    _e(", ".join(d.get("suppress") or []) or "—"),
                    f"<code>{_e(_short(d.get('data_sha256')))}</code>",
                    _e(_decision_published(inp, d)),
                    _e(d.get("via") or "—"),
                    f"<code>{_e(d.get('rerun_id') or '—')}</code>",
                ],
                "",
            )
        )
    return _section(
        "Review history",
        _table(
            [
                "reviewer",
                "when",
                "action",
                "comment",
                "subgroup decisions",
                "suppressed",
                "data sha256",
                "published",
                "via",
                "gate re-run",
            ],
            rows,
        ),
        "review",
    )


def _decision_published(inp: ReportInputs, d: Mapping[str, Any]) -> str:
    """Where a decision's release went. The decision record is written (and read back) before
    publication, so it cannot name the path; the run's publication tag, set after it, does."""
    where = d.get("published") or (inp.published if d.get("action") == "approve" else None)
    return where or "not published"


def _publication(inp: ReportInputs) -> str:
    """The banner's line on publication: where the release is, or where it waits."""
    if inp.published:
        return f"published to <code>{_e(inp.published)}</code>"
    return "not published"


def published_location(tags: Mapping[str, str]) -> str | None:
    """Where a run's release was published, from its tags (approval first, then the gate's own)."""
    for key in (names.TAG_APPROVAL_PUBLISHED, names.TAG_PUBLISHED):
        value = tags.get(key)
        if value and value != "none" and not value.startswith("failed"):
            return value
    return None


def _open_hint(inp: ReportInputs) -> str:
    run_id = inp.run_id or inp.verdict.get("run_id") or "RUN_ID"
    uri = inp.tracking_uri or ""
    if tracking.run_url(uri, inp.experiment_id, run_id):
        return ""
    if not uri:
        return ""
    return _note(
        f"Open in the MLflow UI: {tracking.ui_command(uri)} — then run {run_id}, "
        f"artifact {names.ART_REPORT}."
    )


def render_report(inputs: ReportInputs) -> str:
    """The whole report as one HTML string (every text escaped; no external resources)."""
    inp = inputs
    sections = [
        reasons_section(inp),
        _flagged(inp),
        _howto(inp),
        run_section(inp, approval=_approval_state(inp), publication=_publication(inp)),
        _budget(inp),
        _rules(inp),
        _attacks(inp),
        _exposure(inp),
        _shadow(inp),
        _disclosure(inp),
        _mace(inp),
        _subgroups(inp),
        _entity(inp),
        _dependency(inp),
        _dp_audit(inp),
        _utility(inp),
        _history(inp),
        _timings(inp),
        _all_figures(inp),
    ]
    nav_items = [
        ("reasons", "Reasons"),
        ("flagged", "Flagged groups"),
        ("decide", "How to decide"),
        ("run", "This run"),
        ("budget", "Error budget"),
        ("rules", "Rules"),
        ("attacks", "Attacks"),
        ("exposure", "Exposed records"),
        ("shadow", "Generator-aware test"),
        ("disclosure", "Disclosure risks"),
        ("mace", "Per-record risk"),
        ("subgroups", "Subgroups"),
        ("entity", "Entities"),
        ("dependency", "Dependency"),
        ("dp_audit", "DP audit"),
        ("utility", "Utility"),
        ("review", "Review history"),
        ("timings", "Timings"),
        ("figures", "All figures"),
    ]
    body = "\n".join(s for s in sections if s)
    nav = " ".join(f'<a href="#{a}">{_e(t)}</a>' for a, t in nav_items if f'id="{a}"' in body)
    decision = str(inp.verdict.get("verdict", "BLOCK"))
    title = f"{decision} · privacy-gate · {inp.dataset or 'dataset'} · {inp.run_id or inp.verdict.get('run_id') or ''}"
    now = datetime.now(UTC).isoformat(timespec="seconds")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{_CSS}{CARDS_CSS}</style></head>
<body><main>
{_banner(inp)}
{summary_cards(inp)}
<nav>{nav}</nav>
{_open_hint(inp)}
{body}
<footer>privacy-gate report · rendered {_e(now)} from the run's artifacts · aggregates only: no record values,
no row ids</footer>
</main></body></html>
"""


# ------------------------------------------------------------------------------------ MLflow


def _optional(what: str, read: Any) -> Any:
    try:
        return read()
    except Exception as exc:  # noqa: BLE001 - optional parts are skipped, never fatal
        log.warning(
            "report: could not read %s (%s); that section is skipped", what, type(exc).__name__
        )
        return None


def load_report_inputs(tracker: tracking.Tracker, run_id: str) -> ReportInputs:
    """Read a run's artifacts back through the Tracker (the verdict is required, the rest
    optional)."""
    verdict = tracker.read_json(run_id, names.ART_VERDICT)
    tags = tracker.run_tags(run_id)

    def frame(path: str) -> pd.DataFrame | None:
        return tracker.read_frame(run_id, path) if tracker.artifact_exists(run_id, path) else None

    def js(path: str) -> Any:
        return tracker.read_json(run_id, path) if tracker.artifact_exists(run_id, path) else None

    return ReportInputs(
        verdict=verdict,
        scores=_optional(names.ART_SCORES, lambda: frame(names.ART_SCORES)),
        subgroups=_optional(names.ART_SUBGROUPS, lambda: js(names.ART_SUBGROUPS)) or [],
        utility=_optional(names.ART_UTILITY, lambda: js(names.ART_UTILITY)) or {},
        decisions=tracker.decisions(run_id),
        timings=_optional(names.ART_TIMINGS, lambda: js(names.ART_TIMINGS)) or {},
        run_id=run_id,
        dataset=tags.get(names.TAG_DATASET),
        tracking_uri=tracker.uri,
        experiment_id=_optional("experiment id", lambda: tracker.experiment_of(run_id)),
        mace=_optional(names.ART_MACE, lambda: frame(names.ART_MACE)),
        disclosure=_optional(names.ART_DISCLOSURE, lambda: js(names.ART_DISCLOSURE)),
        shadow_evidence=_optional(names.ART_SHADOW_EVIDENCE, lambda: js(names.ART_SHADOW_EVIDENCE))
        or (),
        published=published_location(tags),
        workdir=tags.get(names.TAG_WORKDIR),
        dp_audit=_optional(names.ART_DP_AUDIT, lambda: js(names.ART_DP_AUDIT)),
        group_rocs=_optional(names.ART_GROUP_ROC, lambda: js(names.ART_GROUP_ROC)),
        metric_files=_optional(
            names.ART_METRICS_ALL, lambda: tracker.artifacts_in(run_id, names.METRICS_DIR)
        )
        or (),
    )


def log_report(tracker: tracking.Tracker, run_id: str) -> None:
    """Render the run's report and log it as ``report/index.html`` (overwriting: derived data)."""
    tracker.log_text(run_id, render_report(load_report_inputs(tracker, run_id)), names.ART_REPORT)
