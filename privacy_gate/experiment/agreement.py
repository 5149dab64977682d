"""Partial and quasi-identifier copies: the information-weighted column-agreement scan.

A synthetic row that reproduces a training record on all but one or two columns, or on its
quasi-identifiers only, is a copy too, and the distance attacks miss it when the re-drawn column
is far off. This scan scores every training and holdout record by the most information any
synthetic row reproduces of it:

- each column is coded: categories as they are, numbers in bins whose edges are the reference
  split's quantiles (public to the attacker; never the training split), so a value rounded to
  5 or 10 units still agrees;
- agreeing on a code is worth ``-log2`` of its frequency in the reference (a rare value says
  more than a common one);
- the projections tried are the whole record, the record without any one column, without any
  two columns (up to :data:`PAIR_MAX_COLUMNS` columns) and the quasi-identifiers; a record's score
  is the largest information of a projection some synthetic row reproduces exactly.

Keys are 64-bit linear hashes of the codes (integer arithmetic, exact on every CPU) and
informations are rounded to micro-bits before any comparison, so ranks do not depend on float
summation order.

Training records and holdout records are exchangeable when nothing leaks, so, like the member
scan, two tests read the scores: the tail-excess test (more training records among the highest
scores than chance; exact label permutation) and Simes' test over the training records'
conformal p-values against the holdout (Benjamini–Hochberg names the records). ``pvalue`` is
their Bonferroni combination.

>>> import pandas as pd
>>> from privacy_gate.spec import DatasetSpec
>>> rng = np.random.default_rng(0)
>>> cols = {f"c{i}": {"kind": "categorical"} for i in range(8)}
>>> spec = DatasetSpec.model_validate({"name": "t", "columns": cols})
>>> draw = lambda n: pd.DataFrame({c: rng.integers(0, 10, n).astype(str) for c in cols})
>>> train, holdout, reference, syn = draw(600), draw(600), draw(600), draw(600)
>>> part = train.iloc[:30].copy(); part["c0"] = draw(30)["c0"].to_numpy()  # copies with one column re-drawn
>>> syn.iloc[:30] = part.to_numpy()
>>> r = agreement_scan(syn, train, holdout, reference, spec, seed=0)
>>> r.pvalue < 0.001, r.count >= 10
(True, True)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from privacy_gate.estimators.exposure import conformal_pvalues, fdr_select, simes_pvalue, tail_excess_pvalue
from privacy_gate.spec import DatasetSpec

#: Projections without two columns are tried up to this many attribute columns (d (d - 1) / 2 keys).
PAIR_MAX_COLUMNS = 24
#: Quantile bins of a numeric column (edges from the reference split).
NUMERIC_BINS = 20
#: Informations are compared in micro-bits (integers): no float order decides a rank.
MICRO = 1_000_000
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


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

    @property
    def excess_share(self) -> float:
        """Named training records beyond the expected false ones, as a share of the training split."""
        return self.count * (1 - self.q) / max(1, self.tested)

    def metrics(self) -> dict[str, float]:
        return {"pvalue": self.pvalue, "tail_pvalue": self.tail_pvalue, "simes_pvalue": self.simes_pvalue,
                "count": float(self.count), "tested": float(self.tested), "calibration": float(self.calibration),
                "excess_share": self.excess_share, "tail_top": float(self.tail_top)}


def _codes(frames: list[pd.DataFrame], reference: pd.DataFrame, spec: DatasetSpec,
           cols: list[str]) -> tuple[list[np.ndarray], np.ndarray]:
    """Integer codes of every frame's columns, and each code's information (micro-bits) per column."""
    coded = [np.empty((len(f), len(cols)), dtype=np.int64) for f in frames]
    info = []
    for j, c in enumerate(cols):
        col = spec.columns[c]
        if col.is_numeric:
            ref = pd.to_numeric(_as_number(reference[c]), errors="coerce").to_numpy(dtype=float)
            ref = ref[np.isfinite(ref)]
            edges = np.unique(np.quantile(ref, np.linspace(0, 1, NUMERIC_BINS + 1)[1:-1])) if ref.size else np.array([])

            def code(s: pd.Series, edges=edges) -> np.ndarray:
                v = pd.to_numeric(_as_number(s), errors="coerce").to_numpy(dtype=float)
                out = np.searchsorted(edges, v, side="right").astype(np.int64)
                out[~np.isfinite(v)] = -1  # missing is a value of its own
                return out
            n_codes = edges.size + 2
        else:
            values = pd.Index(pd.unique(pd.concat([reference[c]] + [f[c] for f in frames], ignore_index=True)
                                        .astype("string").fillna("\x00missing")))

            def code(s: pd.Series, values=values) -> np.ndarray:
                return values.get_indexer(s.astype("string").fillna("\x00missing")).astype(np.int64)
            n_codes = len(values) + 1
        for f, out in zip(frames, coded):
            out[:, j] = code(f[c])
        ref_codes = code(reference[c]) + 1  # -1 (missing number) -> 0
        counts = np.bincount(ref_codes, minlength=n_codes + 1).astype(float)
        bits = -np.log2((counts + 0.5) / (len(reference) + 0.5 * (n_codes + 1)))
        info.append(np.round(bits * MICRO).astype(np.int64))
    width = max(len(b) for b in info)
    table = np.zeros((len(cols), width), dtype=np.int64)
    for j, b in enumerate(info):
        table[j, :len(b)] = b
    return coded, table


def _as_number(s: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(s.dtype) or isinstance(s.dtype, pd.DatetimeTZDtype):
        return (s - pd.Timestamp("1970-01-01", tz=getattr(s.dtype, "tz", None))).dt.total_seconds()
    if pd.api.types.is_bool_dtype(s.dtype):
        return s.astype(float)
    return s


def projections(n_cols: int, qi: list[int] | None) -> list[tuple[int, ...]]:
    """The column sets whose exact agreement is looked for (left-out columns)."""
    every = tuple(range(n_cols))
    out = [every] + [tuple(j for j in every if j != i) for i in every]
    if n_cols <= PAIR_MAX_COLUMNS:
        out += [tuple(j for j in every if j not in pair) for pair in itertools.combinations(every, 2)]
    if qi and 0 < len(qi) < n_cols - 2:
        out.append(tuple(sorted(qi)))
    return [p for p in out if p]


def best_agreement(pool: np.ndarray, synthetic: np.ndarray, info: np.ndarray, sets: list[tuple[int, ...]],
                   *, seed: int = 0) -> np.ndarray:
    """Per pool record (rows of codes), the most information (micro-bits) of a projection some
    synthetic row reproduces exactly; 0 when none does."""
    rng = np.random.default_rng(seed)
    mult = (rng.integers(1, 2**62, size=pool.shape[1], dtype=np.int64).astype(np.uint64) * np.uint64(2) + np.uint64(1))
    with np.errstate(over="ignore"):
        pool_terms = (pool + 2).astype(np.uint64) * mult  # wraps modulo 2^64: exact, CPU-independent
        syn_terms = (synthetic + 2).astype(np.uint64) * mult
    cols = np.arange(pool.shape[1])
    pool_info = info[cols, np.clip(pool + 1, 0, info.shape[1] - 1)]  # (n_pool, d) micro-bits
    best = np.zeros(len(pool), dtype=np.int64)
    for s in sets:
        idx = list(s)
        with np.errstate(over="ignore"):
            pk = pool_terms[:, idx].sum(axis=1, dtype=np.uint64)
            sk = np.unique(syn_terms[:, idx].sum(axis=1, dtype=np.uint64))
        hit = np.isin(pk, sk, assume_unique=False)
        if hit.any():
            gain = pool_info[hit][:, idx].sum(axis=1)
            best[hit] = np.maximum(best[hit], gain)
    return best


def agreement_scan(synthetic: pd.DataFrame, train: pd.DataFrame, holdout: pd.DataFrame, reference: pd.DataFrame,
                   spec: DatasetSpec, *, q: float = 0.05, tail_max_share: float = 0.01, seed: int = 0
                   ) -> AgreementResult:
    """Score training and holdout records by their best column agreement with a synthetic row;
    test and name as in the module docstring."""
    cols = spec.attribute_columns
    if len(train) == 0 or len(holdout) == 0 or len(synthetic) == 0:
        raise ValueError("the agreement scan needs training, holdout and synthetic records")
    (t, h, s), info = _codes([train, holdout, synthetic], reference, spec, cols)
    qi = [cols.index(c) for c in (spec.quasi_identifiers or []) if c in cols]
    sets = projections(len(cols), qi)
    scores = best_agreement(np.vstack([t, h]), s, info, sets, seed=seed)
    st, sh = scores[:len(t)], scores[len(t):]
    labels = np.r_[np.ones(len(t), bool), np.zeros(len(h), bool)]
    tail_p, top = tail_excess_pvalue(scores.astype(float), labels, max_share=tail_max_share, seed=seed + 1)
    pvals = conformal_pvalues(st.astype(float), sh.astype(float))
    # records without any agreement are never named (their p-value is 1 in effect)
    pvals = np.where(st > 0, pvals, 1.0)
    selected, _ = fdr_select(pvals, q=q)
    simes = simes_pvalue(pvals)
    records = pd.DataFrame({"row_id": np.arange(len(t)), "score": st / MICRO, "p_value": pvals, "exposed": selected})
    return AgreementResult(records=records, pvalue=min(1.0, 2 * min(tail_p, simes)), tail_pvalue=tail_p,
                           simes_pvalue=simes, tail_top=int(top), count=int(selected.sum()), tested=len(t),
                           calibration=len(h), q=q)


__all__ = ["AgreementResult", "agreement_scan", "best_agreement", "projections"]
