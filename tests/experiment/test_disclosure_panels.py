"""The disclosure evaluators of a panel attack one row per person, on simulations whose truth is
known.

People of a few hundred types (attributes fixed over their seven years, the secret too): an
inference attack that works on one year of a person works on all of them, so attempts on rows of
one person are one attempt repeated.

- no signal (the release an independent sample of people): with the entity id, linkability and
  inference attack one row of each of ``n`` people per side and the budget's two-proportion test
  holds its level; the same frames without the entity id (rows as attempts) reject far more
  often (the check can fail);
- power: a release holding every year of the training people is still found (inference).
"""

import numpy as np
import pandas as pd

from privacy_gate.config import DisclosureConfig
from privacy_gate.experiment.disclosure import _attempts, measure_disclosure
from privacy_gate.experiment.disclosure_codes import Codes
from privacy_gate.experiment.linkability import inference, linkability
from privacy_gate.gate.budget import disclosure_pvalues, proportion_pvalue
from privacy_gate.spec import DatasetSpec

YEARS, TYPES, DRAWS, ALPHA = 7, 400, 60, 0.05
COLUMNS = {
    "pid": {"kind": "categorical"},
    "a": {"kind": "categorical"},
    "b": {"kind": "categorical"},
    "year": {"kind": "categorical"},
    "s": {"kind": "categorical"},
}
ATTACKER = {
    "quasi_identifiers": ["a", "b", "year"],
    "sensitive": ["s"],
    "linkability": [["a", "year"], ["b"]],
}
PANEL = DatasetSpec.model_validate(
    {"name": "panel", "entity_id": "pid", "columns": COLUMNS, **ATTACKER}
)
ROWS = DatasetSpec.model_validate(
    {"name": "rows", "columns": {c: k for c, k in COLUMNS.items() if c != "pid"}, **ATTACKER}
)
CFG = DisclosureConfig(
    n_attacks=1000, n_attempts=1000
)  # per row: about five years of each person attacked


def _people(rng, n, prefix):
    kind = rng.choice(TYPES, n)
    secret = np.where(
        rng.random(n) < 0.7, kind % 5, rng.integers(0, 5, n)
    )  # the type mostly tells the secret
    return pd.DataFrame(
        {
            "pid": np.repeat([f"{prefix}{i}" for i in range(n)], YEARS),
            "a": np.repeat([f"a{k % 20}" for k in kind], YEARS),
            "b": np.repeat([f"b{k // 20}" for k in kind], YEARS),
            "year": np.tile([f"y{y}" for y in range(YEARS)], n),
            "s": np.repeat([f"s{v}" for v in secret], YEARS),
        }
    )


def _rejects(synthetic, train, control, spec, seed):
    """Linkability's and inference's rejections by the budget's two-proportion test, on the
    attempts ``measure_disclosure`` draws (singling out, most of the time, is checked per person in
    ``test_singling_out_panels.py``)."""
    frames = [f if spec.entity_id else f.drop(columns="pid") for f in (synthetic, train, control)]
    codes = Codes.of(frames, columns=spec.attribute_columns, numeric=set())
    t_idx, c_idx = _attempts(frames[1], frames[2], spec, n_attempts=CFG.n_attempts, seed=seed)
    outcomes = [
        linkability(
            codes,
            ("a", "year"),
            ("b",),
            train_idx=t_idx,
            control_idx=c_idx,
            n_neighbors=CFG.n_neighbors,
            seed=seed,
        ),
        inference(
            codes,
            "s",
            ("a", "b", "year"),
            train_idx=t_idx,
            control_idx=c_idx,
            seed=seed,
            tolerance=CFG.tolerance,
        ),
    ]
    return [
        proportion_pvalue(
            int(round(o.risk.k_train)),
            o.risk.n_train,
            int(round(o.risk.k_control)),
            o.risk.n_control,
        )
        <= ALPHA
        for o in outcomes
    ]


def test_no_signal_per_person_holds_its_level_and_per_row_does_not():
    per_person, per_row = [], []
    for seed in range(DRAWS):
        rng = np.random.default_rng(seed)
        train, control, synthetic = (
            _people(rng, 200, "t"),
            _people(rng, 200, "c"),
            _people(rng, 300, "s"),
        )
        per_person.append(_rejects(synthetic, train, control, PANEL, seed))
        per_row.append(_rejects(synthetic, train, control, ROWS, seed))
    person_rate, row_rate = np.mean(per_person, axis=0), np.mean(per_row, axis=0)
    assert (person_rate <= ALPHA + 0.06).all(), (
        person_rate
    )  # about two binomial standard errors at 60 draws
    assert row_rate.max() >= 3 * ALPHA, row_rate


def test_a_copied_panel_is_found():
    rng = np.random.default_rng(7)
    train, control = _people(rng, 200, "t"), _people(rng, 200, "c")
    synthetic = train.assign(pid=lambda d: "copy-" + d["pid"])
    d = measure_disclosure(synthetic, train, control, PANEL, CFG, seed=0)
    assert d.linkability.risk.n_train == 200  # one row of each of 200 people
    p = disclosure_pvalues(d.metrics())
    assert p["inference.s"] < 1e-3, (
        p
    )  # (linkability: (a, year) vs (b) has too many twins to link here)
