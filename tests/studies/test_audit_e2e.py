"""Entities and the dependency stress test through the real release flow.

Households of 1-3 Adult records are the entities; a `site` column is the source. The release is
an independent sample plus verbatim copies of the training records from site s1 only: IID
targets see a third of the members copied, the dependency test (members from s1) sees all of
them — the gap the test must warn about.
"""

import pytest

from privacy_gate.flows import release_flow

from ..conftest import EXAMPLE
from ..golden.scenarios import household_release


@pytest.fixture(scope="module")
def household_data(tmp_path_factory):
    return household_release(tmp_path_factory.mktemp("households"), example=EXAMPLE)


def test_entity_and_dependency_metrics_and_warning(prefect_server, household_data, tmp_path):
    v = release_flow(config_path=str(household_data), workdir=str(tmp_path)).verdict.to_dict()
    assert v["status"] == "ok", v["reasons"]
    m = v["metrics"]
    for attack in ("domias", "dcr"):
        assert 0.0 <= m[f"{attack}.entity.auc"] <= 1.0
        assert (
            m[f"{attack}.entity.n_members"] < m[f"{attack}.n_members"]
        )  # households group records
        assert f"{attack}.dependency.auc" in m
    assert m["dcr.dependency.auc"] > 0.95 and m["dcr.auc"] < 0.85
    warnings = [r for r in v["reasons"] if r["key"] == "dcr.dependency.auc"]
    assert (
        warnings
        and "dependent records" in warnings[0]["message"]
        and warnings[0]["action"] == "review"
    )
    assert v["verdict"] in ("REVIEW", "BLOCK")
