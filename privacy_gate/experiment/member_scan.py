"""The member scan: every training record tested for exposure, not only the member targets.

The attacks score a sample of members (the targets, sized by statistics); a copied record outside
that sample would be seen only through the share bounds. The scan (on by default,
``exposure.scan_members``) scores every real record the evaluator holds with the
copy-multiplicity statistic (:func:`privacy_gate.attacks.distance.copy_scores`):

    s(x) = g_1 + sum_{j >= 2} max(0, g_j),   g_j = log d_real(x) - log max(d_syn_j(x), floor)

where ``d_syn_j`` is the distance to the ``j``-th nearest synthetic row and ``d_real`` the
distance to the nearest *other* real record of the pool (train, holdout and — when it is
exchangeable with the holdout — the reference split). A record copied 40 times has 40 synthetic
rows far closer than any real record; an exact population twin has ``d_real = 0`` and no evidence;
the floor (1% of the pool's median ``d_real``) makes an exact match worth no more than a very near
one, so a holdout record whose twin happens to be in the release does not outrank repetition.
The score is the same function of the pool for every record, whichever split it is in, so under no
leakage the training records' scores are exchangeable with the calibration records' (holdout, and
the reference when ``calibration_reference``): the conformal p-value of each training record

    p_i = (1 + #{c in calibration : s_c >= s_i}) / (n_calibration + 1)

is valid, Benjamini–Hochberg (or –Yekutieli) over all training records controls the false
discovery rate (PRDS, Bates et al. 2023), and the tail-excess test
(:func:`privacy_gate.estimators.tail_test.tail_excess_pvalue`) asks whether more training records
than chance sit among the most extreme scores — the test that sees ten people copied many times,
which BH over thousands of records cannot name.

**Three views, combined by Bonferroni.** Each view is tested on its own (conformal p-values, tail
test, top set) and a record's p-value, like the tail test's, is the smallest of the views' times
three — valid because each view is:

1. the standardised encoding, every synthetic row counted: verbatim and near copies;
2. the same distances without the record's verbatim copies (:func:`without_verbatim`). On a table
   of few distinct values a holdout record can have several exact twins in an independent
   release (in GSS vocabulary a combination seen five times in the table had four in the release
   and one, a holdout record, in the pool), and in view 1 they rank with, or above, a record
   near-copied four times. Left out, natural twins no longer compete with copies
   that only a copier makes;
3. the scale-invariant view (:mod:`privacy_gate.experiment.scale_view`: each number as its
   log-magnitude centred on the record's own), where a copy with every number multiplied by one
   factor matches its record exactly, scored without the record's own verbatim copy
   (:func:`view_copy_scores` says why).

Before, one score was the larger of views 1 and 3; on CPS 1988 and GSS vocabulary (13.5 % and
21.7 % of the rows have an exact twin) the twins of view 1 crowded out what view 3 saw. With the
three views, scan alone, 12,000 rows requested, seeds 0-4: scaled copies of 2 % of the training
records (x 1.02) tail p 0.0007 (the floor) in 5/5 on both tables (before: 0.016-1.0), and 40
records x 4 near copies 5/5 on both (before 1/5 at 0.004); on the development tables adult, loans
and health_insurance the same leaks reach the floor in 29/30 (psid7682, a panel of 198 training
people at that size, 0/10 before and after: the scan alone cannot see 28 rows there). Independent
releases: 0/25 at 0.004.
The failures that led here were seen on the reported tables, so their figures for these shapes
are no longer blind; ``docs/benchmarks.md`` says so.

**Registration.** Before any view, the release is extended by its rows read back through the
per-column shifts and scales :mod:`privacy_gate.experiment.registration` finds (label-blind, from
the pool as one set): a copy with every number moved by one step per column is then a near copy
in the standardised views (``exposed.scan_registered_rows``).

The reference joins the calibration set only when nothing but chance tells it from the holdout: a
split of the same table that the generator never read. A public reference file, or a generator
that takes its discretisation from the reference (its output then depends on those records), keeps
it out (``exposure.reference_calibrates``).

Above :data:`POOL_LIMIT` pool records the scan tests a seeded sample of the pool's units, each
kept with one probability whatever its split (:func:`pool_sample`): the kept units stay
exchangeable, the copied share among the kept training records is the copied share, and the cost
is bounded (``exposed.scan_pool_share``); copies outside the sample go unscanned.

Large scans search an approximate inverted-file index
(:func:`privacy_gate.attacks.nn_index.approximate_nearest`). That changes the score, not the
validity: every record of the pool goes through the same search. Below ``EXACT_PAIRS`` pairs the
search is exact.

**Panels** (``spec.entity_id``): a person is one unit, scored by their most exposed row; the
p-values, the tail test and the counts are over people (the split made people exchangeable, not
person-years), and each of a person's rows carries the person's p-value.

**The top set.** Benjamini–Hochberg needs dozens of records at the conformal floor before it names
any; forty people copied four times may reach the tail test and never a name. The scan therefore
also reports the top set (:func:`privacy_gate.estimators.tail_test.top_set`): the pool's highest
scores at a label-blind level, the training records among them (``in_top``) and a lower bound, at
95 %, on how many of those are exposed ("of these 11 training records at least 4 were copied").

Per-record results: row ids and p-values only (``risk/exposed_members.parquet``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from privacy_gate.attacks.distance import (
    COPY_FLOOR,
    COPY_NEIGHBOURS,
    copy_scores,
    k_nearest_distances,
)
from privacy_gate.attacks.nn_index import approximate_nearest_many, ivf_cells, probe_count
from privacy_gate.data import Splits
from privacy_gate.data.encoding import MixedEncoder
from privacy_gate.data.split import sample_units, unit_codes, unit_max
from privacy_gate.estimators.exposure import (
    FdrMethod,
    conformal_pvalues,
    fdr_select,
    naming_limit,
    simes_pvalue,
)
from privacy_gate.estimators.tail_test import random_tie_ranks, tail_excess_pvalue, top_set
from privacy_gate.experiment.registration import register
from privacy_gate.experiment.scale_view import ScaleInvariantView
from privacy_gate.spec import DatasetSpec

#: exact nearest-record search below this many pool x (synthetic + pool) pairs; above it the
#: approximate index. Full Adult (49k pool records, 29k synthetic rows: 3.8e9 pairs) is above it:
#: the exact search there took as long as the rest of the gate (benchmarks/bench_gate_time.py);
#: the 8,000-row releases of benchmarks/bench_exposure.py (3.8e8) stay exact.
EXACT_PAIRS = 2_000_000_000
CHUNK_BYTES = 1 << 28
#: above this many pool records the scan tests a seeded, equal-rate sample of the pool's units
#: (:func:`pool_sample`). At 1,000,000 table rows (667,000 pool records) the scan's three views
#: took 407 s of a 789 s gate; a sample of this size keeps every test valid (the sample is blind to
#: the labels) and the share of copied records in it, and costs only the copies outside it.
POOL_LIMIT = 300_000
#: the top set's error: its lower bound holds with 95 %, shared by the views (Bonferroni)
TOP_SET_ERROR = 0.05


@dataclass(frozen=True)
class ScanResult:
    """Every training record's p-value; ``records`` holds row ids, p-values and the selection."""

    records: pd.DataFrame  # row_id, p_value, exposed, in_top
    count: int
    tested: int
    calibration: int
    threshold: float
    q: float
    method: str
    search: str  # "exact" or "approximate"
    tail_pvalue: float = 1.0  # the tail-excess test over the pool
    tail_top: int = 0  # the level k where the training records' excess is most significant
    min_pvalue: float = 1.0  # the smallest p-value possible: 1 / (calibration + 1)
    naming_needs: int = 0  # records BH must find at that floor to name any
    reference_calibrates: bool = False  # the reference split is in the calibration set
    simes_pvalue: float = 1.0  # Simes over the tested units (reported; the budget tests the tail)
    top_set: int = 0  # records in the top set (the highest scores of the pool, chosen label-blind)
    top_members: int = 0  # training records among them (``records.in_top``)
    top_exposed_lower: int = 0  # at least this many of them are exposed, 95 % (tail_test.top_set)
    views: int = 1  # views tested and combined by Bonferroni (the module docstring's three)
    pool_share: float = 1.0  # the share of the pool tested: below 1 above POOL_LIMIT records
    registered_rows: int = 0  # release rows read back through column maps (registration.py)

    def metrics(self) -> dict[str, float]:
        """Flat figures (``names.exposure_metric``: ``exposed.scan_count`` ...)."""
        return {
            "scan_count": float(self.count),
            "scan_tested": float(self.tested),
            "scan_calibration": float(self.calibration),
            "scan_threshold": self.threshold,
            "scan_false_bound": self.q * self.count,
            "scan_tail_pvalue": self.tail_pvalue,
            "scan_tail_top": float(self.tail_top),
            "scan_min_pvalue": self.min_pvalue,
            "scan_naming_needs": float(self.naming_needs),
            "scan_simes_pvalue": self.simes_pvalue,
            "scan_top_set": float(self.top_set),
            "scan_top_members": float(self.top_members),
            "scan_top_exposed_lower": float(self.top_exposed_lower),
            "scan_views": float(self.views),
            "scan_pool_share": self.pool_share,
            "scan_registered_rows": float(self.registered_rows),
        }

    @property
    def discoveries(self) -> np.ndarray:
        # pandas is untyped here (Any): the exposed records' row ids
        return cast(np.ndarray, self.records.loc[self.records["exposed"], "row_id"].to_numpy())


