"""Partial and quasi-identifier copies: the information-weighted column-agreement scan.

One module because the coding, the graded numbers, the candidate search, the views and the tests
all read one encoding (``_Encoded``) whose integer information units must agree exactly: split
apart, a change to one unit or tie rule would silently make the scores CPU- or order-dependent.

A synthetic row that reproduces a training record on all but one or two columns, or on its
quasi-identifiers only, is a copy too, and the distance attacks miss it when the re-drawn column
is far off. This scan scores every training and holdout record by the most information any
synthetic row reproduces of it:

- each column is coded: categories as they are, numbers in bins whose edges are the reference
  split's quantiles (public to the attacker; never the training split), so a value rounded to
  5 or 10 units still agrees;
- agreeing on a code is worth ``-log2`` of its frequency in the reference (a rare value says
  more than a common one);
- a number is also graded: ``s_j`` against ``x_j`` is worth ``-log2 P_ref(|X_j - x_j| <= |s_j -
  x_j|)`` (the reference share at least as close, counted ``(c + 1) / (n_ref + 1)``) once that is at
  least as rare as sharing a bin, else its bin agreement: an exact wage is worth up to ``log2(n_ref
  + 1)`` bits, a value within 2 % what the reference says such closeness is worth. (Partial credit
    for
  merely nearby values was tried and lost power: the best of thousands of natural rows collects
  many small sums.)
- a record's score is the most information one synthetic row reproduces of it,
  ``max_s sum_j g_j(x_j, s_j)``, minus the same over the reference rows (a sample of the population
  disjoint from both sides: natural twins cancel).

The compared synthetic rows include the release's rows read back through the per-column shifts
and scales :mod:`privacy_gate.experiment.registration` finds from train and holdout as one set: a
partial copy with its numbers moved by one step per column then reproduces its record's exact
values (``agreement.registered_rows``).

All pairs with graded numbers would cost 50k x 50k, so the maximum is taken over a candidate set
per record, the same procedure for every record (so training and holdout records stay
exchangeable): the best row by the coded agreement (one exact integer one-hot matrix product, as
before; ties to the first row in a fixed order) and the :data:`NEAREST` nearest rows in the
reference-rank encoding of the numbers within the record's categorical cell (cKDTree). The
information is in integers of 1/16 bit (a lookup table built with the scalar ``log2``), so sums are
exact and the ranks do not depend on the CPU or the BLAS kernel.

Views. The score is computed for all columns; for the declared ``quasi_identifiers``; and for up
to ``linking`` label-blind linking views (``exposure.linking_views``, 1 by default): first the
column combination the release reproduces beyond chance, found from train and holdout as one set
(:mod:`privacy_gate.experiment.reproduced_keys`), then, when none are declared, combinations found
in the reference split alone (:func:`linking_views`: SUDA-style minimal 2–4 column combinations
that make reference records sample-unique). With quasi-identifiers declared, the reproduced
combination is still scored beside them (unless it is the declared set): a declaration may add
power, never take away what the release itself shows. Each view adds a tail and a Simes p-value to
the Bonferroni combination, a linking view its tail p-value only: the price is a factor 3 with the
default linking view, against 2 for all columns alone (5 with declared quasi-identifiers and a
reproduced combination).

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
>>> part = train.iloc[:30].copy()  # copies with one column re-drawn
>>> part["c0"] = draw(30)["c0"].to_numpy()
>>> syn.iloc[:30] = part.to_numpy()
>>> r = agreement_scan(syn, train, holdout, reference, spec, seed=0)
>>> r.pvalue < 0.01, r.count >= 10
(True, True)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from privacy_gate.data.split import sample_units, unit_codes, unit_max
from privacy_gate.estimators.exposure import conformal_pvalues, fdr_select, simes_pvalue
from privacy_gate.estimators.tail_test import tail_excess_pvalue
from privacy_gate.experiment.coded_agreement import (
    CHUNK,
    NUMERIC_BINS,
    UNIT,
    agreement_products,
    as_number,
    best_agreement,
    coded_columns,
    unique_rows,
)
from privacy_gate.experiment.registration import register
from privacy_gate.experiment.reproduced_keys import reproduced_key
from privacy_gate.spec import DatasetSpec

#: Candidates per record for the graded numeric refinement: the synthetic (or reference) rows with
#: the best coded agreement (first row in a fixed order on ties) ...
TOP_CODED = 1
#: ... and the nearest rows in the reference-rank encoding of the numbers within the record's
#: categorical cell. Both are functions of the record and the compared sample only, so training and
#: holdout records stay exchangeable.
NEAREST = 6
#: The scan compares each pool record with every synthetic and reference row (a one-hot matrix
#: product), so its cost is pool x (synthetic + reference) pairs: quadratic in the table. Above this
#: many pairs the pool is a seeded sample of each side (:func:`_pool_sample`). Full Adult (39,000 x
#: 39,000 = 1.5e9) stays whole; 160,000 rows (1.6e10) scan ~12,500 pool records in ~5 s instead of
#: all 128,000 in ~50 s (benchmarks/bench_scale.py).
MAX_PAIRS = 1_600_000_000
#: At most this many extra label-blind linking views when no quasi-identifiers are declared.
LINKING_VIEWS = 2
#: A column whose exact value alone singles out more than this share of the reference records is an
#: identifier-like measurement (its exact copy is already worth many bits in the all-columns view),
#: not a quasi-identifier: linking views are searched among the other columns.
IDENTIFIER_SHARE = 0.05
#: Linking views are searched on at most this many reference records (a fixed, label-blind sample).
DISCOVERY_ROWS = 4000


@dataclass(frozen=True)
class _Encoded:
    """Several frames coded for the scan: integer codes (categories, numbers in reference bins),
    the numbers themselves (NaN when missing or not numeric), and what the reference says."""

    codes: list[np.ndarray]
    values: list[np.ndarray]
    info: np.ndarray  # (columns, codes + 1) coded information in 1/UNIT bits; index = code + 1
    numeric: np.ndarray  # (columns,) bool
    ref_sorted: list[
        np.ndarray
    ]  # per column, the reference's finite values sorted (empty when not numeric)
    closeness_bits: np.ndarray  # closeness_bits[c]: -log2((c + 1) / (n_ref + 1)) in 1/UNIT bits
    bin_bits: int  # log2(NUMERIC_BINS) in 1/UNIT bits: what sharing a reference bin says


def _encode(
    frames: list[pd.DataFrame], reference: pd.DataFrame, spec: DatasetSpec, cols: list[str]
) -> _Encoded:
    coded, info = coded_columns(frames, reference, spec, cols)
    numeric = np.array([spec.columns[c].is_numeric for c in cols], dtype=bool)
    values, ref_sorted = [np.full((len(f), len(cols)), np.nan) for f in frames], []
    for j, c in enumerate(cols):
        if not numeric[j]:
            ref_sorted.append(np.empty(0))
            continue
        for f, out in zip(frames, values):
            out[:, j] = _numbers(f[c])
        ref = _numbers(reference[c])
        ref_sorted.append(np.sort(ref[np.isfinite(ref)]))
    n_ref = len(reference)
    # a lookup table built with the C library's scalar log2, so no vectorised (CPU-dispatched)
    # logarithm decides a rounding: the graded scores are the same integers on every machine
    bits = np.array(
        [round(-math.log2((c + 1) / (n_ref + 1)) * UNIT) for c in range(n_ref + 1)], dtype=np.int64
    )
    return _Encoded(
        coded, values, info, numeric, ref_sorted, bits, round(math.log2(NUMERIC_BINS) * UNIT)
    )


def _numbers(s: pd.Series) -> np.ndarray:
    v = pd.to_numeric(as_number(s), errors="coerce").to_numpy(dtype=float)
    v[~np.isfinite(v)] = np.nan
    return np.asarray(v, dtype=float)


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
    linking_pvalue: float = 1.0  # the linking views' smallest p-value (1 when none was scored)
    linking_views: tuple[
        tuple[str, ...], ...
    ] = ()  # the column combinations found in the reference
    scanned_share: float = (
        1.0  # the share of training rows in the scan's pool sample (1 below MAX_PAIRS)
    )
    registered_rows: int = 0  # release rows read back through column maps (registration.py)

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
            "linking_pvalue": self.linking_pvalue,
            "scanned_share": self.scanned_share,
            "registered_rows": float(self.registered_rows),
        }


def _row_keys(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Rows as integers (codes, and the bits of the exact numbers) for finding identical rows."""
    v = np.where(np.isnan(values), np.nan, values + 0.0)  # one NaN and one zero
    return np.hstack([codes, np.ascontiguousarray(v).view(np.int64)])


