"""Registration: a release whose copies had a column shifted or scaled is mapped back onto its
records before the scans read it.

A copier who adds a constant to every copied value of a column, or multiplies it by one factor (a
currency or unit change, a date moved by a fixed offset, "x 1.03 so it is not a copy"), leaves
each copied value a fixed step from its record's. The member scan's standardised views see a near
copy only when every step is small, its scale-invariant view only when every number of the row
was multiplied by the same factor, and the agreement scan grades each number by its closeness, so
a copy with one column re-drawn and the others moved by a few hundredths of a deviation is worth
no more there than a natural twin. Yet such steps are the most regular thing in a release: among
the pairs (a synthetic row, the real record it agrees with best), thousands of differences
``s_j - x_j`` are spread out, and the copies' are all the same number.

:func:`register` finds, per numeric column, the difference (or the ratio ``s_j / x_j``) that recurs
far more often than its mirror image (``-d`` or ``1 / r``: natural neighbours lie on either side of
a record alike, so a spike on one side only is a map), and returns the release's rows read
through the inverse maps when they then land on a real value — the copies, put back where they
came from. The scans then compare each real record with the release *and* these rows: a shifted
copy is then as visible as the verbatim copy it was.

**What it cannot see.** A step that keeps the values on the column's grid (a whole year added to
ages recorded in years) looks like the steps between natural neighbours, so only released values
off the grid are read (:func:`column_map`); such a copy is left to the scans as it is. A map that
differs from copy to copy (jitter, rounding, interpolation toward a neighbour) has no spike.

**Why the scans stay valid.** Everything here is a function of the release, of the training and
holdout records as one unordered set, and of nothing that says which is which: swapping a
training record with a holdout record changes no map and no registered row. So under no leakage
the scans' scores of training and holdout records remain exchangeable and their conformal
p-values and tail tests keep their level; a map found by chance (a release of integers has many
equal differences) only adds rows that sit as near holdout records as training ones.

Deterministic and CPU-independent: only subtractions, divisions and comparisons (IEEE-exact
rounding on every machine), sorts and counts; no logarithm.

>>> import pandas as pd
>>> from privacy_gate.spec import DatasetSpec
>>> rng = np.random.default_rng(0)
>>> cols = {"a": {"kind": "numeric"}, "b": {"kind": "numeric"}, "c": {"kind": "categorical"}}
>>> spec = DatasetSpec.model_validate({"name": "t", "columns": cols})
>>> draw = lambda n: pd.DataFrame({"a": rng.normal(50, 10, n).round(2),
...     "b": rng.normal(0, 1, n), "c": rng.choice(list("xyz"), n)})
>>> pool, syn = draw(2000), draw(1000)
>>> moved = pool.iloc[:40].copy()
>>> moved["a"] += 0.737  # copies of 40 records with one column shifted off its grid
>>> syn.iloc[:40] = moved.to_numpy()
>>> reg = register(pool, syn, spec, seed=0)
>>> {c: (kind, round(step, 9)) for c, (kind, step) in reg.maps.items()}
{'a': ('shift', 0.737)}
>>> back = reg.rows["a"].to_numpy()  # the copies paired with their records or not, read back
>>> len(back), bool(np.isin(np.round(back, 6), pool["a"].iloc[:40]).all())
(40, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.spatial import cKDTree

from privacy_gate.experiment.coded_agreement import best_rows
from privacy_gate.spec import DatasetSpec

#: At most this many release rows are paired with their best real record to find the maps (a
#: seeded sample: a copied share of the release is the same share of the sample).
PAIRED_ROWS = 20_000
#: ... and at most this many (release row, real record) comparisons: a large pool is sampled too
#: (at a million rows, 2,000 release rows against a tenth of the pool: a copied share then yields a
#: tenth of the pairs it would, and small leaks find no map there) ...
PAIRED_COMPARISONS = 400_000_000
#: ... pairing at least this many release rows, against at most this many real records (at a million
#: rows the pairing took 9.5 s against a fifth of the pool, about half that against this many).
MIN_PAIRED_ROWS = 2_000
MAX_PAIRED_POOL = 100_000
#: Each sampled release row is paired with this many real records (its best coded agreements) ...
PAIRED_CANDIDATES = 8
#: ... coded with numbers in this many quantile bins (measured on diamonds and adult copies shifted
#: by 0.02-0.09 deviations: the copy's record among the 8 best in 39-98 % of copies, against 23-96
#: % with the agreement scan's 20 bins).
PAIRING_BINS = 5
#: A step recurs when at least this many pairs share it ...
MIN_SPIKE = 8
#: ... and more often than its mirror image by this many standard deviations (a step and its mirror
#: are equally likely between a record and a natural neighbour: c ~ Binomial(c + m, 1/2), here in
#: its normal form; with a hundred recurring steps on a lattice, about one release in a thousand
#: gets a map by chance, which costs the scans nothing but a few extra rows).
MIRROR_Z = 4.0
#: A column written with more decimals than this is continuous (it has no grid).
MAX_DECIMALS = 6
#: Two steps are one when they differ by less than this share of the column's spread (a shift) or
#: of the factor (a scale): room for the rounding of ``(x + d) - x``, nothing a generator makes.
STEP_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Registration:
    """The maps found (``column -> ("shift", d)`` or ``("scale", r)``: the release's value is
    ``x + d`` or ``x * r`` where it copies ``x``) and the release rows read back through them."""

    maps: dict[str, tuple[str, float]] = field(default_factory=dict)
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)

    def augment(self, synthetic: pd.DataFrame) -> pd.DataFrame:
        """``synthetic`` followed by the registered rows (what the scans compare records with)."""
        if self.rows.empty:
            return synthetic
        return pd.concat([synthetic, self.rows[synthetic.columns]], ignore_index=True)


def _numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    return np.where(np.isfinite(values), values, np.nan)


def _spread(values: np.ndarray) -> float:
    """The interquartile range of the finite ``values`` (a sort: the same on every CPU), else the
    range, else 0."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return 0.0
    q1, q3 = np.quantile(v, [0.25, 0.75])
    return float(q3 - q1) if q3 > q1 else float(v.max() - v.min())


