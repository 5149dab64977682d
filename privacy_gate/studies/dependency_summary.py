"""Figures of a dependency study: repetitions summarised with intervals, and the paper's
qualitative invariants checked against them (Humphries et al.).

One row per experiment (scenario setting x generator x epsilon x repetition x IID or not) goes
in; :func:`summarise` gives the mean advantage per cell with a t-interval over repetitions, the
mean MACE bounds and the IID DP bound; :func:`check_invariants` states, with the numbers, whether

1. the non-IID advantage is at least the IID one at each epsilon (within the intervals);
2. the non-IID advantage exceeds the IID DP bound tanh-form at some epsilon (most repetitions'
   MACE lower bounds above it): the DP guarantee does not hold for dependent records;
3. bias p = 0.5 behaves like IID (the two intervals overlap).

>>> rows = [dict(scenario="s", setting="a", generator="g", epsilon=1.0, iid=iid, rep=r,
...              advantage=a + 0.01 * r, advantage_lower=a - 0.1, advantage_upper=a + 0.1,
...              auc=0.5 + a / 2)
...         for iid, a in ((False, 0.8), (True, 0.1)) for r in range(3)]
>>> s = summarise(rows, prior=0.5)
>>> [(c["iid"], round(c["advantage_mean"], 2)) for c in s]
[(False, 0.81), (True, 0.11)]
>>> [i["holds"] for i in check_invariants(s)]
[True, True, None]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from scipy import stats

from privacy_gate.estimators.mace.dp import dp_advantage_bound

CELL_KEYS = ("scenario", "setting", "generator", "epsilon", "iid")
FIGURES = ("advantage", "advantage_lower", "advantage_upper", "auc")


def _interval(values: np.ndarray, confidence: float = 0.95) -> float:
    """Half-width of the t-interval of the mean (0 for a single value)."""
    if len(values) < 2:
        return float("nan")
    return float(
        stats.t.ppf(0.5 + confidence / 2, len(values) - 1)
        * values.std(ddof=1)
        / math.sqrt(len(values))
    )


def summarise(rows: Iterable[Mapping[str, Any]], *, prior: float) -> list[dict[str, Any]]:
    """One dict per cell: the keys, ``n``, ``<figure>_mean``, ``advantage_ci`` and ``dp_bound``."""
    cells: dict[tuple, list[Mapping[str, Any]]] = {}
    for r in rows:
        cells.setdefault(tuple(r[k] for k in CELL_KEYS), []).append(r)
    out = []
    for key, group in cells.items():
        cell: dict[str, Any] = dict(zip(CELL_KEYS, key))
        cell["n"] = len(group)
        for f in FIGURES:
            cell[f"{f}_mean"] = float(np.mean([g[f] for g in group]))
        cell["advantage_ci"] = _interval(np.array([g["advantage"] for g in group], dtype=float))
        eps = cell["epsilon"]
        cell["dp_bound"] = None if eps is None else dp_advantage_bound(float(eps), prior)
        cell["lower_above_bound"] = (
            None
            if eps is None
            else sum(g["advantage_lower"] > cell["dp_bound"] for g in group) / len(group)
        )
        out.append(cell)
    return out


def _pairs(summary: list[dict[str, Any]]):
    """(non-IID cell, its IID counterpart) for every setting, generator and epsilon."""
    iid = {tuple(c[k] for k in CELL_KEYS[:-1]): c for c in summary if c["iid"]}
    for c in summary:
        if not c["iid"] and (other := iid.get(tuple(c[k] for k in CELL_KEYS[:-1]))) is not None:
            yield c, other


def _lo(c: Mapping[str, Any]) -> float:
    return c["advantage_mean"] - c["advantage_ci"]


def _hi(c: Mapping[str, Any]) -> float:
    return c["advantage_mean"] + c["advantage_ci"]


def _name(c: Mapping[str, Any]) -> str:
    eps = "no DP" if c["epsilon"] is None else f"epsilon {c['epsilon']:g}"
    return f"{c['setting']}, {c['generator']}, {eps}"


def check_invariants(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The three invariants: ``holds`` True / False, or None when the study has no cell to test
    it."""
    pairs = list(_pairs(summary))
    below = [(n, i) for n, i in pairs if _hi(n) < _lo(i)]
    first = {
        "invariant": "non-IID advantage >= IID advantage at each epsilon (within 95% intervals)",
        "holds": not below if pairs else None,
        "tested": len(pairs),
        "failures": [
            f"{_name(n)}: non-IID {n['advantage_mean']:.3f} ± {n['advantage_ci']:.3f} < IID "
            f"{i['advantage_mean']:.3f} ± {i['advantage_ci']:.3f}"
            for n, i in below
        ],
    }
    dp = [n for n, _ in pairs if n["dp_bound"] is not None]
    # judged on MACE lower bounds (each valid with probability 1 - delta), not on the plug-in
    # advantage, which is biased upward at small N: most repetitions' lower bounds above the bound
    over = [n for n in dp if n["lower_above_bound"] > 0.5]
    second = {
        "invariant": "non-IID advantage exceeds the IID DP bound at some epsilon (most "
        "repetitions' MACE lower bounds above it)",
        "holds": bool(over) if dp else None,
        "tested": len(dp),
        "where": [
            f"{_name(n)}: lower bound {n['advantage_lower_mean']:.3f} (mean) > DP bound "
            f"{n['dp_bound']:.3f} in {n['lower_above_bound']:.0%} of repetitions"
            for n in over
        ],
    }
    half = [(n, i) for n, i in pairs if n["scenario"] == "bias" and n["setting"].endswith(" p=0.5")]
    apart = [(n, i) for n, i in half if _hi(n) < _lo(i) or _hi(i) < _lo(n)]
    third = {
        "invariant": "bias p = 0.5 behaves like IID (intervals overlap)",
        "holds": not apart if half else None,
        "tested": len(half),
        "failures": [
            f"{_name(n)}: {n['advantage_mean']:.3f} ± {n['advantage_ci']:.3f} vs IID "
            f"{i['advantage_mean']:.3f} ± {i['advantage_ci']:.3f}"
            for n, i in apart
        ],
    }
    return [first, second, third]


def invariant_lines(invariants: list[dict[str, Any]]) -> list[str]:
    """Printable lines: HOLDS / FAILS / not tested, with what failed or where."""
    lines = []
    for inv in invariants:
        state = {True: "HOLDS", False: "FAILS", None: "not tested"}[inv["holds"]]
        lines.append(f"{state:<10} {inv['invariant']} ({inv['tested']} cell(s))")
        lines += [f"           - {x}" for x in (inv.get("failures") or inv.get("where") or [])[:8]]
    return lines
