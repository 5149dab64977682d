import json

import pandas as pd
import pytest

from privacy_gate.errors import PrivacyGateError
from privacy_gate.publication.publish import ReleaseStore, file_sha256, list_published


def _df():
    return pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})


def test_quarantine_is_content_addressed(tmp_path):
    store = ReleaseStore(workdir=tmp_path)
    q1 = store.quarantine(_df())
    q2 = store.quarantine(_df())
    assert q1 == q2 and q1.path.exists() and q1.path.parent.parent == tmp_path / "quarantine"
    assert file_sha256(q1.path) == q1.sha256
    assert not (tmp_path / "published").exists()


def test_publish_only_approved_with_manifest(tmp_path):
    store = ReleaseStore(workdir=tmp_path, target=tmp_path / "out")
    q = store.quarantine(_df())
    for verdict in ("BLOCK", "REVIEW"):
        with pytest.raises(PrivacyGateError, match="refusing to publish"):
            store.publish(q, dataset="d", verdict=verdict, run_id="r", config_hash="c")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    out = store.publish(q, dataset="d", verdict="APPROVE", run_id="r1", config_hash="c1")
    assert out.parent.parent == tmp_path / "out" and out.parent.name == f"d-{q.sha256[:12]}"
    manifest = json.loads((out.parent / "manifest.json").read_text())
    assert manifest["sha256"] == q.sha256 == file_sha256(out)
    assert (
        manifest["run_id"] == "r1"
        and manifest["verdict"] == "APPROVE"
        and manifest["config_hash"] == "c1"
    )
    pd.testing.assert_frame_equal(pd.read_parquet(out), _df())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        out.parent.name
    ]  # no staging left
    assert list_published(tmp_path / "out") == [out.parent]


def test_publish_refuses_tampered_quarantine(tmp_path):
    store = ReleaseStore(workdir=tmp_path)
    q = store.quarantine(_df())
    q.path.write_bytes(q.path.read_bytes() + b"x")
    with pytest.raises(PrivacyGateError, match="changed since it was judged"):
        store.publish(q, dataset="d", verdict="APPROVE", run_id="r", config_hash=None)
    assert not (tmp_path / "published").exists() or not any((tmp_path / "published").iterdir())
