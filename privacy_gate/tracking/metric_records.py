"""Which of a run's figures are MLflow metrics, and the tables every figure goes to.

A gate run has 700-1,100 figures (every subgroup x attack, every inference column, every test's
detail). Logged as MLflow metrics they flood the run: the "Model metrics" tab opens on a
subgroup's chart, keys reach MLflow's 250-character limit (a pooled group of 29 countries), and
comparing runs means scrolling past hundreds of charts. So:

- **headline metrics** (:data:`HEADLINE_PATTERNS`, the one rule): the verdict-level figures a
  reviewer compares across runs — each attack's ROC figures and MACE bounds with their null level,
  the exposed share, copy and twin shares, the worst disclosure risks, utility, the error budget's
  p-values, counts of flagged groups and records, the total time — are the run's MLflow metrics,
  under keys of at most ``names.MAX_HEADLINE_KEY_LENGTH`` characters;
- **every figure** (the headline ones too) goes to ``metrics/all.json`` under its full key, and to
  one of the tables ``metrics/*.csv`` (per attack, per subgroup, per disclosure evaluator, the
  rest), whose group labels are capped at ``names.MAX_TABLE_LABEL_LENGTH`` characters.

The verdict is decided from the in-memory figures, never from what is logged here; ``verdict.json``
keeps ``verdict.metrics`` whole. Labels come from metric keys, so they are what the keys already
showed: public category names or keyed hashes (``#6c1051d176``), never a rare record value.

>>> [is_headline(k) for k in ("domias.auc", "combined.mace.advantage_lower", "dcr.mace.radius")]
[True, True, False]
>>> [is_headline(k) for k in ("subgroup/race/Black/dcr.auc", "inference.age.risk",
...                           "inference.risk")]
[False, False, True]
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from privacy_gate import names

_ROC = "|".join(map(re.escape, names.LEAKAGE_METRICS))
_RISK = "risk|risk_lower|risk_upper"

#: The headline rule: a figure is an MLflow metric when its whole key matches one of these. An
#: attack's key is any single segment (``dcr``, ``mama_mia_oracle``, ``combined``, ``strongest``),
#: so a run logs about 8 metrics per attack plus about 45 release-level ones.
HEADLINE_PATTERNS: tuple[str, ...] = (
    rf"[^./]+\.({_ROC})",  # per attack and the strongest: AUC, TPR at FPR 1 % and 0.1 %, advantage
    # MACE bounds and their null level
    r"[^./]+\.mace\.(advantage|advantage_lower|advantage_upper|bias)",
    # exposed records and their share
    rf"{names.EXPOSURE}\.(count|share|share_lower|share_upper|scan_count)",
    # verbatim copies against the twins
    rf"{names.COPIES}\.(excess_share|train_share|holdout_share)",
    rf"{names.AGREEMENT}\.(excess_share|count)",  # partial copies
    rf"{re.escape(names.VALIDATION_SYNTHETIC)}\.copy_share",
    # the worst risk of each family, not per column
    rf"({'|'.join(names.DISCLOSURE_FAMILIES)})\.({_RISK})",
    rf"{names.UTILITY}\.(quality|tvd_1way|tvd_2way)",
    rf"{names.BUDGET}\.[^./]+\.pvalue",  # each test of the error budget
    re.escape(names.FLAGGED_SUBGROUPS),
    re.escape(names.TOTAL_TIME),
    # a DP release's audit: the bound against the claim
    r"dp_audit\.(epsilon_lower|epsilon_claimed)",
)
_HEADLINE = re.compile("|".join(f"(?:{p})" for p in HEADLINE_PATTERNS))

#: first key segments that name no attack (``attacks.csv`` holds only attack rows)
_NOT_ATTACKS = names.PLAIN_FAMILIES | {
    "time",
    names.BUDGET,
    names.FLAGGED_SUBGROUPS.partition(".")[0],
    "dp_audit",
    "ladder",
}
_ATTACK_FIGURES = names.attack_figures()
_SUBGROUP = "subgroup/"


def is_headline(key: str) -> bool:
    """Whether the figure ``key`` is logged as an MLflow metric (:data:`HEADLINE_PATTERNS`)."""
    return _HEADLINE.fullmatch(key) is not None


def recorded_figures(
    verdict: Mapping[str, Any], *, timings: Mapping[str, float]
) -> dict[str, float | None]:
    """Every figure a run records, by its full key: ``verdict["metrics"]`` (a verdict dict), each
    stage's time (``time.<stage>_s``) and the headline's derived figures (each budget test's
    p-value, the number of flagged groups, the total time). A non-finite value is None (JSON has
    no NaN)."""
    figures: dict[str, Any] = dict(verdict.get("metrics") or {})
    figures.update({names.timing_metric(k): v for k, v in timings.items()})
    for test in (verdict.get("budget") or {}).get("tests") or []:
        figures[names.budget_metric(str(test.get("name")))] = test.get("pvalue")
    figures[names.FLAGGED_SUBGROUPS] = float(len(verdict.get("flagged_subgroups") or ()))
    # the stages run one after another; an attack's time ("attack.<name>") is inside the attacks
    # stage
    figures[names.TOTAL_TIME] = float(
        sum(v for k, v in timings.items() if not k.startswith("attack."))
    )
    return {k: _finite(v) for k, v in sorted(figures.items())}


def headline_metrics(figures: Mapping[str, float | None]) -> dict[str, float]:
    """The MLflow metrics of a run: its headline figures with a value, under short keys."""
    return {
        names.bounded_key(k, names.MAX_HEADLINE_KEY_LENGTH): v
        for k, v in figures.items()
        if v is not None and is_headline(k)
    }


def capped_label(text: str, *, limit: int = names.MAX_TABLE_LABEL_LENGTH) -> str:
    """``text`` if it fits ``limit``, else its start, an ellipsis and a hash of the whole (so two
    long labels with one start stay apart).

    >>> capped_label("sex=Female")
    'sex=Female'
    >>> countries = ["Cambodia", "Canada", "China", "Columbia", "Cuba"] * 6
    >>> capped_label("native_country=" + "_".join(countries))
    'native_country=Cambodia_Canada_China_Columbia_C…-h9fafb719e1'
    """
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{text[: limit - 13]}…-h{digest}"


def _group_label(columns: str, values: str) -> tuple[str, str]:
    """(group, columns) of a subgroup key's column and value segments, as the audit labels groups
    (``sex=Female&race=Black``; a hashed value as ``#…``), each capped."""
    cols, vals = columns.split(names.INTERSECTION_JOIN), values.split(names.INTERSECTION_JOIN)
    if len(cols) != len(vals):  # not written by names.subgroup_metric: shown as it stands
        return capped_label(f"{columns}={values}"), capped_label(columns)
    label = "&".join(f"{c}={names.shown_segment(v)}" for c, v in zip(cols, vals))
    return capped_label(label), capped_label("&".join(cols))


def metric_tables(figures: Mapping[str, float | None]) -> dict[str, pd.DataFrame]:
    """Every figure in exactly one cell of one table, by artifact path (``names.METRIC_TABLES``):
    per attack (a row; its figures are columns), per disclosure evaluator, every other
    release-level figure as (key, value); per subgroup its rank test, sizes and exposed records
    (the most significant group first), and per group x attack and group x evaluator."""
    attacks: dict[str, dict[str, Any]] = {}
    disclosure: dict[str, dict[str, Any]] = {}
    release: list[dict[str, Any]] = []
    groups: dict[str, dict[str, Any]] = {}
    group_attacks: dict[tuple[str, str], dict[str, Any]] = {}
    group_disclosure: dict[tuple[str, str], dict[str, Any]] = {}
    for key, value in figures.items():
        if key.startswith(_SUBGROUP) and key.count("/") >= 3:
            _, columns, values, figure = key.split("/", 3)
            label, cols = _group_label(columns, values)
            groups.setdefault(label, {"group": label, "columns": cols})
            kind, who, what = _split_figure(figure, group=True)
            if kind == "attack":
                group_attacks.setdefault(
                    (label, who), {"group": label, "attack": capped_label(who)}
                )[what] = value
            elif kind == "disclosure":
                row = group_disclosure.setdefault(
                    (label, who), {"group": label, "evaluator": capped_label(who)}
                )
                row[what] = value
            else:
                groups[label][figure] = value
            continue
        kind, who, what = _split_figure(key, group=False)
        if kind == "attack":
            attacks.setdefault(who, {"attack": capped_label(who)})[what] = value
        elif kind == "disclosure":
            disclosure.setdefault(who, {"evaluator": capped_label(who)})[what] = value
        else:
            release.append({"key": key, "value": value})
    order = {f: i for i, f in enumerate(_ATTACK_FIGURES)}
    attack_order = lambda f: (order.get(f, len(order)), f)  # noqa: E731
    last = {names.COMBINED: 1, names.STRONGEST: 2}  # the summaries after the attacks
    ranked = _most_significant_first(groups.values())
    position = {row["group"]: i for i, row in enumerate(ranked)}
    return {
        names.ART_METRICS_ATTACKS: _frame(
            [attacks[a] for a in sorted(attacks, key=lambda a: (last.get(a, 0), a))],
            ["attack"],
            key=attack_order,
        ),
        names.ART_METRICS_DISCLOSURE: _frame(
            [disclosure[e] for e in sorted(disclosure)], ["evaluator"], key=_disclosure_order
        ),
        names.ART_METRICS_RELEASE: pd.DataFrame(release, columns=["key", "value"]),
        names.ART_METRICS_SUBGROUPS: _frame(
            ranked, ["group", "columns"], key=lambda f: (f not in names.GROUP_FIGURES, f)
        ),
        names.ART_METRICS_SUBGROUP_ATTACKS: _frame(
            [group_attacks[k] for k in sorted(group_attacks, key=lambda k: (position[k[0]], k[1]))],
            ["group", "attack"],
            key=attack_order,
        ),
        names.ART_METRICS_SUBGROUP_DISCLOSURE: _frame(
            [
                group_disclosure[k]
                for k in sorted(group_disclosure, key=lambda k: (position[k[0]], k[1]))
            ],
            ["group", "evaluator"],
            key=_disclosure_order,
        ),
    }


def _split_figure(key: str, *, group: bool) -> tuple[str, str, str]:
    """``(kind, whose, figure)`` of a release-level key or of a subgroup's figure: an attack's
    (``dcr``, ``mace.advantage``), a disclosure evaluator's (``inference.age``, ``risk``; figures
    have no dot, a column name may), else ``("other", "", key)``."""
    head, _, rest = key.partition(".")
    if "/" in key or not rest or (group and key in names.GROUP_FIGURES):
        return "other", "", key
    if head in names.DISCLOSURE_FAMILIES:
        evaluator, _, figure = key.rpartition(".")
        return "disclosure", evaluator, figure
    if head not in _NOT_ATTACKS and rest in _ATTACK_FIGURES:
        return "attack", head, rest
    return "other", "", key


def table_text(frame: pd.DataFrame) -> str:
    """A table as the CSV text logged (an empty cell for a missing figure)."""
    return frame.to_csv(index=False, float_format="%.10g")


def _finite(value: Any) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _frame(rows: list[dict[str, Any]], first: list[str], *, key: Any) -> pd.DataFrame:
    """Rows as a table: the ``first`` columns, then every figure any row has, in ``key`` order."""
    figures = sorted({f for r in rows for f in r} - set(first), key=key)
    return pd.DataFrame(rows, columns=first + figures)


def _most_significant_first(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Groups by their Holm-adjusted rank test, smallest first (groups without one last)."""
    adjusted = names.group_test_metric("p_adjusted")

    def rank(row: dict[str, Any]) -> tuple[float, str]:
        p = row.get(adjusted)
        return (math.inf if p is None else float(p), row["group"])

    return sorted(rows, key=rank)


def _disclosure_order(figure: str) -> tuple[int, str]:
    order = {f: i for i, f in enumerate(names.DISCLOSURE_FIGURES)}
    return order.get(figure, len(order)), figure


__all__ = [
    "HEADLINE_PATTERNS",
    "capped_label",
    "headline_metrics",
    "is_headline",
    "metric_tables",
    "recorded_figures",
    "table_text",
]
