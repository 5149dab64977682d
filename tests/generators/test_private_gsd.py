"""Private-GSD: budget accounting, randomness, the incremental fitness, and what the fit learns.

Small populations and generation caps keep the whole file fast; the data with known structure
is a toy table where (a, b) and (c, d) are strongly dependent and everything else independent.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import privacy_gate.generators.private_gsd as pg
from privacy_gate.data import conform
from privacy_gate.errors import ConfigError
from privacy_gate.generators import create_generator
from privacy_gate.generators._gsd_search import (
    SearchState,
    Workload,
    apply_change,
    fitness_delta,
    full_fitness,
    genetic_search,
)
from privacy_gate.generators.accounting import cdp_rho
from privacy_gate.spec import DatasetSpec

FAST = {"n_syn": 200, "population_size": 20, "max_generations": 400}


@pytest.fixture(scope="module")
def adult_train(adult_full, adult_spec):
    return conform(
        adult_full.sample(500, random_state=3).reset_index(drop=True), adult_spec, source="t"
    )


@pytest.fixture(scope="module")
def adult_reference(adult_full, adult_spec):
    return conform(
        adult_full.sample(1000, random_state=4).reset_index(drop=True), adult_spec, source="r"
    )


TOY_SPEC = DatasetSpec.model_validate(
    {
        "name": "toy",
        "columns": {
            c: {"kind": "categorical", "categories": ["0", "1", "2", "3"], "nullable": False}
            for c in "abcdef"
        },
    }
)
STRONG = [("a", "b"), ("c", "d")]


def _toy(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(n, 6))
    x[:, 1] = np.where(rng.random(n) < 0.95, x[:, 0], x[:, 1])  # b copies a
    x[:, 3] = np.where(rng.random(n) < 0.9, (x[:, 2] + 1) % 4, x[:, 3])  # d follows c
    return pd.DataFrame(x.astype(str), columns=list("abcdef"))


def _pair_tvd(syn: pd.DataFrame, real: pd.DataFrame, pair: tuple[str, str]) -> float:
    p = syn.groupby(list(pair)).size() / len(syn)
    q = real.groupby(list(pair)).size() / len(real)
    return 0.5 * float(p.sub(q, fill_value=0.0).abs().sum())


def _spent(acc, prefix: str) -> float:
    return math.fsum(c.cost for c in acc.ledger if c.step.startswith(prefix))


def test_budget_spent_exactly_and_split(adult_train, adult_spec):
    g = pg.PrivateGSDGenerator(epsilon=1.0, delta=1e-9, seed=0, **FAST).fit(adult_train, adult_spec)
    acc, rho = g.accountant_, cdp_rho(1.0, 1e-9)
    assert acc.is_exhausted() and acc.spent == pytest.approx(rho, rel=1e-9)
    d = len(adult_spec.attribute_columns)
    assert _spent(acc, "one_way[") == pytest.approx(rho / 3) and _spent(
        acc, "select["
    ) == pytest.approx(rho / 3)
    assert _spent(acc, "measure[") == pytest.approx(rho / 3)
    assert len(g.focal_points_) == 2 * d and len(g.queries_) == 3 * d  # d 1-way + 2d selected pairs
    assert g.privacy == {"epsilon": 1.0, "delta": 1e-9}

    # select_focal_points spends exactly the share fit spends up to and including selection
    g.select_focal_points(adult_train, np.random.default_rng(0))
    sel_acc = g.selection_accountant_
    assert sel_acc is not acc and sel_acc.spent == pytest.approx(2 * rho / 3, rel=1e-9)
    assert [c.step for c in sel_acc.ledger] == [
        c.step for c in acc.ledger if c.step.startswith(("one_way[", "select["))
    ]
    assert [c.step for c in acc.ledger[len(sel_acc.ledger) :]][
        -1
    ] == "genetic search (noisy statistics only)"


def test_one_shot_mode_measures_everything(adult_train, adult_spec):
    """n_queries >= #marginals: the authors' one-shot mode, nothing selected, no select charge."""
    g = pg.PrivateGSDGenerator(epsilon=2.0, seed=1, n_queries=10_000, **FAST).fit(
        adult_train, adult_spec
    )
    d = len(adult_spec.attribute_columns)
    assert len(g.focal_points_) == d * (d - 1) // 2 and g.accountant_.is_exhausted()
    assert _spent(g.accountant_, "select[") == 0.0
    assert _spent(g.accountant_, "measure[") == pytest.approx(2 * g.accountant_.total / 3)


