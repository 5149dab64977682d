"""``s3://`` data and publication against moto's S3 server (its own process, loopback)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from privacy_gate.data import read_table
from privacy_gate.errors import DataError, is_infrastructure_error
from privacy_gate.publication import objectstore
from privacy_gate.publication.publish import (
    PublishError,
    ReleaseStore,
    list_published_s3,
    verify_published_s3,
)

from .. import stack


def _frame(n: int = 50) -> pd.DataFrame:
    return pd.DataFrame({"age": range(n), "sex": ["F", "M"] * (n // 2)})


def test_read_table_from_s3(s3_env, tmp_path):
    _frame().to_csv(tmp_path / "t.csv", index=False)
    objectstore.upload(tmp_path / "t.csv", "s3://data/in/t.csv")
    _frame().to_parquet(tmp_path / "t.parquet", index=False)
    objectstore.upload(tmp_path / "t.parquet", "s3://data/in/t.parquet")
    for key in ("t.csv", "t.parquet"):
        df = read_table(f"s3://data/in/{key}")
        assert len(df) == 50 and list(df.columns) == ["age", "sex"]


def test_missing_object_and_bucket_are_data_errors_naming_the_uri(s3_env):
    with pytest.raises(DataError, match=r"s3://data/nope.csv: no such object"):
        read_table("s3://data/nope.csv")
    with pytest.raises(
        DataError, match=r"s3://missing-bucket/x.csv: the bucket 'missing-bucket' does not exist"
    ):
        read_table("s3://missing-bucket/x.csv")
    with pytest.raises(DataError, match="names a bucket"):
        read_table("s3://data")


def test_unreachable_endpoint_is_an_infrastructure_error(monkeypatch):
    monkeypatch.setenv("MLFLOW_S3_ENDPOINT_URL", f"http://127.0.0.1:{stack.free_port()}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    with pytest.raises(objectstore.StorageUnavailable, match="unreachable") as info:
        read_table("s3://data/t.csv")
    assert is_infrastructure_error(info.value)


def test_publish_to_s3_is_manifested_verified_and_idempotent(s3_env, tmp_path):
    store = ReleaseStore(workdir=tmp_path, target="s3://releases/adult/")
    q = store.quarantine(_frame())
    with pytest.raises(PublishError, match="refusing to publish"):
        store.publish(q, dataset="adult", verdict="BLOCK", run_id="r", config_hash=None)
    assert list_published_s3("s3://releases/adult") == []
    out = store.publish(q, dataset="adult", verdict="APPROVE", run_id="r1", config_hash="c")
    assert out == f"s3://releases/adult/adult-{q.sha256[:12]}/adult-{q.sha256[:12]}.parquet"
    folders = list_published_s3("s3://releases/adult")
    assert folders == [out.rsplit("/", 1)[0]]
    manifest = verify_published_s3(folders[0])
    assert manifest["sha256"] == q.sha256 and manifest["run_id"] == "r1" and manifest["rows"] == 50
    assert store.publish(q, dataset="adult", verdict="APPROVE", run_id="r1", config_hash="c") == out
    assert store.target_label == "s3://releases/adult"


def test_s3_reader_contract_ignores_uploads_without_a_manifest_and_tampered_data(s3_env, tmp_path):
    store = ReleaseStore(workdir=tmp_path, target="s3://releases/contract")
    q = store.quarantine(_frame(20))
    # a killed publication: the data object is there, the manifest (the commit) is not
    objectstore.upload(
        q.path, f"s3://releases/contract/adult-{q.sha256[:12]}/adult-{q.sha256[:12]}.parquet"
    )
    assert list_published_s3("s3://releases/contract") == []
    out = store.publish(
        q, dataset="adult", verdict="APPROVE", run_id="r", config_hash=None
    )  # completes it
    assert list_published_s3("s3://releases/contract") == [out.rsplit("/", 1)[0]]
    # data replaced behind the manifest's back: no longer a release
    _frame(22).to_parquet(tmp_path / "other.parquet", index=False)
    objectstore.upload(tmp_path / "other.parquet", out)
    assert list_published_s3("s3://releases/contract") == []
    with pytest.raises(PublishError, match="does not match the sha256"):
        verify_published_s3(out.rsplit("/", 1)[0])
    bad = json.dumps({"file": "../x"}).encode()
    objectstore.put_bytes(bad, "s3://releases/contract/evil/manifest.json")
    with pytest.raises(PublishError, match="not a published release"):
        verify_published_s3("s3://releases/contract/evil")


def test_config_keeps_s3_uris(tmp_path, small_adult):
    from privacy_gate.config import load_release_config

    from ..conftest import write_release_config

    path = write_release_config(
        small_adult,
        {"name": "copy_train"},
        name="s3.yaml",
        publish={"target": "s3://releases/adult"},
    )
    text = path.read_text().replace(str(small_adult / "real.csv"), "s3://data/adult/real.csv")
    path.write_text(text)
    cfg = load_release_config(path)
    assert (
        cfg.dataset.path == "s3://data/adult/real.csv"
        and cfg.publish.target == "s3://releases/adult"
    )


def test_gate_publish_to_s3_goes_to_the_bucket(s3_env, small_adult, tmp_path, monkeypatch):
    """``gate --publish-to s3://bucket/prefix`` publishes to the bucket; it used to collapse the
    '//' into a local folder 's3:/bucket/prefix' and report the release as published."""
    import yaml
    from typer.testing import CliRunner

    from privacy_gate.cli import app

    from ..conftest import EXAMPLE, lighten

    real = pd.read_csv(small_adult / "real.csv")
    for name, part in {
        "train": real.iloc[:1800],
        "holdout": real.iloc[1800:2400],
        "reference": real.iloc[2400:],
    }.items():
        part.to_csv(tmp_path / f"{name}.csv", index=False)
    example = yaml.safe_load(EXAMPLE.read_text())
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(example["dataset"]["spec"]))
    # where the release goes, not the statistics: the example's judging at plumbing weight
    judging = lighten(
        {k: example[k] for k in ("targets", "attacks", "gate", "audit", "mace") if k in example}
    )
    (tmp_path / "judging.yaml").write_text(yaml.safe_dump(judging))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "gate",
            "--train",
            "train.csv",
            "--holdout",
            "holdout.csv",
            "--reference",
            "reference.csv",
            "--synthetic",
            str(small_adult / "independent.csv"),
            "--spec",
            "spec.yaml",
            "--config",
            "judging.yaml",
            "--workdir",
            "wd",
            "--orchestrator",
            "local",
            "--publish-to",
            "s3://releases/gate-only",
            "--json",
        ],
        catch_exceptions=False,
    )
    verdict = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.exit_code == 0 and verdict["verdict"] == "APPROVE", verdict.get("reasons")
    assert len(list_published_s3("s3://releases/gate-only")) == 1
    assert not (tmp_path / "s3:").exists()


def test_doctor_lists_and_removes_s3_data_without_a_manifest(s3_env, tmp_path):
    from privacy_gate.review.doctor import orphans

    store = ReleaseStore(workdir=tmp_path, target="s3://releases/doctor")
    complete = store.publish(
        store.quarantine(_frame()), dataset="adult", verdict="APPROVE", run_id="r", config_hash=None
    )
    (tmp_path / "x.parquet").write_bytes(b"a killed upload")
    orphan = "s3://releases/doctor/adult-0123456789ab/adult-0123456789ab.parquet"
    objectstore.upload(tmp_path / "x.parquet", orphan)
    listed = orphans("s3://releases/doctor", fix=False, min_age=0)
    assert len(listed) == 1 and listed[0].line.startswith(f"{orphan}: ") and not listed[0].fixed
    assert objectstore.get_bytes(orphan) is not None
    fixed = orphans("s3://releases/doctor", fix=True, min_age=0)
    assert len(fixed) == 1 and fixed[0].fixed and "removed" in fixed[0].line
    assert objectstore.get_bytes(orphan) is None
    assert (
        objectstore.get_bytes(complete) is not None
        and orphans("s3://releases/doctor", fix=True, min_age=0) == []
    )
