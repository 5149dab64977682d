"""Exposed-record discovery and the subgroup rank tests on simulations whose truth is known.

- FDR of the discoveries <= the nominal level over 300 draws (two correlated attacks, a shared
  calibration set), and a naive per-record threshold on the same draws exceeds it (the check can
  fail);
- the exposed-share lower bound holds its level where that is hardest — no exposure at all, one
  calibration set shared by every member, 500 draws — and covers true shares of 0.5%, 1% and 5%;
  the binomial bound it replaced fails the same check (the check can fail);
- the tail-excess test holds its level under no signal (exact: label exchangeability) and sees a
  handful of members above every non-member, which BH cannot name;
- the subgroup rank test holds its level at small sizes with ties, Holm holds the family-wise
  level, and a leaked small group is found.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import privacy_gate.estimators.tail_test as tail_test
from privacy_gate.estimators.exposure import (
    _name_per_attack,
    combined_scores,
    conformal_pvalues,
    discover_exposed,
    exposed_share_bounds,
    fdr_select,
    naming_limit,
    naming_weights,
    no_signal_share_upper,
)
from privacy_gate.estimators.group_tests import group_pvalue, holm_adjust, rank_test_pvalue
from privacy_gate.estimators.tail_test import gap_level, seeded_null_statistics, tail_excess_pvalue

DRAWS = 300
Q = 0.1


def _draw(rng, *, m=1000, n0=1000, exposed=60, shift=4.0):
    """Two attacks with correlated scores; the first ``exposed`` members stand out to one attack
    each (half to attack a, half to b)."""
    base = rng.normal(size=m + n0)
    a = base + 0.6 * rng.normal(size=m + n0)
    b = 0.7 * base + 0.7 * rng.normal(size=m + n0)
    half = exposed // 2
    a[:half] += shift
    b[half:exposed] += shift
    labels = np.r_[np.ones(m), np.zeros(n0)]
    return {"a": a, "b": b}, labels, np.arange(m + n0)


def test_fdr_of_the_discoveries_is_at_most_nominal():
    rng = np.random.default_rng(0)
    fdp, naive_fdp, power = [], [], []
    for _ in range(DRAWS):
        scores, labels, ids = _draw(rng)
        res = discover_exposed(scores, labels, ids, q=Q, level=0.01, delta=0.05)
        found = res.discoveries
        false = np.sum(found >= 60)
        fdp.append(false / max(len(found), 1))
        power.append(np.sum(found < 60) / 60)
        naive = res.records.loc[
            res.records["p_value"] <= Q, "row_id"
        ].to_numpy()  # no multiplicity control
        naive_fdp.append(np.sum(naive >= 60) / max(len(naive), 1))
    se = np.std(fdp) / np.sqrt(DRAWS)
    assert np.mean(fdp) <= Q, (np.mean(fdp), se)
    assert np.mean(power) > 0.5  # not vacuous: most exposed records are found
    assert np.mean(naive_fdp) > 2 * Q  # the same check catches a method without FDR control


def test_by_is_valid_under_any_dependence_and_more_conservative():
    p = np.r_[np.full(20, 1e-4), np.random.default_rng(1).uniform(size=980)]
    bh, _ = fdr_select(p, q=0.1, method="bh")
    by, _ = fdr_select(p, q=0.1, method="by")
    assert by.sum() <= bh.sum() and by[:20].all()


def _binomial_lower(member_scores, calibration_scores, *, level, delta):
    """The bound this module replaced: Clopper-Pearson on the members above a *fixed* level, as if
    the calibration set were not random."""
    p = conformal_pvalues(member_scores, calibration_scores)
    k, n = int(np.sum(p <= level)), p.size
    lo = 0.0 if k == 0 else stats.beta.ppf(delta, k, n - k + 1)
    return max(0.0, (lo - level) / (1 - level))


def test_share_lower_bound_holds_its_level_with_no_exposure_and_shared_calibration():
    """500 null draws: each draw has ONE calibration set shared by all members (where the binomial
    bound is wrong). The miss rate (bound > true share 0) must be <= delta."""
    rng = np.random.default_rng(20)
    draws, delta = 500, 0.05
    ours = old = 0
    for _ in range(draws):
        s = rng.normal(size=4000)
        mem, cal = s[:2000], s[2000:]
        ours += exposed_share_bounds(mem, cal, level=0.01, delta=delta)[1] > 0
        old += _binomial_lower(mem, cal, level=0.01, delta=delta) > 0
    limit = delta + 2.5 * np.sqrt(delta * (1 - delta) / draws)
    assert ours / draws <= limit, ours / draws
    assert old / draws > limit, (
        old / draws
    )  # the check fails a bound that ignores the calibration's randomness


@pytest.mark.parametrize("truth", [0.005, 0.01, 0.05])
def test_share_bounds_cover_the_true_share(truth):
    """Exposed members certainly exceed the threshold (the bounds' worst case for the lower bound):
    the lower bound stays below the truth and the upper bound above it in >= 1 - delta of draws."""
    rng = np.random.default_rng(int(truth * 1000))
    draws, delta = 500, 0.05
    cover_lower = cover_upper = 0
    m = n0 = 2000
    for _ in range(draws):
        s = rng.normal(size=m + n0)
        s[: int(truth * m)] += 10.0
        _, lower, upper = exposed_share_bounds(s[:m], s[m:], level=0.01, delta=delta)
        cover_lower += lower <= truth
        cover_upper += upper >= truth
    limit = 1 - delta - 2.5 * np.sqrt(delta * (1 - delta) / draws)
    assert cover_lower / draws >= limit and cover_upper / draws >= limit


def test_share_lower_detects_a_broad_leak():
    rng = np.random.default_rng(5)
    s = rng.normal(size=4000)
    s[:100] += 10.0  # 5% of the members exposed
    _, lower, _ = exposed_share_bounds(s[:2000], s[2000:], level=0.01, delta=0.05)
    assert 0.02 < lower <= 0.05


def test_no_signal_share_upper_is_what_a_null_release_scores():
    rng = np.random.default_rng(3)
    uppers = []
    for _ in range(200):
        s = rng.normal(size=2000)
        uppers.append(
            discover_exposed(
                {"a": s},
                np.r_[np.ones(1000), np.zeros(1000)],
                np.arange(2000),
                q=Q,
                level=0.01,
                delta=0.05,
            ).share_upper
        )
    reference = no_signal_share_upper(1000, 1000, level=0.01, delta=0.05)
    assert abs(np.median(uppers) - reference) < 0.01


def test_tail_excess_test_is_exact_under_no_signal():
    """Uniform p-values under exchangeable labels, with unbalanced classes and heavy ties."""
    rng = np.random.default_rng(6)
    p = np.array(
        [
            tail_excess_pvalue(
                rng.integers(0, 50, size=1500).astype(float),
                np.r_[np.ones(1000), np.zeros(500)],
                simulations=500,
                seed=i,
            )[0]
            for i in range(300)
        ]
    )
    for alpha in (0.05, 0.2):
        assert np.mean(p <= alpha) <= alpha + 2.5 * np.sqrt(alpha * (1 - alpha) / 300)
    # continuous scores: the level holds and the test is not vacuous (the p-values spread over
    # (0, 1]; with heavy ties the gap level sits on the first record and the statistic is coarse)
    p = np.array(
        [
            tail_excess_pvalue(
                rng.normal(size=1500), np.r_[np.ones(1000), np.zeros(500)], simulations=500, seed=i
            )[0]
            for i in range(300)
        ]
    )
    for alpha in (0.05, 0.2):
        assert np.mean(p <= alpha) <= alpha + 2.5 * np.sqrt(alpha * (1 - alpha) / 300)
    assert (
        np.mean(p <= 0.5) > 0.15
    )  # coarse but not vacuous: the gap level's first records decide most


def test_tail_gap_level_gives_ten_people_nearly_their_nominal_p():
    """Ten members far above a 24,000-record pool, half of them members: "10 of the top 10" has
    p = 2^-10 ~ 0.001. Over the grid of levels alone the calibrated p-value was ~0.005; the gap
    level (where the scores drop, chosen without the labels) keeps it near 0.001."""
    rng = np.random.default_rng(8)
    s = rng.gumbel(size=24000)
    s[:10] = 25.0 + rng.normal(size=10)
    labels = np.r_[np.ones(12000), np.zeros(12000)]
    assert gap_level(s, 240) == 10
    p, top = tail_excess_pvalue(s, labels, seed=0)
    assert p <= 0.002 and 10 <= top <= 11


def test_tail_excess_test_on_a_panel_sized_pool():
    """400 units, half of them members (a panel of 198 training people and as many calibration
    people): 1 % of the pool is 4 records, and "4 of the top 4" (p = 1/16) could never be
    significant. The test looks at TAIL_MIN_TOP records at least, so 25 copied members above
    everyone are found, and under no signal it keeps its level on a pool that small."""
    labels = np.r_[np.ones(200), np.zeros(200)]
    rng = np.random.default_rng(11)
    s = rng.normal(size=400)
    s[:25] += 10.0
    p, top = tail_excess_pvalue(s, labels, seed=0)
    assert p < 0.001 and 20 <= top <= 25
    null = np.array(
        [
            tail_excess_pvalue(rng.normal(size=400), labels, simulations=500, seed=i)[0]
            for i in range(300)
        ]
    )
    for alpha in (0.05, 0.2):
        assert np.mean(null <= alpha) <= alpha + 2.5 * np.sqrt(alpha * (1 - alpha) / 300)


def test_tail_excess_test_sees_ten_records_that_bh_cannot_name():
    """Ten members above every non-member at 8,000 : 8,000 — BH over 8,000 needs 20 at the floor."""
    rng = np.random.default_rng(7)
    s = rng.normal(size=16000)
    s[:10] += 20.0
    labels = np.r_[np.ones(8000), np.zeros(8000)]
    p, top = tail_excess_pvalue(s, labels, seed=0)
    assert p < 0.005 and 8 <= top <= 14
    res = discover_exposed({"a": s}, labels, np.arange(16000), q=0.05, level=0.01, delta=0.05)
    assert res.count == 0 and res.naming_needs == 20 == naming_limit(8000, 8000, q=0.05)[1]


def test_one_strong_attack_names_its_records_among_weak_ones():
    """One attack sees 120 exposed members, three see nothing (6,000 : 6,000 targets). Named per
    attack (BH at q / 4 each, the union): the 120 are named with few false names. The max-rank
    combination names none: each non-member's best rank over four attacks crowds the top. The
    price, when attacks agree exactly, is the factor k in how many must reach the floor."""
    rng = np.random.default_rng(8)
    strong = rng.normal(size=12000)
    strong[:120] += 20.0
    labels = np.r_[np.ones(6000), np.zeros(6000)]
    scores = {"strong": strong, **{f"weak{i}": rng.normal(size=12000) for i in range(3)}}
    res = discover_exposed(scores, labels, np.arange(12000), q=0.05, level=0.01, delta=0.05)
    named = set(res.discoveries.tolist())
    assert len(named & set(range(120))) >= 115 and len(named - set(range(120))) <= 6
    combined = res.records["p_value"].to_numpy()
    assert fdr_select(combined, q=0.05)[0].sum() == 0
    # the strong attack's block stands out (scores alone): it gets most of the naming level, so
    # fewer of its records must reach the floor than the 80 an equal share q / 4 would need
    assert max(res.weights, key=res.weights.get) == "strong" and res.weights["strong"] > 0.6
    assert (
        res.naming_needs
        == naming_limit(6000, 6000, q=0.05 * res.weights["strong"])[1]
        < 40
        < 80
        == naming_limit(6000, 6000, q=0.05 / 4)[1]
    )


def test_named_records_keep_the_fdr_with_several_attacks():
    """Under the global null (four attacks, none informative) BH's FDR is its family-wise error:
    the union of the per-attack selections names anything in at most q of the releases."""
    rng = np.random.default_rng(10)
    labels = np.r_[np.ones(500), np.zeros(500)]
    any_named = 0
    for i in range(200):
        scores = {f"a{j}": rng.normal(size=1000) for j in range(4)}
        any_named += (
            discover_exposed(
                scores, labels, np.arange(1000), q=0.1, level=0.01, delta=0.05, seed=i
            ).count
            > 0
        )
    assert any_named / 200 <= 0.1 + 2.5 * np.sqrt(0.09 / 200)


def test_combined_scores_are_exchangeable_under_no_signal():
    rng = np.random.default_rng(9)
    hits = 0
    for i in range(400):
        scores = {"a": rng.normal(size=200), "b": rng.integers(0, 4, size=200).astype(float)}
        c = combined_scores(scores, seed=i)
        hits += conformal_pvalues(c[:1], c[100:])[0] <= 0.1
    assert hits / 400 <= 0.1 + 2.5 * np.sqrt(0.09 / 400)


def test_conformal_pvalues_are_valid_with_ties():
    rng = np.random.default_rng(4)
    hits = 0
    for _ in range(2000):
        s = rng.integers(0, 3, size=60).astype(float)  # heavy ties
        p = conformal_pvalues(s[:1], s[1:])
        hits += p[0] <= 0.1
    assert hits / 2000 <= 0.1 + 0.02


def test_discovery_refuses_one_class():
    with pytest.raises(ValueError, match="member and non-member"):
        discover_exposed({"a": np.zeros(3)}, np.ones(3), np.arange(3), q=Q, level=0.01, delta=0.05)


# ------------------------------------------------------------------------------ subgroup tests


@pytest.mark.parametrize("n1,n0", [(3, 4), (8, 12), (40, 30)])
def test_rank_test_holds_its_level_at_small_sizes_with_ties(n1, n0):
    rng = np.random.default_rng(n1)
    labels = np.r_[np.ones(n1), np.zeros(n0)]
    p = np.array(
        [
            rank_test_pvalue(rng.integers(0, 4, size=n1 + n0).astype(float), labels, seed=i)
            for i in range(1500)
        ]
    )
    assert np.mean(p <= 0.05) <= 0.05 + 0.015


def test_holm_holds_the_familywise_level_across_groups():
    rng = np.random.default_rng(5)
    any_flag = 0
    for _ in range(300):
        p = np.array(
            [
                rank_test_pvalue(rng.normal(size=30), np.r_[np.ones(15), np.zeros(15)], seed=i)
                for i in range(20)
            ]
        )
        any_flag += (holm_adjust(p) <= 0.05).any()
    assert any_flag / 300 <= 0.05 + 0.02


def test_a_leaked_small_group_is_found_and_attacks_are_combined():
    rng = np.random.default_rng(6)
    labels = np.r_[np.ones(500), np.zeros(500)]
    mask = np.zeros(1000, dtype=bool)
    mask[:20] = mask[500:515] = True  # a group of 20 members and 15 non-members
    a = rng.normal(size=1000)
    b = rng.normal(size=1000)
    b[:20] += 3.0  # only attack b sees the leak
    p, attack = group_pvalue({"a": a, "b": b}, mask, labels)
    assert attack == "b" and p < 1e-4
    p_clean, _ = group_pvalue({"a": a}, mask, labels)
    assert p_clean > 0.01


def test_groups_are_never_merged_and_are_named(adult_spec):
    from privacy_gate.experiment.grouping import audited_columns, subgroup_groups

    targets = pd.DataFrame(
        {"race": ["White"] * 50 + ["Other"] * 2 + ["Black"] * 8, "sex": ["Male"] * 60}
    )
    labels = np.r_[np.ones(30), np.zeros(20), [1, 0], np.ones(4), np.zeros(4)]
    groups = subgroup_groups(targets, labels, columns=[["race"]])
    assert [g.label for g in groups] == ["race=Black", "race=Other", "race=White"]
    assert [(g.n_members, g.n_non_members) for g in groups] == [(4, 4), (1, 1), (30, 20)]
    cols, notes = audited_columns(targets, subgroups=[], categorical=["race", "sex"])
    assert cols == ["race", "sex"] and "every categorical column" in notes[0]
    ids = pd.DataFrame({"code": [f"c{i}" for i in range(150)]})
    cols, notes = audited_columns(ids, subgroups=[], categorical=["code"])
    assert cols == [] and any("150 distinct values" in n for n in notes)


def test_weighted_naming_keeps_the_fdr_when_one_attack_stands_out():
    """The naming weights are read off the pooled scores (no labels): a block of 40 members far
    above the rest in one of four attacks draws most of the level to that attack, and the union
    still names at most q false records on average — including the members the block pushes the
    weights around for, and the non-members that sit in the block's attack's top by chance."""
    rng = np.random.default_rng(12)
    labels = np.r_[np.ones(1000), np.zeros(1000)]
    fdp, power, equal_power, favoured = [], [], [], 0
    for i in range(300):
        scores = {f"a{j}": rng.normal(size=2000) for j in range(4)}
        scores["a0"][:40] += rng.uniform(3.0, 6.0)  # a block of a strength that varies by draw
        res = discover_exposed(scores, labels, np.arange(2000), q=Q, level=0.01, delta=0.05, seed=i)
        found = res.discoveries
        fdp.append(np.sum(found >= 40) / max(len(found), 1))
        power.append(np.sum(found < 40) / 40)
        favoured += max(res.weights, key=res.weights.get) == "a0"
        equal, _ = _name_per_attack(
            {a: res.records[f"p_{a}"].to_numpy() for a in scores}, q=Q, method="bh"
        )
        equal_power.append(np.sum(equal[:40]) / 40)
    assert np.mean(fdp) <= Q, np.mean(fdp)
    # not vacuous: the weights follow the block, and name more of it than equal shares q / 4 do
    assert favoured >= 250 and np.mean(power) > np.mean(equal_power) + 0.05, (
        np.mean(power),
        np.mean(equal_power),
    )


def test_naming_weights_are_equal_without_a_block_and_sum_to_one():
    rng = np.random.default_rng(13)
    smooth = {f"a{j}": rng.standard_t(3, size=3000) for j in range(3)}  # heavy tails, no block
    assert naming_weights(smooth) == {a: 1 / 3 for a in smooth}
    block = dict(smooth, a2=np.r_[np.full(60, 50.0), rng.normal(size=2940)])
    w = naming_weights(block)
    assert w["a2"] == pytest.approx(0.5 + 0.5 / 3) and w["a0"] == pytest.approx(0.5 / 3)
    assert abs(sum(w.values()) - 1.0) < 1e-12
    with pytest.raises(ValueError, match="more than 1"):
        _name_per_attack({"a": np.full(10, 0.5)}, q=0.1, method="bh", weights={"a": 1.5})


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_the_seeded_null_statistics_are_the_draws_the_tail_test_calibrates_with(seed):
    """The p-value at a seed is the share of :func:`seeded_null_statistics` at that seed at or
    below the observed statistic: what the benchmark of the Monte-Carlo floor reads is the test's
    own calibration (tie-breaking draws first, then the null draws, in one place)."""
    rng = np.random.default_rng(100 + seed)
    labels = np.r_[np.ones(300, dtype=bool), np.zeros(500, dtype=bool)]
    scores = np.round(rng.normal(size=800), 1)  # ties: the tie-breaking draws matter
    scores[:6] += 3.0  # a few members on top, so the observed statistic is not at the edge
    p, _ = tail_excess_pvalue(scores, labels, seed=seed, simulations=800)
    n_top = tail_test._top_count(800, 0.01)
    gap = gap_level(scores, n_top)
    levels, statistic = tail_test._statistic(800, 300, n_top, gap)
    order = np.argsort(
        -tail_test.random_tie_ranks(scores, np.random.default_rng(seed)), kind="stable"
    )
    observed = statistic(np.cumsum(labels[order[:n_top]])[levels - 1])
    null = seeded_null_statistics(800, 300, gap, seed=seed, simulations=800)
    assert p == (1 + np.sum(null <= observed * (1 + 1e-12))) / 801
    other = seeded_null_statistics(800, 300, gap, seed=seed + 1, simulations=800)
    assert not np.array_equal(null, other)