def _graded(
    enc: _Encoded,
    idx: list[int],
    xc: np.ndarray,
    xv: np.ndarray,
    sc: np.ndarray,
    sv: np.ndarray,
    cand: np.ndarray,
) -> np.ndarray:
    """Information (1/UNIT bits) each candidate row ``cand[i, m]`` reproduces of record ``i``:
    a category is worth its coded weight when equal; a number ``x`` against ``s`` is worth
    ``-log2 P_ref(|X - x| <= |s - x|)`` (the reference share at least as close, counted as
    ``(c + 1) / (n_ref + 1)``): an exact rare value is worth up to ``log2(n_ref + 1)`` bits, a
    value within 2 % what the reference says such closeness is worth, a far value about 0."""
    total = np.zeros(cand.shape, dtype=np.int64)
    for jj, j in enumerate(idx):
        x_code, s_code = xc[:, jj, None], sc[cand, jj]
        if not enc.numeric[j]:
            w = enc.info[j, np.clip(x_code + 1, 0, enc.info.shape[1] - 1)]
            total += np.where(x_code == s_code, w, 0)
            continue
        x, s = xv[:, jj, None], sv[cand, jj]
        missing_x, missing_s = np.isnan(x), np.isnan(s)
        gap = np.abs(s - x)
        # the closed interval around x reaching s, with s itself inside whatever the rounding of x
        # +- gap
        lo, hi = np.fmin(s, x - gap), np.fmax(s, x + gap)
        ref = enc.ref_sorted[j]
        closer = np.searchsorted(ref, hi, side="right") - np.searchsorted(ref, lo, side="left")
        bits = enc.closeness_bits[np.clip(closer, 0, enc.closeness_bits.size - 1)]
        # closeness counts once it is at least as rare as sharing a reference bin; below that a
        # number agrees by its bin as before. Partial credit for merely nearby values would let the
        # best of thousands of natural rows collect many small sums and drown a copy's excess.
        bits = np.where(bits >= enc.bin_bits, bits, 0)
        same_bin = np.where(
            x_code == s_code, enc.info[j, np.clip(x_code + 1, 0, enc.info.shape[1] - 1)], 0
        )
        both = enc.info[j, 0]  # missing agrees with missing, worth the coded weight of "missing"
        total += np.where(
            missing_x | missing_s,
            np.where(missing_x & missing_s, both, 0),
            np.maximum(bits, same_bin),
        )
    return total


