"""The generator-aware test end to end on small Adult tables: a recipe that ignores its training
set keeps the level (the truth is known: nothing can leak), a recipe that copies its training set
is found and its records named, and the gate gives a small table a verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from privacy_gate.config import ShadowConfig
from privacy_gate.data import Splits
from privacy_gate.experiment import shadow_gate
from privacy_gate.experiment.shadow_evidence import evidence_sentence
from privacy_gate.experiment.shadow_gate import run_shadow_test
from privacy_gate.generators import create_generator


def _splits(adult_full: pd.DataFrame, n_train: int, seed: int) -> tuple[Splits, pd.DataFrame]:
    order = np.random.default_rng(seed).permutation(len(adult_full))
    h = n_train // 3
    parts = [
        adult_full.iloc[order[a:b]]
        for a, b in ((0, n_train), (n_train, n_train + h), (n_train + h, n_train + 2 * h))
    ]
    outside = adult_full.iloc[order[n_train + 2 * h : n_train + 2 * h + 3000]].reset_index(
        drop=True
    )
    return Splits(train=parts[0], holdout=parts[1], reference=parts[2]), outside


class _Ignores:
    """A recipe that ignores its training set: rows drawn from people outside the pool."""

    def __init__(self, outside: pd.DataFrame, seed: int) -> None:
        self.outside, self.seed = outside, seed

    def fit(self, train, spec, *, reference=None):
        return self

    def sample(self, n, seed=None):
        rng = np.random.default_rng(self.seed if seed is None else seed)
        return self.outside.iloc[rng.choice(len(self.outside), n, replace=False)].reset_index(
            drop=True
        )


def _run(splits, synthetic, spec, generator, *, fits=16, review_level=0.5, seed=0):
    return run_shadow_test(
        splits,
        synthetic,
        spec,
        generator=generator,
        params={},
        config=ShadowConfig(max_fits=fits, jobs=1),
        review_level=review_level,
        power=0.9,
        q=0.05,
        seed=seed,
        calibration_reference=True,
    )


def test_a_recipe_that_ignores_its_input_keeps_the_level(adult_full, adult_spec, monkeypatch):
    """30 releases and their shadows from a recipe that cannot leak: the test's p-value is
    super-uniform (rejections at 0.1 within the binomial's reach), whatever the shared release."""
    splits, outside = _splits(adult_full, 150, seed=11)
    monkeypatch.setattr(
        shadow_gate, "create_generator", lambda name, seed=None, **kw: _Ignores(outside, seed)
    )
    p = []
    for i in range(30):
        real = _Ignores(outside, 1000 + i).sample(150)
        p.append(_run(splits, real, adult_spec, "ignores", seed=i).pvalue)
    k = int(np.sum(np.array(p) <= 0.1))
    assert stats.binomtest(k, len(p), 0.1, alternative="greater").pvalue > 0.01, p


def test_a_recipe_that_copies_is_found_and_its_records_named(adult_full, adult_spec):
    splits, _ = _splits(adult_full, 300, seed=3)
    real = create_generator("copy_train", seed=1).fit(splits.train, adult_spec).sample(300)
    r = _run(splits, real, adult_spec, "copy_train", fits=128, review_level=0.004)
    assert r.pvalue <= 0.004 and r.sufficient
    assert r.fits >= 64 and r.named > 50  # fits went on until the copies could be named
    named = r.records.loc[r.records["named"], "row_id"]
    assert set(named) <= set(splits.train.index)  # row ids of training records, nothing else
    assert "shadow releases that never saw it" in evidence_sentence(r.evidence[0])
    assert set(r.records.columns) == {"row_id", "p_value", "z", "n_out", "n_in", "named", "in_top"}


def test_the_gate_gives_a_small_clean_release_a_verdict(adult_full, adult_spec):
    """500 training rows: the targets alone answer REVIEW for insufficient evidence; with the
    recipe known (MST, epsilon 1: it reads the reference, so the test permutes train and holdout
    only) the generator-aware test carries the power with 256 fits and the gate approves."""
    from privacy_gate.pipeline.evaluate import evaluate

    splits, _ = _splits(adult_full, 500, seed=5)
    real = (
        create_generator("mst", epsilon=1.0, seed=2)
        .fit(splits.train, adult_spec, reference=splits.reference)
        .sample(500)
    )
    kw = dict(
        train=splits.train,
        holdout=splits.holdout,
        reference=splits.reference,
        synthetic=real,
        spec=adult_spec,
    )
    without = evaluate(**kw).verdict
    assert without.decision == "REVIEW" and all(
        "insufficient evidence" in c.message for c in without.reasons
    )
    with_recipe = evaluate(
        **kw,
        generator="mst",
        generator_params={"epsilon": 1.0},
        shadow=ShadowConfig(max_fits=256, jobs=1),
    ).verdict
    assert with_recipe.decision == "APPROVE", [c.message for c in with_recipe.reasons]
    assert with_recipe.metrics["shadow.sufficient"] == 1.0
    assert "shadow" in [t["name"] for t in with_recipe.budget["tests"]]


def test_too_little_compute_says_how_many_fits_would_do(adult_full, adult_spec):
    from privacy_gate.pipeline.evaluate import evaluate

    splits, _ = _splits(adult_full, 400, seed=5)
    real = (
        create_generator("mst", epsilon=1.0, seed=2)
        .fit(splits.train, adult_spec, reference=splits.reference)
        .sample(400)
    )
    v = evaluate(
        train=splits.train,
        holdout=splits.holdout,
        reference=splits.reference,
        synthetic=real,
        spec=adult_spec,
        generator="mst",
        generator_params={"epsilon": 1.0},
        shadow=ShadowConfig(max_fits=16, jobs=1),
    ).verdict
    assert v.decision == "REVIEW"
    words = [c.message for c in v.reasons if c.metric == "insufficient_evidence.shadow"]
    assert words and "fits (shadow.max_fits" in words[0]


def test_off_without_a_recipe_and_for_a_release_read_from_a_file(adult_full, adult_spec):
    from privacy_gate.pipeline.evaluate import evaluate

    splits, outside = _splits(adult_full, 400, seed=5)
    v = evaluate(
        train=splits.train,
        holdout=splits.holdout,
        reference=splits.reference,
        synthetic=outside.iloc[:400],
        spec=adult_spec,
    ).verdict
    assert not any(k.startswith("shadow.") for k in v.metrics)
    assert "shadow" not in [t["name"] for t in v.budget["tests"]]
