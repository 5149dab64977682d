"""The dependency study (Humphries et al.): the dependent splits and their IID counterparts on
seeded data, the summary's invariants on known figures, config errors, and a small study run end
to end through the Prefect flow and the CLI, with its MLflow records."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from privacy_gate.config import ReleaseConfig, load_release_config
from privacy_gate.errors import ConfigError, InsufficientDataError
from privacy_gate.spec import DatasetSpec
from privacy_gate.studies.dependency_splits import (
    Clustering,
    bias_split,
    cluster_split,
    iid_counterpart,
    source_split,
    spec_without,
)
from privacy_gate.studies.dependency_summary import check_invariants, summarise

from ..conftest import write_release_config

SPEC = DatasetSpec.model_validate(
    {
        "name": "t",
        "source": "site",
        "columns": {
            "site": {"kind": "categorical"},
            "sex": {"kind": "categorical"},
            "x": {"kind": "numeric"},
            "edu": {"kind": "ordinal", "min": 1, "max": 16},
        },
    }
)


@pytest.fixture()
def pool() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 2000
    return pd.DataFrame(
        {
            "site": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
            "sex": rng.choice(["F", "M"], n),
            "x": np.r_[rng.normal(-8, 1, n // 2), rng.normal(8, 1, n // 2)],
            "edu": rng.integers(1, 17, n),
        },
        index=np.arange(10_000, 10_000 + n),
    )


def test_source_split_takes_members_from_one_source_and_non_members_from_the_others(pool):
    sp = source_split(
        pool,
        source="site",
        value=None,
        n_members=300,
        n_non_members=200,
        rng=np.random.default_rng(1),
    )
    assert sp.setting == "site=a"  # the most frequent value by default
    assert set(sp.members["site"]) == {"a"} and "a" not in set(sp.non_members["site"])
    assert (len(sp.members), len(sp.non_members)) == (300, 200)
    assert not set(sp.members.index) & set(sp.non_members.index)
    with pytest.raises(InsufficientDataError, match="source site!='a'"):
        source_split(
            pool,
            source="site",
            value="a",
            n_members=10,
            n_non_members=5000,
            rng=np.random.default_rng(1),
        )


def test_cluster_split_uses_clusters_fitted_on_the_reference_only(pool):
    reference = pool.sample(600, random_state=0)
    clustering = Clustering.fit(reference, SPEC, k=2, seed=0)
    rest = pool.drop(index=reference.index)
    sp = cluster_split(
        rest,
        clustering.assign(rest),
        clusters=None,
        n_members=200,
        n_non_members=150,
        rng=np.random.default_rng(2),
    )
    a, b = clustering.assign(sp.members), clustering.assign(sp.non_members)
    assert len(set(a)) == 1 and len(set(b)) == 1 and a[0] != b[0]
    # the two clusters are the two modes of x: members all on one side
    assert (np.sign(sp.members["x"]).nunique(), np.sign(sp.non_members["x"]).nunique()) == (1, 1)
    assert (len(sp.members), len(sp.non_members)) == (200, 150)


@pytest.mark.parametrize("share", [0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
def test_bias_split_has_the_exact_share_and_balanced_non_members(pool, share):
    sp = bias_split(
        pool,
        attribute="sex",
        value="M",
        at_least=None,
        share=share,
        n_members=200,
        n_non_members=100,
        rng=np.random.default_rng(3),
    )
    assert int((sp.members["sex"] == "M").sum()) == round(share * 200)
    assert int((sp.non_members["sex"] == "M").sum()) == 50
    assert sp.dropped == ("sex",) and not set(sp.members.index) & set(sp.non_members.index)


def test_bias_split_on_a_numeric_threshold(pool):
    sp = bias_split(
        pool,
        attribute="edu",
        value=None,
        at_least=10,
        share=0.75,
        n_members=200,
        n_non_members=100,
        rng=np.random.default_rng(4),
    )
    assert (
        int((sp.members["edu"] >= 10).sum()) == 150
        and int((sp.non_members["edu"] >= 10).sum()) == 50
    )
    assert sp.setting == "edu>=10 p=0.75"


def test_iid_counterpart_resplits_the_same_records_at_the_same_sizes(pool):
    sp = source_split(
        pool,
        source="site",
        value="b",
        n_members=300,
        n_non_members=250,
        rng=np.random.default_rng(5),
    )
    iid = iid_counterpart(sp, rng=np.random.default_rng(6))
    assert (len(iid.members), len(iid.non_members)) == (300, 250) and iid.iid
    assert set(iid.members.index) | set(iid.non_members.index) == set(sp.members.index) | set(
        sp.non_members.index
    )
    assert not set(iid.members.index) & set(iid.non_members.index)
    # exchangeable again: members now come from both sides (hypergeometric: 300 of 550, 300 from b)
    assert 0.4 < (iid.members["site"] == "b").mean() < 0.7


def test_spec_without_drops_the_column_and_its_references():
    spec = spec_without(SPEC, ("site",))
    assert "site" not in spec.columns and spec.source is None
    assert spec_without(SPEC, ()) is SPEC
    known = SPEC.model_copy(
        update={"quasi_identifiers": ["site", "sex"], "linkability": [["site"], ["sex"]]}
    )
    trimmed = spec_without(DatasetSpec.model_validate(known.model_dump()), ("site",))
    assert trimmed.quasi_identifiers == ["sex"] and trimmed.linkability is None


def _row(setting, iid, rep, adv, lower, eps=1.0, scenario="source"):
    return dict(
        scenario=scenario,
        setting=setting,
        generator="g",
        epsilon=eps,
        iid=iid,
        rep=rep,
        advantage=adv,
        advantage_lower=lower,
        advantage_upper=adv + 0.1,
        auc=0.5 + adv / 2,
    )


def test_invariants_fail_with_the_numbers_when_the_data_say_so():
    rows = [_row("s", False, r, 0.10 + 0.01 * r, 0.0) for r in range(4)]
    rows += [_row("s", True, r, 0.40 + 0.01 * r, 0.2) for r in range(4)]
    rows += [
        _row("bias p=0.5", iid, r, 0.1 + 0.5 * (not iid) + 0.01 * r, 0.0, scenario="bias")
        for iid in (False, True)
        for r in range(4)
    ]
    first, second, third = check_invariants(summarise(rows, prior=0.5))
    assert first["holds"] is False and "non-IID 0.115" in first["failures"][0]
    assert second["holds"] is False  # no lower bound above tanh(0.5) = 0.462
    assert third["holds"] is False and third["tested"] == 1


def test_summary_interval_is_the_t_interval():
    rows = [_row("s", False, r, a, 0.5) for r, a in enumerate([0.1, 0.2, 0.3])]
    (cell,) = summarise(rows, prior=0.5)
    assert cell["advantage_mean"] == pytest.approx(0.2)
    assert cell["advantage_ci"] == pytest.approx(4.302653 * 0.1 / np.sqrt(3), rel=1e-5)
    assert cell["dp_bound"] == pytest.approx(np.tanh(0.5)) and cell["lower_above_bound"] == 1.0


def test_config_errors_name_the_scenario(adult_spec):
    base = {
        "dataset": {"path": "x.csv", "spec": adult_spec.model_dump()},
        "generator": {"name": "mst"},
        "dependency_study": {
            "generators": [{"name": "mst", "epsilons": [1]}],
            "scenarios": [{"kind": "source"}],
        },
    }
    with pytest.raises(
        ValueError, match=r"scenarios\[0\]: a source scenario needs a 'source' column"
    ):
        ReleaseConfig.model_validate(base)
    base["dependency_study"]["scenarios"] = [{"kind": "bias", "attribute": "sex", "at_least": 1}]
    with pytest.raises(
        ValueError, match="'at_least' needs a numeric attribute; 'sex' is categorical"
    ):
        ReleaseConfig.model_validate(base)
    base["dependency_study"]["scenarios"] = [{"kind": "bias", "attribute": "sex"}]
    with pytest.raises(ValueError, match="exactly one of 'value'"):
        ReleaseConfig.model_validate(base)
    base["dependency_study"]["generators"] = [{"name": "mst", "epsilons": [0]}]
    with pytest.raises(ValueError, match="every epsilon must be positive"):
        ReleaseConfig.model_validate(base)


def _study_config(folder) -> str:
    path = write_release_config(
        folder,
        {"name": "mst", "epsilon": 1.0},
        name="study.yaml",
        attacks=[{"name": "domias"}, {"name": "dcr"}, {"name": "mama_mia", "n_shadow": 3}],
        dependency_study={
            "members": 150,
            "non_members": 150,
            "repetitions": 2,
            "seed": 3,
            "generators": [{"name": "mst", "epsilons": [1.0]}, {"name": "noisy_copy"}],
            "scenarios": [
                {"kind": "source"},
                {
                    "kind": "bias",
                    "attribute": "sex",
                    "value": "Male",
                    "shares": [0.5, 1.0],
                    "generators": [{"name": "noisy_copy"}],
                },
            ],
        },
        fast=True,
    )
    raw = yaml.safe_load(path.read_text())
    raw["dataset"]["spec"]["source"] = "workclass"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def test_a_small_study_through_the_flow_is_recorded_in_mlflow(
    small_adult, tmp_path, prefect_server
):
    from mlflow.tracking import MlflowClient

    from privacy_gate import names
    from privacy_gate.flows import dependency_study_flow

    config = _study_config(small_adult)
    result = dependency_study_flow(config_path=config, workdir=str(tmp_path))
    client = MlflowClient(result["tracking_uri"])
    parent = client.get_run(result["run_id"])
    assert (
        parent.data.tags[names.TAG_KIND] == "dependency_study" and parent.info.status == "FINISHED"
    )
    listed = {f.path for f in client.list_artifacts(parent.info.run_id, "dependency")}
    assert {
        names.ART_STUDY_EXPERIMENTS,
        names.ART_STUDY_SUMMARY,
        names.ART_STUDY_INVARIANTS,
    } <= listed
    assert client.list_artifacts(parent.info.run_id, "plots")[0].path == names.ART_STUDY_PLOT
    children = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'",
    )
    # source: mst eps 1 and noisy_copy; bias: noisy_copy at p = 0.5 and 1
    assert len(children) == 4
    assert all(
        "non_iid.advantage_mean" in c.data.metrics and "iid.advantage_mean" in c.data.metrics
        for c in children
    )
    exp = pd.read_parquet(
        client.download_artifacts(parent.info.run_id, names.ART_STUDY_EXPERIMENTS, str(tmp_path))
    )
    assert len(exp) == 2 * 2 * (
        2 + 2
    )  # IID or not x repetitions x (source: 2 generators, bias: 2 shares)
    adult_columns = set(load_release_config(config).dataset.spec.columns)
    assert not adult_columns & set(exp.columns)  # figures only, never a record's values
    # MAMA-MIA only against the marginal generator
    assert exp.loc[exp.generator == "mst", "mama_mia.auc"].notna().all()
    assert exp.loc[exp.generator == "noisy_copy", "mama_mia.auc"].isna().all()
    # noisy copies of the members are found whatever the split: a large advantage in both
    nc = exp[(exp.generator == "noisy_copy") & (exp.scenario == "source")]
    assert (nc.advantage > 0.6).all()
    assert [i["holds"] for i in result["invariants"]][0] in (True, False)


def test_cli_runs_the_study_locally_and_refuses_a_config_without_one(small_adult, tmp_path):
    config = _study_config(small_adult)
    raw = yaml.safe_load(open(config))
    raw["dependency_study"]["scenarios"] = [{"kind": "cluster", "k": 3}]
    raw["dependency_study"]["generators"] = [{"name": "mst", "epsilons": [0.5]}]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(raw))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "privacy_gate.cli",
            "dependency-study",
            str(tmp_path / "c.yaml"),
            "--workdir",
            str(tmp_path / "w"),
            "--orchestrator",
            "local",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(got["invariants"]) == 3 and got["run_id"]
    assert "[4/4] cluster" in out.stderr  # progress, with an ETA
    assert (
        "non-IID advantage >= IID advantage" in out.stderr
        and f"study run:   {got['run_id']}" in out.stderr
    )
    del raw["dependency_study"]
    (tmp_path / "none.yaml").write_text(yaml.safe_dump(raw))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "privacy_gate.cli",
            "dependency-study",
            str(tmp_path / "none.yaml"),
            "--orchestrator",
            "local",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "no 'dependency_study' section" in out.stderr
    with pytest.raises(ConfigError):
        from privacy_gate.studies.dependency_study import run_dependency_study

        run_dependency_study(load_release_config(tmp_path / "none.yaml"), workdir=tmp_path / "w")


def test_the_example_study_config_loads_and_says_how_big_it_is():
    from privacy_gate.studies.dependency_study import plan_size

    from ..conftest import ROOT

    cfg = load_release_config(ROOT / "examples" / "adult-dependency.yaml")
    assert cfg.dataset.spec.source == "workclass"
    # source + cluster: (4 + 4 + 2 + 1) fits; two bias sweeps: 7 shares x (2 + 1) fits; x 2 (IID) x
    # 3 repetitions
    assert plan_size(cfg) == 2 * 3 * (2 * 11 + 2 * 7 * 3) == 384
