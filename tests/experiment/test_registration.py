"""Registration (privacy_gate/experiment/registration.py): maps found where copies were moved,
none on natural data, and the scans' level kept when it fires on records of either split."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privacy_gate.data import Splits
from privacy_gate.experiment.agreement import agreement_scan
from privacy_gate.experiment.member_scan import scan_members
from privacy_gate.experiment.registration import column_map, grid_decimals, register
from privacy_gate.spec import DatasetSpec

SPEC = DatasetSpec.model_validate(
    {
        "name": "t",
        "columns": {
            "age": {"kind": "numeric"},
            "income": {"kind": "numeric"},
            "hours": {"kind": "numeric"},
            "score": {"kind": "numeric"},
            "sex": {"kind": "categorical"},
            "job": {"kind": "categorical"},
        },
    }
)


def _draw(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """A table recorded on grids (whole years and hours, cents, one decimal), as real ones are."""
    age = rng.integers(18, 90, n).astype(float)
    return pd.DataFrame(
        {
            "age": age,
            "income": np.round(rng.lognormal(10, 0.6, n) + 100 * age, 2),
            "hours": rng.integers(10, 60, n).astype(float),
            "score": np.round(rng.normal(50, 12, n), 1),
            "sex": rng.choice(["f", "m"], n),
            "job": rng.choice(list("abcdefgh"), n),
        }
    )


def _moved(rows: pd.DataFrame, rng: np.random.Generator, change: str) -> pd.DataFrame:
    """Copies with every number shifted (a fraction of its spread) or scaled, one column
    re-drawn per copy."""
    out = rows.copy()
    numbers = ["age", "income", "hours", "score"]
    for c in numbers:
        out[c] = out[c] + 0.05 * out[c].std() if change == "shift" else out[c] * 1.03
    redraw = rng.choice(numbers + ["job"], len(out))
    for i, c in enumerate(redraw):
        out.iloc[i, out.columns.get_loc(c)] = _draw(rng, 1)[c].iloc[0]
    return out


@pytest.mark.parametrize("change", ["shift", "scale"])
def test_moved_copies_are_registered_back_onto_their_records(change):
    rng = np.random.default_rng(3)
    pool, synthetic = _draw(rng, 3000), _draw(rng, 2000)
    copied = rng.choice(3000, 60, replace=False)
    synthetic.iloc[:60] = _moved(pool.iloc[copied], rng, change).to_numpy()
    synthetic = synthetic.astype(pool.dtypes.to_dict())
    reg = register(pool, synthetic, SPEC, seed=0)
    assert set(reg.maps) == {"age", "income", "hours", "score"}
    assert {kind for kind, _ in reg.maps.values()} == {change}
    # the registered rows are the copies read back: most numbers of each equal its record's
    back = reg.rows[["age", "income", "hours", "score"]].to_numpy()
    truth = pool.iloc[copied][["age", "income", "hours", "score"]].to_numpy()
    hits = [np.isclose(back[:, None, :], t[None, None, :]).sum(axis=2).max() for t in truth]
    assert len(reg.rows) >= 55 and np.mean(np.array(hits) >= 3) >= 0.9


def test_no_map_on_natural_releases_of_gridded_data():
    """Independent releases of a table on grids: between natural neighbours every step is a
    multiple of a grid and recurs, yet as often as its mirror image: no map, no extra rows."""
    found = 0
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        reg = register(_draw(rng, 2000), _draw(rng, 2000), SPEC, seed=seed)
        found += bool(reg.maps) or len(reg.rows) > 0
    assert found == 0


def test_grid_and_column_map_known_answers():
    assert grid_decimals(np.array([1.25, 3.5, 10.0])) == 2
    assert grid_decimals(np.random.default_rng(0).normal(size=50)) is None
    x = np.arange(1.0, 201.0)
    s = x + np.random.default_rng(1).normal(size=200)  # natural neighbours: no map
    assert column_map(x, s, 50.0) is None
    s[:20] = x[:20] + 2.345  # a recurring step off the grid of whole numbers
    assert column_map(x, s, 50.0, decimals=0) == ("shift", pytest.approx(2.345))
    s[:20] = x[:20] + 2.0  # on the grid: indistinguishable from natural steps, so not read
    assert column_map(x, np.round(s), 50.0, decimals=0) is None


def _splits(rng: np.random.Generator, n: int = 600) -> Splits:
    return Splits(_draw(rng, n), _draw(rng, n), _draw(rng, n))


def test_the_scans_see_moved_partial_copies():
    rng = np.random.default_rng(5)
    splits = _splits(rng)
    synthetic = _draw(rng, 600)
    synthetic.iloc[:30] = _moved(splits.train.iloc[:30], rng, "shift").to_numpy()
    synthetic = synthetic.astype(splits.train.dtypes.to_dict())
    scan = scan_members(splits, synthetic, SPEC, q=0.05, seed=0)
    agreement = agreement_scan(
        synthetic, splits.train, splits.holdout, splits.reference, SPEC, seed=0
    )
    assert scan.registered_rows >= 25 and agreement.registered_rows >= 25
    assert min(scan.tail_pvalue, agreement.pvalue) < 0.01


def test_the_scans_keep_their_level_when_registration_fires_on_both_splits():
    """Moved copies of 30 records drawn from train and holdout alike: registration finds the map
    and reads rows back onto records of both splits, and which split a record is in still says
    nothing, so the scans' p-values must stay uniform (the hardest case: strong copies, no
    membership signal)."""
    p_scan, p_agreement, registered = [], [], []
    for seed in range(60):
        rng = np.random.default_rng(1000 + seed)
        splits = _splits(rng, 300)
        pool = pd.concat([splits.train, splits.holdout], ignore_index=True)
        synthetic = _draw(rng, 300)
        copied = pool.iloc[rng.choice(len(pool), 30, replace=False)]
        synthetic.iloc[:30] = _moved(copied, rng, "shift").to_numpy()
        synthetic = synthetic.astype(pool.dtypes.to_dict())
        scan = scan_members(splits, synthetic, SPEC, q=0.05, seed=seed)
        agreement = agreement_scan(
            synthetic, splits.train, splits.holdout, splits.reference, SPEC, seed=seed
        )
        p_scan.append(scan.tail_pvalue)
        p_agreement.append(agreement.pvalue)
        registered.append(scan.registered_rows)
    assert np.median(registered) >= 20  # it did fire
    for p in (np.array(p_scan), np.array(p_agreement)):
        for alpha in (0.05, 0.2):
            assert np.mean(p <= alpha) <= alpha + 2.5 * np.sqrt(alpha * (1 - alpha) / len(p))
