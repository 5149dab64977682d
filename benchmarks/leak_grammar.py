"""Leaks drawn from a grammar instead of a fixed list (``benchmarks/bench_leak_power.py``).

The calibration benchmark (``benchmarks/calibration_scenarios.py``) names 14 leak cells; a gate
tuned on them may learn those 14 shapes. Here every leak is drawn at random (a seeded numpy
``Generator``) from four choices, on the same splits (train / holdout / reference / population)
and the same release frame: an independent population sample of the training split's size with
some rows replaced by leaked ones.

**Which records** (``which``):

- ``random``: any training records;
- ``rare``: records holding a category value, or a combination of two categorical columns' values,
  that at most ``max(3, 0.2 % n_train)`` training rows hold;
- ``outlying``: the largest mean distance to the 10 nearest other training records (standardised
  encoding: z-scored numbers with a missing indicator, one-hot categories);
- ``group``: all records of one value of a categorical column held by 0.5-3 % of training rows;
- ``people``: a few people repeated, 20-60 records x 2-6 copies each.

**What is kept** (``keep``): ``all`` columns; ``all-but-k`` (k = 1 or 2 random columns per record,
of any kind, numeric included); ``combo``: one random combination of 3-5 columns, the rest of
the row from an independent population row.

**How it is changed** (``change``), applied to the kept numbers (numeric and ordinal columns;
categories stay the record's) and to the columns not kept:

- ``redraw``: kept values exact, the columns not kept re-drawn from the population marginal;
- ``jitter``: Gaussian noise of 0.01-0.05 training sd;
- ``round``: to a 1-2-5 unit of about 0.2-0.5 training sd;
- ``scale``: times a factor 1.01-1.05;
- ``shift``: plus 0.02-0.1 training sd;
- ``smote``: ``x + lam (nn - x)`` toward the record's nearest training neighbour, ``lam`` uniform
  in [0, lam_max], lam_max <= 0.1, categories of ``x``;
- ``swap``: the k columns not kept (1 or 2 when all are kept) taken from another training record;
- ``avoid``: no record is copied; the release leaves the members out: either the holdout itself
  is the release (``avoid=holdout``), or it is drawn from population rows with the share
  (10-40 %) nearest to a training record removed first (``avoid=filter``).

Numbers re-drawn or changed are clipped to the spec's declared public range only (so a scaled copy
is exactly ``factor * x`` when no range is declared); missing values stay missing.

**How many** (``share``): 0.5-5 % of the training records (log-uniform), or the ``people`` shape;
``group`` takes its group whole. A pool smaller than the drawn count gives what it has.

**What a leak reveals per record** (the label, version ``LABEL_VERSION``). For a leaked record
``x``, its released row ``s`` and ``K`` the columns that row reproduces from the record (all of
them for a whole copy; not the ones re-drawn, swapped in or left to the independent rest)::

    I_K(x, s) = sum over j in K  -log2 P_ref(a value as close to x_j as s_j is)
        categorical: -log2 f_ref(x_j) if s_j == x_j else 0 (missing is a value of its own)
        numeric:     -log2 max(1/n_ref, share of reference values within |s_j - x_j| of x_j)
                     (0 when exactly one of x_j, s_j is missing)

and the information *beyond the population's own closest twin* is
``I_K(x, s) - max_t I_K(x, t)`` over ``t`` in an independent population sample of the release's
size (the twin every record has in a release that knows nothing of it), scored on the same
columns. A scaled or shifted copy is read through the leak's own map first (one factor or one
shift per column, ``read_through_map``): ``1.02 x`` tells what ``x`` tells to anyone who tries
one ratio. Jitter, rounding and interpolation are read as released. Frequencies come from the
reference split (what an attacker may know), never from the training split. A record copied
several times counts its best copy. Per leak: the median over leaked records (``info_median``),
their mean, and the share of training records leaked. A verbatim copy of a unique record scores
high, of a record with many twins near 0; an ``avoid`` release has no per-record label
(``None``): what it reveals is absence. For a null release the same quantity on all columns, with
``s`` a training record's best match in the release, is about 0 (``null_information``): the
label's own calibration.

**Named shapes** (``NAMED_SHAPES``): fixed grammars for the shapes a reviewer would call copies
and the gate must hold back whatever the table: verbatim copies of 2 % of the training records,
copies with every number x 1.02, SMOTE-style interpolations (lam <= 0.1), 40 people x 4 near
copies (0.01 sd), copies with two random columns re-drawn, and the columns of a declared
combination (``combo``: the spec's quasi-identifiers) of records whose combination is unique in
the whole table (``which=unique-combo``), pasted into independent rows. The declaration only
builds the leak; the gate may be run with nothing declared.
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from benchmarks.calibration_scenarios import (
    Release,
    _encode,
    _nice,
    declared_clip,
    fresh_ids,
    outlying_rows,
    qi_unique_rows,
    split,
)
from benchmarks.calibration_tables import categorical_columns, load, numeric_columns

WHICH = ("random", "rare", "outlying", "group", "people")
KEEP = ("all", "all-but-k", "combo")
CHANGE = ("redraw", "jitter", "round", "scale", "shift", "smote", "swap", "avoid")
NUMERIC_CHANGES = ("jitter", "round", "scale", "shift", "smote")
#: the changes that apply one known number per column (the label reads their copies through it)
MAPPED_CHANGES = ("scale", "shift")
GRAMMAR_CELL = "grammar"
#: the information label's definition (results carry it; ``bench_leak_power.py --relabel`` brings
#: older rows to it): 2 reads scaled and shifted copies through the leak's own map, 3 scores copy
#: and twin on the columns the leak kept
LABEL_VERSION = 3


def label_changed(grammar: dict, since: int) -> bool:
    """Whether the label of a leak drawn with ``grammar`` differs between version ``since`` and
    :data:`LABEL_VERSION` (``bench_leak_power.py --relabel`` recomputes only those)."""
    change, keep = grammar.get("change"), grammar.get("keep")
    if change in ("avoid", "null"):
        return False
    # 2: scaled and shifted copies read through their map; 3: scored on the kept columns only
    return (since < 2 and change in MAPPED_CHANGES) or (
        since < 3 and (keep != "all" or change == "swap")
    )


#: fixed grammars (``make_leak(..., grammar=NAMED_SHAPES[name])``); see the module docstring
NAMED_SHAPES: dict[str, dict] = {
    "verbatim-2%": {"which": "random", "keep": "all", "change": "redraw", "share": 0.02},
    "scaled-1.02-2%": {
        "which": "random",
        "keep": "all",
        "change": "scale",
        "factor": 1.02,
        "share": 0.02,
    },
    "smote-0.1-3%": {
        "which": "random",
        "keep": "all",
        "change": "smote",
        "lam_max": 0.1,
        "share": 0.03,
    },
    "people-40x4": {
        "which": "people",
        "people": 40,
        "copies": 4,
        "keep": "all",
        "change": "jitter",
        "noise_sd": 0.01,
        "share": 0.0,
    },
    "partial-2col-3%": {
        "which": "random",
        "keep": "all-but-k",
        "k": 2,
        "change": "redraw",
        "share": 0.03,
    },
    "qi-unique-3%": {
        "which": "unique-combo",
        "keep": "combo",
        "combo": "quasi_identifiers",
        "change": "redraw",
        "share": 0.03,
    },
}

#: the named shapes in words (the docs' tables)
SHAPE_WORDS = {
    "verbatim-2%": "verbatim copies of 2 %",
    "scaled-1.02-2%": "copies of 2 % with every number x 1.02",
    "smote-0.1-3%": "SMOTE-style interpolations of 3 % (lambda <= 0.1)",
    "people-40x4": "40 people x 4 near copies (0.01 sd)",
    "partial-2col-3%": "copies of 3 % with two random columns re-drawn",
    "qi-unique-3%": "quasi-identifiers of 3 % (combination unique in the table) pasted",
}


class NotDrawable(Exception):
    """This grammar choice has no records on this table (e.g. no group of 0.5-3 %); redraw."""


# ------------------------------------------------------------------------------ information label


class InfoModel:
    """Reference frequencies and sorted values: ``I(x, s)`` for many pairs at once."""

    def __init__(self, reference: pd.DataFrame, spec):
        self.spec = spec
        self.num = numeric_columns(spec)
        self.cat = categorical_columns(spec)
        self.n_ref = len(reference)
        self.sorted = {c: np.sort(reference[c].astype(float).dropna().to_numpy()) for c in self.num}
        self.num_missing = {c: float(reference[c].isna().mean()) for c in self.num}
        self.freq = {
            c: reference[c].fillna("<NA>").astype(str).value_counts(normalize=True).to_dict()
            for c in self.cat
        }

    def _floor(self, p):
        return np.maximum(p, 1.0 / self.n_ref)

    def pairwise(
        self, x: pd.DataFrame, s: pd.DataFrame, on: pd.DataFrame | None = None
    ) -> np.ndarray:
        """``I(x_i, s_k)`` for every record ``i`` of ``x`` and row ``k`` of ``s`` (m x N bits);
        ``on`` (booleans, x's rows and columns) scores record ``i`` on its marked columns only."""
        return self._bits(x, s, on, outer=True)

    def paired(
        self, x: pd.DataFrame, s: pd.DataFrame, on: pd.DataFrame | None = None
    ) -> np.ndarray:
        """``I(x_i, s_i)`` row by row (``x`` and ``s`` aligned by position)."""
        return self._bits(x, s, on, outer=False)

    def _bits(
        self, x: pd.DataFrame, s: pd.DataFrame, on: pd.DataFrame | None, *, outer: bool
    ) -> np.ndarray:
        """The sum over columns: every pair ``(i, k)`` when ``outer``, else pairs ``(i, i)``."""

        def rows(v):  # records along the first axis, released rows along the second
            return v[:, None] if outer else v

        def cols(v):
            return v[None, :] if outer else v

        out = np.zeros((len(x), len(s)) if outer else len(x))
        for c in self.num:
            r = self.sorted[c]
            xv, sv = x[c].astype(float).to_numpy(), s[c].astype(float).to_numpy()
            d = np.abs(cols(sv) - rows(xv))
            lo = np.searchsorted(r, (rows(xv) - d).ravel(), "left").reshape(d.shape)
            hi = np.searchsorted(r, (rows(xv) + d).ravel(), "right").reshape(d.shape)
            bits = -np.log2(self._floor((hi - lo) / self.n_ref))
            xna, sna = rows(np.isnan(xv)), cols(np.isnan(sv))
            # missing matched by missing is a value like a category; one side missing reveals
            # nothing
            bits = np.where(xna & sna, -np.log2(self._floor(self.num_missing[c])), bits)
            bits = np.where(xna ^ sna, 0.0, bits)
            out += bits if on is None else bits * rows(on[c].to_numpy(bool))
        for c in self.cat:
            xv = x[c].fillna("<NA>").astype(str).to_numpy()
            sv = s[c].fillna("<NA>").astype(str).to_numpy()
            f = np.array([self.freq[c].get(v, 0.0) for v in xv])
            bits = np.where(rows(xv) == cols(sv), rows(-np.log2(self._floor(f))), 0.0)
            out += bits if on is None else bits * rows(on[c].to_numpy(bool))
        return out

    def best(
        self,
        x: pd.DataFrame,
        pool: pd.DataFrame,
        on: pd.DataFrame | None = None,
        chunk: int = 64,
    ) -> np.ndarray:
        """``max_t I(x_i, t)`` over the rows of ``pool`` (chunked: m x N can be large)."""
        return (
            np.concatenate(
                [
                    self.pairwise(
                        x.iloc[a : a + chunk],
                        pool,
                        None if on is None else on.iloc[a : a + chunk],
                    ).max(axis=1)
                    for a in range(0, len(x), chunk)
                ]
            )
            if len(x)
            else np.zeros(0)
        )


def information_label(
    model: InfoModel,
    records: pd.DataFrame,
    released: pd.DataFrame,
    twins: pd.DataFrame,
    record_ids: np.ndarray,
    kept: pd.DataFrame | None = None,
) -> dict:
    """Per-record information beyond the natural twin, the best copy per distinct record.

    ``kept`` (booleans, one row per leaked row): the columns each leaked row reproduces from its
    record. Copy and twin are both scored on them only: a column re-drawn from the population or
    taken from another record carries nothing of the record, and scoring the twin on it would
    only let the twin's chance matches outweigh what the copy does carry.
    """
    beyond = model.paired(records, released, kept) - model.best(records, twins, kept)
    per = pd.Series(beyond).groupby(np.asarray(record_ids)).max()
    return {
        "info_median": float(per.median()),
        "info_mean": float(per.mean()),
        "info_records": int(len(per)),
    }


def null_information(
    model: InfoModel,
    train: pd.DataFrame,
    synthetic: pd.DataFrame,
    twins: pd.DataFrame,
    rng: np.random.Generator,
    m: int = 200,
) -> float:
    """Median over ``m`` training records of (best match in the release) - (natural twin)."""
    rows = train.iloc[rng.choice(len(train), min(m, len(train)), replace=False)]
    return float(np.median(model.best(rows, synthetic) - model.best(rows, twins)))


# --------------------------------------------------------------------------------- which records


def rare_rows(train: pd.DataFrame, spec) -> np.ndarray:
    """Records holding a rare category value or a rare pair of two categorical columns' values."""
    max_count = max(3, int(round(0.002 * len(train))))
    cats = categorical_columns(spec)
    rare = np.zeros(len(train), dtype=bool)
    for i, c in enumerate(cats):
        col = train[c].fillna("<NA>").astype(str)
        rare |= col.map(col.value_counts()).to_numpy() <= max_count
        for d in cats[i + 1 :]:
            pair = col + "\x1f" + train[d].fillna("<NA>").astype(str)
            rare |= pair.map(pair.value_counts()).to_numpy() <= max_count
    return np.flatnonzero(rare)


def group_rows(train: pd.DataFrame, spec, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """All records of one value of a categorical column held by 0.5-3 % of the training rows."""
    options = []
    for c in categorical_columns(spec):
        share = train[c].value_counts(normalize=True)
        options += [(c, v) for v, f in share.items() if 0.005 <= f <= 0.03]
    if not options:
        raise NotDrawable("no category value is held by 0.5-3 % of the training rows")
    c, v = options[rng.integers(len(options))]
    # the column's name is a schema fact; the value is not printed (it can be a rare attribute)
    return np.flatnonzero((train[c] == v).to_numpy()), {
        "group_column": c,
        "group_share": float((train[c] == v).mean()),
    }


def nearest_neighbours(train: pd.DataFrame, spec) -> np.ndarray:
    """Each training record's nearest other training record (standardised encoding)."""
    from sklearn.neighbors import NearestNeighbors

    x = _encode(train, spec)
    _, idx = NearestNeighbors(n_neighbors=2).fit(x).kneighbors(x)
    return idx[:, 1]


def _fixed_combo(g: dict, spec) -> list[str]:
    """The columns a grammar fixes for ``keep=combo`` (``[]``: a random combination is drawn)."""
    combo = g.get("combo")
    if combo is None:
        return []
    if combo == "quasi_identifiers":
        combo = list(spec.quasi_identifiers or [])
        if not combo:
            raise NotDrawable("the spec declares no quasi-identifiers to build this leak from")
    return list(combo)


# ------------------------------------------------------------------------------------- the draw


def draw_grammar(rng: np.random.Generator) -> dict:
    change = str(rng.choice(CHANGE))
    if change == "avoid":
        return {
            "change": "avoid",
            "avoid": str(rng.choice(["holdout", "filter"])),
            "removed_share": float(rng.uniform(0.1, 0.4)),
        }
    g = {
        "which": str(rng.choice(WHICH)),
        "keep": str(rng.choice(KEEP)),
        "change": change,
        "share": float(np.exp(rng.uniform(np.log(0.005), np.log(0.05)))),
    }
    if g["which"] == "people":
        g |= {"people": int(rng.integers(20, 61)), "copies": int(rng.integers(2, 7))}
    if g["keep"] == "all-but-k" or (g["keep"] == "all" and change == "swap"):
        g["k"] = int(rng.integers(1, 3))
    if change == "jitter":
        g["noise_sd"] = float(rng.uniform(0.01, 0.05))
    elif change == "round":
        g["unit_sd"] = float(rng.uniform(0.2, 0.5))
    elif change == "scale":
        g["factor"] = float(rng.uniform(1.01, 1.05))
    elif change == "shift":
        g["shift_sd"] = float(rng.uniform(0.02, 0.1))
    elif change == "smote":
        g["lam_max"] = float(rng.uniform(0.02, 0.1))
    return g


def _train_sd(train: pd.DataFrame, c: str) -> float:
    """The unit of the numeric changes: the column's training sd (1 when it has none)."""
    sd = float(train[c].std())
    return sd if np.isfinite(sd) and sd > 0 else 1.0


def read_through_map(
    copies: pd.DataFrame, kept: np.ndarray, g: dict, train: pd.DataFrame, spec
) -> tuple[pd.DataFrame, str | None]:
    """The leaked rows with the leak's own column-wise map undone (the label reads them so).

    ``scale`` and ``shift`` apply one number per column to every kept value: a copy read through
    its inverse is the record itself, and the label should say what it would for that copy, not
    that ``1.02 x`` is far from ``x``. Jitter, rounding and interpolation have no inverse (their
    change is random or loses information) and are read as released. Returns the rows and the
    map's name (``None``: nothing undone).

    >>> import types
    >>> spec = types.SimpleNamespace(
    ...     columns={"a": types.SimpleNamespace(is_numeric=True)}, entity_id=None)
    >>> train = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    >>> rows, name = read_through_map(
    ...     pd.DataFrame({"a": [1.02, 3.06]}), np.ones((2, 1), bool), {"change": "scale",
    ...     "factor": 1.02}, train, spec)
    >>> rows["a"].round(6).tolist(), name
    ([1.0, 3.0], 'scale 1.02')
    """
    ch = g.get("change")
    if ch not in MAPPED_CHANGES:
        return copies, None
    cols = list(copies.columns)
    out = copies.copy()
    for c in numeric_columns(spec):
        mask = kept[:, cols.index(c)]
        if not mask.any():
            continue
        y = out[c].astype(float).to_numpy()
        x = y / g["factor"] if ch == "scale" else y - g["shift_sd"] * _train_sd(train, c)
        out[c] = np.where(mask, x, y)
    name = f"scale {g['factor']:g}" if ch == "scale" else f"shift {g['shift_sd']:g} sd"
    return out, name


def _change_numbers(
    copies: pd.DataFrame,
    kept: np.ndarray,
    rows: np.ndarray,
    g: dict,
    train: pd.DataFrame,
    spec,
    rng: np.random.Generator,
    nn: np.ndarray | None,
) -> pd.DataFrame:
    """Apply the numeric change of ``g`` to the kept numeric cells (``kept``: rows x columns
    mask)."""
    cols = list(copies.columns)
    out = copies.copy()
    for c in numeric_columns(spec):
        j = cols.index(c)
        mask = kept[:, j]
        if not mask.any():
            continue
        x = out[c].astype(float).to_numpy()
        sd = _train_sd(train, c)
        ch = g["change"]
        if ch == "jitter":
            y = x + rng.normal(0.0, g["noise_sd"] * sd, len(x))
        elif ch == "round":
            u = _nice(g["unit_sd"] * sd)
            y = np.round(x / u) * u
        elif ch == "scale":
            y = x * g["factor"]
        elif ch == "shift":
            y = x + g["shift_sd"] * sd
        elif ch == "smote":
            lam = rng.uniform(0.0, g["lam_max"], len(x))
            nb = train[c].astype(float).to_numpy()[nn[rows]]
            # a missing neighbour value leaves the record's own value (SMOTE needs both ends)
            y = np.where(np.isnan(nb), x, x + lam * (nb - x))
        else:
            continue
        out[c] = np.where(mask, declared_clip(pd.Series(y), spec.columns[c]).to_numpy(), x)
    return out


def make_leak(
    table: str, seed: int, n_train: int, draw: int, grammar: dict | None = None, max_tries: int = 20
) -> Release:
    """The ``draw``-th leak of ``seed`` on ``table``; ``grammar`` fixes the choices (tests)."""
    full, spec = load(table)
    train, holdout, reference, population = split(full, spec, n_train, seed)
    # the table's name in the seed: each table gets its own draws (more shapes over a grid), stable
    # across runs and processes (crc32, not Python's salted hash)
    rng = np.random.default_rng([seed, 11, draw, zlib.crc32(table.encode())])
    last = None
    for attempt in range(max_tries):
        g = dict(grammar) if grammar is not None else draw_grammar(rng)
        try:
            rel = _build(table, seed, full, spec, train, holdout, reference, population, g, rng)
            rel.info["grammar_attempts"] = attempt + 1
            return rel
        except NotDrawable as exc:
            last = exc
            if grammar is not None:
                raise
    raise NotDrawable(f"no drawable leak in {max_tries} tries: {last}")


def make_null(table: str, seed: int, n_train: int) -> Release:
    """An independent population sample (nothing of train in it), with the label's null value."""
    full, spec = load(table)
    train, holdout, reference, population = split(full, spec, n_train, seed)
    rng = np.random.default_rng([seed, 13])
    n = len(train)
    synthetic = population.iloc[rng.choice(len(population), min(n, len(population)), replace=False)]
    twins = population.iloc[rng.choice(len(population), min(n, len(population)), replace=False)]
    model = InfoModel(reference, spec)
    label = {
        "info_median": null_information(model, train, synthetic.reset_index(drop=True), twins, rng),
        "share": 0.0,
        "leaked_records": 0,
    }
    return Release(
        table,
        "null-independent",
        seed,
        n,
        train,
        holdout,
        reference,
        fresh_ids(synthetic.reset_index(drop=True), spec),
        spec,
        copied=np.zeros(0, dtype=int),
        info={"grammar": {"change": "null"}, "label": label},
    )


def _build(table, seed, full, spec, train, holdout, reference, population, g, rng) -> Release:
    n = len(train)
    base_n = min(n, len(population))
    if g["change"] == "avoid":
        return _avoid(table, seed, spec, train, holdout, reference, population, g, rng)
    desc = dict(g)
    combo_cols = _fixed_combo(g, spec)
    # --- which records
    if g["which"] == "unique-combo":
        if not combo_cols:
            raise NotDrawable("a unique-combination leak needs its columns (combo)")
        pool = qi_unique_rows(train, full, combo_cols)
    elif g["which"] == "random":
        pool = np.arange(n)
    elif g["which"] == "rare":
        pool = rare_rows(train, spec)
    elif g["which"] == "outlying":
        pool = outlying_rows(train, spec, 0.2)  # ordered, most outlying first
    elif g["which"] == "group":
        pool, more = group_rows(train, spec, rng)
        desc |= more
    else:
        pool = np.arange(n)
    if not len(pool):
        raise NotDrawable(f"no {g['which']} records in this training split")
    if g["which"] == "people":
        people = rng.choice(pool, min(g["people"], len(pool)), replace=False)
        rows = np.repeat(people, g["copies"])
    elif g["which"] == "group":
        rows = pool
    else:
        m = max(1, int(round(g["share"] * n)))
        rows = (
            pool[:m]
            if g["which"] == "outlying"
            else rng.choice(pool, min(m, len(pool)), replace=False)
        )
    if len(rows) > base_n:
        rows = rng.choice(rows, base_n, replace=False)
    # --- what is kept
    attrs = spec.attribute_columns
    cols = list(train.columns)
    copies = train.iloc[rows].reset_index(drop=True).copy()
    for c in numeric_columns(spec):
        copies[c] = copies[c].astype(float)
    kept = np.zeros((len(rows), len(cols)), dtype=bool)
    attr_idx = np.array([cols.index(c) for c in attrs])
    if g["keep"] == "all":
        kept[:, attr_idx] = True
        if g["change"] == "swap":  # all kept but k columns from another training record
            for i in range(len(rows)):
                kept[i, rng.choice(attr_idx, min(g["k"], len(attr_idx)), replace=False)] = False
    elif g["keep"] == "all-but-k":
        kept[:, attr_idx] = True
        for i in range(len(rows)):
            kept[i, rng.choice(attr_idx, min(g["k"], len(attr_idx) - 1), replace=False)] = False
    elif combo_cols:
        kept[:, [cols.index(c) for c in combo_cols]] = True
        desc["combo"] = combo_cols
    else:
        size = int(min(rng.integers(3, 6), len(attrs)))
        combo = rng.choice(attr_idx, size, replace=False)
        kept[:, combo] = True
        desc["combo"] = [cols[j] for j in sorted(combo)]
    # --- the rest of each row
    rest = ~kept
    rest[:, [cols.index(c) for c in cols if c not in attrs]] = False
    if rest.any():
        if g["keep"] == "combo":
            donor = population.iloc[rng.integers(len(population), size=len(rows))].reset_index(
                drop=True
            )
        elif g["change"] == "swap":
            donor = train.iloc[rng.integers(n, size=len(rows))].reset_index(drop=True)
        else:  # re-drawn from the population marginal: each cell from its own random population row
            donor = pd.DataFrame(
                {
                    c: population[c].to_numpy()[rng.integers(len(population), size=len(rows))]
                    for c in cols
                }
            )
        for j, c in enumerate(cols):
            m = rest[:, j]
            if m.any():
                vals = (
                    copies[c]
                    .to_numpy(dtype=object if not spec.columns[c].is_numeric else float)
                    .copy()
                )
                vals[m] = donor[c].to_numpy()[m]
                copies[c] = vals
    # --- the kept numbers
    nn = nearest_neighbours(train, spec) if g["change"] == "smote" else None
    copies = _change_numbers(copies, kept, rows, g, train, spec, rng, nn)
    # --- the release
    synthetic = population.iloc[rng.choice(len(population), base_n, replace=False)].reset_index(
        drop=True
    )
    for c in numeric_columns(spec):
        synthetic[c] = synthetic[c].astype(float)
    positions = rng.choice(base_n, len(rows), replace=False)
    synthetic.iloc[positions] = copies[synthetic.columns].to_numpy()
    synthetic = synthetic.astype({c: float for c in numeric_columns(spec)})
    twins = population.iloc[rng.choice(len(population), base_n, replace=False)]
    read, read_through = read_through_map(copies, kept, g, train, spec)
    label = information_label(
        InfoModel(reference, spec),
        train.iloc[rows],
        read,
        twins,
        rows,
        kept=pd.DataFrame(kept, columns=cols),
    )
    label |= {
        "version": LABEL_VERSION,
        "read_through": read_through,
        "share": len(np.unique(rows)) / n,
        "leaked_records": int(len(np.unique(rows))),
        "rows_replaced": int(len(rows)),
    }
    cell = f"{GRAMMAR_CELL}:{g['which']}/{g['keep']}/{g['change']}"
    return Release(
        table,
        cell,
        seed,
        n,
        train,
        holdout,
        reference,
        fresh_ids(synthetic, spec),
        spec,
        copied=np.unique(rows),
        # rows[i] (a position in train) went to positions[i] of the release: the tests'
        # ground truth
        info={"grammar": desc, "label": label, "positions": positions, "rows": rows},
    )


def _avoid(table, seed, spec, train, holdout, reference, population, g, rng) -> Release:
    """A release that reveals its members by leaving them out."""
    n = len(train)
    if g["avoid"] == "holdout":
        synthetic = holdout.copy()
        removed = 0.0
    else:
        from sklearn.neighbors import NearestNeighbors

        cand = population.iloc[
            rng.choice(len(population), min(2 * n, len(population)), replace=False)
        ]
        enc = _encode(pd.concat([train, cand], ignore_index=True), spec)
        d, _ = NearestNeighbors(n_neighbors=1).fit(enc[:n]).kneighbors(enc[n:])
        keep = np.argsort(d[:, 0], kind="stable")[int(round(g["removed_share"] * len(cand))) :]
        keep = rng.choice(keep, min(n, len(keep)), replace=False)
        synthetic = cand.iloc[keep]
        removed = g["removed_share"]
    label = {
        "info_median": None,
        "info_mean": None,
        "share": 0.0,
        "leaked_records": 0,
        "removed_share": removed,
    }
    return Release(
        table,
        f"{GRAMMAR_CELL}:avoid/{g['avoid']}",
        seed,
        n,
        train,
        holdout,
        reference,
        fresh_ids(synthetic.reset_index(drop=True), spec),
        spec,
        copied=np.zeros(0, dtype=int),
        info={"grammar": dict(g), "label": label},
    )
