"""Seeded releases of the calibration benchmark (``benchmarks/bench_calibration.py``): nulls (a
release that leaks nothing) and leaks with known ground truth, on any table of
``benchmarks/calibration_tables.py``.

**Splits.** For ``n_train`` training rows the table is cut (by entity when the spec has an
``entity_id``: a person's rows stay together) into disjoint parts: train ``n``, holdout ``n/2``,
reference ``n/2`` and the *population* (everything else, at least ``n``) from which releases are
drawn. A table smaller than ``3 n`` rows is split in the same proportions 2 : 1 : 1 : 2 (the
``n_train`` actually used is recorded). The release has as many rows as the training split.

**Nulls** (nothing of the training data in the release):

- ``null-independent``: a sample without replacement of the population;
- ``null-copula``: SDV ``GaussianCopulaSynthesizer`` (SDV's defaults) fitted on a sample of the
  population (disjoint from the training data, at most ``n_train`` rows, keeps the fit fast) and
  sampled to the release size.

**Leaks**: the ``null-independent`` release with some rows replaced (random positions). Every
leak returns the positions (in train) of the training records whose values went into the release
(``Release.copied``): the ground truth for the false-discovery proportion of the records the gate
names. ``near`` = Gaussian noise of 0.01 training standard deviations on every numeric column
(missing values stay missing; clipped to the table's range).

- ``verbatim-1%`` / ``verbatim-5%``: that share of the release replaced by exact copies of
  distinct training records; ``near-copy-1%`` / ``near-copy-5%``: the same, near copies;
- ``people-10x8`` / ``people-10x40`` / ``people-40x4``: 10 training records, each near-copied 8 / 40
  times; 40 records, each near-copied 4 times;
- ``outliers-0.5%``: the most outlying 0.5 % of training records near-copied once; outlying = the
  largest mean distance to the 10 nearest *other training* records in a standardised encoding
  (numeric columns z-scored with a missing indicator, categoricals one-hot);
- ``rare-values``: training records holding a category value that fewer than
  ``max(3, 0.2 % of n_train)`` training rows hold (any categorical column) near-copied once, at
  most 5 % of the release (a random subset beyond); not applicable when there is none;
- ``noisy-1%``: 1 % of the release replaced by noisy copies, 0.05 sd Gaussian noise on numeric
  columns;
- ``qi-unique-3%`` / ``qi-random-3%``: the quasi-identifier columns of 3 % of the training records
  (``0.03 n_train``) copied exactly into otherwise independent release rows; ``unique``: only
  records whose quasi-identifier combination is unique in the whole table (the population an
  attacker links to), ``random``: any records (mostly common combinations);
- ``partial-1col-2%`` / ``partial-2col-2%``: 2 % of the release replaced by exact copies of
  training records with 1 / 2 attribute columns (chosen at random per row) re-drawn from the
  population's marginal;
- ``coarsened-2%``: 2 % of the release replaced by copies whose numeric values are rounded to a
  unit of about 0.4 training standard deviations (the nearest 1-2-5 number: Adult's age and hours
  to 5, fnlwgt to 50,000), categoricals exact;
- ``scaled-2%``: 2 % of the release replaced by copies of distinct training records with every
  number multiplied by 1.02 (clipped to the spec's declared public range only), categoricals exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from benchmarks.calibration_tables import categorical_columns, load, numeric_columns

NULL_CELLS = ("null-independent", "null-copula")
LEAK_CELLS = (
    "verbatim-1%",
    "verbatim-5%",
    "near-copy-1%",
    "near-copy-5%",
    "people-10x8",
    "people-10x40",
    "outliers-0.5%",
    "rare-values",
    "noisy-1%",
    "qi-unique-3%",
    "qi-random-3%",
    "partial-1col-2%",
    "partial-2col-2%",
    "coarsened-2%",
    "scaled-2%",
    "people-40x4",
)
#: (new cells go last: a cell's seed stream is its position in CELLS)
CELLS = NULL_CELLS + LEAK_CELLS
NEAR_NOISE = 0.01


class NotApplicable(Exception):
    """The leak cannot be built on this table (e.g. no rare values); recorded, not an error."""


@dataclass
class Release:
    table: str
    cell: str
    seed: int
    n_train: int  # training rows actually used
    train: pd.DataFrame
    holdout: pd.DataFrame
    reference: pd.DataFrame
    synthetic: pd.DataFrame
    spec: object
    copied: np.ndarray | None = (
        None  # positions in train whose values went into the release (leaks)
    )
    info: dict = field(default_factory=dict)

    @property
    def is_null(self) -> bool:
        return self.cell in NULL_CELLS


# ------------------------------------------------------------------------------------------ splits


def split_sizes(n_units: int, n_train_units: int) -> tuple[int, int, int]:
    """(train, holdout, reference) units; proportionally 2 : 1 : 1 : 2 when the table is small."""
    if 3 * n_train_units > n_units:
        n_train_units = n_units // 3
    half = n_train_units // 2
    return n_train_units, half, half


def split(df: pd.DataFrame, spec, n_train: int, seed: int):
    """Disjoint train / holdout / reference / population (by entity when the spec has one)."""
    rng = np.random.default_rng([seed, 1])
    if spec.entity_id is not None:
        ids = df[spec.entity_id].to_numpy()
        units = pd.unique(ids)
        rows_per_unit = len(df) / len(units)
        n_tr, n_ho, n_re = split_sizes(len(units), int(round(n_train / rows_per_unit)))
        order = units[rng.permutation(len(units))]
        bounds = np.cumsum([0, n_tr, n_ho, n_re, len(units) - n_tr - n_ho - n_re])
        parts = [df[np.isin(ids, order[a:b])] for a, b in zip(bounds[:-1], bounds[1:])]
    else:
        n_tr, n_ho, n_re = split_sizes(len(df), n_train)
        order = rng.permutation(len(df))
        bounds = np.cumsum([0, n_tr, n_ho, n_re, len(df) - n_tr - n_ho - n_re])
        parts = [df.iloc[order[a:b]] for a, b in zip(bounds[:-1], bounds[1:])]
    return [p.reset_index(drop=True) for p in parts]


# ------------------------------------------------------------------------------------- row helpers


def fresh_ids(synthetic: pd.DataFrame, spec) -> pd.DataFrame:
    """Synthetic rows stand for no real entity: the entity column gets fresh ids."""
    if spec.entity_id is not None:
        synthetic = synthetic.copy()
        synthetic[spec.entity_id] = [f"syn-{i}" for i in range(len(synthetic))]
    return synthetic


def _noisy(
    rows: pd.DataFrame,
    train: pd.DataFrame,
    full: pd.DataFrame,
    spec,
    noise: float,
    rng: np.random.Generator,
) -> pd.DataFrame:
    out = rows.copy()
    for c in numeric_columns(spec):
        sd = float(train[c].std())
        vals = out[c].astype(float) + rng.normal(
            0.0, noise * (sd if np.isfinite(sd) else 0.0), len(out)
        )
        out[c] = vals.clip(float(full[c].min()), float(full[c].max()))
    return out


def declared_clip(values: pd.Series, col) -> pd.Series:
    """``values`` clipped to the column's declared public range (unchanged where none is
    declared)."""
    lo = getattr(col, "min", None)
    hi = getattr(col, "max", None)
    return values.clip(lower=lo, upper=hi) if lo is not None or hi is not None else values


def _nice(x: float) -> float:
    """The 1-2-5 number nearest ``x`` (on a log scale)."""
    if not np.isfinite(x) or x <= 0:
        return 1.0
    k = np.floor(np.log10(x))
    cands = np.array([1, 2, 5, 10]) * 10.0**k
    return float(cands[np.argmin(np.abs(np.log(cands / x)))])


def coarsening_units(train: pd.DataFrame, spec) -> dict[str, float]:
    return {c: _nice(0.4 * float(train[c].std())) for c in numeric_columns(spec)}


def _encode(train: pd.DataFrame, spec) -> np.ndarray:
    """Standardised numeric columns (missing -> 0 plus an indicator) and one-hot categoricals."""
    blocks = []
    for c in numeric_columns(spec):
        v = train[c].astype(float)
        sd = float(v.std()) or 1.0
        z = ((v - float(v.mean())) / sd).fillna(0.0).to_numpy()
        blocks.append(z[:, None])
        if v.isna().any():
            blocks.append(v.isna().to_numpy(dtype=float)[:, None])
    for c in categorical_columns(spec):
        blocks.append(pd.get_dummies(train[c].fillna("<NA>"), dtype=float).to_numpy())
    return np.hstack(blocks)


def outlying_rows(train: pd.DataFrame, spec, share: float, k: int = 10) -> np.ndarray:
    from sklearn.neighbors import NearestNeighbors

    x = _encode(train, spec)
    k = min(k, len(train) - 1)
    d, _ = NearestNeighbors(n_neighbors=k + 1).fit(x).kneighbors(x)
    score = d[:, 1:].mean(axis=1)  # the first neighbour is the record itself
    return np.argsort(-score, kind="stable")[: max(1, int(round(share * len(train))))]


def rare_value_rows(train: pd.DataFrame, spec, max_count: int) -> np.ndarray:
    rare = np.zeros(len(train), dtype=bool)
    for c in categorical_columns(spec):
        counts = train[c].map(train[c].value_counts())
        rare |= (counts < max_count).fillna(False).to_numpy(dtype=bool)
    return np.flatnonzero(rare)


def qi_unique_rows(train: pd.DataFrame, full: pd.DataFrame, qi: list[str]) -> np.ndarray:
    """Training rows whose quasi-identifier combination occurs once in the whole table."""
    key = lambda f: pd.util.hash_pandas_object(f[qi].astype(str), index=False)  # noqa: E731
    counts = key(full).value_counts()
    return np.flatnonzero(key(train).map(counts).to_numpy() == 1)


# ---------------------------------------------------------------------------------------- releases


def _copula(
    population: pd.DataFrame, spec, n_fit: int, n: int, seed: int
) -> tuple[pd.DataFrame, dict]:
    import time

    from sdv.metadata import Metadata
    from sdv.single_table import GaussianCopulaSynthesizer

    rng = np.random.default_rng([seed, 2])
    fit = population.iloc[rng.choice(len(population), min(n_fit, len(population)), replace=False)]
    cols = spec.attribute_columns
    meta = Metadata.load_from_dict(
        {
            "tables": {
                "table": {
                    "columns": {
                        c: {"sdtype": "numerical" if spec.columns[c].is_numeric else "categorical"}
                        for c in cols
                    }
                }
            }
        }
    )
    t0 = time.perf_counter()
    model = GaussianCopulaSynthesizer(meta)
    np.random.seed(seed)
    model.fit({"table": fit[cols].reset_index(drop=True)})
    model._set_random_state(seed)
    out = model.sample(num_rows=n)
    out = out["table"] if isinstance(out, dict) else out
    if spec.entity_id is not None:
        out.insert(list(spec.columns).index(spec.entity_id), spec.entity_id, "")
    return out[list(spec.columns)], {
        "copula_fit_rows": len(fit),
        "copula_seconds": round(time.perf_counter() - t0, 2),
    }


def make_release(table: str, cell: str, seed: int, n_train: int) -> Release:
    """The release of ``cell`` for ``table`` at ``seed`` and (requested) ``n_train``."""
    if cell not in CELLS:
        raise KeyError(f"unknown cell {cell!r}; known: {CELLS}")
    full, spec = load(table)
    train, holdout, reference, population = split(full, spec, n_train, seed)
    n = len(train)
    rng = np.random.default_rng([seed, 3, CELLS.index(cell)])
    info: dict = {
        "n_holdout": len(holdout),
        "n_reference": len(reference),
        "n_population": len(population),
    }
    if cell == "null-copula":
        synthetic, more = _copula(population, spec, n, n, seed)
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
            info=info | more,
        )
    base = population.iloc[
        rng.choice(len(population), min(n, len(population)), replace=False)
    ].reset_index(drop=True)
    if cell == "null-independent":
        return Release(
            table, cell, seed, n, train, holdout, reference, fresh_ids(base, spec), spec, info=info
        )

    synthetic = base.copy()
    near = lambda rows: _noisy(rows, train, full, spec, NEAR_NOISE, rng)  # noqa: E731
    share = lambda s: max(1, int(round(s * len(synthetic))))  # noqa: E731
    distinct = lambda m: rng.choice(n, min(m, n), replace=False)  # noqa: E731
    if cell.startswith(("verbatim-", "near-copy-")):
        rows = distinct(share(float(cell.split("-")[-1].rstrip("%")) / 100))
        copies = train.iloc[rows] if cell.startswith("verbatim") else near(train.iloc[rows])
    elif cell.startswith("people-"):
        k, m = (int(v) for v in cell.split("-")[1].split("x"))
        rows = np.repeat(distinct(k), m)
        copies = near(train.iloc[rows])
    elif cell == "outliers-0.5%":
        rows = outlying_rows(train, spec, 0.005)
        copies = near(train.iloc[rows])
    elif cell == "rare-values":
        max_count = max(3, int(round(0.002 * n)))
        rows = rare_value_rows(train, spec, max_count)
        info["rare_max_count"] = max_count
        info["rare_rows_available"] = len(rows)
        if not len(rows):
            raise NotApplicable(
                f"no category value is held by fewer than {max_count} training rows"
            )
        if len(rows) > share(0.05):
            rows = np.sort(rng.choice(rows, share(0.05), replace=False))
        copies = near(train.iloc[rows])
    elif cell == "noisy-1%":
        rows = distinct(share(0.01))
        copies = _noisy(train.iloc[rows], train, full, spec, 0.05, rng)
    elif cell.startswith("qi-"):
        qi = list(spec.quasi_identifiers or [])
        m = max(1, int(round(0.03 * n)))
        if cell.startswith("qi-unique"):
            pool = qi_unique_rows(train, full, qi)
            info["qi_unique_available"] = len(pool)
            if not len(pool):
                raise NotApplicable(
                    "no training record has a quasi-identifier combination unique in the table"
                )
            rows = rng.choice(pool, min(m, len(pool)), replace=False)
        else:
            rows = distinct(m)
        copies = synthetic.iloc[: len(rows)].copy()  # replaced below at the chosen positions
        copies[qi] = train.iloc[rows][qi].to_numpy()
        info["qi_columns"] = qi
    elif cell.startswith("partial-"):
        n_cols = int(cell.split("-")[1][0])
        rows = distinct(share(0.02))
        copies = train.iloc[rows].copy().reset_index(drop=True)
        attrs = spec.attribute_columns
        for i in range(len(copies)):
            for c in rng.choice(attrs, n_cols, replace=False):
                copies.loc[i, c] = population[c].iloc[rng.integers(len(population))]
    elif cell == "coarsened-2%":
        rows = distinct(share(0.02))
        copies = train.iloc[rows].copy()
        units = coarsening_units(train, spec)
        for c, u in units.items():
            copies[c] = (copies[c].astype(float) / u).round() * u
        info["units"] = units
    elif cell == "scaled-2%":
        rows = distinct(share(0.02))
        copies = train.iloc[rows].copy()
        for c in numeric_columns(spec):
            copies[c] = declared_clip(copies[c].astype(float) * 1.02, spec.columns[c])
    else:  # pragma: no cover
        raise AssertionError(cell)
    if len(rows) > len(synthetic):
        raise NotApplicable(f"{len(rows)} copies do not fit a release of {len(synthetic)} rows")
    positions = rng.choice(len(synthetic), len(rows), replace=False)
    copies = copies.reset_index(drop=True)
    for c in synthetic.columns:
        if spec.columns[c].is_numeric:
            synthetic[c] = synthetic[c].astype(float)
    synthetic.iloc[positions] = copies[synthetic.columns].to_numpy()
    synthetic = synthetic.astype({c: float for c in numeric_columns(spec)})
    info["rows_replaced"] = len(rows)
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
        info=info,
    )