def _nearest(
    enc: _Encoded,
    idx: list[int],
    xc: np.ndarray,
    xv: np.ndarray,
    sc: np.ndarray,
    sv: np.ndarray,
    k: int,
) -> np.ndarray:
    """The ``k`` compared rows nearest each record in the reference-rank encoding of its numbers
    (mid-rank share in the reference: a gap counts what the reference puts between the values),
    within its categorical cell first (cells are far apart on an extra axis)."""
    num = [jj for jj, j in enumerate(idx) if enc.numeric[j]]
    cat = [jj for jj, j in enumerate(idx) if not enc.numeric[j]]

    def ranks(v: np.ndarray) -> np.ndarray:
        u = np.empty((len(v), len(num)))
        for a, jj in enumerate(num):
            ref, x = enc.ref_sorted[idx[jj]], v[:, jj]
            if ref.size:
                # snapped to the nearest reference value first: 12.24 against a record's 12 is worth
                # what an exact 12 is (nothing in the reference lies between), so it sits as near
                pos = (
                    np.clip(np.searchsorted(ref, x), 1, ref.size - 1)
                    if ref.size > 1
                    else np.zeros(len(x), dtype=np.int64)
                )
                lower = ref[np.maximum(pos - 1, 0)]
                x = np.where(np.abs(x - lower) <= np.abs(ref[pos] - x), lower, ref[pos])
            u[:, a] = (
                np.searchsorted(ref, x, side="left") + np.searchsorted(ref, x, side="right")
            ) / (2.0 * max(1, ref.size))
            u[
                np.isnan(v[:, jj]), a
            ] = -1.0  # missing: a place of its own, one unit below every number
        return u

    if cat:
        cells = unique_rows(np.vstack([xc[:, cat], sc[:, cat]]))[1].astype(float)
    else:
        cells = np.zeros(len(xc) + len(sc))
    spread = 4.0 * math.sqrt(len(num)) + 1.0  # more than any distance inside a cell
    tree = cKDTree(np.hstack([cells[len(xc) :, None] * spread, ranks(sv)]))
    _, near = tree.query(np.hstack([cells[: len(xc), None] * spread, ranks(xv)]), k=min(k, len(sc)))
    return np.asarray(near, dtype=np.int64).reshape(len(xc), -1)


