"""Fail closed at every stage: one injected fault per stage (an unexpected exception and one of
our own errors), plus attacks returning constant or NaN scores. The full table is written by
``benchmarks/bench_faults.py`` to ``benchmarks/results/fault_injection.json``."""

import pytest
import yaml

from ..conftest import EXAMPLE, lighten
from ..faults import AFTER_PUBLICATION, all_cases, run_case


@pytest.fixture(scope="module")
def config(small_adult, tmp_path_factory):
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["dataset"]["path"] = str(small_adult / "real.csv")
    raw["generator"] = {"name": "file", "path": str(small_adult / "independent.csv")}
    raw["attacks"] = [{"name": "dcr"}, {"name": "domias"}]
    raw["audit"] = {"intersections": []}
    path = tmp_path_factory.mktemp("faults") / "release.yaml"
    path.write_text(yaml.safe_dump(lighten(raw), sort_keys=False))  # failing closed is plumbing
    return path


def test_the_unbroken_run_approves_and_publishes(config, tmp_path):
    from privacy_gate.config import load_release_config
    from privacy_gate.runs.release import release_run

    result = release_run(load_release_config(config), workdir=tmp_path)
    assert (
        result.verdict.decision == "APPROVE" and result.published
    )  # the baseline the faults break


# one fault kind per stage here (both kinds run in the benchmark's full table)
CASES = sorted({(s, k) for s, k in all_cases() if k in ("unexpected", "attack")})


@pytest.mark.parametrize("stage, kind", CASES, ids=[f"{s}-{k}" for s, k in CASES])
def test_a_fault_fails_closed(config, tmp_path, stage, kind):
    outcome = run_case(config, tmp_path, stage, kind)
    assert outcome.fired, f"the {stage} fault never fired: no step of that name ran"
    assert outcome.fail_closed, outcome
    if stage not in AFTER_PUBLICATION:
        assert outcome.verdict == "BLOCK" and outcome.visible_releases == 0
        assert (
            "12345" not in outcome.reason
        )  # foreign messages (which may quote data) are not repeated