def _pool_distances(
    pool: np.ndarray, synthetic: np.ndarray, *, exact: bool, seed: int, neighbours: int
) -> tuple[np.ndarray, np.ndarray]:
    """(the sorted distances to the ``neighbours`` nearest synthetic rows, the distance to the
    nearest *other* pool record) of every pool record."""
    if exact:
        d_syn = k_nearest_distances(pool, synthetic, neighbours, chunk_bytes=CHUNK_BYTES)
        d_pool = k_nearest_distances(pool, pool, 2, chunk_bytes=CHUNK_BYTES)
    else:
        # one k-means (on the synthetic rows) steers both searches: the pool's cells are the same
        # for every pool record, and training a second one cost as much as the searches
        cells = ivf_cells(synthetic, seed=seed)
        # and one choice of cells per record serves both: the synthetic rows and the pool are
        # searched in the same cells, as many per record (bounded by the synthetic rows per cell)
        d_syn, d_pool = approximate_nearest_many(
            pool,
            [(synthetic, neighbours), (pool, 2)],
            cells=cells,
            nprobe=probe_count(len(synthetic), len(cells)),
        )
    # the nearest other record: the second of the two (the first is the record itself, distance
    # 0 — unless the search missed it, when the first is the nearest other)
    self_found = d_pool[:, 0] == 0.0
    return d_syn, np.where(self_found, d_pool[:, 1], d_pool[:, 0])