def _spike(steps: np.ndarray, mirror: np.ndarray, width: np.ndarray) -> tuple[float, int] | None:
    """The most repeated value of ``steps`` (sorted; values within ``width`` of their neighbour
    are one) that recurs :data:`MIN_SPIKE` times and :data:`MIRROR_Z` deviations more often than
    in ``mirror`` (its mirror image, sorted): ``(value, count)``, else None. On a lattice (values
    rounded to 0.1) many steps recur, each about as often as its mirror image: they pass over."""
    if steps.size < MIN_SPIKE:
        return None
    starts = np.flatnonzero(np.r_[True, np.diff(steps) > width[1:]])
    counts = np.diff(np.r_[starts, steps.size])
    big = counts >= MIN_SPIKE
    if not big.any():
        return None
    starts, counts = starts[big], counts[big]
    values = steps[starts + counts // 2]
    tol = width[starts] * np.maximum(1, counts)
    mirrored = np.searchsorted(mirror, values + tol, side="right") - np.searchsorted(
        mirror, values - tol, side="left"
    )
    passing = counts - mirrored >= MIRROR_Z * np.sqrt(counts + mirrored)
    if not passing.any():
        return None
    best = int(np.argmax(np.where(passing, counts, -1)))
    return float(values[best]), int(counts[best])


def grid_decimals(values: np.ndarray) -> int | None:
    """The fewest decimals that write 99 % of the finite ``values`` (a column recorded in cents
    has 2), or None when more than :data:`MAX_DECIMALS` would be needed (a continuous column).

    >>> grid_decimals(np.array([0.31, 1.2, 5.0])), grid_decimals(np.array([0.123456789, 2.0]))
    (2, None)
    """
    v = values[np.isfinite(values)]
    for d in range(MAX_DECIMALS + 1):
        if v.size == 0 or np.mean(on_grid(v, d)) >= 0.99:
            return d
    return None


def on_grid(values: np.ndarray, decimals: int) -> np.ndarray:
    """Whether each value is written with ``decimals`` decimals (up to float rounding)."""
    scaled = values * 10.0**decimals
    # a millionth of the grid's step, or the float rounding of a large value, whichever is larger
    return np.asarray(np.abs(scaled - np.round(scaled)) <= np.maximum(1e-6, 1e-12 * np.abs(scaled)))


def column_map(
    x: np.ndarray, s: np.ndarray, spread: float, decimals: int | None = None
) -> tuple[str, float] | None:
    """The shift or scale that recurs among paired values (``x`` real, ``s`` released), or None.
    ``decimals``: the column's grid (:func:`grid_decimals`). Only released values off the grid
    are read: a natural value lies on it, so between two natural values every step is a multiple
    of the grid's and recurs as the grid makes it; a moved copy leaves the grid.

    >>> x = np.arange(1.0, 101.0); s = x.copy(); s[:30] *= 1.04  # no one step; one ratio
    >>> column_map(x, s, 30.0, decimals=0)
    ('scale', 1.04)
    """
    ok = np.isfinite(x) & np.isfinite(s) & (s != x)
    if decimals is not None:
        ok &= ~on_grid(np.where(np.isfinite(s), s, 0.0), decimals)
    x, s = x[ok], s[ok]
    found: list[tuple[int, str, float]] = []
    if spread > 0:
        d = np.sort(s - x)
        hit = _spike(d, np.sort(-d), np.full(d.size, STEP_TOLERANCE * spread))
        if hit:
            found.append((hit[1], "shift", hit[0]))
    pos = (x != 0) & (s != 0) & (np.sign(x) == np.sign(s))
    if pos.any():
        r = np.sort(s[pos] / x[pos])
        hit = _spike(r, np.sort(1.0 / r), STEP_TOLERANCE * np.abs(r))
        if hit:
            found.append((hit[1], "scale", hit[0]))
    if not found:
        return None
    _, kind, value = max(found)
    return kind, value


def _nearest(
    rows: pd.DataFrame, real: pd.DataFrame, spec: DatasetSpec, cols: list[str], k: int
) -> np.ndarray:
    """Per row of ``rows``, the ``k`` nearest ``real`` records by their numbers (over their spread
    in ``real``; a missing number one spread below the rest), within the row's combination of
    categories first (combinations lie far apart on one extra axis)."""
    numeric = [c for c in cols if spec.columns[c].is_numeric]
    categorical = [c for c in cols if not spec.columns[c].is_numeric]
    both = pd.concat([real[cols], rows[cols]], ignore_index=True)
    if categorical:
        keys = both[categorical].astype("string").fillna("\x00missing")
        cell = keys.groupby(categorical, sort=True, dropna=False).ngroup().to_numpy(dtype=float)
    else:
        cell = np.zeros(len(both))
    coords = [cell * (4.0 * np.sqrt(max(1, len(numeric))) + 10.0)]
    for c in numeric:
        v = _numbers(both, c)
        known = v[: len(real)][np.isfinite(v[: len(real)])]
        centre = float(np.median(known)) if known.size else 0.0
        spread = _spread(known) or 1.0
        coords.append(np.where(np.isfinite(v), (v - centre) / spread, -(known.size > 0) - 1.0))
    X = np.column_stack(coords)
    tree = cKDTree(X[: len(real)])
    _, near = tree.query(X[len(real) :], k=min(k, len(real)))
    return np.asarray(near, dtype=np.int64).reshape(len(rows), -1)


def register(
    pool: pd.DataFrame,
    synthetic: pd.DataFrame,
    spec: DatasetSpec,
    *,
    seed: int,
    paired_rows: int = PAIRED_ROWS,
) -> Registration:
    """The release's column maps and its rows read back through them (see the module docstring).
    ``pool``: the real records the scans test, train and holdout as one set."""
    cols = [c for c in spec.attribute_columns if c in synthetic.columns and c in pool.columns]
    numeric = [c for c in cols if spec.columns[c].is_numeric]
    if not numeric or len(pool) == 0 or len(synthetic) == 0:
        return Registration()
    rng = np.random.default_rng([seed, 20261129])
    rows = min(len(synthetic), paired_rows, max(MIN_PAIRED_ROWS, PAIRED_COMPARISONS // len(pool)))
    sample = np.sort(rng.choice(len(synthetic), rows, replace=False))
    paired_syn = synthetic.iloc[sample]
    # the pool in a seeded random order (or a seeded sample of it): the pairing takes the first row
    # on a tie, and in the order given (training records first) that would favour them
    rate = min(1.0, PAIRED_COMPARISONS / (rows * len(pool)), MAX_PAIRED_POOL / len(pool))
    order = rng.permutation(len(pool))
    real = pool.iloc[order[: max(1, int(round(rate * len(pool))))]]
    # each sampled release row and the real records it reproduces most of (coded agreement in
    # coarse bins: a re-drawn column costs one code, a shifted number rarely leaves its bin; the
    # copy's own record is among the first few far more often than first), and those nearest it
    # (a small shift keeps a copy next to its record, where coarse codes tie with many others)
    best = np.hstack(
        [
            best_rows(paired_syn, real, spec, cols, top=PAIRED_CANDIDATES, bins=PAIRING_BINS),
            _nearest(paired_syn, real, spec, cols, PAIRED_CANDIDATES),
        ]
    )
    # each numeric column of the pool read once: its spread and grid here, its values below
    pool_values = {c: _numbers(pool, c) for c in numeric}
    maps: dict[str, tuple[str, float]] = {}
    for c in numeric:
        x = _numbers(real, c)[best].ravel()
        s = np.repeat(_numbers(paired_syn, c), best.shape[1])
        values = pool_values[c]
        found = column_map(x, s, _spread(values), grid_decimals(values))
        if found:
            maps[c] = found
    if not maps:
        return Registration()
    # every release row read back through the maps; kept where at least half of the mapped
    # numbers then land on a real value (a copy's do; a natural row's moved values almost never)
    back = synthetic.copy()
    landed = np.zeros((len(synthetic), len(maps)), dtype=bool)
    for m, (c, (kind, value)) in enumerate(maps.items()):
        s = _numbers(synthetic, c)
        x = s - value if kind == "shift" else s / value
        known = np.unique(pool_values[c][np.isfinite(pool_values[c])])
        if known.size:
            at = np.clip(np.searchsorted(known, x), 1, max(1, known.size - 1))
            near = np.minimum(
                np.abs(x - known[np.minimum(at, known.size - 1)]), np.abs(x - known[at - 1])
            )
            tol = STEP_TOLERANCE * np.maximum(np.abs(x), 1.0)
            landed[:, m] = np.isfinite(x) & (near <= tol)
        back[c] = x
    keep = landed.sum(axis=1) >= max(1, (len(maps) + 1) // 2)
    return Registration(maps=maps, rows=back.iloc[np.flatnonzero(keep)].reset_index(drop=True))


__all__ = ["Registration", "column_map", "register"]
