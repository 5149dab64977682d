"""The quarantine on object storage: with an ``s3://`` publish target the candidate release waits
in the bucket too (uploaded, read back and hashed, then committed), so an approval made in another
workdir (another machine) against the same MLflow store and bucket publishes it. moto's S3
server."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from privacy_gate import names, tracking
from privacy_gate.publication import objectstore, quarantine
from privacy_gate.publication.publish import (
    QUARANTINE_DIR,
    ReleaseStore,
    list_published_s3,
    verify_published_s3,
)

from ..conftest import write_group_copy_release

GROUP = "race=Asian-Pac-Islander"


def test_quarantine_is_committed_to_the_bucket_and_fetched_back_verified(s3_env, tmp_path):
    store = ReleaseStore(workdir=tmp_path / "a", target="s3://releases/q1")
    q = store.quarantine(pd.DataFrame({"age": range(40), "sex": ["F", "M"] * 20}))
    assert (
        q.uri == quarantine.location("s3://releases/q1", q.sha256, "parquet")
        and q.location == q.uri
    )
    assert q.uri.startswith("s3://releases/q1/.quarantine/")
    assert list_published_s3("s3://releases/q1") == []  # waiting is not published
    local = quarantine.fetch(q.uri, root=tmp_path / "b" / QUARANTINE_DIR, sha256=q.sha256)
    assert local.read_bytes() == q.path.read_bytes() and local.is_relative_to(tmp_path / "b")
    with pytest.raises(quarantine.QuarantineError, match="not the one judged"):
        quarantine.fetch(q.uri, root=tmp_path / "c", sha256="0" * 64)
    # a data object without its commit record (a killed upload) is no quarantined release
    objectstore.delete(objectstore.join(q.uri.rsplit("/", 1)[0], quarantine.COMMIT))
    with pytest.raises(quarantine.QuarantineError, match="no committed"):
        quarantine.fetch(q.uri, root=tmp_path / "d")
    # tampered data under a commit record: refused
    store.quarantine(pd.DataFrame({"age": range(40), "sex": ["F", "M"] * 20}))  # commits again
    other = tmp_path / "other.parquet"
    pd.DataFrame({"age": [1]}).to_parquet(other)
    objectstore.upload(other, q.uri)
    with pytest.raises(quarantine.QuarantineError, match="does not match"):
        quarantine.fetch(q.uri, root=tmp_path / "e")


def test_local_targets_keep_a_local_quarantine(tmp_path):
    q = ReleaseStore(workdir=tmp_path, target=tmp_path / "pub").quarantine(
        pd.DataFrame({"a": [1, 2]})
    )
    assert q.uri is None and q.location == str(q.path.resolve())


@pytest.mark.timeout(600)
def test_approve_in_another_workdir_publishes_the_quarantined_release(
    s3_env, small_adult, tmp_path
):
    """Gate in workdir A (its local quarantine then lost, as with a replaced worker); approve from
    workdir B against A's MLflow store: the release comes from the bucket, verified, and is
    published."""
    from privacy_gate.config import load_release_config
    from privacy_gate.pipeline import LocalExecutor
    from privacy_gate.review.decide import decide_run
    from privacy_gate.runs.release import release_run

    config = load_release_config(
        write_group_copy_release(
            small_adult,
            tmp_path / "data",
            name="s3q.yaml",
            audit={"intersections": [], "min_group_size": 15},
            publish={"target": "s3://releases/adult"},
        )
    )
    a, b = tmp_path / "wd-a", tmp_path / "wd-b"
    with LocalExecutor() as executor:
        result = release_run(config, workdir=a, executor=executor)
    verdict = result.verdict
    assert verdict.decision == "REVIEW" and GROUP in verdict.flagged_subgroups, verdict.reasons
    uri = tracking.default_tracking_uri(a)
    tags = tracking.Tracker(uri=uri, experiment=None).run_tags(verdict.run_id)
    judged = verdict.data_hashes["synthetic_file_sha256"]
    assert tags[names.TAG_QUARANTINE] == quarantine.location(
        "s3://releases/adult", judged, "parquet"
    )
    shutil.rmtree(a / QUARANTINE_DIR)  # the gate's machine is gone
    decision = decide_run(
        verdict.run_id,
        action="approve",
        reviewer="ana",
        comment="checked",
        tracking_uri=uri,
        workdir=str(b),
    )
    published = list_published_s3("s3://releases/adult")
    assert len(published) == 1 and decision.published.startswith(published[0])
    manifest = verify_published_s3(published[0])
    assert manifest["sha256"] == judged and manifest["run_id"] == verdict.run_id
    assert list((b / QUARANTINE_DIR).rglob("*.parquet"))  # fetched into B's quarantine, verified