def _scores(d_syn: np.ndarray, d_real: np.ndarray) -> np.ndarray:
    # the floor from the whole pool's distances: one function of the pool for every record
    return copy_scores(d_syn, d_real, floor=COPY_FLOOR * float(np.median(d_real)))


def pool_copy_scores(
    pool: np.ndarray,
    synthetic: np.ndarray,
    *,
    exact: bool,
    seed: int = 0,
    neighbours: int = COPY_NEIGHBOURS,
) -> np.ndarray:
    """The copy-multiplicity score of every pool record (see the module docstring): its nearest
    synthetic rows against its nearest *other* pool record."""
    return _scores(*_pool_distances(pool, synthetic, exact=exact, seed=seed, neighbours=neighbours))


def without_verbatim(d_syn: np.ndarray) -> np.ndarray:
    """Sorted synthetic distances with the exact matches (distance 0) left out, ``inf`` after the
    rest: the neighbours that are not verbatim copies of the record.

    >>> without_verbatim(np.array([[0.0, 0.0, 0.5, 0.7]])).tolist()
    [[0.5, 0.7, inf, inf]]
    """
    exact = d_syn == 0.0
    shift = exact.sum(axis=1, keepdims=True)
    take = np.minimum(np.arange(d_syn.shape[1])[None, :] + shift, d_syn.shape[1] - 1)
    out = np.take_along_axis(d_syn, take, axis=1)
    out[np.arange(d_syn.shape[1])[None, :] + shift >= d_syn.shape[1]] = np.inf
    return out


