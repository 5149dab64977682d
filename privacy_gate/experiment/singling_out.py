"""Singling out (Giomi et al., PETS 2023, §4.1; Cohen and Nissim 2020): the attacker writes
predicates from the synthetic data alone — univariate (a value held by one synthetic record, a
column's minimum or maximum) and multivariate (``n_cols`` columns of a random synthetic record:
categories by equality, numbers by ``>=`` above the column's synthetic median and ``<=`` below it,
missing values by "is missing") — and keeps those that isolate exactly one synthetic record. An
attack succeeds on a set of real records when its predicate matches exactly one of them.

The success rate on the training set is compared with that on the control set. A predicate is
likelier to isolate one record in a smaller set, so when the control set is smaller than the
training set its successes are scaled to the training set's size by the model of Cohen and
Nissim: the share of predicates isolating one of ``n`` records is ``a * I(n, w)`` with
``I(n, w) = (1 - (n w + 1)(1 - w)^n) / (n + 1)`` for an effective weight ``w``, fitted (least
squares over a grid of ``w``) to the successes on nested random prefixes of the control set.

A panel (each real row's person given, ``units``): an attack succeeds when the rows its predicate
matches are one person's, and the sizes of the size correction and the equal-size test are people,
subsampled whole. The counts stay integer (people matched per predicate): the same on every CPU.

Everything is vectorised: a predicate is (columns, operators, values) rows of arrays, evaluated
against a whole code matrix in chunks. Predicates are described outside this module by column
names and counts only, never by their values.

>>> import pandas as pd
>>> from privacy_gate.experiment.disclosure_codes import Codes
>>> df = pd.DataFrame({"a": list("abcd") * 50, "b": np.arange(200).astype(str)})
>>> codes = Codes.of([df, df, df.iloc[:100]], columns=["a", "b"], numeric=set())
>>> r = singling_out(codes, n_attacks=50, n_cols=2, seed=0)
>>> r.risk.train_rate, r.n_predicates
(1.0, 50)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from privacy_gate.estimators.disclosure import DisclosureRisk, disclosure_risk
from privacy_gate.experiment.disclosure_codes import Codes

_LOG = logging.getLogger("privacy_gate.experiment")
EQ, LE, GE, ISNA = 0, 1, 2, 3
#: elements (predicates x records) per evaluation chunk: 32 MB of float32 per column
CHUNK_ELEMENTS = 1 << 23


@dataclass(frozen=True)
class Predicates:
    """``cols``, ``ops`` and ``vals``: ``(n, n_cols)`` arrays, one row per predicate."""

    cols: np.ndarray
    ops: np.ndarray
    vals: np.ndarray

    def __post_init__(self) -> None:
        if not (self.cols.shape == self.ops.shape == self.vals.shape) or self.cols.ndim != 2:
            raise ValueError("predicate arrays must share one (n, n_cols) shape")

    def __len__(self) -> int:
        return int(self.cols.shape[0])

    def take(self, idx: np.ndarray) -> Predicates:
        return Predicates(self.cols[idx], self.ops[idx], self.vals[idx])


def match_counts(
    data: np.ndarray,
    preds: Predicates,
    *,
    bounds: np.ndarray | None = None,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """How many rows of ``data`` each predicate matches, shape ``(n_predicates, len(bounds))``:
    column i counts the rows before ``bounds[i]`` (default: all rows). With ``groups`` (the start of
    each unit's run of adjacent rows, :func:`grouped`) it counts the units with a matching row, and
    ``bounds`` are in units: a person matched in three of their years is one match.

    >>> d = np.array([[1.0], [1.0], [2.0]], dtype=np.float32)
    >>> p = Predicates(np.zeros((1, 1), np.int64), np.array([[LE]], np.int8),
    ...                np.array([[1.0]], np.float32))
    >>> match_counts(d, p).tolist(), match_counts(d, p, groups=np.array([0, 2])).tolist()
    ([[2]], [[1]])
    """
    n_rows = data.shape[0]
    n_units = n_rows if groups is None else len(groups)
    ends = np.array([n_units] if bounds is None else bounds, dtype=np.int64)
    out = np.zeros((len(preds), len(ends)), dtype=np.int64)
    if n_rows == 0 or len(preds) == 0:
        return out
    columns = np.ascontiguousarray(data.T)
    step = max(1, CHUNK_ELEMENTS // n_rows)
    starts = np.concatenate([[0], ends[:-1]])
    for s in range(0, len(preds), step):
        c, o, v = preds.cols[s : s + step], preds.ops[s : s + step], preds.vals[s : s + step]
        hit = np.ones((len(c), n_rows), dtype=bool)
        for j in range(c.shape[1]):
            X = columns[c[:, j]]
            for op in (EQ, LE, GE, ISNA):
                rows = np.flatnonzero(o[:, j] == op)
                if rows.size == 0:
                    continue
                x, val = X[rows], v[rows, j][:, None]
                cond = (
                    (x == val)
                    if op == EQ
                    else (x <= val)
                    if op == LE
                    else (x >= val)
                    if op == GE
                    else np.isnan(x)
                )
                hit[rows] &= cond
        if groups is not None:
            hit = np.logical_or.reduceat(
                hit, groups, axis=1
            )  # a unit matches when any of its rows does
        per_block = (
            np.add.reduceat(hit, starts, axis=1)
            if len(ends) > 1
            else hit.sum(axis=1, keepdims=True)
        )
        out[s : s + step] = np.cumsum(per_block, axis=1) if len(ends) > 1 else per_block
    return out


def grouped(
    data: np.ndarray, units: np.ndarray, *, rank: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``data``'s rows reordered so each unit's rows are adjacent, the units in the order of
    ``rank[unit]`` (default: of their codes), and where each unit's run starts (the ``groups`` of
    :func:`match_counts`). Integer sorting only: the same order on every CPU.

    >>> rows, starts = grouped(np.array([[0.0], [1.0], [2.0]]), np.array([1, 0, 1]))
    >>> rows.ravel().tolist(), starts.tolist()
    ([1.0, 0.0, 2.0], [0, 1])
    """
    key = np.asarray(units) if rank is None else np.asarray(rank)[units]
    order = np.argsort(key, kind="stable")
    key = key[order]
    return data[order], (
        np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.zeros(0, np.int64)
    )


def _size(data: np.ndarray, units: np.ndarray | None) -> int:
    """How many units ``data`` holds: rows, or the people of ``units`` (codes ``0 .. n - 1``)."""
    return data.shape[0] if units is None else (int(units.max()) + 1 if units.size else 0)


def _matched(data: np.ndarray, preds: Predicates, units: np.ndarray | None) -> np.ndarray:
    """How many rows (``units`` None) or units of ``data`` each predicate matches."""
    if units is None:
        return match_counts(data, preds)[:, 0]
    rows, starts = grouped(data, units)
    return match_counts(rows, preds, groups=starts)[:, 0]


def _univariate_ranges(
    x: np.ndarray, ops: np.ndarray, vals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where one column's present values sort (stably: ties keep their row order), and for each
    one-column predicate the range ``[lo, hi)`` of sorted positions it matches (a missing-value
    predicate's range is empty: the missing rows are not among the sorted)."""
    order = np.flatnonzero(~np.isnan(x))
    order = order[np.argsort(x[order], kind="stable")]
    present = x[order]
    left, right = np.searchsorted(present, vals, "left"), np.searchsorted(present, vals, "right")
    lo = np.where((ops == EQ) | (ops == GE), left, 0)
    hi = np.where(
        ops == EQ, right, np.where(ops == LE, right, np.where(ops == GE, len(present), 0))
    )
    return order, lo, hi


def _univariate_counts(data: np.ndarray, preds: Predicates) -> np.ndarray:
    """Match counts of one-column predicates from each column's sorted values (binary search)."""
    out = np.zeros(len(preds), dtype=np.int64)
    c, o, v = preds.cols[:, 0], preds.ops[:, 0], preds.vals[:, 0]
    for j in np.unique(c):
        rows = np.flatnonzero(c == j)
        x = data[:, j]
        _, lo, hi = _univariate_ranges(x, o[rows], v[rows])
        out[rows] = np.where(o[rows] == ISNA, int(np.isnan(x).sum()), hi - lo)
    return out


def _univariate_single(data: np.ndarray, preds: Predicates, units: np.ndarray) -> np.ndarray:
    """Whether the rows each one-column predicate matches are one unit's: its range of sorted
    positions is not empty and holds no change of unit (the next change after its start is not in
    it)."""
    out = np.zeros(len(preds), dtype=bool)
    c, o, v = preds.cols[:, 0], preds.ops[:, 0], preds.vals[:, 0]
    for j in np.unique(c):
        rows = np.flatnonzero(c == j)
        x = data[:, j]
        order, lo, hi = _univariate_ranges(x, o[rows], v[rows])
        u = units[order]
        change = np.flatnonzero(u[1:] != u[:-1]) + 1
        next_change = np.append(change, u.size)[np.searchsorted(change, lo, "right")]
        missing_units = np.unique(units[np.isnan(x)]).size
        out[rows] = np.where(o[rows] == ISNA, missing_units == 1, (hi > lo) & (next_change >= hi))
    return out


def isolating(
    data: np.ndarray, preds: Predicates, *, seed: int = 0, units: np.ndarray | None = None
) -> np.ndarray:
    """Whether each predicate matches exactly one row of ``data`` or, with ``units`` (each row's
    person, :func:`privacy_gate.data.split.unit_codes`), rows of exactly one person: on a panel a
    predicate that matches all seven years of one person singles that person out although it
    isolates no row. Predicates matching two rows (two people) of a small random subset of rows are
    dropped first (they cannot isolate one): most random predicates match many records, so the
    full count is paid for few. One-column predicates are counted by binary search in the sorted
    column.

    >>> d = np.array([[1.0], [2.0], [2.0], [np.nan]], dtype=np.float32)
    >>> p = Predicates(np.zeros((4, 1), np.int64), np.array([[EQ], [EQ], [LE], [ISNA]], np.int8),
    ...                np.array([[1.0], [2.0], [1.0], [np.nan]], np.float32))
    >>> isolating(d, p).tolist()
    [True, False, True, True]
    >>> isolating(d, p, units=np.array([0, 1, 1, 2])).tolist()  # rows 1 and 2 are one person
    [True, True, True, True]
    >>> isolating(d, p, units=np.array([0, 0, 1, 2])).tolist()  # rows 0 and 1 are one person
    [True, False, True, True]
    """
    if len(preds) and preds.cols.shape[1] == 1:
        return (
            _univariate_counts(data, preds) == 1
            if units is None
            else _univariate_single(data, preds, units)
        )
    keep = np.arange(len(preds))
    order = np.random.default_rng(seed).permutation(data.shape[0])
    for size in (1024, 16384):
        if size >= data.shape[0] or keep.size == 0:
            break
        some = order[:size]
        few = _matched(data[some], preds.take(keep), None if units is None else units[some]) <= 1
        keep = keep[few]
    out = np.zeros(len(preds), dtype=bool)
    out[keep] = _matched(data, preds.take(keep), units) == 1
    return out


def _record_predicates(
    syn: np.ndarray, numeric: np.ndarray, rng: np.random.Generator, n: int, n_cols: int
) -> Predicates:
    rows = rng.integers(syn.shape[0], size=n)
    cols = np.sort(np.argsort(rng.random((n, syn.shape[1])), axis=1)[:, :n_cols], axis=1)
    vals = syn[rows[:, None], cols]
    with np.errstate(invalid="ignore"):
        medians = np.nanmedian(syn, axis=0) if syn.shape[0] else np.zeros(syn.shape[1])
    ops = np.where(numeric[cols], np.where(vals > medians[cols], GE, LE), EQ)
    ops = np.where(np.isnan(vals), ISNA, ops)
    return Predicates(cols.astype(np.int64), ops.astype(np.int8), vals.astype(np.float32))


def _univariate_candidates(syn: np.ndarray, numeric: np.ndarray) -> Predicates:
    cols, ops, vals = [], [], []
    for j in range(syn.shape[1]):
        x = syn[:, j]
        present = x[~np.isnan(x)]
        found = [(ISNA, np.nan)] if np.isnan(x).sum() == 1 else []
        if numeric[j] and present.size:
            found += [(LE, present.min()), (GE, present.max())]
        uniq, counts = np.unique(present, return_counts=True)
        found += [(EQ, v) for v in uniq[counts == 1]]
        cols += [j] * len(found)
        ops += [o for o, _ in found]
        vals += [v for _, v in found]
    return Predicates(
        np.array(cols, np.int64)[:, None],
        np.array(ops, np.int8)[:, None],
        np.array(vals, np.float32)[:, None],
    )


def _unique_rows(preds: Predicates, seen: set[bytes]) -> np.ndarray:
    keep = []
    keys = np.hstack(
        [
            preds.cols.astype(np.float64),
            preds.ops.astype(np.float64),
            np.nan_to_num(preds.vals.astype(np.float64), nan=-7.7e37),
        ]
    )
    for i, row in enumerate(keys):
        key = row.tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(i)
    return np.array(keep, dtype=np.int64)


def attack_predicates(
    syn: np.ndarray,
    numeric: np.ndarray,
    *,
    n_attacks: int,
    n_cols: int,
    seed: int,
    max_attempts: int | None = None,
) -> Predicates:
    """Up to ``n_attacks`` distinct predicates that each isolate exactly one synthetic record
    (``n_cols == 1``: univariate; else multivariate, at most ``max_attempts`` tries)."""
    rng = np.random.default_rng(seed)
    n_cols = min(n_cols, syn.shape[1])
    if n_cols <= 1:
        cand = _univariate_candidates(syn, numeric)
        # a value one synthetic record holds isolates it by construction; only a minimum or a
        # maximum can be tied, so checking twice the needed number in random order is enough
        cand = cand.take(rng.permutation(len(cand))[: 2 * n_attacks + 2 * syn.shape[1]])
        cand = cand.take(np.flatnonzero(isolating(syn, cand, seed=seed)))
        return cand.take(np.arange(min(n_attacks, len(cand))))
    limit = max_attempts or 10 * n_attacks
    found: list[Predicates] = []
    have, tried, seen = 0, 0, set[bytes]()
    batch = max(256, min(4 * n_attacks, 8192))
    while have < n_attacks and tried < limit:
        cand = _record_predicates(syn, numeric, rng, min(batch, limit - tried), n_cols)
        tried += len(cand)
        cand = cand.take(_unique_rows(cand, seen))
        cand = cand.take(np.flatnonzero(isolating(syn, cand, seed=seed)))
        found.append(cand.take(np.arange(min(len(cand), n_attacks - have))))
        have += len(found[-1])
    if have < n_attacks:
        _LOG.info(
            "  singling out: %d of %d predicates isolate one synthetic record after %d tries",
            have,
            n_attacks,
            tried,
        )
    return Predicates(
        *(np.concatenate([getattr(p, f) for p in found]) for f in ("cols", "ops", "vals"))
    )


def _isolated(n: npt.NDArray[np.float64], w: float) -> npt.NDArray[np.float64]:
    return (1.0 - (n * w + 1.0) * np.power(1.0 - w, n)) / (n + 1.0)


def size_correction(
    data: np.ndarray,
    preds: Predicates,
    *,
    target_size: int,
    seed: int,
    repeats: int = 3,
    units: np.ndarray | None = None,
) -> float:
    """Factor turning the successes on ``data`` into the expected successes on a set of
    ``target_size`` records (the Cohen–Nissim model, fitted on nested random prefixes). With
    ``units`` (codes ``0 .. n - 1``) the sizes are people and the prefixes whole people."""
    m = _size(data, units)
    if m == target_size or m < 2 or len(preds) == 0:
        return 1.0
    rng = np.random.default_rng(seed)
    sizes = np.unique(np.linspace(min(1000, m), m, 10).astype(np.int64))
    success = np.zeros(len(sizes))
    for _ in range(repeats):
        if units is None:
            counts = match_counts(data[rng.permutation(m)], preds, bounds=sizes)
        else:
            rows, starts = grouped(data, units, rank=rng.permutation(m))
            counts = match_counts(rows, preds, bounds=sizes, groups=starts)
        success += (counts == 1).sum(axis=0)
    success /= repeats
    best, best_sse = None, np.inf
    for w in np.logspace(-8, 0, 400, endpoint=False):
        g = _isolated(sizes.astype(float), w)
        a = float(g @ success / (g @ g)) if g @ g > 0 else 0.0
        sse = float(((a * g - success) ** 2).sum())
        if sse < best_sse:
            best, best_sse = w, sse
    assert best is not None  # every weight of the grid fits finitely (repeats >= 1)
    at_m = _isolated(np.array(float(m)), best)
    return float(_isolated(np.array(float(target_size)), best) / at_m) if at_m > 0 else 1.0


@dataclass(frozen=True)
class SinglingOutResult:
    """One singling-out attack: its mode, predicate count and risk (no predicate values)."""

    mode: str
    n_cols: int
    n_predicates: int
    control_correction: float
    risk: DisclosureRisk
    columns: tuple[str, ...]
    pvalue: float = 1.0  # the equal-size sign test (equal_size_pvalue): what the error budget reads
    per_person: bool = False  # a panel: success is matching one person's rows, sizes count people

    def __post_init__(self) -> None:
        if self.mode not in ("univariate", "multivariate"):
            raise ValueError(f"unknown singling-out mode {self.mode!r}")


def singling_out(
    codes: Codes,
    *,
    n_attacks: int,
    n_cols: int,
    seed: int,
    alpha: float = 0.05,
    max_attempts: int | None = None,
    units: tuple[np.ndarray, np.ndarray] | None = None,
) -> SinglingOutResult:
    """Singling-out risk of ``codes.matrices = (synthetic, training, control)`` (see the module).
    ``units``: each training and each control row's person (a panel,
    :func:`privacy_gate.data.split.unit_codes`): a predicate then succeeds when the rows it matches
    are one person's, and the size correction and the equal-size test count people."""
    syn, train, control = codes.matrices
    preds = attack_predicates(
        syn, codes.numeric, n_attacks=n_attacks, n_cols=n_cols, seed=seed, max_attempts=max_attempts
    )
    n = len(preds)
    train_units, control_units = units or (None, None)
    k_train = int(isolating(train, preds, seed=seed, units=train_units).sum())
    k_control = int(isolating(control, preds, seed=seed, units=control_units).sum())
    factor = size_correction(
        control, preds, target_size=_size(train, train_units), seed=seed + 1, units=control_units
    )
    pvalue = equal_size_pvalue(train, control, preds, seed=seed + 2, units=units)
    # the naive attacker: the same number of random predicates (random records of the training-size
    # population are not available to it: it draws values uniformly from the synthetic columns)
    risk = disclosure_risk(
        k_train=k_train, n_train=n, k_control=k_control * factor, n_control=n, alpha=alpha
    )
    return SinglingOutResult(
        mode="univariate" if n_cols <= 1 else "multivariate",
        n_cols=min(n_cols, len(codes.columns)),
        n_predicates=n,
        control_correction=factor,
        risk=risk,
        columns=codes.columns,
        pvalue=pvalue,
        per_person=units is not None,
    )


def _subsample(
    data: np.ndarray, units: np.ndarray | None, m: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray | None]:
    """``m`` of ``data``'s rows, or with ``units`` all the rows of ``m`` of its people, drawn
    uniformly (sorted: the rows keep their order); all of them when it holds at most ``m``."""
    if _size(data, units) <= m:
        return data, units
    chosen = np.sort(rng.choice(_size(data, units), m, replace=False))
    if units is None:
        return data[chosen], None
    keep = np.isin(units, chosen)
    return data[keep], units[keep]


def equal_size_pvalue(
    train: np.ndarray,
    control: np.ndarray,
    preds: Predicates,
    *,
    seed: int,
    units: tuple[np.ndarray, np.ndarray] | None = None,
) -> float:
    """The gate's test of singling out: the larger of the two sets subsampled to the smaller one's
    size (seeded), so no size model is needed; over the predicates that isolate a record in exactly
    one of the two, the one-sided sign test that the training side wins more often. When nothing
    leaks the two sets are exchangeable samples, so each such predicate is as likely to fall on
    either side. (The reported risk keeps the size-corrected full training set.)

    With ``units`` (each training and control row's person, a panel) the sizes are people, the
    subsample whole people and a success one person's rows: people are what the split made
    exchangeable. Subsampling rows would leave the larger side's people with fewer years than the
    other side's, so its predicates would isolate more often with nothing leaking."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    train_units, control_units = units or (None, None)
    m = min(_size(train, train_units), _size(control, control_units))
    t, t_units = _subsample(train, train_units, m, rng)
    c, c_units = _subsample(control, control_units, m, rng)
    if len(preds) == 0 or m == 0:
        return 1.0
    on_t, on_c = (
        isolating(t, preds, seed=seed, units=t_units),
        isolating(c, preds, seed=seed, units=c_units),
    )
    b, k = int((on_t & ~on_c).sum()), int((on_t ^ on_c).sum())
    return float(stats.binomtest(b, k, 0.5, alternative="greater").pvalue) if k else 1.0


__all__ = [
    "Predicates",
    "SinglingOutResult",
    "attack_predicates",
    "equal_size_pvalue",
    "grouped",
    "isolating",
    "match_counts",
    "singling_out",
    "size_correction",
]