def test_seeds_reproducible_and_distinct(adult_train, adult_spec):
    a = pg.PrivateGSDGenerator(seed=5, **FAST).fit(adult_train, adult_spec)
    b = pg.PrivateGSDGenerator(seed=5, **FAST).fit(adult_train, adult_spec)
    c = pg.PrivateGSDGenerator(seed=6, **FAST).fit(adult_train, adult_spec)
    np.testing.assert_array_equal(a.synthetic_codes_, b.synthetic_codes_)
    pd.testing.assert_frame_equal(a.sample(300), b.sample(300))
    pd.testing.assert_frame_equal(a.sample(300, seed=9), b.sample(300, seed=9))
    assert not np.array_equal(a.synthetic_codes_, c.synthetic_codes_)
    assert not a.sample(300).equals(c.sample(300)) and not a.sample(300, seed=1).equals(
        a.sample(300, seed=2)
    )
    assert not a.sample(300).equals(a.sample(300))  # seed=None continues the fit's stream (as MST)
    # seed=None: fresh entropy on every fit (never a fixed default seed)
    n1 = pg.PrivateGSDGenerator(**FAST).fit(adult_train, adult_spec)
    n2 = pg.PrivateGSDGenerator(**FAST).fit(adult_train, adult_spec)
    assert not np.array_equal(n1.synthetic_codes_, n2.synthetic_codes_)


def test_select_focal_points_is_fits_selection(adult_train, adult_spec, adult_reference):
    """Same code path: with the fit's seed, the selection alone reproduces fit's focal points."""
    g = pg.PrivateGSDGenerator(epsilon=3.0, seed=11, **FAST).configure(
        adult_spec, reference=adult_reference
    )
    alone = g.select_focal_points(adult_train, np.random.default_rng(11))
    g.fit(adult_train, adult_spec)
    assert alone == g.focal_points_ == sorted(alone)
    assert all(fp.kind == "query" and len(fp.columns) == 2 and fp.cell is None for fp in alone)
    fresh = pg.PrivateGSDGenerator(epsilon=3.0, seed=11, **FAST)
    with pytest.raises(ConfigError, match="configure"):
        fresh.select_focal_points(adult_train, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="fit"):
        fresh.sample(5)


def test_incremental_fitness_equals_full_recompute():
    rng = np.random.default_rng(0)
    dom = np.array([3, 5, 2, 7, 4])
    queries = [(0,), (3,), (0, 1), (1, 3), (2, 4), (0, 2, 3), (1, 2, 3, 4)]
    w = Workload(queries, dom)
    X0 = rng.integers(0, dom, size=(60, 5))
    for q, cols in enumerate(queries):  # the flat layout is np.ravel_multi_index's (C order)
        expect = pg._marginal_counts(X0, cols, tuple(dom[list(cols)]))
        np.testing.assert_array_equal(w.counts(X0)[w.offsets[q] : w.offsets[q + 1]], expect)
    target = np.r_[rng.dirichlet(np.ones(w.n_cells)) * len(queries), 0.0]
    state = SearchState.of(w, target, X0)
    for _ in range(300):
        rows, cols = rng.integers(0, 60, size=8), rng.integers(0, 5, size=8)
        vals = rng.integers(0, dom[cols])
        vals[0] = state.X[rows[0], cols[0]]  # a no-op child: delta must be exactly 0
        delta, left, entered = fitness_delta(w, target, state, rows, cols, vals)
        assert delta[0] == 0.0
        for i in range(8):  # every child's delta against a from-scratch recompute
            child = state.X.copy()
            child[rows[i], cols[i]] = vals[i]
            assert state.fitness + delta[i] == pytest.approx(
                full_fitness(w, target, child), rel=1e-10, abs=1e-14
            )
        i = int(rng.integers(8))
        apply_change(
            w, state, int(rows[i]), int(cols[i]), int(vals[i]), left[i], entered[i], float(delta[i])
        )
    assert state.fitness == pytest.approx(full_fitness(w, target, state.X), rel=1e-10)
    np.testing.assert_array_equal(state.counts, w.counts(state.X))
    np.testing.assert_array_equal(state.cells, w.cell_index(state.X))


def test_genetic_search_reduces_error_and_is_monotone():
    rng = np.random.default_rng(1)
    dom = np.array([4, 4, 3, 5])
    w = Workload([(0,), (1,), (2,), (3,), (0, 1), (2, 3)], dom)
    truth = rng.integers(0, dom, size=(300, 4))
    truth[:, 1] = truth[:, 0]
    target = np.r_[w.counts(truth)[:-1] / 300, 0.0]
    res = genetic_search(
        w, target, n_syn=300, rng=rng, population_size=20, max_generations=3000, window=500
    )
    assert res.fitness < 0.1 * res.initial_fitness
    fits = [f for _, f in res.history]
    assert all(b <= a + 1e-12 for a, b in zip(fits, fits[1:]))
    assert res.fitness == pytest.approx(full_fitness(w, target, res.X))


