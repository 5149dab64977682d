"""MAMA-MIA: the tau rule, the scoring rule on hand-computed toys (marginals, PrivBayes
conditionals, Private-GSD cells), set scores, activation, shadow-run determinism across mappers,
recovery of MST's real focal points, the attack contract on MST output, and the errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

import privacy_gate.attacks.mama_mia as mama_mia_module
from privacy_gate.attacks import shadow
from privacy_gate.attacks.base import Attack, OracleKnowledge, ThreatModel, create_attack
from privacy_gate.attacks.mama_mia import (
    MamaMiaAttack,
    informative_pairs,
    keep_focal_points,
    set_scores,
    weight_threshold,
)
from privacy_gate.data import conform
from privacy_gate.errors import ConfigError, DataError
from privacy_gate.estimators.metrics import roc_metrics
from privacy_gate.generators import create_generator
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.spec import DatasetSpec

# ---------------------------------------------------------------------- tiny hand-computable tables

TOY_SPEC = DatasetSpec.model_validate(
    {
        "name": "toy3",
        "columns": {
            "a": {"kind": "categorical", "categories": ["x", "y"], "nullable": False},
            "b": {"kind": "categorical", "categories": ["u", "v"], "nullable": False},
            "c": {"kind": "categorical", "categories": ["p", "q"], "nullable": False},
        },
    }
)


def _frame(rows: list[str]) -> pd.DataFrame:
    return pd.DataFrame([list(r) for r in rows], columns=["a", "b", "c"])


SYN = _frame(["xup", "xuq", "xvp", "yvq"])  # 4 synthetic rows
REF = _frame(["xup", "xvq", "yup", "yvp", "yvq"])  # 5 reference rows
TARGETS = _frame(["xup", "yuq", "yvq"])
F_AB = FocalPoint("marginal", ("a", "b"))
F_BC = FocalPoint("marginal", ("b", "c"))
F_AC = FocalPoint("marginal", ("a", "c"))


def test_tau_rule_boundaries():
    cases = {
        1e-4: 0.5,
        0.01: 0.5,
        0.5: 0.5,
        0.999: 0.5,
        1.0: 0.6,
        9.99: 0.6,
        10.0: 0.7,
        99.9: 0.7,
        100.0: 0.8,
        999.0: 0.8,
        1000.0: 0.85,
        1e6: 0.85,
    }
    for eps, tau in cases.items():
        assert weight_threshold(eps) == tau, eps
    weights = {F_AB: 40, F_BC: 30, F_AC: 29}
    assert keep_focal_points(weights, 0.75) == [F_AB, F_BC]  # 30 >= 0.75 * 40 = 30 (boundary kept)
    assert keep_focal_points(weights, 0.7) == [F_AB, F_BC, F_AC]
    assert keep_focal_points({}, 0.5) == []


def test_scoring_rule_matches_hand_computation(monkeypatch):
    # shadow variant with the shadow runs replaced by fixed weights: F_AC falls under tau * max
    weights = {F_AB: 40, F_BC: 30, F_AC: 10}
    monkeypatch.setattr(shadow, "focal_point_frequencies", lambda **kw: dict(weights))
    threat = ThreatModel(
        synthetic=SYN,
        reference=REF,
        spec=TOY_SPEC,
        generator="mst",
        generator_params={"epsilon": 1.0},
        n_train=4,
    )
    attack = create_attack("mama_mia", variant="shadow").fit(threat)
    assert attack.variant_ == "shadow" and attack.tau_ == 0.6 and attack.epsilon_ == 1.0
    assert attack.focal_weights_ == weights and attack.kept_focal_points_ == [F_AB, F_BC]
    floor = 1e-10
    # "xup": P_syn(x,u) = 2/4, P_ref(x,u) = 1/5;  P_syn(u,p) = 1/4, P_ref(u,p) = 2/5
    # "yuq": P_syn(y,u) = 0 -> floor, P_ref(y,u) = 1/5;  P_syn(u,q) = 1/4, P_ref(u,q) = 0 -> floor
    # "yvq": P_syn(y,v) = 1/4, P_ref(y,v) = 2/5;  P_syn(v,q) = 1/4, P_ref(v,q) = 2/5
    ratios = np.array(
        [
            [(2 / 4) / (1 / 5), (1 / 4) / (2 / 5)],
            [floor / (1 / 5), (1 / 4) / floor],
            [(1 / 4) / (2 / 5), (1 / 4) / (2 / 5)],
        ]
    )
    np.testing.assert_allclose(attack.focal_ratios(TARGETS), ratios, rtol=1e-12)
    expected = (40 * ratios[:, 0] + 30 * ratios[:, 1]) / 2  # (1/|F*|) sum w_F ratio_F
    np.testing.assert_allclose(expected, [59.375, 3.75e10 + 1e-8, 21.875], rtol=1e-12)
    np.testing.assert_allclose(attack.raw_score(TARGETS), expected, rtol=1e-12)
    np.testing.assert_allclose(attack.score(TARGETS), np.log(expected), rtol=1e-12)
    # an explicit tau keeps all three
    attack = create_attack("mama_mia", variant="shadow", tau=0.25).fit(threat)
    assert attack.kept_focal_points_ == [F_AB, F_BC, F_AC]
    # the "log" aggregation (default of the generic variant): weighted mean of the log ratios
    attack = create_attack("mama_mia", variant="shadow", aggregation="log").fit(threat)
    assert attack.aggregation_ == "log"
    np.testing.assert_allclose(attack.score(TARGETS), np.log(ratios) @ [40, 30] / 70, rtol=1e-12)
    np.testing.assert_allclose(
        attack.raw_score(TARGETS), np.exp(np.log(ratios) @ [40, 30] / 70), rtol=1e-12
    )


def test_conditional_and_cell_query_scoring_oracle():
    cond = FocalPoint("conditional", ("c", "a", "b"))  # PrivBayes: P(c | a, b)
    root = FocalPoint("conditional", ("a",))  # a root without parents: P(a)
    cell = FocalPoint("query", ("a", "c"), cell=(0, 0))  # Private-GSD cell (a=x, c=p)
    threat = ThreatModel(synthetic=SYN, reference=REF, spec=TOY_SPEC)
    attack = create_attack("mama_mia", variant="oracle").fit(
        threat, oracle=OracleKnowledge((cond, root, cell))
    )
    assert attack.variant_ == "oracle" and set(attack.kept_focal_points_) == {cond, root, cell}
    assert all(w == 1 for w in attack.focal_weights_.values())
    ratios = pd.DataFrame(attack.focal_ratios(TARGETS), columns=attack.kept_focal_points_)
    floor = 1e-10
    # P(c | a, b): "xup": syn (x,u) -> p 1 of 2, ref (x,u) -> p 1 of 1;  "yuq": syn has no (y,u)
    # (floor), ref (y,u) -> q 0 of 1 (floor);  "yvq": syn (y,v) -> q 1 of 1, ref (y,v) -> q 1 of 2
    np.testing.assert_allclose(ratios[cond], [0.5, floor / floor, 2.0], rtol=1e-12)
    # P(a): x = 3/4 vs 2/5, y = 1/4 vs 3/5
    np.testing.assert_allclose(
        ratios[root], [(3 / 4) / (2 / 5), (1 / 4) / (3 / 5), (1 / 4) / (3 / 5)], rtol=1e-12
    )
    # cell (x, p): P_syn = 2/4, P_ref = 1/5, only targets inside the cell count
    np.testing.assert_allclose(ratios[cell], [2.5, 0.0, 0.0], rtol=1e-12)
    np.testing.assert_allclose(
        attack.raw_score(TARGETS), ratios.to_numpy().mean(axis=1), rtol=1e-12
    )


def test_large_marginals_are_compacted_without_changing_ratios(monkeypatch):
    fps = (
        F_AB,
        FocalPoint("conditional", ("c", "a", "b")),
        FocalPoint("marginal", ("a", "b", "c")),
    )
    threat = ThreatModel(synthetic=SYN, reference=REF, spec=TOY_SPEC)
    dense = (
        create_attack("mama_mia", variant="oracle")
        .fit(threat, oracle=OracleKnowledge(fps))
        .focal_ratios(TARGETS)
    )
    monkeypatch.setattr(mama_mia_module, "_DENSE_MAX", 1)  # force the np.unique path
    sparse = (
        create_attack("mama_mia", variant="oracle")
        .fit(threat, oracle=OracleKnowledge(fps))
        .focal_ratios(TARGETS)
    )
    np.testing.assert_allclose(sparse, dense, rtol=1e-12)


def test_set_scores_and_activation():
    ids, means = set_scores(np.array([1.0, 2.0, 3.0, 4.0, 10.0]), ["b", "a", "b", "a", "c"])
    assert ids.tolist() == ["a", "b", "c"] and means.tolist() == [3.0, 2.0, 10.0]
    assert MamaMiaAttack.set_scores is set_scores
    with pytest.raises(DataError, match="entity ids"):
        set_scores([1.0, 2.0], ["a"])

    threat = ThreatModel(synthetic=SYN, reference=REF, spec=TOY_SPEC)
    oracle = OracleKnowledge((F_AB, F_BC))
    attack = create_attack("mama_mia", variant="oracle", activation_c=2.0).fit(
        threat, oracle=oracle
    )
    targets = _frame(["xup", "yuq", "yvq", "xvp", "yvp"])
    log_s = attack.score(targets)
    proba = attack.predict_proba(targets)
    z = (log_s - log_s.mean()) / log_s.std()
    np.testing.assert_allclose(proba, 1 / (1 + np.exp(-2.0 * (z - np.median(z)))), rtol=1e-12)
    assert ((proba > 0) & (proba < 1)).all() and np.isclose(np.median(proba), 0.5)
    assert (np.argsort(proba, kind="stable") == np.argsort(log_s, kind="stable")).all()  # monotone
    activated = create_attack("mama_mia", variant="oracle", activation=True, activation_c=2.0).fit(
        threat, oracle=oracle
    )
    np.testing.assert_allclose(activated.score(targets), proba, rtol=1e-12)


# ------------------------------------------------------------------------- Adult-based: shadow runs


@pytest.fixture(scope="module")
def adult(adult_full, adult_spec):
    """Disjoint conformed Adult samples: train 200, holdout 200, reference 2,600."""
    df = conform(
        adult_full.sample(3000, random_state=11).reset_index(drop=True), adult_spec, source="adult"
    )
    return {"train": df.iloc[:200], "holdout": df.iloc[200:400], "reference": df.iloc[400:]}


def test_shadow_frequencies_are_deterministic_and_mapper_independent(adult, adult_spec):
    kw = dict(
        generator="mst",
        generator_params={"epsilon": 1.0, "seed": 5},
        spec=adult_spec,
        reference=adult["reference"],
        n_train=200,
        n_shadow=4,
    )
    serial = shadow.focal_point_frequencies(**kw, seed=3, mapper=map)
    assert sum(serial.values()) == 4 * 14  # every run picks a 14-edge tree (15 columns)
    assert serial == shadow.focal_point_frequencies(**kw, seed=3, mapper=shadow.serial_mapper)
    assert serial == shadow.focal_point_frequencies(**kw, seed=3, mapper=shadow.thread_mapper(2))
    assert serial == shadow.focal_point_frequencies(
        **kw, seed=3, mapper=shadow.process_mapper(2, fallback=False)
    )
    assert serial == shadow.focal_point_frequencies(**kw, seed=3, n_jobs=2)  # default: process pool
    assert serial != shadow.focal_point_frequencies(
        **kw, seed=4, mapper=map
    )  # epsilon 1: noisy choices
    # the seed of the real run is not a shadow setting
    assert serial == shadow.focal_point_frequencies(
        **{**kw, "generator_params": {"epsilon": 1.0}}, seed=3, mapper=map
    )
    # a run is a plain top-level function of a picklable job
    import pickle

    jobs = shadow.make_jobs(
        generator="mst",
        generator_params={"epsilon": 1.0},
        spec=adult_spec,
        reference=adult["reference"],
        n_train=200,
        n_shadow=2,
        seed=3,
    )
    assert shadow.shadow_run(pickle.loads(pickle.dumps(jobs[1]))) == shadow.shadow_run(jobs[1])


def test_shadow_samples_with_replacement_when_the_reference_is_small(adult, adult_spec):
    small = adult["reference"].iloc[:150]
    freqs = shadow.focal_point_frequencies(
        generator="privbayes",
        generator_params={"epsilon": 10.0},
        spec=adult_spec,
        reference=small,
        n_train=200,
        n_shadow=2,
        seed=0,
        mapper=map,
    )
    assert sum(freqs.values()) == 2 * 15  # PrivBayes: one conditional per column
    assert len(shadow.draw_sample(small, 200, np.random.default_rng(0))) == 200


def test_attack_is_deterministic_with_a_seed(adult, adult_spec):
    gen = create_generator("mst", epsilon=10.0, seed=1).fit(
        adult["train"], adult_spec, reference=adult["reference"]
    )
    threat = ThreatModel(
        synthetic=gen.sample(300),
        reference=adult["reference"],
        spec=adult_spec,
        generator="mst",
        generator_params={"epsilon": 10.0, "seed": 1},
        n_train=200,
    )
    targets = pd.concat([adult["train"], adult["holdout"]])
    a = create_attack("mama_mia", n_shadow=4, seed=9, n_jobs=1).fit(threat)
    b = create_attack("mama_mia", n_shadow=4, seed=9, n_jobs=2).fit(threat)
    assert a.focal_weights_ == b.focal_weights_ and a.kept_focal_points_ == b.kept_focal_points_
    np.testing.assert_array_equal(a.score(targets), b.score(targets))
    assert a.variant_ == "shadow" and a.tau_ == 0.7 and a.shadow_seconds_ > 0
    # a mapper given to fit (e.g. an orchestrator's tasks) is used instead of the default pool
    calls = []

    def recording_mapper(fn, jobs):
        jobs = list(jobs)
        calls.append(len(jobs))
        return map(fn, jobs)

    c = create_attack("mama_mia", n_shadow=4, seed=9)
    assert c.fit(threat, mapper=recording_mapper).focal_weights_ == a.focal_weights_ and calls == [
        4
    ]


def test_shadow_recovers_mst_focal_points_at_large_epsilon(adult, adult_spec):
    # same data and settings: the reference *is* the training set and each shadow sample is all of
    # it (n_train = its size, drawn without replacement), so at epsilon 1e6 every shadow run must
    # pick exactly the real tree
    train = adult["reference"].iloc[:1000]
    gen = create_generator("mst", epsilon=1e6, seed=0).fit(train, adult_spec, reference=train)
    threat = ThreatModel(
        synthetic=gen.sample(200),
        reference=train,
        spec=adult_spec,
        generator="mst",
        generator_params={"epsilon": 1e6, "seed": 0},
        n_train=len(train),
    )
    attack = create_attack("mama_mia", n_shadow=3, seed=0, n_jobs=1).fit(threat)
    top = {f for f, w in attack.focal_weights_.items() if w == max(attack.focal_weights_.values())}
    assert top == set(gen.focal_points_) and len(top) == 14
    assert set(attack.kept_focal_points_) == set(gen.focal_points_)


def test_attack_contract_on_mst_output(adult, adult_spec):
    # synthetic = MST at epsilon 1e6 trained on 200 rows: members are clearly exposed
    train, holdout, reference = adult["train"], adult["holdout"], adult["reference"]
    gen = create_generator("mst", epsilon=1e6, seed=0).fit(train, adult_spec, reference=reference)
    threat = ThreatModel(
        synthetic=gen.sample(1000),
        reference=reference,
        spec=adult_spec,
        generator="mst",
        generator_params={"epsilon": 1e6, "seed": 0},
        n_train=len(train),
    )
    targets = pd.concat([train, holdout])
    labels = np.r_[np.ones(len(train)), np.zeros(len(holdout))]
    attack = create_attack("mama_mia", n_shadow=10, seed=0, n_jobs=1)
    assert isinstance(attack, Attack) and attack.name == "mama_mia"
    assert attack.fit(threat) is attack and attack.variant_ == "shadow" and attack.tau_ == 0.85
    scores = attack.score(targets)
    assert (
        scores.shape == (len(targets),) and scores.dtype == np.float64 and np.isfinite(scores).all()
    )
    assert roc_metrics(scores, labels)["auc"] > 0.65
    perm = np.random.default_rng(0).permutation(len(targets))
    np.testing.assert_allclose(attack.score(targets.iloc[perm]), scores[perm], rtol=1e-12)
    oracle = create_attack("mama_mia", variant="oracle").fit(
        threat, oracle=OracleKnowledge(tuple(gen.focal_points_))
    )
    assert set(oracle.kept_focal_points_) == set(gen.focal_points_)
    assert roc_metrics(oracle.score(targets), labels)["auc"] > 0.7
    # targets without a spec column are refused by name
    with pytest.raises(DataError, match="age"):
        attack.score(targets.drop(columns="age"))


def test_generic_variant_on_the_attack_contract_toy():
    # the toy of tests/attacks/test_attacks.py: no generator knowledge -> the generic variant
    from tests.attacks.test_attacks import SPEC, population

    rng = np.random.default_rng(0)
    members, non_members, reference, independent = (
        population(n, rng) for n in (300, 300, 600, 600)
    )
    targets = pd.concat([members, non_members], ignore_index=True)
    labels = np.r_[np.ones(300), np.zeros(300)]
    attack = create_attack("mama_mia").fit(
        ThreatModel(synthetic=members, reference=reference, spec=SPEC)
    )
    assert attack.variant_ == "generic" and len(attack.kept_focal_points_) == len(SPEC.columns) - 1
    assert attack.aggregation_ == "log"
    assert roc_metrics(attack.score(targets), labels)["auc"] > 0.9
    chance = create_attack("mama_mia").fit(
        ThreatModel(synthetic=independent, reference=reference, spec=SPEC)
    )
    assert 0.4 <= roc_metrics(chance.score(targets), labels)["auc"] <= 0.6
    top3 = create_attack("mama_mia", n_generic=3).fit(
        ThreatModel(synthetic=members, reference=reference, spec=SPEC)
    )
    assert len(top3.kept_focal_points_) == 3


def test_informative_pairs_spanning_tree():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 2000)
    codes = np.c_[a, (a + (rng.random(2000) < 0.1)) % 4, rng.integers(0, 3, 2000), a % 2]
    tree = informative_pairs(codes, [4, 4, 3, 2])
    assert len(tree) == 3 and (0, 1) in tree and (0, 3) in tree  # 2 is independent: joined last
    assert informative_pairs(codes, [4, 4, 3, 2], 1) == [(0, 1)]


def test_errors_without_generator_knowledge(adult, adult_spec):
    ref = adult["reference"]
    syn = adult["holdout"]
    with pytest.raises(ConfigError, match="MAMA-MIA needs black-box knowledge of the generator"):
        create_attack("mama_mia", variant="shadow").fit(
            ThreatModel(synthetic=syn, reference=ref, spec=adult_spec)
        )
    with pytest.raises(ConfigError, match="MAMA-MIA needs black-box knowledge.*n_train"):
        create_attack("mama_mia").fit(
            ThreatModel(
                synthetic=syn,
                reference=ref,
                spec=adult_spec,
                generator="mst",
                generator_params={"epsilon": 1.0},
            )
        )
    with pytest.raises(ConfigError, match="no focal-point selection step"):
        create_attack("mama_mia", variant="shadow").fit(
            ThreatModel(
                synthetic=syn,
                reference=ref,
                spec=adult_spec,
                generator="gaussian_copula",
                n_train=200,
            )
        )
    with pytest.raises(ConfigError, match="epsilon"):
        create_attack("mama_mia").fit(
            ThreatModel(
                synthetic=syn,
                reference=ref,
                spec=adult_spec,
                generator="mst",
                generator_params={"epsilon": -1.0},
                n_train=200,
            )
        )
    with pytest.raises(ConfigError, match="OracleKnowledge"):
        create_attack("mama_mia", variant="oracle").fit(
            ThreatModel(synthetic=syn, reference=ref, spec=adult_spec)
        )
    with pytest.raises(ConfigError, match="not attribute columns"):
        create_attack("mama_mia", variant="oracle").fit(
            ThreatModel(synthetic=syn, reference=ref, spec=adult_spec),
            oracle=OracleKnowledge((FocalPoint("marginal", ("age", "nope")),)),
        )
    # no generator knowledge with "auto": the generic variant, said so in the notes
    auto = create_attack("mama_mia").fit(
        ThreatModel(synthetic=syn, reference=ref, spec=adult_spec, generator="gaussian_copula")
    )
    assert auto.variant_ == "generic" and any("generic" in n for n in auto.notes_)
    with pytest.raises(NotFittedError):
        create_attack("mama_mia").score(syn)
    for bad in (
        dict(variant="white-box"),
        dict(n_shadow=0),
        dict(tau=1.5),
        dict(n_jobs=0),
        dict(floor=0.0),
        dict(activation="yes"),
        dict(activation_c=-1.0),
        dict(seed=-1),
        dict(n_generic=0),
        dict(aggregation="max"),
    ):
        with pytest.raises(ConfigError, match="mama_mia"):
            create_attack("mama_mia", **bad)
    assert math.isclose(create_attack("mama_mia").floor, 1e-10)