def view_agreement(
    enc: _Encoded,
    idx: list[int],
    pool: tuple[np.ndarray, np.ndarray],
    other: tuple[np.ndarray, np.ndarray],
    *,
    chunk: int = CHUNK,
) -> np.ndarray:
    """Per pool record, the most information (1/UNIT bits) one row of ``other`` reproduces of its
    columns ``idx``: categories and coded numbers by the exact one-hot product; with numbers, the
    graded score over each record's candidates (:data:`TOP_CODED` best coded rows and
    :data:`NEAREST` nearest rows), the same procedure for every record."""
    pc, pv, oc, ov = pool[0][:, idx], pool[1][:, idx], other[0][:, idx], other[1][:, idx]
    info = enc.info[idx]
    if not enc.numeric[idx].any():
        return best_agreement(pc, oc, info, chunk=chunk)
    # identical compared rows once, in the order of their keys (a function of the set: ties go to
    # the first)
    first, _ = unique_rows(_row_keys(oc, ov))
    oc, ov = oc[first], ov[first]
    # identical coded records once for the product (the graded part is cheap per record)
    c_first, c_back = unique_rows(pc)
    _, top = agreement_products(pc[c_first], oc, info, chunk=chunk, top=TOP_CODED)
    cand = np.hstack([top[c_back], _nearest(enc, idx, pc, pv, oc, ov, NEAREST)])
    best = np.zeros(len(pc), dtype=np.int64)
    for start in range(0, len(pc), 8192):
        sl = slice(start, start + 8192)
        best[sl] = _graded(enc, idx, pc[sl], pv[sl], oc, ov, cand[sl]).max(axis=1)
    return best


