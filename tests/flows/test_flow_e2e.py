"""End-to-end: the real Prefect flow, a real MLflow sqlite store, real GE checkpoints, SDV."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from privacy_gate import names, tracking
from privacy_gate.flows import release_flow
from privacy_gate.publication.publish import list_published, verify_published

from ..conftest import write_release_config

TEXT_SUFFIXES = {".json", ".md", ".txt", ".yaml", ".yml", ".html", ".csv"}


@pytest.fixture(scope="module")
def gc_run(prefect_server, small_adult, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("e2e")
    cfg = write_release_config(
        small_adult, {"name": "gaussian_copula", "seed": 0}, name="e2e.yaml", fast=True
    )
    result = release_flow(config_path=str(cfg), workdir=str(workdir))
    return result, workdir


def _all_artifacts(client: MlflowClient, run_id: str, path: str | None = None) -> list[str]:
    out = []
    for f in client.list_artifacts(run_id, path):
        out.extend(_all_artifacts(client, run_id, f.path) if f.is_dir else [f.path])
    return out


def test_release_flow_records_run_in_mlflow(gc_run):
    result, workdir = gc_run
    verdict = result.verdict
    assert verdict.status == "ok" and verdict.decision in ("APPROVE", "REVIEW", "BLOCK")
    assert (
        result.run_id == verdict.run_id and result.summary_markdown is None
    )  # the summary went to an artifact
    client = MlflowClient(tracking.default_tracking_uri(workdir))
    run = client.get_run(verdict.run_id)
    assert run.data.tags[names.TAG_VERDICT] == verdict.decision
    assert run.data.tags[names.TAG_STATUS] == "ok"
    assert run.data.params["generator"] == "gaussian_copula"
    for attack in ("domias", "dcr"):
        for m in ("auc", "tpr_at_fpr_0.01", "tpr_at_fpr_0.001", "advantage"):
            assert f"{attack}.{m}" in run.data.metrics
    assert "utility.quality" in run.data.metrics and names.TOTAL_TIME in run.data.metrics
    figures = json.loads(
        Path(client.download_artifacts(run.info.run_id, names.ART_METRICS_ALL)).read_text()
    )
    assert (
        figures["time.fit_s"] > 0
    )  # a stage's time: in the run's figures, not a metric of its own
    arts = set(_all_artifacts(client, run.info.run_id))
    for name in (
        names.ART_VERDICT,
        names.ART_CONFIG,
        names.ART_SCORES,
        names.ART_ROC,
        "validation/adult.input.json",
        "validation/adult.synthetic.json",
    ):
        assert name in arts, arts
    children = client.search_runs(
        [run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'"
    )
    assert sorted(c.data.tags["mlflow.runName"] for c in children) == [
        "attack-dcr",
        "attack-dcr_ratio",
        "attack-domias",
        "attack-mama_mia",
    ]
    logged = json.loads(
        Path(client.download_artifacts(run.info.run_id, names.ART_VERDICT)).read_text()
    )
    assert logged["verdict"] == verdict.decision and logged["checks"]
    scores = pd.read_parquet(client.download_artifacts(run.info.run_id, names.ART_SCORES))
    assert list(scores.columns) == [
        "row_id",
        "member",
        "domias_score",
        "dcr_score",
        "dcr_ratio_score",
        "mama_mia_score",
    ]
    assert scores["member"].sum() == (scores["member"] == 0).sum() == 600


def test_a_gate_run_logs_its_headline_as_metrics_and_every_figure_as_artifacts(gc_run):
    """At most 100 MLflow metrics under short keys on the gate's run, a handful on each
    attack's run; every figure of the verdict in metrics/all.json and the tables, sealed with the
    verdict, and the report links to them."""
    result, workdir = gc_run
    client = MlflowClient(tracking.default_tracking_uri(workdir))
    run = client.get_run(result.verdict.run_id)
    logged = run.data.metrics
    children = client.search_runs(
        [run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{run.info.run_id}'"
    )
    per_child = {c.data.tags["mlflow.runName"]: len(c.data.metrics) for c in children}
    print(
        f"gate run: {len(logged)} MLflow metrics (verdict figures: {len(result.verdict.metrics)}); "
        f"attack runs: {per_child}"
    )
    assert len(logged) <= 100 and max(map(len, logged)) <= names.MAX_HEADLINE_KEY_LENGTH
    assert not [k for k in logged if k.startswith("subgroup/")]
    assert per_child and max(per_child.values()) <= 10
    figures = json.loads(
        Path(client.download_artifacts(run.info.run_id, names.ART_METRICS_ALL)).read_text()
    )
    assert set(result.verdict.metrics) <= set(figures) and set(logged) <= set(figures)
    assert all(figures[k] == pytest.approx(v) for k, v in logged.items())
    subgroup_keys = [k for k in result.verdict.metrics if k.startswith("subgroup/")]
    assert subgroup_keys  # the audit measured groups: their figures are in the tables
    groups = pd.read_csv(client.download_artifacts(run.info.run_id, names.ART_METRICS_SUBGROUPS))
    assert len(groups) >= 1 and groups["group"].str.len().max() <= names.MAX_TABLE_LABEL_LENGTH
    sealed = json.loads(
        Path(client.download_artifacts(run.info.run_id, names.ART_VERDICT)).read_text()
    )
    assert {names.ART_METRICS_ALL, *names.METRIC_TABLES} <= set(
        sealed[names.SEAL][names.SEAL_ARTIFACTS]
    )
    report = Path(client.download_artifacts(run.info.run_id, names.ART_REPORT)).read_text()
    link = tracking.artifact_url(
        tracking.default_tracking_uri(workdir),
        run.info.experiment_id,
        run.info.run_id,
        names.ART_METRICS_ALL,
    )
    assert f'href="{link}"' in report and 'id="figures"' in report


def test_publication_follows_verdict(gc_run):
    result, workdir = gc_run
    quarantined = Path(result.quarantined)
    assert quarantined.exists() and quarantined.is_relative_to(workdir / "quarantine")
    published = [d / verify_published(d)["file"] for d in list_published(workdir / "published")]
    if result.verdict.decision == "APPROVE":
        assert len(published) == 1 and result.published
    else:
        assert published == [] and result.published is None


def test_no_real_record_values_in_logged_text(gc_run, small_adult):
    result, workdir = gc_run
    client = MlflowClient(tracking.default_tracking_uri(workdir))
    run_id = result.verdict.run_id
    real = pd.read_csv(small_adult / "real.csv")
    # fnlwgt is a near-unique census weight: if any record leaked, its weight would show up
    weights = {str(int(w)) for w in real["fnlwgt"]}
    pattern = re.compile(r"(?<![0-9a-fA-F])(\d{5,7})(?:\.0)?(?![0-9a-fA-F])")
    texts = []
    for run in [client.get_run(run_id)] + client.search_runs(
        [client.get_run(run_id).info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{run_id}'",
    ):
        for art in _all_artifacts(client, run.info.run_id):
            if Path(art).suffix in TEXT_SUFFIXES:
                texts.append(Path(client.download_artifacts(run.info.run_id, art)).read_text())
        texts.append(json.dumps([run.data.params, run.data.tags]))
    assert texts
    leaked = {m for t in texts for m in pattern.findall(t)} & weights
    assert not leaked, f"real fnlwgt values found in logged text: {sorted(leaked)[:5]}"


def test_reviewer_record_description_inputs_and_origin(gc_run, small_adult):
    """The run page explains the decision (description), lists the judged tables as dataset inputs
    (digest, rows, schema: no values of real records), says who and what made it, and the
    experiment asks MLflow's UI for its classic (not GenAI) view."""
    result, workdir = gc_run
    client = MlflowClient(tracking.default_tracking_uri(workdir))
    run = client.get_run(result.verdict.run_id)
    verdict = result.verdict.decision
    assert run.data.tags[tracking.NOTE_TAG].startswith(f"**{verdict}**")
    assert "## Reasons" in run.data.tags[tracking.NOTE_TAG]
    assert (
        run.data.tags[tracking.USER_TAG]
        and run.data.tags[tracking.SOURCE_NAME_TAG] == "privacy-gate release"
    )
    assert (
        client.get_experiment(run.info.experiment_id).tags[tracking.EXPERIMENT_KIND_TAG]
        == tracking.EXPERIMENT_KIND
    )
    inputs = {d.dataset.name: d.dataset for d in run.inputs.dataset_inputs}
    assert set(inputs) == {"train", "holdout", "reference", "synthetic"}
    for name, ds in inputs.items():
        assert (
            json.loads(ds.profile) == {"num_rows": int(run.data.params[f"n_{name}"])}
            if name != "synthetic"
            else set(json.loads(ds.profile)) == {"num_rows"}
        )
        columns = [c["name"] for c in json.loads(ds.schema)["mlflow_colspec"]]
        assert columns == list(pd.read_csv(small_adult / "real.csv", nrows=1).columns)
    real = pd.read_csv(small_adult / "real.csv")
    values = {
        str(v)
        for c in real.select_dtypes("object")
        for v in real[c].dropna().unique()
        if len(str(v)) >= 4
    }
    text = " ".join(f"{d.name} {d.digest} {d.source} {d.profile}" for d in inputs.values())
    assert not [v for v in values if v in text]


def test_the_run_was_judged_at_plumbing_weight(gc_run, fast_settings):
    """This module checks records, not statistics: its run used the plumbing weight
    (conftest.FAST_SETTINGS), and the recorded settings say so."""
    result, workdir = gc_run
    settings = tracking.Tracker(
        uri=tracking.default_tracking_uri(workdir), experiment=None
    ).read_json(result.verdict.run_id, names.ART_SETTINGS)
    assert settings["mace"]["n_permutations"] == fast_settings["mace"]["n_permutations"] < 200
    assert [a.get("n_shadow") for a in settings["attacks"] if a["name"] == "mama_mia"] == [
        fast_settings["mama_mia"]["n_shadow"]
    ]
