"""The remediation ladder: after a BLOCK, safer settings are tried; only the chosen release leaves
quarantine; every attempt is a nested MLflow run; DP budgets add up and are capped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from privacy_gate import names, tracking
from privacy_gate.config import load_release_config
from privacy_gate.errors import ConfigError
from privacy_gate.publication.publish import list_published, verify_published
from privacy_gate.runs.remediation import (
    _choose,
    check_ladder,
    ladder_generators,
    remediated_release_run,
)

from ..conftest import write_release_config


def _config(folder: Path, generator: dict, ladder: list[dict], **remediate):
    return load_release_config(
        write_release_config(
            folder,
            generator,
            name="ladder.yaml",
            remediate={"ladder": ladder, **remediate},
            audit={"intersections": []},
            fast=True,
        )
    )


def _runs(workdir: Path, ladder_run: str):
    client = MlflowClient(tracking.default_tracking_uri(workdir))
    exp = client.get_run(ladder_run).info.experiment_id
    children = client.search_runs(
        [exp], filter_string=f"tags.`{names.TAG_LADDER}` = '{ladder_run}'"
    )
    return client, sorted(children, key=lambda r: int(r.data.tags[names.TAG_LADDER_RUNG]))


def test_leaky_rungs_then_a_safe_one_publishes_only_the_safe_release(small_adult, tmp_path):
    independent = str(small_adult / "independent.csv")
    cfg = _config(
        small_adult,
        {"name": "copy_train"},
        [{"name": "noisy_copy", "noise": 0.01}, {"name": "file", "path": independent}],
    )
    result = remediated_release_run(cfg, workdir=tmp_path)
    ledger = result.ladder
    assert [a["verdict"] for a in ledger["attempts"]] == ["BLOCK", "BLOCK", "APPROVE"]
    assert ledger["chosen_rung"] == 2 and "first that passed" in ledger["why"]
    assert result.verdict.decision == "APPROVE" and ledger["total_epsilon"] is None
    assert "adaptive" in ledger["caveat"]
    published = list_published(tmp_path / "published")
    assert len(published) == 1
    manifest = verify_published(published[0])
    assert (
        manifest["run_id"] == ledger["attempts"][2]["run_id"]
        and manifest["remediation"]["chosen_rung"] == 2
    )
    assert [a["verdict"] for a in manifest["attempts"]] == ["BLOCK", "BLOCK", "APPROVE"]
    # the blocked attempts' releases stay in quarantine
    quarantined = sorted((tmp_path / "quarantine").glob("*/synthetic.*"))
    assert len(quarantined) == 3
    client, children = _runs(tmp_path, result.ladder_run_id)
    assert [c.data.tags[names.TAG_VERDICT] for c in children] == ["BLOCK", "BLOCK", "APPROVE"]
    assert all(c.data.tags["mlflow.parentRunId"] == result.ladder_run_id for c in children)
    # the chosen run recorded where its release was going before it left quarantine
    chosen_tags = children[-1].data.tags
    folder = Path(published[0]).resolve()
    assert Path(chosen_tags[names.TAG_PUBLISHING]).resolve() == folder
    assert Path(chosen_tags[names.TAG_PUBLISHED]).resolve().parent == folder
    parent = client.get_run(result.ladder_run_id)
    assert (
        parent.data.tags[names.TAG_VERDICT] == "APPROVE"
        and parent.data.tags[names.TAG_KIND] == "ladder"
    )
    recorded = json.loads(
        Path(
            client.download_artifacts(parent.info.run_id, names.ART_LADDER, str(tmp_path))
        ).read_text()
    )
    assert recorded["chosen_rung"] == 2 and len(recorded["attempts"]) == 3


def test_all_rungs_leaky_blocks_and_publishes_nothing(small_adult, tmp_path):
    cfg = _config(small_adult, {"name": "copy_train"}, [{"name": "noisy_copy", "noise": 0.01}])
    result = remediated_release_run(cfg, workdir=tmp_path)
    assert result.verdict.decision == "BLOCK" and result.published is None
    assert "every attempt (2) was blocked" in result.ladder["why"]
    assert list_published(tmp_path / "published") == []
    client, _ = _runs(tmp_path, result.ladder_run_id)
    assert client.get_run(result.ladder_run_id).data.tags[names.TAG_VERDICT] == "BLOCK"


def test_dp_ladder_sums_the_budget_and_refuses_past_the_cap(small_adult, tmp_path):
    base = {"name": "mst", "epsilon": 3.0, "seed": 0}
    refused = _config(
        small_adult, base, [{"epsilon": 1.0}, {"epsilon": 0.5}], max_total_epsilon=4.0
    )
    with pytest.raises(
        ConfigError, match=r"epsilon 4.5 in total .*3 \+ 1 \+ 0.5.*max_total_epsilon 4"
    ):
        check_ladder(refused)
    assert [g.model_dump()["epsilon"] for g in ladder_generators(refused)] == [3.0, 1.0, 0.5]
    # the configured generator blocked (verbatim copies), both DP rungs tried: the budget is their
    # sum
    cfg = _config(
        small_adult,
        {"name": "copy_train"},
        [{"name": "mst", "epsilon": 2.0, "seed": 0}, {"name": "mst", "epsilon": 1.0, "seed": 1}],
        choose="most_useful",
        max_total_epsilon=3.0,
    )
    result = remediated_release_run(cfg, workdir=tmp_path)
    ledger = result.ladder
    tried = [a for a in ledger["attempts"] if a["epsilon"] is not None]
    assert ledger["total_epsilon"] == pytest.approx(sum(a["epsilon"] for a in tried))
    # most_useful tries every rung after the BLOCK: both MST attempts spent their budget
    assert [a["verdict"] for a in ledger["attempts"]] == ["BLOCK", "APPROVE", "APPROVE"], ledger[
        "attempts"
    ]
    assert (
        ledger["total_epsilon"] == pytest.approx(3.0) and "highest utility.quality" in ledger["why"]
    )
    manifest = verify_published(list_published(tmp_path / "published")[0])
    assert manifest["remediation"]["total_epsilon"] == pytest.approx(3.0)
    assert manifest["run_id"] == ledger["attempts"][ledger["chosen_rung"]]["run_id"]
    client = MlflowClient(tracking.default_tracking_uri(tmp_path))
    assert (
        client.get_run(result.ladder_run_id).data.metrics["ladder.total_epsilon"]
        == ledger["total_epsilon"]
    )


def test_choice_rules():
    def a(rung, verdict, q=None):
        return {"rung": rung, "verdict": verdict, "utility_quality": q}

    assert _choose([a(0, "APPROVE", 0.5)], "most_useful")[0] == 0
    assert (
        _choose([a(0, "BLOCK"), a(1, "APPROVE", 0.7), a(2, "APPROVE", 0.9)], "most_useful")[0] == 2
    )
    assert _choose([a(0, "BLOCK"), a(1, "APPROVE", 0.7), a(2, "APPROVE", 0.9)], "first")[0] == 1
    chosen, why = _choose([a(0, "BLOCK"), a(1, "REVIEW")], "first")
    assert chosen == 1 and "waits for a reviewer" in why
    assert _choose([a(0, "BLOCK"), a(1, "BLOCK")], "first")[0] is None


def test_bad_rungs_are_config_errors(small_adult):
    with pytest.raises(ConfigError, match="remediate.ladder"):
        check_ladder(_config(small_adult, {"name": "copy_train"}, [{"name": "nope"}]))
    with pytest.raises(ConfigError, match="privacy_weight"):
        check_ladder(_config(small_adult, {"name": "privgan"}, [{"privacy_weight": -1}]))


def test_ladder_runs_in_the_release_flow(prefect_server, small_adult, tmp_path):
    from privacy_gate.flows import release_flow

    path = write_release_config(
        small_adult,
        {"name": "copy_train"},
        name="ladder-flow.yaml",
        remediate={"ladder": [{"name": "file", "path": str(small_adult / "independent.csv")}]},
        audit={"intersections": []},
        fast=True,
    )
    result = release_flow(config_path=str(path), workdir=str(tmp_path))
    assert result.verdict.decision == "APPROVE" and result.ladder["chosen_rung"] == 1
    assert result.published and len(list_published(tmp_path / "published")) == 1


def test_example_ladder_config_loads_and_checks():
    cfg = load_release_config(
        Path(__file__).resolve().parents[2] / "examples" / "adult-privgan.yaml"
    )
    gens = ladder_generators(cfg)
    assert [g.model_dump()["privacy_weight"] for g in gens] == [0.1, 1.0, 10.0]
    assert gens[2].model_dump()["n_generators"] == 4 and check_ladder(cfg) == [None, None, None]
