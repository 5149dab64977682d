"""The DP audit has teeth: known-broken generators exceed their claim at 95% confidence, the
honest ones never do (over seeds); the white-box hook leaves samples unchanged; the cache."""

from __future__ import annotations

import numpy as np
import pytest

from privacy_gate.generators.mst import MSTGenerator
from privacy_gate.generators.private_gsd import PrivateGSDGenerator
from privacy_gate.generators.privbayes import PrivBayesGenerator
from privacy_gate.studies.dp_audit import (
    DPAuditResult,
    DPAuditSettings,
    audit_dp,
    cached_audit,
)
from tests.dp_audit.broken import TenthNoiseMST, TrainBinsPrivBayes


def _audit(cls, small_domain, *, runs, seed=0, scores=("whitebox", "blackbox"), **kw):
    spec, data, reference = small_domain
    return audit_dp(
        generator=lambda s: cls(**kw, seed=s),
        data=data,
        spec=spec,
        reference=reference,
        settings=DPAuditSettings(runs=runs, seed=seed, targets=("worst_case",), scores=scores),
        progress=None,
    )


def test_mst_with_a_tenth_of_its_noise_is_caught(small_domain):
    r = _audit(TenthNoiseMST, small_domain, runs=200, scores=("whitebox",), epsilon=1.0, delta=1e-5)
    assert r.exceeds() and r.epsilon_lower > 1.0
    assert "implementation is broken" in r.reason()
    assert r.best.bound.mu_lower > r.claimed_mu


def test_privbayes_with_bins_from_train_is_caught(small_domain):
    r = _audit(TrainBinsPrivBayes, small_domain, runs=200, scores=("blackbox",), epsilon=1.0)
    assert r.exceeds() and r.best.score == "blackbox"


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("cls", [MSTGenerator, PrivBayesGenerator])
def test_honest_generators_never_exceed_their_claim(small_domain, cls, seed):
    # a fast subset: seeds 0-9 with 200 fits per side in `bench_dp_audit.py --teeth`
    r = _audit(cls, small_domain, runs=60, seed=seed, epsilon=1.0, delta=1e-5)
    assert not r.exceeds(), r.reason()


def test_honest_private_gsd_does_not_exceed_its_claim(small_domain):
    r = _audit(
        PrivateGSDGenerator,
        small_domain,
        runs=60,
        seed=1,
        epsilon=1.0,
        delta=1e-5,
        max_generations=50,
        n_syn=100,
    )
    assert not r.exceeds(), r.reason()


@pytest.mark.parametrize("cls", [MSTGenerator, PrivBayesGenerator])
def test_measurements_hook_is_honest(small_domain, cls):
    spec, data, reference = small_domain
    g = cls(epsilon=1.0, seed=5).fit(data, spec, reference=reference)
    again = cls(epsilon=1.0, seed=5).fit(data, spec, reference=reference)
    assert g.sample(50).equals(again.sample(50))
    codes = g.discretizer_.transform(data)
    for m in g.measurements_:  # values = true counts / normaliser + noise of the stated kind
        true = np.bincount(m.cells(codes), minlength=m.values.size) / m.normaliser
        resid = m.values - true
        assert np.abs(resid).max() < 12 * m.scale


def test_audit_cache_is_keyed_and_reused(small_domain, tmp_path):
    spec, data, reference = small_domain
    kw = dict(
        workdir=tmp_path,
        generator="mst",
        params={"epsilon": 1.0},
        data=data,
        spec=spec,
        reference=reference,
        progress=None,
    )
    first, hit = cached_audit(
        settings=DPAuditSettings(runs=8, targets=("worst_case",), scores=("whitebox",)), **kw
    )
    assert not hit
    again, hit = cached_audit(
        settings=DPAuditSettings(runs=8, targets=("worst_case",), scores=("whitebox",)), **kw
    )
    assert hit and again == DPAuditResult.from_dict(first.to_dict())
    _, hit = cached_audit(
        settings=DPAuditSettings(runs=10, targets=("worst_case",), scores=("whitebox",)), **kw
    )
    assert not hit and len(list((tmp_path / "dp_audits").glob("*.json"))) == 2


def test_the_outlier_target_is_named_by_row_and_hash_only(small_domain):
    r = _audit(MSTGenerator, small_domain, runs=4, scores=("whitebox",), epsilon=1.0)
    spec, data, reference = small_domain
    r2 = audit_dp(
        generator="mst",
        params={"epsilon": 1.0},
        data=data,
        spec=spec,
        reference=reference,
        settings=DPAuditSettings(runs=4, targets=("outlier",), scores=("blackbox",)),
        progress=None,
    )
    label = r2.best.target_label
    assert label.startswith("row ") and "sha256" in label
    assert r.best.target == "worst_case"
