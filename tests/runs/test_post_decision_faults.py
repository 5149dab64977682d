"""After the decision: the Prefect verdict artifact failing, and names longer than MLflow allows,
never turn into a wrong verdict or a published-but-BLOCKed release."""

import pandas as pd
import pytest
import yaml

from privacy_gate import names, tracking
from privacy_gate.config import load_release_config
from privacy_gate.publication.publish import list_published
from privacy_gate.runs.release import release_run

from ..conftest import EXAMPLE, lighten

LONG = "race_" + "x" * 300  # a legitimate, very long column name


@pytest.fixture(scope="module")
def long_names(small_adult, tmp_path_factory):
    folder = tmp_path_factory.mktemp("long")
    for name in ("real", "independent"):
        pd.read_csv(small_adult / f"{name}.csv").rename(columns={"race": LONG}).to_csv(
            folder / f"{name}.csv", index=False
        )
    raw = yaml.safe_load(EXAMPLE.read_text())
    spec = raw["dataset"]["spec"]
    spec["columns"] = {(LONG if k == "race" else k): v for k, v in spec["columns"].items()}
    spec["subgroups"] = ["sex", LONG]
    spec["quasi_identifiers"] = [
        LONG if c == "race" else c for c in spec.get("quasi_identifiers") or []
    ] or None
    raw["dataset"]["path"] = str(folder / "real.csv")
    raw["generator"] = {"name": "file", "path": str(folder / "independent.csv")}
    raw["attacks"] = [{"name": "dcr"}, {"name": "domias"}]
    raw["audit"] = {"intersections": [["sex", LONG]]}
    path = folder / "release.yaml"
    path.write_text(yaml.safe_dump(lighten(raw), sort_keys=False))
    return path


def test_names_longer_than_mlflow_allows_are_recorded(long_names, tmp_path):
    result = release_run(load_release_config(long_names), workdir=tmp_path)
    verdict = result.verdict
    assert verdict.status == "ok", verdict.reasons
    long_keys = [k for k in verdict.metrics if len(k) > names.MAX_KEY_LENGTH]
    assert long_keys  # the subgroup metrics of the long column exceed MLflow's limit ...
    tracker = tracking.Tracker(uri=result.tracking_uri, experiment=None)
    run = tracker.client.get_run(result.run_id)
    figures = tracker.read_json(result.run_id, names.ART_METRICS_ALL)
    assert all(
        k in figures for k in long_keys
    )  # ... and are recorded in full among the run's figures
    assert all(
        len(k) <= names.MAX_HEADLINE_KEY_LENGTH for k in run.data.metrics
    )  # the metrics have short keys
    groups = pd.read_csv(
        tracker.client.download_artifacts(result.run_id, names.ART_METRICS_SUBGROUPS)
    )
    capped = [g for g in groups["group"] if g.startswith("race_xxx")]
    assert capped and all(
        len(g) == names.MAX_TABLE_LABEL_LENGTH for g in capped
    )  # readable, cut with a hash
    assert run.data.tags[names.TAG_VERDICT] == verdict.decision
    if verdict.decision == "APPROVE":
        assert len(list_published(tmp_path / "published")) == 1


def test_a_failing_prefect_artifact_changes_nothing(
    prefect_server, long_names, tmp_path, monkeypatch
):
    import privacy_gate.flows.gate_flows as gate_flows

    def broken(*args, **kwargs):
        raise RuntimeError("artifact store down")

    monkeypatch.setattr(gate_flows, "create_markdown_artifact", broken)
    result = gate_flows.release_flow(config_path=str(long_names), workdir=str(tmp_path))
    verdict = result.verdict
    assert verdict.status == "ok"
    tags = tracking.Tracker(uri=result.tracking_uri, experiment=None).run_tags(result.run_id)
    assert tags[names.TAG_VERDICT] == verdict.decision
    assert (len(list_published(tmp_path / "published")) == 1) == (verdict.decision == "APPROVE")
