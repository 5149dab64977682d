"""The linking key found from the release: pasted quasi-identifiers are seen with nothing declared,
and the key is a function of the pool as one set, so the agreement scan stays valid."""

from __future__ import annotations

import numpy as np
import pandas as pd

from privacy_gate.experiment.agreement import agreement_scan
from privacy_gate.experiment.reproduced_keys import reproduced_key
from privacy_gate.spec import DatasetSpec

COLUMNS = [f"c{i}" for i in range(8)]
SPEC = DatasetSpec.model_validate(
    {"name": "keys", "columns": {c: {"kind": "categorical"} for c in COLUMNS}}
)


def _draw(n: int, rng: np.random.Generator) -> pd.DataFrame:
    # three many-valued columns (what a pasted key is made of) and five few-valued ones
    return pd.DataFrame(
        {c: rng.integers(0, 40 if i < 3 else 3, n).astype(str) for i, c in enumerate(COLUMNS)}
    )


def _release(seed: int, pasted: int):
    rng = np.random.default_rng(seed)
    train, holdout, reference, synthetic = (_draw(n, rng) for n in (2000, 1000, 1000, 2000))
    rows = rng.choice(len(train), pasted, replace=False)
    synthetic.iloc[:pasted, :3] = train.iloc[
        rows, :3
    ].to_numpy()  # c0, c1, c2 pasted, the rest drawn
    return train, holdout, reference, synthetic


def test_pasted_columns_are_found_and_tested_without_a_declaration():
    train, holdout, reference, synthetic = _release(1, pasted=200)  # 10 % of the training records
    pool = pd.concat([train, holdout], ignore_index=True)
    key, z = reproduced_key(pool, synthetic, reference, COLUMNS)
    # the pasted columns, and at most one few-valued column that chance matched alongside
    assert {"c0", "c1", "c2"} <= set(key) and len(key) <= 4 and z > 4
    with_key = agreement_scan(synthetic, train, holdout, reference, SPEC, seed=0, linking=1)
    assert with_key.linking_views == (tuple(key),) and with_key.linking_pvalue <= 0.01
    clean = agreement_scan(
        _draw(2000, np.random.default_rng(9)), train, holdout, reference, SPEC, seed=0, linking=1
    )
    assert clean.linking_pvalue > 0.01


def test_the_key_does_not_depend_on_which_pool_records_were_trained_on():
    """The pool enters as one set: the same records in another order (train and holdout
    exchanged) give the same key and z, so the scan's view is label-blind."""
    train, holdout, reference, synthetic = _release(2, pasted=60)
    a = reproduced_key(
        pd.concat([train, holdout], ignore_index=True), synthetic, reference, COLUMNS
    )
    b = reproduced_key(
        pd.concat([holdout, train], ignore_index=True), synthetic, reference, COLUMNS
    )
    assert a == b


def test_nothing_reproduced_gives_no_key_or_a_small_z():
    rng = np.random.default_rng(3)
    pool, synthetic, reference = _draw(3000, rng), _draw(2000, rng), _draw(1000, rng)
    key, z = reproduced_key(pool, synthetic, reference, COLUMNS)
    assert z < 4


def test_a_declaration_keeps_the_reproduced_key_and_adds_its_own_view():
    """Quasi-identifiers declared elsewhere (c3, c4) do not take away the view of what the
    release reproduces: the pasted c0-c2 are still found and tested, beside the declared view."""
    train, holdout, reference, synthetic = _release(1, pasted=200)
    declared = DatasetSpec.model_validate(SPEC.model_dump() | {"quasi_identifiers": ["c3", "c4"]})
    scan = agreement_scan(synthetic, train, holdout, reference, declared, seed=0, linking=1)
    assert {"c0", "c1", "c2"} <= set(scan.linking_views[0]) and scan.linking_pvalue <= 0.02
    assert scan.qi_pvalue < 1.0  # the declared view is scored too
    # no linking view asked for: the declared view alone, as before
    alone = agreement_scan(synthetic, train, holdout, reference, declared, seed=0, linking=0)
    assert alone.linking_views == () and alone.linking_pvalue == 1.0
