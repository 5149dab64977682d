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


def noisy_rows(rows: pd.DataFrame, train: pd.DataFrame, numeric: list[str], noise: float,
           rng: np.random.Generator) -> pd.DataFrame:
    out = rows.copy()
    for c in numeric:
        out[c] = out[c].astype(float) + rng.normal(0.0, noise * float(train[c].std()), len(out))
    return out


def make_scenario(seed: int, *, share: float = 0.0, noise: float = 0.05, rare_group: bool = False,
                  adult: pd.DataFrame | None = None) -> Scenario:
    from privacy_gate.config import load_spec
    from privacy_gate.generators.base import clip_to_spec

    spec = load_spec(SPEC)
    adult = pd.read_csv(ADULT) if adult is None else adult
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(adult))
    bounds = np.cumsum([0, *SIZES.values()])
    train, holdout, reference, release = (adult.iloc[order[a:b]].reset_index(drop=True)
                                          for a, b in zip(bounds[:-1], bounds[1:]))
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
        synthetic.iloc[in_release] = noisy_rows(train.iloc[donors], train, numeric, noise, rng).to_numpy()
        exposed = np.union1d(exposed, donors)
    synthetic = clip_to_spec(synthetic.astype({c: float for c in numeric}), spec)
    return Scenario(train=train, holdout=holdout, reference=reference, synthetic=synthetic, exposed_rows=exposed)