def row_keys(rows: np.ndarray) -> npt.NDArray[np.uint64]:
    """One 64-bit hash per row of an encoded array: equal rows, equal keys.

    >>> k = row_keys(np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0]], dtype=np.float32))
    >>> bool(k[0] == k[1]), bool(k[0] == k[2])
    (True, False)
    """
    # pandas is untyped here (Any): hash_pandas_object's uint64 hashes
    return cast(
        "npt.NDArray[np.uint64]",
        pd.util.hash_pandas_object(pd.DataFrame(rows), index=False).to_numpy(),
    )


def view_copy_scores(
    pool_view: np.ndarray,
    synthetic_view: np.ndarray,
    pool_keys: np.ndarray,
    synthetic_keys: np.ndarray,
    *,
    exact: bool,
    seed: int = 0,
    neighbours: int = COPY_NEIGHBOURS,
) -> np.ndarray:
    """The copy score in a transformed view, from the synthetic rows that are *not* verbatim copies
    of the record (``*_keys``: :func:`row_keys` of the base encoding), each distinct row once.

    A verbatim copy is the standard view's evidence; here it would only compete with what the view
    is for. On a table where many records have exact twins, a holdout record whose twin is in the
    release matches it exactly in every view, as closely as a copy scaled by 1.02 matches its
    record in the scale-invariant one, so the two would tie at the top. Leaving out each record's
    own exact match (at most one among the distinct synthetic rows, at view distance exactly 0:
    the view is a function of the row) keeps what only the transform explains. One function of the
    pool and the release for every record, so the scan's exchangeability holds.

    >>> P = np.array([[0.0], [5.0], [9.0]]); S = np.array([[0.0], [5.0], [5.0]])
    >>> s = view_copy_scores(P, S, row_keys(P), row_keys(S), exact=True, neighbours=1)
    >>> bool(s[0] < pool_copy_scores(P, S, exact=True, neighbours=1)[0])  # its own copy left out
    True
    """
    _, first = np.unique(synthetic_keys, return_index=True)
    distinct = np.sort(first)
    copied = np.isin(pool_keys, synthetic_keys)
    d_syn, d_real = _pool_distances(
        pool_view, synthetic_view[distinct], exact=exact, seed=seed, neighbours=neighbours + 1
    )
    # the record's own exact copy is at distance 0, so first in its sorted row: drop it there
    d_syn = np.where(copied[:, None], d_syn[:, 1:], d_syn[:, :-1])
    return _scores(d_syn, d_real)


def pool_sample(
    parts: list[pd.DataFrame], *, entity_id: str | None, limit: int, seed: int
) -> list[pd.DataFrame]:
    """``parts`` (train, holdout[, reference]) as they are when they hold at most ``limit`` rows,
    else each part's units (rows, or a panel's people) sampled at one rate, ``limit`` over the
    rows, whatever the split: the kept units stay exchangeable between the splits, so the scan's
    p-values stay valid on them.

    >>> parts = [pd.DataFrame({"x": range(600)}), pd.DataFrame({"x": range(400)})]
    >>> [len(p) for p in pool_sample(parts, entity_id=None, limit=2000, seed=0)]
    [600, 400]
    >>> kept = pool_sample(parts, entity_id=None, limit=500, seed=0)
    >>> total = sum(len(p) for p in kept)
    >>> 420 < total < 580, 0.5 < len(kept[0]) / total < 0.7  # the splits' shares kept
    (True, True)
    """
    rows = sum(len(part) for part in parts)
    if rows <= limit:
        return parts
    rate = limit / rows
    rng = np.random.default_rng([seed, 20261128])
    return [part.iloc[sample_units(part, entity_id, rate, rng)] for part in parts]


