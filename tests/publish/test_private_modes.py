"""Quarantined and staged releases are readable by their owner only, whatever the umask:
a BLOCKed release holding verbatim training records used to sit at 0644 in a 0755
folder. Quarantine and staging folders are 0700 and their files 0600 from the moment they exist;
a published release gets the modes the publishing process's umask gives (it is meant to be read).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from privacy_gate.publication import publish, quarantine
from privacy_gate.publication.publish import QUARANTINE_DIR, STAGING_PREFIX, ReleaseStore

UMASKS = [0o022, 0o000]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"age": range(30), "sex": ["F", "M", "F"] * 10})


@pytest.fixture(params=UMASKS, ids=[f"umask-{u:03o}" for u in UMASKS])
def umask(request):
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _watch_writes(monkeypatch) -> list[tuple[Path, int, int]]:
    """(file, its mode, its folder's mode) each time a quarantine or publication file is fsynced,
    i.e. written and not yet moved into place."""
    seen: list[tuple[Path, int, int]] = []
    original = publish._fsync_file

    def spy(path):
        path = Path(path)
        seen.append((path, mode(path), mode(path.parent)))
        return original(path)

    monkeypatch.setattr(publish, "_fsync_file", spy)
    return seen


def _tree_modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): mode(p) for p in [root, *root.rglob("*")]}


def test_a_quarantined_release_is_private_whatever_the_umask(tmp_path, umask, monkeypatch):
    writes = _watch_writes(monkeypatch)
    store = ReleaseStore(workdir=tmp_path / "wd")
    q = store.quarantine(_frame())
    root = tmp_path / "wd" / QUARANTINE_DIR
    modes = _tree_modes(root)
    dirs = {k: v for k, v in modes.items() if (root / k).is_dir() or k == "."}
    files = {k: v for k, v in modes.items() if (root / k).is_file()}
    assert files == {str(q.path.relative_to(root)): 0o600}, modes
    assert set(dirs.values()) == {0o700}, {k: oct(v) for k, v in dirs.items()}
    # while it was written (in the quarantine's work folder), it was private too
    assert writes and all(m == 0o600 and d == 0o700 for _, m, d in writes), writes


def test_an_older_wider_quarantine_is_tightened(tmp_path, umask):
    """A quarantine left by an older version (0755 folders, 0644 files) is made private the next
    time the store writes into it."""
    first = ReleaseStore(workdir=tmp_path).quarantine(_frame())
    root = tmp_path / QUARANTINE_DIR
    os.chmod(root, 0o755)
    os.chmod(first.path.parent, 0o755)
    os.chmod(first.path, 0o644)
    again = ReleaseStore(workdir=tmp_path).quarantine(_frame())  # the same release: already there
    assert again.path == first.path
    assert (mode(root), mode(first.path.parent), mode(first.path)) == (0o700, 0o700, 0o600)


def test_staging_is_private_and_the_published_release_follows_the_umask(
    tmp_path, umask, monkeypatch
):
    store = ReleaseStore(workdir=tmp_path / "wd", target=tmp_path / "pub")
    q = store.quarantine(_frame())
    writes = _watch_writes(monkeypatch)
    published = Path(
        store.publish(q, dataset="toy", verdict="APPROVE", run_id="r1", config_hash=None)
    )
    staged = [(p, m, d) for p, m, d in writes if p.parent.name.startswith(STAGING_PREFIX)]
    assert {p.name for p, _, _ in staged} == {published.name, publish.MANIFEST}, writes
    assert all(m == 0o600 and d == 0o700 for _, m, d in staged), staged
    # published: what this umask gives a new folder and file ("as configured"), never wider
    assert mode(published.parent) == 0o777 & ~umask
    assert mode(published) == mode(published.parent / publish.MANIFEST) == 0o666 & ~umask
    assert publish.list_published(tmp_path / "pub") == [published.parent]
    assert not [
        p for p in (tmp_path / "pub").iterdir() if p.name.startswith(".")
    ]  # no staging left


def test_a_killed_publication_leaves_only_a_private_staging_folder(tmp_path, umask, monkeypatch):
    """A publication killed while it writes leaves a hidden staging folder: private, never
    readable by others (doctor removes it)."""
    store = ReleaseStore(workdir=tmp_path / "wd", target=tmp_path / "pub")
    q = store.quarantine(_frame())
    original = publish._fsync_file

    def killed(path):
        original(path)
        if Path(path).name == publish.MANIFEST:
            raise KeyboardInterrupt("killed once the manifest is written")

    monkeypatch.setattr(publish, "_fsync_file", killed)
    monkeypatch.setattr(publish.shutil, "rmtree", lambda *a, **k: None)  # a kill runs no clean-up
    with pytest.raises(KeyboardInterrupt):
        store.publish(q, dataset="toy", verdict="APPROVE", run_id="r1", config_hash=None)
    staging = [p for p in (tmp_path / "pub").iterdir() if p.name.startswith(STAGING_PREFIX)]
    assert len(staging) == 1
    assert mode(staging[0]) == 0o700
    assert {p.name: mode(p) for p in staging[0].iterdir()} == {
        f"{store.release_dir(q, 'toy').name}.parquet": 0o600,
        publish.MANIFEST: 0o600,
    }


def test_a_release_fetched_from_object_storage_is_private(tmp_path, umask, monkeypatch):
    """The quarantine fetched back from a bucket (an approval on another machine) lands in a
    private folder as a private file."""
    source = ReleaseStore(workdir=tmp_path / "a").quarantine(_frame())

    def download(uri, dest):
        Path(dest).write_bytes(source.path.read_bytes())
        return Path(dest)

    record = {"file": "synthetic.parquet", "sha256": source.sha256, "rows": 30, "format": "parquet"}
    monkeypatch.setattr(quarantine, "_commit", lambda uri: record)
    monkeypatch.setattr(quarantine.objectstore, "download", download)
    uri = quarantine.location("s3://releases/q", source.sha256, "parquet")
    local = quarantine.fetch(uri, root=tmp_path / "b" / QUARANTINE_DIR, sha256=source.sha256)
    root = tmp_path / "b" / QUARANTINE_DIR
    assert (mode(root), mode(local.parent), mode(local)) == (0o700, 0o700, 0o600)