def linking_views(
    reference: pd.DataFrame,
    spec: DatasetSpec,
    cols: list[str] | None = None,
    *,
    views: int = LINKING_VIEWS,
) -> list[list[str]]:
    """What an attacker would link on, found without labels in the reference split alone
    (SUDA-style): small combinations (2–4 columns) of the columns that do not single out records
    on their own, ranked by how many reference records they make sample-unique. The first view
    isolates the most records; each next one the most records the earlier views leave unisolated.
    Beam search (pairs, then the best few extended a column at a time) keeps this to a few hundred
    counts on at most :data:`DISCOVERY_ROWS` records.

    >>> rng = np.random.default_rng(0)
    >>> ref = pd.DataFrame({"a": rng.integers(0, 30, 3000).astype(str),
    ...                     "b": rng.integers(0, 30, 3000).astype(str),
    ...                     "c": rng.integers(0, 2, 3000).astype(str),
    ...                     "id": np.arange(3000).astype(str)})
    >>> cols = {c: {"kind": "categorical"} for c in ref}
    >>> spec = DatasetSpec.model_validate({"name": "t", "columns": cols})
    >>> # "id" singles out alone: an identifier, not a linking key
    >>> linking_views(ref, spec, views=1)
    [['a', 'b', 'c']]
    """
    cols = list(spec.attribute_columns if cols is None else cols)
    if len(reference) > DISCOVERY_ROWS:
        # a fixed sample of the reference: public to the attacker, blind to the labels
        reference = reference.iloc[
            np.sort(np.random.default_rng(0).choice(len(reference), DISCOVERY_ROWS, replace=False))
        ]
    n = len(reference)
    codes, card = {}, {}
    for c in cols:
        col = reference[c]
        v = (
            pd.Series(_numbers(col))
            if spec.columns[c].is_numeric
            else col.astype("string").reset_index(drop=True)
        )
        code, uniq = pd.factorize(v, use_na_sentinel=False)
        counts = np.bincount(code)
        if len(uniq) < 2 or (counts[code] == 1).mean() > IDENTIFIER_SHARE:
            continue
        codes[c], card[c] = code.astype(np.int64), len(uniq)
    names = list(codes)
    if len(names) < 2 or n == 0:
        return []

    def unique_mask(combo: tuple[str, ...]) -> np.ndarray:
        key = np.zeros(n, dtype=np.int64)
        for c in combo:  # at most 4 columns of at most n values: below 2^63
            key = key * card[c] + codes[c]
        _, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
        return np.asarray(cnt[inv.ravel()] == 1)

    masks: dict[tuple[str, ...], np.ndarray] = {
        combo: unique_mask(combo) for combo in itertools.combinations(names, 2)
    }
    beam = sorted(masks, key=lambda k: (-int(masks[k].sum()), k))[:4]
    for _ in range(2):  # sizes 3 and 4
        grown = set()
        for combo in beam:
            for c in names:
                if c not in combo:
                    grown.add(tuple(sorted(combo + (c,), key=names.index)))
        for combo in grown - masks.keys():
            masks[combo] = unique_mask(combo)
        beam = sorted(grown, key=lambda k: (-int(masks[k].sum()), k))[:4]
    chosen, covered = [], np.zeros(n, dtype=bool)
    for _ in range(views):
        # most newly isolated records; fewer columns, then column order, on ties
        best = max(
            masks,
            key=lambda k: (int((masks[k] & ~covered).sum()), -len(k), [-names.index(c) for c in k]),
        )
        gain = int((masks[best] & ~covered).sum())
        if gain == 0:
            break
        # minimal, as SUDA's keys: a column that adds under 5 % more isolated records only dilutes
        # the view (a copy pasting the smaller combination re-draws it)
        smaller = [
            k for k in masks if set(k) < set(best) and (masks[k] & ~covered).sum() >= 0.95 * gain
        ]
        if smaller:
            best = min(
                smaller,
                key=lambda k: (
                    len(k),
                    -int((masks[k] & ~covered).sum()),
                    [names.index(c) for c in k],
                ),
            )
        chosen.append(list(best))
        covered |= masks[best]
    return chosen