@dataclass(frozen=True)
class _ViewTest:
    """One view's conformal p-values (per unit), tail test and top set."""

    pvalues: np.ndarray
    tail_pvalue: float
    tail_top: int
    top: np.ndarray
    top_lower: int


def _view_test(
    unit_scores: np.ndarray,
    labels: np.ndarray,
    *,
    seed: int,
    tail_max_share: float,
    top_confidence: float,
) -> _ViewTest:
    n_train = int(labels.sum())
    # ties at random (seeded): exact population twins all score alike, and exchangeability asks
    # that none of them is favoured by its position in the pool
    ranks = random_tie_ranks(unit_scores, np.random.default_rng(seed)).astype(float)
    pvalues = conformal_pvalues(ranks[:n_train], ranks[n_train:])
    # the raw scores, not the ranks: the tail test's gap level is where the scores drop the most
    tail_p, tail_top = tail_excess_pvalue(
        unit_scores, labels, max_share=tail_max_share, seed=seed + 1
    )
    # where BH can name nobody, the top set still says how many of its training records are
    # exposed at least (a bound that holds with 95 %, whatever the natural twins among them)
    top, top_lower = top_set(
        unit_scores, labels, max_share=tail_max_share, confidence=top_confidence, seed=seed + 2
    )
    return _ViewTest(pvalues, tail_p, tail_top, top, top_lower)


