"""Quarantine store and atomic publication.

Every candidate release first lands in ``<workdir>/quarantine/<sha>/``. Only an APPROVE verdict (or
a recorded approval) copies it to the publication target, atomically: write to a temp file in the
target folder, fsync, rename; the manifest is written the same way, after the data.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from privacy_gate.errors import PrivacyGateError

QUARANTINE_DIR = "quarantine"
PUBLISHED_DIR = "published"


@dataclass(frozen=True)
class QuarantinedRelease:
    path: Path
    sha256: str
    rows: int
    fmt: str


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(target: Path, write) -> None:
    """``write(tmp_path)`` then fsync + rename into ``target``; nothing half-written on failure."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ReleaseStore:
    def __init__(self, *, workdir: Path, target: Path | None = None):
        self.workdir = Path(workdir)
        self.quarantine_root = self.workdir / QUARANTINE_DIR
        self.target = Path(target) if target is not None else self.workdir / PUBLISHED_DIR

    def quarantine(self, df: pd.DataFrame, *, fmt: str = "parquet") -> QuarantinedRelease:
        """Write the candidate release into quarantine, addressed by its content hash."""
        self.quarantine_root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.quarantine_root) as tmp:
            local = Path(tmp) / f"synthetic.{fmt}"
            if fmt == "parquet":
                df.to_parquet(local, index=False)
            else:
                df.to_csv(local, index=False)
            sha = file_sha256(local)
            folder = self.quarantine_root / sha[:16]
            folder.mkdir(exist_ok=True)
            final = folder / local.name
            if not final.exists():
                _atomic_write(final, lambda p: shutil.copyfile(local, p))
        return QuarantinedRelease(path=final, sha256=sha, rows=len(df), fmt=fmt)

    def publish(self, release: QuarantinedRelease, *, dataset: str, verdict: str, run_id: str | None,
                config_hash: str | None, approval: dict[str, Any] | None = None) -> Path:
        """Copy an approved release to the target with a manifest. Refuses anything not approved."""
        if verdict != "APPROVE" and approval is None:
            raise PrivacyGateError(f"refusing to publish a release with verdict {verdict} and no recorded approval")
        if file_sha256(release.path) != release.sha256:
            raise PrivacyGateError(f"quarantined file {release.path} changed since it was judged; not publishing")
        name = f"{dataset}-{release.sha256[:12]}.{release.fmt}"
        out = self.target / name
        _atomic_write(out, lambda p: shutil.copyfile(release.path, p))
        manifest = {
            "file": name, "sha256": release.sha256, "rows": release.rows, "dataset": dataset,
            "run_id": run_id, "verdict": verdict, "config_hash": config_hash, "approval": approval,
            "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        _atomic_write(out.with_name(name + ".manifest.json"),
                      lambda p: p.write_text(json.dumps(manifest, indent=2)))
        return out
