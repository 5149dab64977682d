"""Entities and the dependency stress test through the real release flow.

Households of 1-3 Adult records are the entities; a `site` column is the source. The release is
an independent sample plus verbatim copies of the training records from site s1 only: IID
targets see a third of the members copied, the dependency test (members from s1) sees all of
them — the gap the test must warn about.
"""

import numpy as np
import pandas as pd
import pytest
import yaml

from privacy_gate.flows import release_flow
from privacy_gate.config import load_release_config
from privacy_gate.data import conform, split_by_entity

from .conftest import EXAMPLE


@pytest.fixture(scope="module")
def household_data(adult_full, tmp_path_factory):
    folder = tmp_path_factory.mktemp("households")
    rng = np.random.default_rng(5)
    rows = adult_full.sample(frac=1.0, random_state=3).reset_index(drop=True)
    real, outside = rows.iloc[:4000].copy(), rows.iloc[4000:8000].copy()
    sizes = rng.integers(1, 4, size=4000)
    real["household"] = np.repeat([f"h{i}" for i in range(len(sizes))], sizes)[:4000]
    real["site"] = real["household"].map(lambda h: f"s{int(h[1:]) % 3 + 1}")
    outside["household"] = [f"x{i}" for i in range(len(outside))]
    outside["site"] = rng.choice(["s1", "s2", "s3"], len(outside))
    real.to_csv(folder / "real.csv", index=False)

    raw = yaml.safe_load(EXAMPLE.read_text())
    spec = raw["dataset"]["spec"]
    spec["columns"]["household"] = {"kind": "categorical", "nullable": False}
    spec["columns"]["site"] = {"kind": "categorical", "categories": ["s1", "s2", "s3"], "nullable": False}
    spec.update(entity_id="household", source="site")
    raw["dataset"]["path"] = str(folder / "real.csv")
    raw["generator"] = {"name": "file", "path": str(folder / "synthetic.csv")}
    raw["audit"] = {"dependency_test": True, "intersections": []}
    cfg_path = folder / "release.yaml"
    cfg_path.write_text(yaml.safe_dump(raw, sort_keys=False))

    cfg = load_release_config(cfg_path)
    train = split_by_entity(conform(real, cfg.dataset.spec, source="r"), cfg.dataset.spec, cfg.split).train
    copies = real.loc[train.index[train["site"] == "s1"]]
    pd.concat([outside, copies]).to_csv(folder / "synthetic.csv", index=False)
    return cfg_path


def test_entity_and_dependency_metrics_and_warning(prefect_server, household_data, tmp_path):
    v = release_flow(config_path=str(household_data), workdir=str(tmp_path))["verdict"]
    assert v["status"] == "ok", v["reasons"]
    m = v["metrics"]
    for attack in ("domias", "dcr"):
        assert 0.0 <= m[f"{attack}.entity.auc"] <= 1.0
        assert m[f"{attack}.entity.n_members"] < m[f"{attack}.n_members"]  # households group records
        assert f"{attack}.dependency.auc" in m
    assert m["dcr.dependency.auc"] > 0.95 and m["dcr.auc"] < 0.85
    warnings = [r for r in v["reasons"] if r["key"] == "dcr.dependency.auc"]
    assert warnings and "dependent records" in warnings[0]["message"] and warnings[0]["action"] == "review"
    assert v["verdict"] in ("REVIEW", "BLOCK")
