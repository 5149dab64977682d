"""The agreement scan as it was before the graded numeric agreement and the undeclared linking
views (privacy_gate/experiment/agreement.py at commit 359969d), frozen so
``bench_agreement_power.py`` can run the old and the new scan side by side on the same releases.

Then: numbers coded in 20 reference-quantile bins (an exact value worth at most log2(20) bits),
views "all columns" and (when declared) the quasi-identifiers only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from privacy_gate.data.split import unit_codes, unit_max
from privacy_gate.estimators.exposure import conformal_pvalues, fdr_select, simes_pvalue
from privacy_gate.estimators.tail_test import tail_excess_pvalue
from privacy_gate.spec import DatasetSpec

#: Quantile bins of a numeric column (edges from the reference split).
NUMERIC_BINS = 20
#: Informations are integers in 1/UNIT bits: sums of at most a few thousand columns stay below
#: 2^24, where float32 arithmetic is exact, so no float order decides a rank.
UNIT = 16


@dataclass(frozen=True)
class AgreementResult:
    records: pd.DataFrame  # row_id (position in train), score (bits), p_value, exposed
    pvalue: float
    tail_pvalue: float
    simes_pvalue: float
    tail_top: int
    count: int
    tested: int
    calibration: int
    q: float
    qi_pvalue: float = (
        1.0  # the quasi-identifier view's smaller p-value (1 without declared quasi-identifiers)
    )

    @property
    def excess_share(self) -> float:
        """Named training records beyond the expected false ones, as a share of the training
        split."""
        return self.count * (1 - self.q) / max(1, self.tested)

    def metrics(self) -> dict[str, float]:
        return {
            "pvalue": self.pvalue,
            "tail_pvalue": self.tail_pvalue,
            "simes_pvalue": self.simes_pvalue,
            "count": float(self.count),
            "tested": float(self.tested),
            "calibration": float(self.calibration),
            "excess_share": self.excess_share,
            "tail_top": float(self.tail_top),
            "qi_pvalue": self.qi_pvalue,
        }


def _codes(
    frames: list[pd.DataFrame], reference: pd.DataFrame, spec: DatasetSpec, cols: list[str]
) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer codes of every frame's columns, and each code's information (micro-bits) per
    column."""
    coded = [np.empty((len(f), len(cols)), dtype=np.int64) for f in frames]
    info = []
    for j, c in enumerate(cols):
        col = spec.columns[c]
        if col.is_numeric:
            ref = pd.to_numeric(_as_number(reference[c]), errors="coerce").to_numpy(dtype=float)
            ref = ref[np.isfinite(ref)]
            edges = (
                np.unique(np.quantile(ref, np.linspace(0, 1, NUMERIC_BINS + 1)[1:-1]))
                if ref.size
                else np.array([])
            )

            def code(s: pd.Series, edges=edges) -> np.ndarray:
                v = pd.to_numeric(_as_number(s), errors="coerce").to_numpy(dtype=float)
                out = np.searchsorted(edges, v, side="right").astype(np.int64)
                out[~np.isfinite(v)] = -1  # missing is a value of its own
                return out

            n_codes = edges.size + 2
        else:
            values = pd.Index(
                pd.unique(
                    pd.concat([reference[c]] + [f[c] for f in frames], ignore_index=True)
                    .astype("string")
                    .fillna("\x00missing")
                )
            )

            def code(s: pd.Series, values=values) -> np.ndarray:
                return values.get_indexer(s.astype("string").fillna("\x00missing")).astype(np.int64)

            n_codes = len(values) + 1
        for f, out in zip(frames, coded):
            out[:, j] = code(f[c])
        ref_codes = code(reference[c]) + 1  # -1 (missing number) -> 0
        counts = np.bincount(ref_codes, minlength=n_codes + 1).astype(float)
        bits = -np.log2((counts + 0.5) / (len(reference) + 0.5 * (n_codes + 1)))
        info.append(np.round(bits * UNIT).astype(np.int64))
    width = max(len(b) for b in info)
    table = np.zeros((len(cols), width), dtype=np.int64)
    for j, b in enumerate(info):
        table[j, : len(b)] = b
    return coded, table


