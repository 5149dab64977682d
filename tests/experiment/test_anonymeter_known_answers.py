"""Known answers from anonymeter's own toy cases (Giomi et al., PETS 2023; ``statice/anonymeter``),
re-derived by hand here so that the expected values do not rest on trusting either tool.

Linkability, two columns known in two parts (A = ``col0``, B = ``col1``)::

    training (= control)   synthetic
    (0, 0)                 s0 (0, 0)
    (0, 1)                 s1 (1, 1)
    (4, 9)                 s2 (4, 4)
    (0, 4)                 s3 (9, 9)

With one neighbour per part: (0, 0) -> s0 on A and s0 on B, linked; (0, 1) -> s0 / s1; (4, 9) ->
s2 / s3; (0, 4) -> s0 / s2: one link in four, rate 0.25. With two: (0, 1) -> {s0, s1} / {s1, s0},
(4, 9) -> {s2, s1} / {s3, s2}, (0, 4) -> {s0, s1} / {s2, s1}: every record linked, rate 1. The 95 %
Wilson interval of 1 success in 4 is (0.045587, 0.699358) around 0.3725, of 4 in 4 (0.5102, 1].

Inference of ``c1`` from ``c0`` on two records (a, b), (c, d): a release holding (a, b), (c, e)
is right once in two; (a, h), (c, g) never; the records themselves always.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privacy_gate.estimators.disclosure import wilson_interval
from privacy_gate.experiment.disclosure_codes import Codes
from privacy_gate.experiment.linkability import inference, linkability

ORIGINAL = pd.DataFrame({"col0": [0, 0, 4, 0], "col1": [0, 1, 9, 4]})
SYNTHETIC = pd.DataFrame({"col0": [0, 1, 4, 9], "col1": [0, 1, 4, 9]})


@pytest.mark.parametrize("n_neighbors, rate", [(1, 0.25), (2, 1.0), (3, 1.0), (4, 1.0)])
def test_the_linkability_toy_case(n_neighbors, rate):
    codes = Codes.of(
        [SYNTHETIC, ORIGINAL, ORIGINAL], columns=["col0", "col1"], numeric={"col0", "col1"}
    )
    every = np.arange(4)
    out = linkability(
        codes,
        ("col0",),
        ("col1",),
        train_idx=every,
        control_idx=every,
        n_neighbors=n_neighbors,
        seed=0,
    )
    assert out.risk.train_rate == rate and out.risk.control_rate == rate
    assert out.train_hits.tolist() == (
        [True, False, False, False] if n_neighbors == 1 else [True] * 4
    )


@pytest.mark.parametrize("k, expected", [(1, (0.045587, 0.699358)), (4, (0.5102, 1.0))])
def test_the_toy_rates_wilson_intervals(k, expected):
    assert wilson_interval(k, 4, alpha=0.05) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    "synthetic, rate",
    [
        ([["a", "b"], ["c", "d"]], 1.0),
        ([["a", "b"], ["c", "e"]], 0.5),
        ([["a", "h"], ["c", "g"]], 0.0),
    ],
)
def test_the_inference_toy_case(synthetic, rate):
    original = pd.DataFrame([["a", "b"], ["c", "d"]], columns=["c0", "c1"])
    syn = pd.DataFrame(synthetic, columns=["c0", "c1"])
    codes = Codes.of([syn, original, original], columns=["c0", "c1"], numeric=set())
    both = np.arange(2)
    out = inference(codes, "c1", ("c0",), train_idx=both, control_idx=both, seed=0)
    assert out.risk.train_rate == rate and out.risk.control_rate == rate
