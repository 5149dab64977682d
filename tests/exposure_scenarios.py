"""Seeded Adult releases with known exposure, shared by the canary tests and
``benchmarks/bench_exposure.py``.

Real data: 8,000 training rows, 4,000 holdout, 4,000 reference (disjoint, from the bundled Adult
table). The release: 8,000 rows of the same population that were never used for training (an
independent sample: nothing is exposed), then

- ``share``: that share of the release replaced by *noisy copies* of distinct training rows
  (Gaussian noise of ``noise`` standard deviations on every numeric column, clipped to the spec's
  ranges: no verbatim row);
- ``rare_group``: every release row of that ``race`` value replaced by near-copies of the
  group's training rows, each training row of the group copied in turn (the rare-group leak).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult" / "adult.csv.gz"
SPEC = ROOT / "examples" / "adult.yaml"
SIZES = {"train": 8000, "holdout": 4000, "reference": 4000, "release": 8000}
RARE_GROUP = ("race", "Amer-Indian-Eskimo")


@dataclass(frozen=True)
class Scenario:
    train: pd.DataFrame
    holdout: pd.DataFrame
    reference: pd.DataFrame
    synthetic: pd.DataFrame
    exposed_rows: np.ndarray  # positions in train that have a noisy copy in the release


def noisy_rows(
    rows: pd.DataFrame,
    train: pd.DataFrame,
    numeric: list[str],
    noise: float,
    rng: np.random.Generator,
) -> pd.DataFrame:
    out = rows.copy()
    for c in numeric:
        out[c] = out[c].astype(float) + rng.normal(0.0, noise * float(train[c].std()), len(out))
    return out


def make_scenario(
    seed: int,
    *,
    share: float = 0.0,
    noise: float = 0.05,
    rare_group: bool = False,
    adult: pd.DataFrame | None = None,
) -> Scenario:
    from privacy_gate.config import load_spec
    from privacy_gate.generators.base import clip_to_spec

    spec = load_spec(SPEC)
    adult = pd.read_csv(ADULT) if adult is None else adult
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(adult))
    bounds = np.cumsum([0, *SIZES.values()])
    train, holdout, reference, release = (
        adult.iloc[order[a:b]].reset_index(drop=True) for a, b in zip(bounds[:-1], bounds[1:])
    )
    numeric = [c for c, col in spec.columns.items() if col.is_numeric]
    synthetic = release.astype({c: float for c in numeric})
    exposed = np.zeros(0, dtype=int)
    if share:
        n = int(round(share * len(synthetic)))
        exposed = rng.choice(len(train), n, replace=False)
        synthetic.iloc[:n] = noisy_rows(train.iloc[exposed], train, numeric, noise, rng).to_numpy()
    if rare_group:
        col, value = RARE_GROUP
        in_train = np.flatnonzero((train[col] == value).to_numpy())
        in_release = np.flatnonzero((synthetic[col] == value).to_numpy())
        donors = np.resize(rng.permutation(in_train), len(in_release))  # every group row, cycled
        synthetic.iloc[in_release] = noisy_rows(
            train.iloc[donors], train, numeric, noise, rng
        ).to_numpy()
        exposed = np.union1d(exposed, donors)
    synthetic = clip_to_spec(synthetic.astype({c: float for c in numeric}), spec)
    return Scenario(
        train=train, holdout=holdout, reference=reference, synthetic=synthetic, exposed_rows=exposed
    )


# ------------------------------------------------------------------- sparse leaks (bench_exposure)


@dataclass(frozen=True)
class Leak:
    """One kind of leak into an otherwise independent release (``make_leak``):

    - ``people``: ``k`` training records each near-copied ``m`` times;
    - ``outliers``: the most outlying ``share`` of training records near-copied once — outlying =
      farthest from their nearest *reference* record on the attacks' encoding (an evaluator's view
      of "unusual", not the training data's own);
    - ``rare``: every training record carrying a rare category value (held by fewer than ``k``
      training rows in any categorical column of the spec) near-copied once;
    - ``noisy``: ``share`` of the release replaced by noisy copies of distinct training records;
    - ``verbatim``: ``share`` of the release replaced by exact copies of distinct training records;
    - ``null``: nothing (an independent release).

    ``noise``: Gaussian noise on every numeric column in training standard deviations."""

    kind: str
    k: int = 0
    m: int = 0
    share: float = 0.0
    noise: float = 0.01
    column: str | None = (
        None  # ``rare``: only this column's rare values (default: every categorical one)
    )

    @property
    def label(self) -> str:
        return {
            "people": f"{self.k} people x {self.m} copies",
            "outliers": f"most outlying {self.share:.1%}",
            "rare": f"rare {self.column or 'category'} values (< {self.k} training rows)",
            "noisy": f"noisy copies {self.share:.1%}",
            "verbatim": f"verbatim copies {self.share:.1%}",
            "null": "independent release",
        }[self.kind] + (
            f", noise {self.noise:g} sd" if self.kind not in ("verbatim", "null") else ""
        )


def outlying_rows(train: pd.DataFrame, reference: pd.DataFrame, share: float) -> np.ndarray:
    """Positions of the ``share`` of training rows farthest from their nearest reference row."""
    from privacy_gate.attacks.distance import nearest_distances
    from privacy_gate.config import load_spec
    from privacy_gate.data.encoding import MixedEncoder

    encoder = MixedEncoder(spec=load_spec(SPEC), data_name="reference").fit(reference)
    d, _ = nearest_distances(
        np.asarray(encoder.transform(train), dtype=float),
        np.asarray(encoder.transform(reference), dtype=float),
        chunk_bytes=1 << 27,
    )
    return np.argsort(-d, kind="stable")[: max(1, int(round(share * len(train))))]


def rare_value_rows(train: pd.DataFrame, max_count: int, column: str | None = None) -> np.ndarray:
    """Positions of training rows holding a value that fewer than ``max_count`` training rows hold,
    in ``column`` or any categorical column of the spec."""
    from privacy_gate.config import load_spec

    spec = load_spec(SPEC)
    rare = np.zeros(len(train), dtype=bool)
    for c, col in spec.columns.items():
        if not col.is_numeric and column in (None, c):
            counts = train[c].map(train[c].value_counts())
            rare |= (counts < max_count).to_numpy()
    return np.flatnonzero(rare)


def make_leak(seed: int, leak: Leak, *, adult: pd.DataFrame | None = None) -> Scenario:
    """The independent release of ``make_scenario(seed)`` with ``leak`` put into it (the first
    rows of the release are replaced); ``exposed_rows``: the training positions copied."""
    from privacy_gate.config import load_spec
    from privacy_gate.generators.base import clip_to_spec

    base = make_scenario(seed, adult=adult)
    if leak.kind == "null":
        return base
    spec = load_spec(SPEC)
    numeric = [c for c, col in spec.columns.items() if col.is_numeric]
    train, synthetic = base.train, base.synthetic.copy()
    rng = np.random.default_rng([seed, 7])
    if leak.kind == "people":
        donors = rng.choice(len(train), leak.k, replace=False)
        rows = np.repeat(donors, leak.m)
    elif leak.kind == "outliers":
        donors = rows = outlying_rows(train, base.reference, leak.share)
    elif leak.kind == "rare":
        donors = rows = rare_value_rows(train, leak.k, leak.column)
    elif leak.kind in ("noisy", "verbatim"):
        donors = rows = rng.choice(
            len(train), int(round(leak.share * len(synthetic))), replace=False
        )
    else:
        raise ValueError(f"unknown leak kind {leak.kind!r}")
    if len(rows) > len(synthetic):
        raise ValueError(
            f"{leak.label}: {len(rows)} copies do not fit a release of {len(synthetic)} rows"
        )
    copies = (
        train.iloc[rows]
        if leak.kind == "verbatim"
        else noisy_rows(train.iloc[rows], train, numeric, leak.noise, rng)
    )
    synthetic.iloc[: len(rows)] = copies.to_numpy()
    if leak.kind != "verbatim":
        synthetic = clip_to_spec(synthetic.astype({c: float for c in numeric}), spec)
    return Scenario(
        train=train,
        holdout=base.holdout,
        reference=base.reference,
        synthetic=synthetic,
        exposed_rows=np.unique(donors),
    )