def _as_number(s: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(s.dtype) or isinstance(s.dtype, pd.DatetimeTZDtype):
        return (s - pd.Timestamp("1970-01-01", tz=getattr(s.dtype, "tz", None))).dt.total_seconds()
    if pd.api.types.is_bool_dtype(s.dtype):
        return s.astype(float)
    return s


def _compact(
    pool: np.ndarray, others: list[np.ndarray], info: np.ndarray
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
    """Codes renumbered per column to the cells the pool uses (a synthetic cell no pool record
    holds can match nothing), so the one-hot width is the pool's distinct values, not the widest
    column's."""
    new_pool, new_others, rows = np.empty_like(pool), [np.full_like(o, -2) for o in others], []
    width = 1
    for j in range(pool.shape[1]):
        used, inv = np.unique(pool[:, j], return_inverse=True)
        new_pool[:, j] = inv
        for o, n in zip(others, new_others):
            pos = np.searchsorted(used, o[:, j])
            ok = (pos < used.size) & (used[np.minimum(pos, used.size - 1)] == o[:, j])
            n[ok, j] = pos[ok]
        rows.append(info[j, np.clip(used + 1, 0, info.shape[1] - 1)])
        width = max(width, used.size)
    table = np.zeros((pool.shape[1], width + 1), dtype=np.int64)
    for j, r in enumerate(rows):
        table[j, 1 : 1 + r.size] = r  # renumbered code c -> column c + 1
    return new_pool, new_others, table


def best_agreement(
    pool: np.ndarray, synthetic: np.ndarray, info: np.ndarray, *, chunk: int = 2048
) -> np.ndarray:
    """Per pool record (rows of codes), the most information (in 1/:data:`UNIT` bits) some
    synthetic row reproduces: ``max_s sum_j w_j(x_j) [x_j == s_j]``, one matrix product per chunk
    over the (column, value) cells the pool holds. The weights are integers below 2^24 in total,
    so float32 products and sums are exact on every CPU."""
    # identical rows score alike: each distinct pool row is scored once and each distinct synthetic
    # row compared once (a few columns, e.g. the quasi-identifiers, repeat a lot)
    pool, back = np.unique(pool, axis=0, return_inverse=True)
    synthetic = np.unique(synthetic, axis=0)
    return _best_distinct(pool, synthetic, info, chunk=chunk)[back.ravel()]


def _best_distinct(
    pool: np.ndarray, synthetic: np.ndarray, info: np.ndarray, *, chunk: int
) -> np.ndarray:
    d = pool.shape[1]
    p, (s,), table = _compact(pool, [synthetic], info)
    widths = np.array([int(p[:, j].max()) + 1 for j in range(d)])
    offsets = np.r_[0, np.cumsum(widths)[:-1]]
    syn = np.zeros((len(s), int(widths.sum())), dtype=np.float32)
    for j in range(d):
        held = s[:, j] >= 0
        syn[np.flatnonzero(held), offsets[j] + s[held, j]] = 1.0
    best = np.zeros(len(p), dtype=np.int64)
    for start in range(0, len(p), chunk):
        part = p[start : start + chunk]
        block = np.zeros((len(part), syn.shape[1]), dtype=np.float32)
        for j in range(d):
            block[np.arange(len(part)), offsets[j] + part[:, j]] = table[j, 1 + part[:, j]]
        best[start : start + chunk] = np.rint((block @ syn.T).max(axis=1)).astype(np.int64)
    return best


def legacy_agreement_scan(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    reference: pd.DataFrame,
    spec: DatasetSpec,
    *,
    q: float = 0.05,
    tail_max_share: float = 0.01,
    seed: int = 0,
) -> AgreementResult:
    """Score training and holdout records by their best column agreement with a synthetic row;
    test and name as in the module docstring."""
    cols = spec.attribute_columns
    if len(train) == 0 or len(holdout) == 0 or len(synthetic) == 0:
        raise ValueError("the agreement scan needs training, holdout and synthetic records")
    (t, h, s, ref), info = _codes([train, holdout, synthetic, reference], reference, spec, cols)
    pool = np.vstack([t, h])
    # a panel (spec.entity_id): each person is one unit, scored by their best row, so a person's
    # rows never count as independent records (people are exchangeable between the two sides)
    ent_t, ent_h = unit_codes(train, spec.entity_id), unit_codes(holdout, spec.entity_id)
    n_t, n_h = int(ent_t.max()) + 1, int(ent_h.max()) + 1
    labels = np.r_[np.ones(n_t, bool), np.zeros(n_h, bool)]

    def per_unit(scores: np.ndarray) -> np.ndarray:
        return np.r_[unit_max(scores[: len(t)], ent_t), unit_max(scores[len(t) :], ent_h)]

    qi = [cols.index(c) for c in (spec.quasi_identifiers or []) if c in cols]
    views = {"all": list(range(len(cols)))}
    if 0 < len(qi) < len(cols):
        views["quasi_identifiers"] = (
            qi  # a rare combination reproduced, whatever the other columns say
        )
    parts, named = {}, None
    for i, (view, idx) in enumerate(views.items()):
        # the excess over what a sample of the population reproduces (the reference, disjoint from
        # both sides): records with natural twins reproduce much anyway, a partial copy more
        scores = per_unit(
            best_agreement(pool[:, idx], s[:, idx], info[idx])
            - best_agreement(pool[:, idx], ref[:, idx], info[idx])
        )
        tail_p, top = tail_excess_pvalue(
            scores.astype(float), labels, max_share=tail_max_share, seed=seed + 1 + i
        )
        pvals = conformal_pvalues(scores[:n_t].astype(float), scores[n_t:].astype(float))
        parts[f"{view}.tail"], parts[f"{view}.simes"] = tail_p, simes_pvalue(pvals)
        if named is None:
            named = (scores[:n_t], pvals, tail_p, top)
    st, pvals, tail_p, top = named
    selected, _ = fdr_select(pvals, q=q)
    # per training row: its unit's score, p-value and selection (a unit is the row, or its entity)
    records = pd.DataFrame(
        {
            "row_id": np.arange(len(t)),
            "score": st[ent_t] / UNIT,
            "p_value": pvals[ent_t],
            "exposed": selected[ent_t],
        }
    )
    return AgreementResult(
        records=records,
        pvalue=min(1.0, len(parts) * min(parts.values())),
        tail_pvalue=tail_p,
        simes_pvalue=parts["all.simes"],
        tail_top=int(top),
        count=int(selected.sum()),
        tested=n_t,
        calibration=n_h,
        q=q,
        qi_pvalue=min(
            parts.get("quasi_identifiers.tail", 1.0), parts.get("quasi_identifiers.simes", 1.0)
        ),
    )
