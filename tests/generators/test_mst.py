"""MST generator: tree recovery, budget accounting, reproducibility, schema, utility on Adult."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

import privacy_gate.generators.mst as mst_module
from privacy_gate.config import SplitConfig
from privacy_gate.data import split_by_entity
from privacy_gate.errors import ConfigError
from privacy_gate.estimators.utility import marginal_quality
from privacy_gate.generators.accounting import cdp_rho
from privacy_gate.generators.base import create_generator
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.generators.mst import MSTGenerator
from privacy_gate.spec import DatasetSpec

# a tree-structured Bayesian network: parent -> child, every child strongly follows its parent
_BN_EDGES = [(0, 1), (1, 2), (1, 3), (3, 4), (0, 5)]
_BN_SIZES = [3, 4, 3, 5, 4, 3]
_BN_COLS = [f"c{i}" for i in range(6)]


def _bn_data(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    codes = np.zeros((n, 6), dtype=np.int64)
    codes[:, 0] = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    for parent, child in _BN_EDGES:  # parents come first in this list
        k = _BN_SIZES[child]
        follow = rng.random(n) < 0.8  # 80%: a deterministic function of the parent, else uniform
        codes[:, child] = np.where(follow, codes[:, parent] % k, rng.integers(0, k, size=n))
    return pd.DataFrame({c: [f"v{v}" for v in codes[:, i]] for i, c in enumerate(_BN_COLS)})


def _bn_spec() -> DatasetSpec:
    return DatasetSpec.model_validate(
        {
            "name": "bn",
            "columns": {
                c: {
                    "kind": "categorical",
                    "categories": [f"v{v}" for v in range(k)],
                    "nullable": False,
                }
                for c, k in zip(_BN_COLS, _BN_SIZES)
            },
        }
    )


def _mutual_information(a: np.ndarray, b: np.ndarray) -> float:
    joint = pd.crosstab(a, b).to_numpy().astype(float)
    joint /= joint.sum()
    outer = joint.sum(axis=1, keepdims=True) @ joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    return float((joint[nz] * np.log(joint[nz] / outer[nz])).sum())


def _kruskal_max_tree(
    weights: dict[tuple[str, str], float], nodes: list[str]
) -> set[tuple[str, str]]:
    comp = {v: v for v in nodes}

    def find(v: str) -> str:
        while comp[v] != v:
            v = comp[v]
        return v

    tree = set()
    for (a, b), _ in sorted(weights.items(), key=lambda kv: -kv[1]):
        ra, rb = find(a), find(b)
        if ra != rb:
            comp[ra] = rb
            tree.add((a, b))
    return tree


def _is_spanning_tree(focal: list[FocalPoint], columns: list[str]) -> bool:
    comp = {c: c for c in columns}

    def find(v: str) -> str:
        while comp[v] != v:
            v = comp[v]
        return v

    for fp in focal:
        ra, rb = find(fp.columns[0]), find(fp.columns[1])
        if ra == rb:
            return False  # a cycle
        comp[ra] = rb
    return len(focal) == len(columns) - 1 and len({find(c) for c in columns}) == 1


@pytest.fixture(scope="module")
def bn():
    return _bn_data(), _bn_spec()


@pytest.fixture(scope="module")
def adult_splits(adult_full, adult_spec):
    splits = split_by_entity(adult_full, adult_spec, SplitConfig(seed=0))
    return splits.train.iloc[:1000].reset_index(drop=True), splits.holdout, splits.reference


def test_large_epsilon_recovers_the_max_mutual_information_tree(bn):
    data, spec = bn
    mi = {
        (a, b): _mutual_information(data[a].to_numpy(), data[b].to_numpy())
        for a, b in combinations(_BN_COLS, 2)
    }
    expected = _kruskal_max_tree(mi, _BN_COLS)
    assert expected == {
        (_BN_COLS[p], _BN_COLS[c]) for p, c in _BN_EDGES
    }  # sanity: Chow-Liu finds the BN
    gen = MSTGenerator(epsilon=1e6, seed=3).fit(data, spec)
    assert {fp.columns for fp in gen.focal_points_} == expected
    assert all(fp.kind == "marginal" for fp in gen.focal_points_)
    assert gen.focal_points_ == sorted(gen.focal_points_)
    # and the synthetic data keeps the strong dependencies along the tree
    syn = gen.sample(20000, seed=1)
    for a, b in expected:
        assert _mutual_information(syn[a].to_numpy(), syn[b].to_numpy()) == pytest.approx(
            mi[a, b], rel=0.1
        )
        real = pd.crosstab(data[a], data[b], normalize=True)
        fake = pd.crosstab(syn[a], syn[b], normalize=True).reindex_like(real).fillna(0.0)
        assert (
            0.5 * np.abs(real.to_numpy() - fake.to_numpy()).sum() < 0.03
        )  # the tree keeps each edge table


@pytest.mark.parametrize("epsilon", [0.05, 1.0])
def test_always_a_spanning_tree(bn, epsilon):
    data, spec = bn
    for seed in range(4):
        gen = MSTGenerator(epsilon=epsilon, seed=seed).fit(data.iloc[:500], spec)
        assert _is_spanning_tree(gen.focal_points_, _BN_COLS)
        for fp in gen.focal_points_:  # columns in discretizer order
            assert _BN_COLS.index(fp.columns[0]) < _BN_COLS.index(fp.columns[1])


def test_budget_is_spent_exactly(bn):
    data, spec = bn
    gen = MSTGenerator(epsilon=1.0, delta=1e-6, seed=0).fit(data, spec)
    rho = cdp_rho(1.0, 1e-6)
    acc = gen.accountant_
    assert (
        acc.total == pytest.approx(rho)
        and acc.spent == pytest.approx(rho, rel=1e-9)
        and acc.is_exhausted()
    )
    steps = [c.step for c in acc.ledger]
    assert sum(s.startswith("measure_1way[") for s in steps) == 6
    assert sum(s.startswith("select_edge[") for s in steps) == 5
    assert sum(s.startswith("measure_2way[") for s in steps) == 5
    by_kind = {
        k: math.fsum(c.cost for c in acc.ledger if c.step.startswith(k))
        for k in ("measure_1way", "select_edge", "measure_2way")
    }
    assert all(v == pytest.approx(rho / 3, rel=1e-9) for v in by_kind.values())
    assert any(
        c.mechanism == "post-processing" and c.step.startswith("compress_domain")
        for c in acc.ledger
    )

    focal = gen.select_focal_points(data.iloc[:1000], np.random.default_rng(0))
    assert _is_spanning_tree(focal, _BN_COLS)
    assert gen.selection_accountant_.spent == pytest.approx(2 * rho / 3, rel=1e-9)
    assert not any(c.step.startswith("measure_2way") for c in gen.selection_accountant_.ledger)


def test_select_focal_points_is_the_fit_selection(bn):
    """Shadow runs use the very same code path: same data and rng state -> the same tree."""
    data, spec = bn
    for seed in (0, 1, 2):
        gen = MSTGenerator(epsilon=0.3, seed=seed).fit(data.iloc[:800], spec)
        assert (
            gen.select_focal_points(data.iloc[:800], np.random.default_rng(seed))
            == gen.focal_points_
        )


def test_single_column_spends_everything_on_the_one_way_marginal():
    spec = DatasetSpec.model_validate(
        {
            "name": "one",
            "columns": {
                "id": {"kind": "categorical"},
                "x": {"kind": "categorical", "categories": ["a", "b"], "nullable": False},
            },
            "entity_id": "id",
        }
    )
    train = pd.DataFrame({"id": [f"p{i}" for i in range(200)], "x": ["a"] * 150 + ["b"] * 50})
    gen = MSTGenerator(epsilon=1.0, seed=0).fit(train, spec)
    assert gen.focal_points_ == [] and gen.accountant_.is_exhausted()
    assert gen.select_focal_points(train, np.random.default_rng(0)) == []
    assert gen.selection_accountant_.is_exhausted()
    syn = gen.sample(50, seed=0)
    assert list(syn.columns) == ["id", "x"] and syn["id"].tolist()[:2] == ["syn-0", "syn-1"]


def test_reproducible_with_a_seed_and_different_without(adult_splits, adult_spec):
    train, _, reference = adult_splits
    a = MSTGenerator(epsilon=1.0, seed=11).fit(train, adult_spec, reference=reference)
    b = MSTGenerator(epsilon=1.0, seed=11).fit(train, adult_spec, reference=reference)
    assert a.focal_points_ == b.focal_points_
    assert [c.cost for c in a.accountant_.ledger] == [c.cost for c in b.accountant_.ledger]
    pd.testing.assert_frame_equal(a.sample(300), b.sample(300))
    pd.testing.assert_frame_equal(a.sample(300, seed=5), b.sample(300, seed=5))
    c = MSTGenerator(epsilon=1.0, seed=12).fit(train, adult_spec, reference=reference)
    assert not a.sample(300, seed=1).equals(c.sample(300, seed=1))  # different model
    assert not a.sample(300, seed=1).equals(a.sample(300, seed=2))
    # seed=None: fresh entropy on every fit and sample
    u = MSTGenerator(epsilon=1.0).fit(train, adult_spec, reference=reference)
    v = MSTGenerator(epsilon=1.0).fit(train, adult_spec, reference=reference)
    assert not u.sample(300).equals(v.sample(300))
    assert not u.sample(300).equals(u.sample(300))


def test_configure_once_then_fit_keeps_the_public_discretizer(adult_splits, adult_spec):
    train, _, reference = adult_splits
    gen = MSTGenerator(epsilon=1.0, seed=0).configure(adult_spec, reference=reference)
    disc = gen.discretizer_
    gen.select_focal_points(reference.iloc[:500], np.random.default_rng(0))
    assert gen.fit(train, adult_spec).discretizer_ is disc


def test_simplex_projection_and_inverse_cdf_draws():
    x = mst_module._project_simplex(np.array([3.0, 1.0, -1.0]), 2.0)
    np.testing.assert_allclose(x, [2.0, 0.0, 0.0])
    # a low weight (a noisy cell) absorbs more of the correction
    x = mst_module._project_simplex(np.array([2.0, 2.0]), 2.0, np.array([1.0, 0.25]))
    np.testing.assert_allclose(x, [1.6, 0.4])
    probs = np.array([[0.2, 0.0, 0.8], [0.5, 0.5, 0.0]])
    rows = np.repeat([0, 1], 20000)
    draws = mst_module._draw(np.cumsum(probs, axis=1), rows, np.random.default_rng(0))
    for r in (0, 1):
        freq = np.bincount(draws[rows == r], minlength=3) / 20000
        np.testing.assert_allclose(freq, probs[r], atol=0.015)
        assert freq[probs[r] == 0].sum() == 0


def test_privacy_and_validation():
    gen = create_generator("mst", epsilon=2.0, delta=1e-7)
    assert isinstance(gen, MSTGenerator) and gen.privacy == {"epsilon": 2.0, "delta": 1e-7}
    for bad in (
        {"epsilon": 0},
        {"epsilon": -1.0},
        {"epsilon": math.inf},
        {"delta": 0.0},
        {"delta": 1.0},
        {"n_bins": 1},
        {"seed": -1},
        {"seed": 1.5},
    ):
        with pytest.raises(ConfigError):
            create_generator("mst", **bad)
    with pytest.raises(ConfigError, match="fit"):
        MSTGenerator().sample(5)
    with pytest.raises(ConfigError, match="configure"):
        MSTGenerator().select_focal_points(pd.DataFrame({"a": [1]}), np.random.default_rng(0))
    assert mst_module.budget_split(3.0, 4) == (1.0, 1.0, 1.0)


def test_sample_schema_and_public_domain(adult_splits, adult_spec):
    train, _, reference = adult_splits
    gen = MSTGenerator(epsilon=0.5, seed=0).fit(train, adult_spec, reference=reference)
    syn = gen.sample(2000, seed=0)
    assert list(syn.columns) == adult_spec.column_names and len(syn) == 2000
    for name, col in adult_spec.columns.items():
        values = syn[name].dropna()
        if col.categories is not None:
            assert set(values.astype(str)) <= {str(c) for c in col.categories}, name
        else:
            assert values.min() >= col.min and values.max() <= col.max, name
    assert gen.sample(0).shape == (0, len(adult_spec.column_names))


def test_fit_without_reference_uses_the_spec(adult_splits, adult_spec):
    train, _, _ = adult_splits
    gen = MSTGenerator(epsilon=1.0, seed=0).fit(
        train, adult_spec
    )  # Adult's spec has ranges + categories
    assert len(gen.focal_points_) == len(adult_spec.attribute_columns) - 1
    assert (
        gen.discretizer_.domain_["age"] == 21
    )  # 20 equal-width bins over the public range + missing
    bare = DatasetSpec.model_validate(
        {
            "name": "bare",
            "columns": {
                "x": {"kind": "numeric"},
                "c": {"kind": "categorical", "categories": ["a", "b"]},
            },
        }
    )
    with pytest.raises(ConfigError, match=r"mst.*'x'"):
        MSTGenerator(seed=0).fit(pd.DataFrame({"x": [1.0, 2.0], "c": ["a", "b"]}), bare)


def test_mst_beats_independent_marginals_on_adult(adult_splits, adult_spec):
    """1,000 real train rows, bins from the reference split; compared on 5,000 rows each so the
    comparison is not drowned by the sampling noise of small synthetic tables."""
    train, holdout, reference = adult_splits
    gen = MSTGenerator(epsilon=1000.0, seed=0).fit(train, adult_spec, reference=reference)
    syn = gen.sample(5000, seed=0)
    rng = np.random.default_rng(0)  # independent marginals: every column resampled on its own
    independent = pd.DataFrame(
        {c: train[c].to_numpy()[rng.integers(0, len(train), 5000)] for c in train.columns}
    )
    mst_q = marginal_quality(syn, holdout, spec=adult_spec)
    ind_q = marginal_quality(independent, holdout, spec=adult_spec)
    assert mst_q["tvd_2way"] < ind_q["tvd_2way"] - 0.01
