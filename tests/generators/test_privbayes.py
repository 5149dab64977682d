"""PrivBayes: network recovery, theta-usefulness, budget, randomness, schema, utility on Adult."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import privacy_gate.generators.privbayes as pb
from privacy_gate.errors import ConfigError
from privacy_gate.estimators.utility import marginal_quality
from privacy_gate.generators.base import create_generator
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.spec import DatasetSpec

# --------------------------------------------------------------------------------- helpers


def _noisy(rng, value, k, flip):
    """``value`` with a share ``flip`` of entries replaced by a uniform draw from 0..k-1."""
    out = value.copy()
    m = rng.random(len(value)) < flip
    out[m] = rng.integers(0, k, int(m.sum()))
    return out


STAR_SIZES = {"A": 3, "B": 2, "C": 3, "D": 2, "E": 3, "F": 2}
STAR_PARENTS = {
    "A": (),
    "B": ("A",),
    "C": ("A", "B"),
    "D": ("A", "B"),
    "E": ("A", "B"),
    "F": ("A", "B"),
}


def _star_data(n: int, seed: int) -> pd.DataFrame:
    """A known degree-2 Bayesian network: A -> B, and C, D, E, F each a noisy function of (A, B).

    Why this design is unambiguous for GreedyBayes (k = 2): every child depends on A and B jointly
    and the children are independent given (A, B), so for any attribute set V containing A and B,
    I(X; A, B) >= I(X; Pi) for every other pair Pi in V (data processing). The families (cliques)
    {A, B, X} are therefore what the greedy search finds from *any* first attribute (a public coin);
    only the orientation inside a clique depends on where it starts (from B it learns A | B). From
    the true root A it finds exactly the true parent sets.
    """
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = _noisy(rng, (a >= 1).astype(int), 2, 0.1)
    c = _noisy(rng, np.minimum(a + b, 2), 3, 0.3)
    d = _noisy(rng, (a + b) % 2, 2, 0.3)
    e = _noisy(rng, np.where(b == 1, 2 - a, a), 3, 0.3)
    f = _noisy(rng, (a == 2 * b).astype(int), 2, 0.3)
    return pd.DataFrame({k: v.astype(str) for k, v in zip("ABCDEF", (a, b, c, d, e, f))})


def _cat_spec(sizes: dict[str, int], **extra) -> DatasetSpec:
    cols = {
        c: {"kind": "categorical", "categories": [str(i) for i in range(s)], "nullable": False}
        for c, s in sizes.items()
    }
    return DatasetSpec.model_validate({"name": "t", "columns": cols, **extra})


def _cliques(parents: dict[str, tuple[str, ...]]) -> set[frozenset[str]]:
    """The maximal families {child} | parents: the network up to orientation inside a family."""
    fams = {frozenset((c, *p)) for c, p in parents.items()}
    return {f for f in fams if not any(f < g for g in fams)}


@pytest.fixture(scope="module")
def star():
    return _star_data(5000, 0), _cat_spec(STAR_SIZES)


@pytest.fixture(scope="module")
def adult_small(adult_full):
    """1,000 train rows, a 3,000-row holdout and a 4,000-row reference split of the real Adult
    data."""
    order = np.random.default_rng(11).permutation(len(adult_full))
    take = lambda a, b: adult_full.iloc[order[a:b]].reset_index(drop=True)  # noqa: E731
    return take(0, 1000), take(1000, 4000), take(4000, 8000)


# ---------------------------------------------------------------------------- construction


def test_registered_and_validated():
    g = create_generator("privbayes", epsilon=2.0, seed=1, beta=0.3, theta=5, score="r", degree=2)
    assert isinstance(g, pb.PrivBayesGenerator)
    assert g.privacy == {"epsilon": 2.0, "delta": 0.0}  # pure DP, whatever delta is passed
    for bad in (
        {"epsilon": 0},
        {"epsilon": math.inf},
        {"epsilon": True},
        {"beta": 1.0},
        {"beta": 0},
        {"theta": 0},
        {"score": "bic"},
        {"degree": -1},
        {"degree": 1.5},
        {"max_parent_sets": 0},
        {"n_bins": 1},
        {"seed": -3},
        {"delta": 1.0},
    ):
        with pytest.raises(ConfigError):
            create_generator("privbayes", **bad)


def test_errors_before_configure_or_fit(star):
    df, spec = star
    g = pb.PrivBayesGenerator(epsilon=1.0)
    with pytest.raises(ConfigError, match="configure"):
        g.select_focal_points(df, np.random.default_rng(0))
    with pytest.raises(ConfigError, match="fit"):
        g.sample(5)


# ------------------------------------------------------------------------- the algorithm


def test_sensitivities_bound_the_change_of_one_record():
    """|score(D) - score(D')| <= sensitivity for random neighbours D, D' (one record replaced)."""
    rng = np.random.default_rng(0)
    n, dom = 40, np.array([2, 3, 3])
    clogc = np.zeros(n + 1)
    clogc[1:] = np.arange(1, n + 1) * np.log2(np.arange(1, n + 1))
    for _ in range(300):
        codes = np.stack([rng.integers(0, s, n) for s in dom], axis=1)
        other = codes.copy()
        other[rng.integers(n)] = [rng.integers(0, s) for s in dom]
        for child, parents in ((0, (1,)), (1, (2,)), (1, (0, 2)), (2, (1,))):
            psize = int(np.prod(dom[list(parents)]))
            for score, sens in (
                ("mi", pb.mi_sensitivity(n, int(dom[child]), psize)),
                ("r", pb.r_sensitivity(n)),
            ):
                s1 = pb._family_scores(codes, dom, parents, [child], score, clogc)[0]
                s2 = pb._family_scores(other, dom, parents, [child], score, clogc)[0]
                assert abs(s1 - s2) <= sens + 1e-12
    # the paper's closed forms (bits)
    assert pb.mi_sensitivity(100, 2, 5) == pytest.approx(
        math.log2(100) / 100 + 0.99 * math.log2(100 / 99)
    )
    assert pb.mi_sensitivity(100, 3, 3) == pytest.approx(
        0.02 * math.log2(50.5) + 0.99 * math.log2(101 / 99)
    )
    assert pb.r_sensitivity(100) == pytest.approx(0.03 + 0.0002)


@pytest.mark.parametrize("score", ["mi", "r"])
def test_recovers_known_network_at_huge_epsilon(star, score):
    df, spec = star
    truth = _cliques(STAR_PARENTS)
    from_root = 0
    for seed in range(16):
        g = pb.PrivBayesGenerator(epsilon=1e6, seed=seed, degree=2, score=score).fit(df, spec)
        assert g.degree_ == 2
        assert _cliques(g.parents_) == truth, (seed, g.parents_)  # from any first attribute
        if g.order_[0] == "A":  # started at the true root: exactly the true parent sets
            from_root += 1
            assert {c: frozenset(p) for c, p in g.parents_.items()} == {
                c: frozenset(p) for c, p in STAR_PARENTS.items()
            }
    assert from_root >= 1  # the seeds above include runs starting at A


def test_degree_shrinks_with_epsilon(adult_spec, adult_small):
    train, _, reference = adult_small
    g = pb.PrivBayesGenerator().configure(adult_spec, reference=reference)
    domain = [int(s) for s in g._domain()]
    n = 29_305  # the Adult train split (60 % of 48,842 rows)
    ks = [
        pb.theta_degree(n=n, epsilon2=eps / 2, theta=4.0, domain=domain)[0]
        for eps in (1000, 10, 1, 0.1)
    ]
    assert ks == sorted(ks, reverse=True) and ks[0] > ks[-1] >= 0
    assert ks[0] >= 2
    # and on data: the parent sets the selection step returns shrink with epsilon
    sizes = {}
    for eps in (1000, 0.01):
        gen = pb.PrivBayesGenerator(epsilon=eps).configure(adult_spec, reference=reference)
        fps = gen.select_focal_points(train, np.random.default_rng(0))
        sizes[eps] = max(len(f.parents) for f in fps)
        assert all(len(f.parents) <= gen.selection_network_.degree for f in fps)
    assert sizes[1000] > sizes[0.01]


def test_tables_respect_theta_usefulness(adult_spec, adult_small):
    train, _, reference = adult_small
    g = pb.PrivBayesGenerator(epsilon=1.0, seed=3).fit(train, adult_spec, reference=reference)
    tau = g.network_.tau
    assert tau == pytest.approx(min(1000 * 0.5 / (2 * 15 * 4.0), 1000 / 4.0))
    for (x, _parents), table in zip(g.network_.pairs, g.conditionals_):
        assert table.size <= max(tau, g._domain()[x])  # a lone attribute's table is always allowed
        np.testing.assert_allclose(table.sum(axis=1), 1.0)
        assert (table >= 0).all()


def test_sampling_follows_the_conditionals():
    """The vectorised inverse-CDF ancestral sampler reproduces P(root) and P(child | parent)."""
    dom = np.array([2, 3])
    net = pb.Network(pairs=((0, ()), (1, (0,))), degree=1, tau=1e9)
    conds = [np.array([[0.3, 0.7]]), np.array([[0.2, 0.0, 0.8], [0.5, 0.25, 0.25]])]
    codes = pb.sample_codes(net, conds, dom, 200_000, np.random.default_rng(0))
    assert abs((codes[:, 0] == 1).mean() - 0.7) < 0.01
    for p in (0, 1):
        freq = np.bincount(codes[codes[:, 0] == p, 1], minlength=3) / (codes[:, 0] == p).sum()
        np.testing.assert_allclose(freq, conds[1][p], atol=0.01)


# ------------------------------------------------------------------------------- budget


@pytest.mark.parametrize("beta", [0.5, 0.3])
def test_budget_spent_exactly(star, beta):
    df, spec = star
    eps, d = 2.0, 6
    g = pb.PrivBayesGenerator(epsilon=eps, beta=beta, seed=0).fit(df, spec)
    acc = g.accountant_
    assert acc.is_exhausted() and acc.spent == pytest.approx(eps)
    network = [c for c in acc.ledger if c.mechanism == "exponential"]
    tables = [c for c in acc.ledger if c.mechanism == "laplace"]
    assert len(network) == d - 1 and len(tables) == d
    assert all(c.cost == pytest.approx(beta * eps / (d - 1)) for c in network)
    assert all(c.cost == pytest.approx((1 - beta) * eps / d) for c in tables)
    # the selection step alone spends exactly the network share, on a fresh accountant
    fps = g.select_focal_points(df, np.random.default_rng(1))
    assert g.selection_accountant_.spent == pytest.approx(beta * eps)
    assert g.selection_accountant_.is_exhausted()
    assert g.accountant_ is acc and acc.spent == pytest.approx(eps)  # the fit's ledger is untouched
    assert len(fps) == d and all(f.kind == "conditional" for f in fps)


def test_single_attribute_spends_everything_on_its_table():
    spec = _cat_spec({"A": 3})
    df = pd.DataFrame({"A": np.random.default_rng(0).integers(0, 3, 200).astype(str)})
    g = pb.PrivBayesGenerator(epsilon=1.0, seed=0).fit(df, spec)
    assert g.accountant_.is_exhausted() and len(g.accountant_.ledger) == 1
    assert g.focal_points_ == [FocalPoint(kind="conditional", columns=("A",))]
    assert g.select_focal_points(df, np.random.default_rng(0)) == g.focal_points_
    assert g.selection_accountant_.spent == 0.0
    assert set(g.sample(50)["A"]) <= {"0", "1", "2"}


# --------------------------------------------------------------------------- focal points


def test_focal_points_are_the_network_and_shadow_runs_reproduce_fit(star):
    df, spec = star
    g = pb.PrivBayesGenerator(epsilon=5.0, seed=7).fit(df, spec)
    expected = sorted(
        FocalPoint(kind="conditional", columns=(c, *p)) for c, p in g.parents_.items()
    )
    assert g.focal_points_ == expected
    cols = list(spec.columns)
    for fp in g.focal_points_:  # parents in spec order: one focal point per parent *set*
        assert list(fp.parents) == sorted(fp.parents, key=cols.index)
    # select_focal_points is the very code path fit() uses: the same rng stream gives the same
    # network
    assert g.select_focal_points(df, np.random.default_rng(7)) == g.focal_points_


# ---------------------------------------------------------------------------- randomness


def test_seeds(star):
    df, spec = star

    def run(seed):
        return pb.PrivBayesGenerator(epsilon=1.0, seed=seed).fit(df, spec).sample(300)

    pd.testing.assert_frame_equal(run(3), run(3))
    assert not run(3).equals(run(4))
    assert not run(None).equals(run(None))  # fresh entropy on every unseeded fit
    g = pb.PrivBayesGenerator(epsilon=1.0, seed=3).fit(df, spec)
    pd.testing.assert_frame_equal(g.sample(100, seed=9), g.sample(100, seed=9))
    assert not g.sample(100).equals(g.sample(100))  # successive unseeded draws differ ...
    g2 = pb.PrivBayesGenerator(epsilon=1.0, seed=3).fit(df, spec)
    g2.sample(100)
    pd.testing.assert_frame_equal(g.sample(100, seed=1), g2.sample(100, seed=1))
    first = pb.PrivBayesGenerator(epsilon=1.0, seed=3).fit(df, spec).sample(100)
    pd.testing.assert_frame_equal(
        first, pb.PrivBayesGenerator(epsilon=1.0, seed=3).fit(df, spec).sample(100)
    )


# ------------------------------------------------------------------------------- schema


def test_schema_and_public_domain():
    rng = np.random.default_rng(0)
    n = 400
    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "entity_id": "pid",
            "columns": {
                "pid": {"kind": "categorical"},
                "age": {"kind": "numeric", "min": 18, "max": 90},
                "score": {"kind": "numeric", "bins": [0, 1, 5, 10]},
                "colour": {"kind": "categorical", "categories": ["red", "green", "blue"]},
                "flag": {"kind": "categorical", "categories": ["y", "n"], "nullable": False},
            },
        }
    )
    age = rng.integers(18, 91, n).astype(float)
    age[:20] = np.nan
    df = pd.DataFrame(
        {
            "pid": [f"p{i}" for i in range(n)],
            "age": age,
            "score": rng.uniform(0, 10, n),
            "colour": rng.choice(["red", "green", "blue", None], n),
            "flag": rng.choice(["y", "n"], n),
        }
    )
    g = pb.PrivBayesGenerator(epsilon=50.0, seed=0).fit(df, spec, reference=df.iloc[:100])
    out = g.sample(500)
    assert list(out.columns) == ["pid", "age", "score", "colour", "flag"]
    assert out["pid"].tolist() == [f"syn-{i}" for i in range(500)]
    ages = out["age"].dropna()
    assert ages.between(18, 90).all() and (ages == ages.round()).all()
    assert (
        out["score"].dropna().between(0, 10).all()
    )  # nullable by default: its missing code may be drawn
    assert set(out["colour"].dropna()) <= {"red", "green", "blue"}
    assert set(out["flag"]) <= {"y", "n"} and out["flag"].notna().all()
    assert all(fp.child != "pid" and "pid" not in fp.parents for fp in g.focal_points_)
    assert len(g.sample(0)) == 0


# -------------------------------------------------------------------------------- utility


def test_adult_beats_independent_marginals(adult_spec, adult_small):
    train, holdout, reference = adult_small
    g = pb.PrivBayesGenerator(epsilon=1000.0, seed=0).fit(train, adult_spec, reference=reference)
    syn = g.sample(len(holdout))
    rng = np.random.default_rng(0)
    independent = pd.DataFrame(
        {c: rng.choice(train[c].to_numpy(), len(holdout)) for c in train.columns}
    )
    q_pb = marginal_quality(syn, holdout, spec=adult_spec)
    q_ind = marginal_quality(independent, holdout, spec=adult_spec)
    assert q_pb["tvd_2way"] < q_ind["tvd_2way"] - 0.01, (q_pb["tvd_2way"], q_ind["tvd_2way"])
    assert q_pb["tvd_1way"] < 0.06
