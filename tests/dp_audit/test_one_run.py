"""One-run audit (Steinke, Nasr & Jagielski 2023): mechanics, an honest generator within its
claim, a generator that copies its training rows caught in one run."""

from __future__ import annotations

from privacy_gate.studies.dp_audit_one_run import one_run_audit
from tests.dp_audit.broken import CopyingGenerator


def test_one_run_audit_honest_and_leaky(small_domain):
    spec, data, reference = small_domain
    kw = dict(
        data=data.iloc[:10],
        spec=spec,
        reference=reference,
        canaries=24,
        guesses=16,
        n_synthetic=1000,
        seed=0,
    )
    honest = one_run_audit(generator="mst", params={"epsilon": 1.0}, **kw)
    assert 0 <= honest.correct <= honest.guesses <= honest.canaries and not honest.exceeds()
    leaky = one_run_audit(generator=lambda s: CopyingGenerator(seed=s), **kw)
    assert leaky.exceeds() and leaky.epsilon_lower > 1.0, leaky