def _pool_sample(
    train: pd.DataFrame, holdout: pd.DataFrame, *, n_compared: int, spec: DatasetSpec, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:
    """The pool the scan scores: every training and holdout record while ``pool x n_compared``
    (the synthetic and reference rows each record is compared with) stays under :data:`MAX_PAIRS`,
    else the same seeded share of each side's units (people in a panel, with all their rows).

    Why a sample keeps the test exact: it is drawn without the scores, at one rate on both sides,
    so the sampled training and holdout units are still exchangeable when nothing leaks. Why it
    keeps the power: a leak of a given *share* of the training records leaves the same share among
    the sampled ones, and the cap (above full Adult's 39,000 x 39,000) is a pool as large as the
    tables the power is measured on. Returns (train, holdout, the kept training row positions)."""
    pairs = (len(train) + len(holdout)) * max(1, n_compared)
    if pairs <= MAX_PAIRS:
        return train, holdout, np.arange(len(train))
    rate = MAX_PAIRS / pairs
    rng = np.random.default_rng([seed, 2])
    t_rows = sample_units(train, spec.entity_id, rate, rng)
    h_rows = sample_units(holdout, spec.entity_id, rate, rng)
    return train.iloc[t_rows], holdout.iloc[h_rows], t_rows


def agreement_scan(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    reference: pd.DataFrame,
    spec: DatasetSpec,
    *,
    q: float = 0.05,
    tail_max_share: float = 0.01,
    seed: int = 0,
    linking: int = 0,
) -> AgreementResult:
    """Score training and holdout records by their best column agreement with a synthetic row;
    test and name as in the module docstring. ``linking``: how many label-blind linking views
    to add (``exposure.linking_views``; 0 by default): the combination the release reproduces,
    and with no quasi-identifiers declared the reference's isolating combinations after it."""
    cols = spec.attribute_columns
    if len(train) == 0 or len(holdout) == 0 or len(synthetic) == 0:
        raise ValueError("the agreement scan needs training, holdout and synthetic records")
    n_train_rows = len(train)
    train, holdout, kept = _pool_sample(
        train, holdout, n_compared=len(synthetic) + len(reference), spec=spec, seed=seed
    )
    # copies whose columns were shifted or scaled, read back onto their records (label-blind:
    # train and holdout as one set, so the scores stay exchangeable)
    registration = register(
        pd.concat([train, holdout], ignore_index=True), synthetic, spec, seed=seed
    )
    synthetic = registration.augment(synthetic)
    enc = _encode([train, holdout, synthetic, reference], reference, spec, cols)
    (t, h, s, ref), (tv, hv, sv, refv) = enc.codes, enc.values
    pool = (np.vstack([t, h]), np.vstack([tv, hv]))
    # a panel (spec.entity_id): each person is one unit, scored by their best row, so a person's
    # rows never count as independent records (people are exchangeable between the two sides)
    ent_t, ent_h = unit_codes(train, spec.entity_id), unit_codes(holdout, spec.entity_id)
    n_t, n_h = int(ent_t.max()) + 1, int(ent_h.max()) + 1
    labels = np.r_[np.ones(n_t, bool), np.zeros(n_h, bool)]

    def per_unit(scores: np.ndarray) -> np.ndarray:
        return np.asarray(
            np.r_[unit_max(scores[: len(t)], ent_t), unit_max(scores[len(t) :], ent_h)]
        )

    qi = [cols.index(c) for c in (spec.quasi_identifiers or []) if c in cols]
    views = {"all": list(range(len(cols)))}
    found: list[list[str]] = []
    if 0 < len(qi) < len(cols):
        views["quasi_identifiers"] = (
            qi  # a rare combination reproduced, whatever the other columns say
        )
    if linking > 0:
        # the combination the release reproduces beyond chance, found label-blind from train and
        # holdout as one set (reproduced_keys.py), declared quasi-identifiers or not: a declaration
        # adds its view and must never take away what the release itself shows; with nothing
        # declared, then the combinations that isolate reference records (SUDA-style)
        key, _ = reproduced_key(
            pd.concat([train[cols], holdout[cols]], ignore_index=True),
            synthetic[cols],
            reference[cols],
            cols,
            seed=seed,
        )
        declared = sorted(cols[j] for j in qi)
        found = [key] if key and sorted(key) != declared else []
        if not qi:
            found += [v for v in linking_views(reference, spec, cols, views=linking) if v != key][
                : linking - len(found)
            ]
        for i, combo in enumerate(found):
            views[f"linking_{i + 1}"] = [cols.index(c) for c in combo]
    parts: dict[str, float] = {}
    named: tuple[np.ndarray, np.ndarray, float, int] | None = None
    for i, (view, idx) in enumerate(views.items()):
        # the excess over what a sample of the population reproduces (the reference, disjoint from
        # both sides): records with natural twins reproduce much anyway, a partial copy more
        scores = per_unit(
            view_agreement(enc, idx, pool, (s, sv)) - view_agreement(enc, idx, pool, (ref, refv))
        )
        tail_p, top = tail_excess_pvalue(
            scores.astype(float), labels, max_share=tail_max_share, seed=seed + 1 + i
        )
        pvals = conformal_pvalues(scores[:n_t].astype(float), scores[n_t:].astype(float))
        parts[f"{view}.tail"] = tail_p
        # a linking view adds its tail test only: what it is for is many pasted records, and a
        # Simes part would cost every other view a third more (Bonferroni over 4 parts, not 3)
        if not view.startswith("linking_"):
            parts[f"{view}.simes"] = simes_pvalue(pvals)
        if named is None:
            named = (scores[:n_t], pvals, tail_p, top)
    assert named is not None  # the "all" view is always scored
    st, pvals, tail_p, top = named
    selected, _ = fdr_select(pvals, q=q)
    # per training row: its unit's score, p-value and selection (a unit is the row, or its entity);
    # a row the pool sample left out is not scored (NaN) and never named
    records = pd.DataFrame(
        {"row_id": np.arange(n_train_rows), "score": np.nan, "p_value": np.nan, "exposed": False}
    )
    records.loc[kept, "score"] = st[ent_t] / UNIT
    records.loc[kept, "p_value"] = pvals[ent_t]
    records.loc[kept, "exposed"] = selected[ent_t]
    linking_parts = [p for k, p in parts.items() if k.startswith("linking_")]
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
        linking_pvalue=min(linking_parts, default=1.0),
        linking_views=tuple(tuple(v) for v in found),
        scanned_share=len(kept) / max(1, n_train_rows),
        registered_rows=len(registration.rows),
    )


