"""The headline figures in words, each beside its null level: what a release that leaks nothing
would show at this many targets. A bare "MACE advantage 0.161" on a clean release reads like a
16 % leak; beside its null level (0.165, the label-permutation mean of the same estimator at the
same size) it reads as what it is: no excess over chance.

The null levels come from where the gate computes them: ``<query>.mace.bias`` (MACE's
label-permutation null, :mod:`privacy_gate.estimators.mace.queries`) and
:func:`privacy_gate.estimators.power.null_reference` (the 95 % no-signal level of an AUC, a TPR at
a false-alarm rate, an exposed share's upper bound). Figures only: no record value is read.

>>> m = {"combined.mace.advantage": 0.161, "combined.mace.advantage_lower": 0.0,
...      "combined.mace.advantage_upper": 0.24, "combined.mace.bias": 0.165}
>>> mace_words(m, "combined")
'MACE advantage 0.161 [0, 0.24]; a release with no leakage scores about 0.165 here: no excess over
chance'
>>> m.update({"combined.mace.advantage": 0.41, "combined.mace.advantage_lower": 0.3,
...           "combined.mace.advantage_upper": 0.52})
>>> mace_words(m, "combined")
'MACE advantage 0.41 [0.3, 0.52]; a release with no leakage scores about 0.165 here: above chance,
at least 0.3 for certain'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from privacy_gate.estimators.power import null_reference
from privacy_gate.gate.human import human_number, human_percent
from privacy_gate.names import COMBINED, EXPOSURE, STRONGEST, mace_metric, metric_name
from privacy_gate.words.evidence import auc_interval, finite_or_none


def _figures_of(metrics: Mapping[str, Any], attack: str) -> dict[str, float]:
    prefix = f"{attack}."
    return {
        k[len(prefix) :]: float(v)
        for k, v in metrics.items()
        if k.startswith(prefix) and finite_or_none(v) is not None
    }


def gated_attacks(metrics: Mapping[str, Any]) -> list[str]:
    """The attacks the gate judged: those with MACE bounds (a reported-only attack, such as
    MAMA-MIA's oracle, has ROC figures but no MACE), not the ``combined`` / ``strongest``
    summaries."""
    out = set()
    for key in metrics:
        head, _, rest = key.partition(".")
        if rest == "mace.advantage" and "/" not in head and head not in (COMBINED, STRONGEST):
            out.add(head)
    return sorted(out)


@dataclass(frozen=True)
class AttackFigures:
    """The strongest gated attack's headline figures (None: not recorded)."""

    attack: str
    auc: float
    auc_lower: float | None
    auc_upper: float | None
    auc_null: float | None  # the 95 % no-signal level of the AUC at these target counts
    tpr: float | None  # TPR at 1 % FPR
    tpr_null: float | None
    n_members: int | None
    n_non_members: int | None


def strongest_attack(metrics: Mapping[str, Any]) -> AttackFigures | None:
    """The gated attack with the highest AUC, with its 95 % interval (Hanley & McNeil, as the
    report's tables) and its null levels."""
    found = [
        (a, finite_or_none(metrics.get(metric_name(a, "auc")))) for a in gated_attacks(metrics)
    ]
    scored = [(a, v) for a, v in found if v is not None]
    if not scored:
        return None
    attack, auc = max(scored, key=lambda t: (t[1], t[0]))
    f = _figures_of(metrics, attack)
    n1, n0 = f.get("n_members"), f.get("n_non_members")
    lo = hi = None
    if n1 and n0:
        lo, hi = auc_interval(auc, int(n1), int(n0))
        lo, hi = (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else (None, None)
    return AttackFigures(
        attack=attack,
        auc=auc,
        auc_lower=lo,
        auc_upper=hi,
        auc_null=null_reference("auc", f),
        tpr=f.get("tpr_at_fpr_0.01"),
        tpr_null=null_reference("tpr_at_fpr_0.01", f),
        n_members=int(n1) if n1 else None,
        n_non_members=int(n0) if n0 else None,
    )


@dataclass(frozen=True)
class Figure:
    """A headline figure for people: ``value`` (the number, with its interval) and ``meaning``
    (its null level and what that says). ``line(label)`` is the one-line form."""

    value: str
    meaning: str

    def line(self, label: str) -> str:
        return f"{label} {self.value}; {self.meaning}"


def auc_figure(a: AttackFigures) -> Figure:
    """``0.52 [0.49, 0.55]``; chance is 0.5, and what a release with no leakage reaches here."""
    interval = (
        f" [{human_number(a.auc_lower, 2)}, {human_number(a.auc_upper, 2)}]"
        if a.auc_lower is not None
        else ""
    )
    null = (
        f"; a release with no leakage reaches up to {human_number(a.auc_null, 2)} here"
        if a.auc_null
        else ""
    )
    return Figure(value=f"{human_number(a.auc, 2)}{interval}", meaning=f"chance is 0.5{null}")


def tpr_figure(a: AttackFigures) -> Figure | None:
    """The share of members caught at 1 % false alarms, beside what chance catches."""
    if a.tpr is None:
        return None
    null = (
        f"; with no leakage up to {human_percent(a.tpr_null)} here"
        if a.tpr_null is not None
        else ""
    )
    return Figure(
        value=human_percent(a.tpr), meaning=f"of the members caught at 1% false alarms{null}"
    )


def mace_query(metrics: Mapping[str, Any]) -> str | None:
    """The query whose MACE advantage heads a summary: the combined query (all gated attacks'
    scores together, the strongest attacker MACE bounds), else the strongest attack's."""
    if mace_metric(COMBINED, "advantage") in metrics:
        return COMBINED
    best = strongest_attack(metrics)
    return best.attack if best and mace_metric(best.attack, "advantage") in metrics else None


def mace_figure(metrics: Mapping[str, Any], query: str) -> Figure | None:
    """The MACE advantage of ``query`` with its bounds, beside its null level (the permutation
    bias): whether there is any excess over chance, and whether an advantage is certain (its
    95 % lower bound above 0)."""

    def get(figure: str) -> float | None:
        return finite_or_none(metrics.get(mace_metric(query, figure)))

    est, lower, upper, bias = (
        get("advantage"),
        get("advantage_lower"),
        get("advantage_upper"),
        get("bias"),
    )
    if est is None:
        return None
    value = human_number(est, 3)
    if lower is not None and upper is not None:
        value += f" [{human_number(lower, 3)}, {human_number(upper, 3)}]"
    certain = lower is not None and lower > 0
    if bias is None:
        return Figure(
            value=value, meaning="above chance for certain" if certain else "0 is guessing"
        )
    null = f"a release with no leakage scores about {human_number(bias, 3)} here"
    if certain:
        return Figure(
            value=value,
            meaning=f"{null}: above chance, at least {human_number(lower, 3)} for certain",
        )
    if est <= bias:
        return Figure(value=value, meaning=f"{null}: no excess over chance")
    return Figure(
        value=value, meaning=f"{null}: slightly above that, but not for certain (lower bound 0)"
    )


def mace_words(metrics: Mapping[str, Any], query: str) -> str | None:
    """``MACE advantage <value>; <its null level and what it says>`` (the summaries' form)."""
    figure = mace_figure(metrics, query)
    return figure.line("MACE advantage") if figure else None


def exposed_figure(metrics: Mapping[str, Any]) -> Figure | None:
    """The exposed share of training records with its bounds, at its false-alarm level, beside
    the upper bound a release with no leakage reaches at this size."""

    def get(figure: str) -> float | None:
        return finite_or_none(metrics.get(f"{EXPOSURE}.{figure}"))

    share, lower, upper, level = get("share"), get("share_lower"), get("share_upper"), get("level")
    if share is None:
        return None
    value = human_percent(share)
    if lower is not None and upper is not None:
        value += f" [{human_percent(lower)}, {human_percent(upper)}]"
    meaning = (
        "the share of training records exposed"
        + (f" at {human_percent(level)} false alarms" if level else "")
        + ", with its 95% interval"
    )
    needs = [
        f"{EXPOSURE}.{k}" for k in ("tested", "level", "delta")
    ]  # what its no-signal bound is computed from
    null = (
        null_reference(
            f"{EXPOSURE}.share_upper",
            {
                k: float(v)
                for k, v in metrics.items()
                if k.startswith(f"{EXPOSURE}.") and finite_or_none(v) is not None
            },
        )
        if all(finite_or_none(metrics.get(k)) is not None for k in needs)
        else None
    )
    if null is not None and upper is not None:
        meaning += f"; with no leakage the upper bound reaches about {human_percent(null)} here"
    if lower is not None:
        meaning += "; some exposed for certain" if lower > 0 else "; none for certain"
    return Figure(value=value, meaning=meaning)


def risk_figure(metrics: Mapping[str, Any], family: str) -> Figure | None:
    """A disclosure risk (``singling_out`` / ``linkability`` / ``inference``) with its interval:
    0 is no better than for people outside the training data, so the null level is 0."""
    risk, lower, upper = (
        finite_or_none(metrics.get(f"{family}.{f}")) for f in ("risk", "risk_lower", "risk_upper")
    )
    if risk is None:
        return None
    value = human_number(risk, 2) + (
        f" [{human_number(lower, 2)}, {human_number(upper, 2)}]"
        if lower is not None and upper is not None
        else ""
    )
    certain = lower is not None and lower > 0
    return Figure(
        value=value, meaning="above 0 for certain" if certain else "not above 0 for certain"
    )


__all__ = [
    "AttackFigures",
    "Figure",
    "auc_figure",
    "exposed_figure",
    "gated_attacks",
    "mace_figure",
    "mace_query",
    "mace_words",
    "risk_figure",
    "strongest_attack",
    "tpr_figure",
]
