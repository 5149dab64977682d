"""A symbolic link planted in the workdir is never followed: at
``quarantine/<sha>/synthetic.parquet``, at ``quarantine/<sha>``, at ``quarantine`` itself or at the
default ``published`` folder, pointing out of the workdir. It used to be: the outside file was
chmod-ed 0600, the outside folder 0700, and either received the release (a BLOCKed release's
training copies included). Now the write is refused with an error naming the link and saying to
remove it, nothing outside changes (content, mode, mtime), and a gate that meets such a link BLOCKs
with that message."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.private_files import LinkRefused
from privacy_gate.publication import quarantine
from privacy_gate.publication.publish import QUARANTINE_DIR, ReleaseStore

from ..conftest import EXAMPLE, lighten

OLD = 1_600_000_000  # the outside things' mtime, set before and checked after


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"age": range(30), "sex": ["F", "M", "F"] * 10})


def _outside(tmp_path: Path) -> Path:
    """A folder outside the workdir holding one file, 0755 / 0644, with an old mtime."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "victim.parquet").write_bytes(b"not yours")
    os.chmod(out / "victim.parquet", 0o644)
    os.chmod(out, 0o755)
    for p in (out / "victim.parquet", out):
        os.utime(p, (OLD, OLD))
    return out


def _state(folder: Path) -> dict:
    """Names, bytes, modes and mtimes of ``folder`` and everything in it (never through a link)."""
    seen = {}
    for p in [folder, *sorted(folder.rglob("*"))]:
        info = p.lstat()
        seen[str(p.relative_to(folder))] = (
            stat.S_IMODE(info.st_mode),
            info.st_mtime,
            p.read_bytes() if p.is_file() else None,
        )
    return seen


def _plant(workdir: Path, where: str, outside: Path, sha16: str) -> Path:
    q = workdir / QUARANTINE_DIR
    if where == "quarantine":
        workdir.mkdir(parents=True, exist_ok=True)
        link, target = q, outside
    elif where == "release-folder":
        q.mkdir(parents=True)
        link, target = q / sha16, outside
    else:
        (q / sha16).mkdir(parents=True)
        link, target = q / sha16 / "synthetic.parquet", outside / "victim.parquet"
    link.symlink_to(target)
    return link


WHERE = ["release-file", "release-folder", "quarantine"]


@pytest.mark.parametrize("where", WHERE)
def test_a_planted_link_in_the_quarantine_is_refused_and_nothing_outside_changes(tmp_path, where):
    sha16 = ReleaseStore(workdir=tmp_path / "first").quarantine(_frame()).sha256[:16]
    outside = _outside(tmp_path)
    before = _state(outside)
    workdir = tmp_path / "wd"
    link = _plant(workdir, where, outside, sha16)
    with pytest.raises(LinkRefused) as caught:
        ReleaseStore(workdir=workdir).quarantine(_frame())
    assert caught.value.filename == str(link)
    assert f"remove the link (rm {link})" in str(caught.value)
    assert _state(outside) == before
    assert link.is_symlink()  # left for the operator to see and remove


def test_a_planted_published_folder_is_refused(tmp_path):
    outside = _outside(tmp_path)
    before = _state(outside)
    store = ReleaseStore(workdir=tmp_path / "wd")
    release = store.quarantine(_frame())
    (tmp_path / "wd" / "published").symlink_to(outside)
    with pytest.raises(LinkRefused):
        store.publish(release, dataset="toy", verdict="APPROVE", run_id="r1", config_hash=None)
    assert _state(outside) == before


def test_a_release_fetched_back_never_follows_a_planted_link(tmp_path, monkeypatch):
    source = ReleaseStore(workdir=tmp_path / "a").quarantine(_frame())
    record = {"file": "synthetic.parquet", "sha256": source.sha256, "rows": 30, "format": "parquet"}
    monkeypatch.setattr(quarantine, "_commit", lambda uri: record)
    monkeypatch.setattr(
        quarantine.objectstore,
        "download",
        lambda uri, dest: Path(dest).write_bytes(source.path.read_bytes()) and Path(dest),
    )
    outside = _outside(tmp_path)
    before = _state(outside)
    link = _plant(tmp_path / "b", "release-file", outside, source.sha256[:16])
    uri = quarantine.location("s3://releases/q", source.sha256, "parquet")
    with pytest.raises(LinkRefused):
        quarantine.fetch(uri, root=tmp_path / "b" / QUARANTINE_DIR, sha256=source.sha256)
    assert _state(outside) == before and link.is_symlink()


# --------------------------------------------------------------------------------- through the gate

runner = CliRunner()


@pytest.fixture(scope="module")
def copy_files(small_adult, tmp_path_factory):
    """train / holdout / reference, a release that is train copied (a BLOCK), and the quarantine
    folder name a gate gives that release (from one gate run)."""
    folder = tmp_path_factory.mktemp("links")
    real = pd.read_csv(small_adult / "real.csv")
    for name, df in {
        "train": real.iloc[:1800],
        "holdout": real.iloc[1800:2400],
        "reference": real.iloc[2400:],
    }.items():
        df.to_csv(folder / f"{name}.csv", index=False)
    real.iloc[:1800].to_csv(folder / "synthetic.csv", index=False)
    (folder / "spec.yaml").write_text(
        yaml.safe_dump(yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"])
    )
    (folder / "judging.yaml").write_text(yaml.safe_dump(lighten({})))
    code, out = _gate(folder, folder / "first")
    assert code == 4, out
    [sha_dir] = [
        p for p in (folder / "first" / QUARANTINE_DIR).iterdir() if not p.name.startswith(".")
    ]
    return folder, sha_dir.name


def _gate(folder: Path, workdir: Path) -> tuple[int, str]:
    r = runner.invoke(
        app,
        [
            "gate",
            *(
                f"--{n}={folder / f'{n}.csv'}"
                for n in ("train", "holdout", "reference", "synthetic")
            ),
            f"--spec={folder / 'spec.yaml'}",
            f"--config={folder / 'judging.yaml'}",
            f"--workdir={workdir}",
            "--orchestrator=local",
            "--json",
        ],
    )
    return r.exit_code, r.stderr + r.stdout  # the verdict JSON stays the last line


@pytest.mark.parametrize("where", WHERE)
def test_a_gate_meeting_a_planted_link_blocks_naming_it(copy_files, tmp_path, where):
    folder, sha16 = copy_files
    outside = _outside(tmp_path)
    before = _state(outside)
    link = _plant(tmp_path / "wd", where, outside, sha16)
    code, out = _gate(folder, tmp_path / "wd")
    assert code == 4, out
    assert json.loads(out.strip().splitlines()[-1])["verdict"] == "BLOCK"
    assert "symbolic link" in out and str(link) in out and "remove the link" in out, out[-3000:]
    assert "Traceback" not in out
    assert _state(outside) == before