def copy_rows(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    reference: pd.DataFrame,
    spec: DatasetSpec,
    *,
    level: float = 0.01,
    seed: int = 0,
) -> np.ndarray:
    """The remedy that needs no names (``--suppress copies``): synthetic rows that reproduce a
    training record (wholly, partly, or its rare quasi-identifiers) more than the population's own
    twins explain.

    Each synthetic row gets the most information it shares with one training record, minus the
    most it shares with one record of a calibration sample of the population (holdout and reference
    records, as many as there are training records when available; the remaining size difference
    is allowed for by ``log2`` of the size ratio). When the row was not made from the training
    data that excess is symmetric around zero, so the threshold is the ``1 - level`` quantile of
    the excess's mirrored negative side: a clean release loses about ``level`` of its rows.
    Returns the mask of rows to remove.
    """
    cols = spec.attribute_columns
    pool = pd.concat([holdout, reference], ignore_index=True)
    rng = np.random.default_rng(seed)
    if len(pool) > len(train):
        pool = pool.iloc[np.sort(rng.choice(len(pool), len(train), replace=False))]
    if len(synthetic) == 0 or len(train) == 0 or len(pool) == 0:
        return np.zeros(len(synthetic), dtype=bool)
    (s, t, c), info = coded_columns([synthetic, train, pool], reference, spec, cols)
    excess = (
        best_agreement(s, t, info)
        - best_agreement(s, c, info)
        - int(round(UNIT * np.log2(len(train) / len(pool))))
    )
    mirrored = -excess[excess < 0]
    if mirrored.size == 0:
        return np.asarray(excess > 0)
    threshold = np.quantile(
        np.r_[mirrored, np.zeros(int((excess >= 0).sum()))], 1 - level, method="higher"
    )
    return np.asarray(excess > max(threshold, 0))


__all__ = [
    "AgreementResult",
    "agreement_scan",
    "best_agreement",
    "copy_rows",
    "linking_views",
    "view_agreement",
]