def scan_members(
    splits: Splits,
    synthetic: pd.DataFrame,
    spec: DatasetSpec,
    *,
    q: float,
    method: FdrMethod = "bh",
    seed: int = 0,
    exact: bool | None = None,
    calibration_reference: bool = False,
    tail_max_share: float = 0.01,
) -> ScanResult:
    """Test every training record (see the module docstring). ``exact``: force the search kind
    (default: exact below :data:`EXACT_PAIRS` pairs); ``calibration_reference``: the reference
    split is exchangeable with the holdout and joins the pool and the calibration set."""
    if len(splits.holdout) == 0 or len(splits.train) == 0:
        raise ValueError("the member scan needs training and holdout records")
    parts = [splits.train, splits.holdout] + ([splits.reference] if calibration_reference else [])
    rows = sum(len(part) for part in parts)
    parts = pool_sample(parts, entity_id=spec.entity_id, limit=POOL_LIMIT, seed=seed)
    if len(parts[0]) == 0 or len(parts[1]) == 0:
        raise ValueError("the member scan's pool sample holds no training or no holdout record")
    # the encoding is fitted on the whole pool, a symmetric function of it: fitted on the
    # reference alone, the reference records would be special (their categories and scales are
    # the encoding's) and no longer exchangeable with the holdout
    pool_frame = pd.concat(parts, ignore_index=True)
    # copies whose columns were shifted or scaled, read back onto their records: found from the
    # pool as one set (the calibration records included), so the scores stay exchangeable
    registration = register(pool_frame, synthetic, spec, seed=seed)
    synthetic = registration.augment(synthetic)
    encoder = MixedEncoder(spec=spec, data_name="the scan's pool").fit(pool_frame)
    # float32 encodings: the scan compares scores made by one procedure, so float32 distances keep
    # its p-values valid, and a million-row scan holds half the memory
    S = np.ascontiguousarray(encoder.transform(synthetic), dtype=np.float32)
    P = np.ascontiguousarray(encoder.transform(pool_frame), dtype=np.float32)
    if exact is None:
        exact = len(P) * (len(S) + len(P)) < EXACT_PAIRS
    dtype = np.float64 if exact else np.float32
    d_syn, d_real = _pool_distances(
        P.astype(dtype), S.astype(dtype), exact=exact, seed=seed, neighbours=COPY_NEIGHBOURS
    )
    # the standardised view twice: with every synthetic row, and without the record's verbatim
    # copies (exactly distance 0 here), where near copies no longer compete with natural twins
    view_scores = [_scores(d_syn, d_real), _scores(without_verbatim(d_syn), d_real)]
    # the scale-invariant view (experiment/scale_view.py), where a copy with every number
    # multiplied by one factor matches its record exactly, scored without each record's own
    # verbatim copy (view_copy_scores says why)
    view = ScaleInvariantView(encoder=encoder)
    if view.usable:
        VP = np.ascontiguousarray(view.fit_transform(pool_frame, P), dtype=dtype)
        VS = np.ascontiguousarray(view.transform(synthetic, S), dtype=dtype)
        view_scores.append(
            view_copy_scores(VP, VS, row_keys(P), row_keys(S), exact=exact, seed=seed)
        )
    # a panel (spec.entity_id): each person is one unit scored by their most exposed row, so the
    # tests count people, who are what the split made exchangeable (person-years are not)
    codes = [unit_codes(part, spec.entity_id) for part in parts]
    bounds = np.cumsum([len(part) for part in parts])[:-1]
    n_train = int(codes[0].max()) + 1
    labels = np.zeros(sum(int(c.max()) + 1 for c in codes), dtype=bool)
    labels[:n_train] = True
    views = len(view_scores)
    tests = []
    for scores in view_scores:
        unit_scores = np.concatenate(
            [unit_max(s, c) for s, c in zip(np.split(scores, bounds), codes)]
        )
        # each view's top-set bound at its Bonferroni share of the 5 %, so the larger one holds
        tests.append(
            _view_test(
                unit_scores,
                labels,
                seed=seed,
                tail_max_share=tail_max_share,
                top_confidence=1.0 - TOP_SET_ERROR / views,
            )
        )
    n_cal = len(labels) - n_train
    # the views are combined by Bonferroni, per record and for the tail test: each is a valid
    # test, so the smallest p-value times the number of views is one. (Their maximum score
    # would let one view's natural twins crowd out what only the other view sees.)
    pvalues = np.minimum(1.0, views * np.min([t.pvalues for t in tests], axis=0))
    best = min(tests, key=lambda t: t.tail_pvalue)
    tail_p = min(1.0, views * best.tail_pvalue)
    selected, threshold = fdr_select(pvalues, q=q, method=method)
    floor, needs = naming_limit(n_train, n_cal, q=q, method=method, views=views)
    top_view = max(tests, key=lambda t: (t.top_lower, -t.top.size))
    in_top = np.zeros(n_train, dtype=bool)
    in_top[top_view.top[top_view.top < n_train]] = True
    # per training row: its unit's p-value, selection and place in the top set
    records = pd.DataFrame(
        {
            "row_id": parts[0].index.to_numpy(),
            "p_value": pvalues[codes[0]],
            "exposed": selected[codes[0]],
            "in_top": in_top[codes[0]],
        }
    )
    return ScanResult(
        records=records,
        count=int(selected.sum()),
        tested=n_train,
        calibration=n_cal,
        threshold=float(threshold),
        q=q,
        method=method,
        search="exact" if exact else "approximate",
        tail_pvalue=tail_p,
        tail_top=best.tail_top,
        min_pvalue=floor,
        naming_needs=needs,
        reference_calibrates=calibration_reference,
        simes_pvalue=simes_pvalue(pvalues),
        top_set=int(top_view.top.size),
        top_members=int(in_top.sum()),
        top_exposed_lower=top_view.top_lower,
        views=views,
        pool_share=sum(len(part) for part in parts) / rows,
        registered_rows=len(registration.rows),
    )


__all__ = [
    "EXACT_PAIRS",
    "POOL_LIMIT",
    "ScanResult",
    "pool_sample",
    "pool_copy_scores",
    "row_keys",
    "scan_members",
    "view_copy_scores",
]