def test_fit_reduces_error(adult_train, adult_spec):
    g = pg.PrivateGSDGenerator(epsilon=10.0, seed=2, **{**FAST, "max_generations": 3000}).fit(
        adult_train, adult_spec
    )
    assert g.fitness_ < 0.5 * g.initial_fitness_ and g.n_generations_ <= 3000


def test_large_epsilon_learns_the_strong_pairs():
    train = _toy(1500, seed=0)
    g = pg.PrivateGSDGenerator(
        epsilon=1e4, seed=0, n_queries=2, n_syn=500, population_size=40, max_generations=6000
    ).fit(train, TOY_SPEC)
    assert [fp.columns for fp in g.focal_points_] == STRONG
    syn = g.sample(500)
    rng = np.random.default_rng(0)  # the baseline: each column drawn from its own true marginal
    indep = pd.DataFrame({c: rng.choice(train[c].to_numpy(), size=500) for c in train.columns})
    for pair in STRONG:
        assert _pair_tvd(syn, train, pair) < 0.3 * _pair_tvd(indep, train, pair)


def test_large_epsilon_selection_prefers_dependent_pairs():
    g = pg.PrivateGSDGenerator(epsilon=1e4, n_queries=2).configure(TOY_SPEC)
    counts = {}
    for seed in range(5):
        for fp in g.select_focal_points(_toy(800, seed=seed), np.random.default_rng(seed)):
            counts[fp.columns] = counts.get(fp.columns, 0) + 1
    assert counts == {STRONG[0]: 5, STRONG[1]: 5}


def test_samples_follow_schema_and_domain(adult_train, adult_spec, adult_reference):
    g = pg.PrivateGSDGenerator(seed=0, **FAST).fit(
        adult_train, adult_spec, reference=adult_reference
    )
    out = g.sample(250)
    assert list(out.columns) == adult_spec.column_names and len(out) == 250
    conform(out, adult_spec, source="synthetic")
    for name, col in adult_spec.columns.items():
        values = out[name].dropna()
        if col.categories is not None:
            assert set(values.astype(str)) <= set(map(str, col.categories))
        elif col.min is not None:
            assert values.between(col.min, col.max).all()
    assert (
        len(g.sample(FAST["n_syn"] * 2)) == FAST["n_syn"] * 2
    )  # more than n_syn: with replacement
    whole = g.discretizer_.transform(g.sample(FAST["n_syn"], seed=1))
    assert sorted(map(tuple, whole)) == sorted(
        map(tuple, g.synthetic_codes_)
    )  # n_syn rows: the dataset itself


def test_entity_id_gets_fresh_ids():
    spec = DatasetSpec.model_validate(
        {
            "name": "e",
            "entity_id": "pid",
            "columns": {
                "pid": {"kind": "categorical"},
                **{c: TOY_SPEC.columns[c].model_dump() for c in "abc"},
            },
        }
    )
    train = _toy(300, seed=1)[list("abc")].assign(pid=[f"p{i}" for i in range(300)])
    out = pg.PrivateGSDGenerator(seed=0, **FAST).fit(train, spec).sample(5)
    assert list(out.columns) == ["pid", "a", "b", "c"] and list(out["pid"]) == [
        f"syn-{i}" for i in range(5)
    ]


def test_registered_and_validated():
    assert isinstance(create_generator("private_gsd", epsilon=2.0, seed=1), pg.PrivateGSDGenerator)
    for bad in (
        {"epsilon": 0},
        {"k": 1},
        {"n_queries": 0},
        {"one_way_share": 0.6, "select_share": 0.5},
        {"n_syn": 0},
        {"tol": -1.0},
        {"population_size": 1},
        {"seed": -1},
        {"delta": 0},
    ):
        with pytest.raises(ConfigError, match="private_gsd"):
            create_generator("private_gsd", **bad)
    with pytest.raises(ConfigError, match="needs at least 3 attribute columns"):
        pg.PrivateGSDGenerator(k=3).configure(
            DatasetSpec.model_validate(
                {"name": "two", "columns": {c: TOY_SPEC.columns[c].model_dump() for c in "ab"}}
            )
        )
