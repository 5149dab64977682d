"""Quarantine store and atomic publication.

Every candidate release first lands in ``<workdir>/quarantine/<sha16>/`` (private: folders 0700,
files 0600, whatever the umask). Only an APPROVE verdict (or a recorded approval) publishes it.
Publication is one atomic step:

1. A private staging directory ``<target>/.staging-<host>-<pid>-<token>/`` (0700, files 0600) is
   made inside the target, on the same filesystem; the data file and ``manifest.json`` are
   written into it and fsynced, then given the modes the umask gives (a release is to be read).
2. It is renamed to ``<target>/<slug>-<sha12>/``, and the target folder is fsynced.

**Reader contract.** A published release is a directory directly inside the target whose name
does not start with a dot, that holds ``manifest.json``, and whose data file (the manifest's
``file``) hashes to the manifest's ``sha256``. Readers ignore anything else: hidden directories
are work in progress or leftovers of a killed run. :func:`list_published` and
:func:`verify_published` implement the contract.

A crash at any instant leaves either nothing visible or a complete, manifested release (stale
staging of dead processes is removed the next time a store publishes). With an ``s3://`` target
the quarantine is also committed to the bucket (see ``quarantine``).

**Object storage** (``publish.target: s3://bucket/prefix``): an object store has no rename, but a
PUT is atomic per object, so the manifest is the commit record. The data object is uploaded to
``<prefix>/<slug>-<sha12>/``, read back and hashed, and only then is ``manifest.json`` written
beside it. The reader contract is the same: a release is a folder holding ``manifest.json``
whose data object hashes to the manifest's ``sha256``; a data object without a manifest (a
killed upload) is invisible and is overwritten by the next publication of the same release.

The directory name comes from a sanitised slug of the dataset name and the content hash. The
final path is checked to lie inside the target, so a dataset name such as ``../x`` or ``/etc/x``
cannot write elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from privacy_gate.errors import PrivacyGateError
from privacy_gate.private_files import (
    confine,
    copy_private,
    make_shared,
    open_private,
    private_dir,
    private_file,
    replace_private,
    write_private,
)
from privacy_gate.publication import objectstore, quarantine
from privacy_gate.publication.work_dirs import (  # noqa: F401
    STALE_SECONDS,
    TempDir,
    clean_stale,
    make_temp_dir,
    temp_dir_owner,
    temp_dirs,
)

QUARANTINE_DIR = "quarantine"
QUARANTINE_TMP_PREFIX = ".tmp-"
PUBLISHED_DIR = "published"
MANIFEST = "manifest.json"
STAGING_PREFIX = ".staging-"


class PublishError(PrivacyGateError):
    """Publication refused or failed; nothing incomplete is visible in the target."""


@dataclass(frozen=True)
class QuarantinedRelease:
    path: Path  # the local file (judged, hashed and published from)
    sha256: str
    rows: int
    fmt: str
    uri: str | None = (
        None  # its committed copy on object storage, when the target is s3:// (``quarantine``)
    )

    @property
    def location(self) -> str:
        """Where it waits, as sealed on the run: the object-storage copy, else the local path."""
        return self.uri or str(Path(self.path).resolve())


def count_rows(path: Path) -> int:
    """The number of data rows of a quarantined file (Parquet: from its footer; CSV: read)."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    return int(len(pd.read_csv(path)))


def quarantined_file(path: Path, sha256: str) -> QuarantinedRelease:
    """A release already in quarantine (read back by a review), with its real row count."""
    path = Path(path)
    return QuarantinedRelease(
        path=path, sha256=sha256, rows=count_rows(path), fmt=path.suffix.lstrip(".")
    )


def file_sha256(path: Path) -> str:
    return quarantine.sha256_of(path)


def dataset_slug(name: str) -> str:
    """A file-name-safe slug of a dataset name: no separators, no leading dots, <= 64 chars.

    >>> [dataset_slug(n) for n in ("../../etc/Passwd", "/abs/name", "", "Adult 2024")]
    ['etc-passwd', 'abs-name', 'dataset', 'adult-2024']
    """
    slug = re.sub(r"[^a-z0-9._-]+", "-", str(name).lower())
    slug = re.sub(r"-{2,}", "-", slug).strip(".-_")[:64].strip(".-_")
    return slug or "dataset"


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _copy_file(src: Path, dst: Path) -> None:
    copy_private(
        src, dst
    )  # 0600 from its creation: staging is private until the release is complete


def verify_published(folder: Path) -> dict[str, Any]:
    """The manifest of a published release directory, after checking the data against it."""
    folder = Path(folder)
    manifest_path = folder / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
        data = folder / manifest["file"]
    except (OSError, ValueError, KeyError, TypeError):
        raise PublishError(f"{folder}: no readable {MANIFEST}; not a published release") from None
    if Path(manifest["file"]).name != manifest["file"] or not data.is_file():
        raise PublishError(f"{folder}: the data file named in {MANIFEST} is missing")
    if file_sha256(data) != manifest.get("sha256"):
        raise PublishError(f"{folder}: {manifest['file']} does not match the sha256 in {MANIFEST}")
    return manifest


def list_published(target: Path) -> list[Path]:
    """The release directories in ``target`` that satisfy the reader contract, sorted by name."""
    target = Path(target)
    if not target.is_dir():
        return []
    out = []
    for entry in sorted(target.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        try:
            verify_published(entry)
        except PublishError:
            continue
        out.append(entry)
    return out


def _manifest(
    release: QuarantinedRelease,
    *,
    name: str,
    dataset: str,
    verdict: str,
    run_id: str | None,
    config_hash: str | None,
    approval: dict[str, Any] | None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "file": name,
        "sha256": release.sha256,
        "rows": release.rows,
        "format": release.fmt,
        "dataset": dataset,
        "run_id": run_id,
        "verdict": verdict,
        "config_hash": config_hash,
        "approval": approval,
        "published_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **(extra or {}),
    }


def verify_published_s3(folder: str) -> dict[str, Any]:
    """The manifest of a release folder on object storage, after hashing its data object."""
    raw = objectstore.get_bytes(objectstore.join(folder, MANIFEST))
    try:
        manifest = json.loads(raw) if raw is not None else None
        name = manifest["file"]
    except (ValueError, KeyError, TypeError):
        manifest = None
    if manifest is None or "/" in name:
        raise PublishError(f"{folder}: no readable {MANIFEST}; not a published release")
    with tempfile.TemporaryDirectory(prefix="privacy-gate-") as tmp:
        try:
            local = objectstore.download(objectstore.join(folder, name), Path(tmp) / name)
        except PrivacyGateError:
            raise PublishError(
                f"{folder}: the data object named in {MANIFEST} is missing"
            ) from None
        if file_sha256(local) != manifest.get("sha256"):
            raise PublishError(f"{folder}: {name} does not match the sha256 in {MANIFEST}")
    return manifest


def list_published_s3(target: str) -> list[str]:
    """The release folders under an ``s3://`` target that satisfy the reader contract."""
    out = []
    for folder in objectstore.list_prefixes(target):
        try:
            verify_published_s3(folder)
        except PublishError:
            continue
        out.append(folder)
    return out


class ReleaseStore:
    """``target``: a folder, or an ``s3://bucket/prefix`` (default ``<workdir>/published``)."""

    def __init__(self, *, workdir: Path, target: Path | str | None = None):
        self.workdir = Path(workdir)
        self.quarantine_root = self.workdir / QUARANTINE_DIR
        # the default target is part of the workdir: a link planted there is refused like one in the
        # quarantine (a target elsewhere is the operator's choice: --publish-to / publish.target)
        self._target_root: Path | None = None
        if objectstore.is_s3(target):
            self.target: Path | str = str(target).rstrip("/")
        elif target is not None:
            self.target = Path(target)
        else:
            self.target, self._target_root = self.workdir / PUBLISHED_DIR, self.workdir

    @property
    def target_label(self) -> str:
        """The target as recorded on the run (absolute path or URI)."""
        return self.target if isinstance(self.target, str) else str(self.target.resolve())

    def quarantine(self, df: pd.DataFrame, *, fmt: str = "parquet") -> QuarantinedRelease:
        """Write the candidate release into quarantine, addressed by its content hash; private
        (folders 0700, files 0600) whatever the umask: it may hold training records."""
        # every step below refuses a symbolic link under the workdir (private_files.LinkRefused)
        root = self.workdir
        private_dir(self.quarantine_root, parents=True, root=root)
        clean_stale(self.quarantine_root, prefix=QUARANTINE_TMP_PREFIX)
        tmp = make_temp_dir(self.quarantine_root, QUARANTINE_TMP_PREFIX, root=root)
        try:
            local = tmp / f"synthetic.{fmt}"
            open_private(
                local, root=root
            ).close()  # 0600 from the start: the writers keep an existing file's mode
            if fmt == "parquet":
                df.to_parquet(local, index=False)
            else:
                df.to_csv(local, index=False)
            private_file(local, root=root)
            _fsync_file(local)
            sha = file_sha256(local)
            folder = private_dir(self.quarantine_root / sha[:16], root=root)
            final = folder / local.name
            if not os.path.lexists(final):
                replace_private(local, final, root=root)  # same filesystem: atomic
                _fsync_dir(folder)
            else:
                private_file(
                    final, root=root
                )  # an older version's quarantine may be wider; a link is refused
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        uri = None
        if isinstance(self.target, str):  # any machine with the bucket can decide on it
            uri = quarantine.put(final, target=self.target, sha256=sha, rows=len(df), fmt=fmt)
        return QuarantinedRelease(path=final, sha256=sha, rows=len(df), fmt=fmt, uri=uri)

    def release_dir(self, release: QuarantinedRelease, dataset: str) -> Path | str:
        """Where ``release`` is (or would be) published; always inside the target."""
        if isinstance(self.target, str):  # the slug has no "/" and no leading dot: one level below
            return objectstore.join(self.target, f"{dataset_slug(dataset)}-{release.sha256[:12]}")
        root = self.target.resolve()
        final = (root / f"{dataset_slug(dataset)}-{release.sha256[:12]}").resolve()
        if final.parent != root:
            raise PublishError(f"refusing to publish outside the target {root}: {final}")
        return final

    def publish(
        self,
        release: QuarantinedRelease,
        *,
        dataset: str,
        verdict: str,
        run_id: str | None,
        config_hash: str | None,
        approval: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Path | str:
        """Publish an approved release atomically; returns the published data file. Refuses
        anything not approved, and a quarantined file that changed since it was judged.
        ``extra``: more manifest fields (e.g. a remediation ladder's record and budget)."""
        if verdict != "APPROVE" and approval is None:
            raise PublishError(
                f"refusing to publish a release with verdict {verdict} and no recorded approval"
            )
        if file_sha256(release.path) != release.sha256:
            raise PublishError(
                f"quarantined file {release.path} changed since it was judged; not publishing"
            )
        if isinstance(self.target, str):
            return self._publish_s3(
                release,
                dataset=dataset,
                verdict=verdict,
                run_id=run_id,
                config_hash=config_hash,
                approval=approval,
                extra=extra,
            )
        final = self.release_dir(release, dataset)
        name = f"{final.name}.{release.fmt}"
        if (
            final.exists()
        ):  # published before (an idempotent re-run): only if complete and identical
            manifest = verify_published(final)
            if manifest["sha256"] != release.sha256:
                raise PublishError(f"{final} already holds a different release")
            return final / manifest["file"]
        confine(self.target, self._target_root)
        self.target.mkdir(parents=True, exist_ok=True)
        confine(self.target, self._target_root)
        clean_stale(self.target, prefix=STAGING_PREFIX)
        staging = make_temp_dir(self.target, STAGING_PREFIX)
        try:
            _copy_file(release.path, staging / name)
            _fsync_file(staging / name)
            if file_sha256(staging / name) != release.sha256:
                raise PublishError(
                    f"the copy of {release.path} does not match its hash; not publishing"
                )
            manifest = _manifest(
                release,
                name=name,
                dataset=dataset,
                verdict=verdict,
                run_id=run_id,
                config_hash=config_hash,
                approval=approval,
                extra=extra,
            )
            write_private(staging / MANIFEST, json.dumps(manifest, indent=2).encode())
            _fsync_file(staging / MANIFEST)
            make_shared(
                staging, [staging / name, staging / MANIFEST]
            )  # complete: the umask's modes, then visible
            _fsync_dir(staging)
            try:
                os.rename(staging, final)  # the one step that makes the release visible
            except OSError:
                if not final.exists():
                    raise
                # a concurrent publisher of the same release won the rename: theirs must be complete
                if verify_published(final)["sha256"] != release.sha256:
                    raise PublishError(f"{final} already holds a different release") from None
            with contextlib.suppress(OSError):  # visible now: published whatever the fsync says
                _fsync_dir(self.target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return final / name

    def visible(self, release: QuarantinedRelease | None, dataset: str) -> Path | str | None:
        """The data file of ``release`` if the target holds it complete (reader contract), else
        None: what a publication that reported a failure left visible."""
        if release is None:
            return None
        folder = self.release_dir(release, dataset)
        try:
            if isinstance(folder, str):
                manifest = verify_published_s3(folder)
                where: Path | str = objectstore.join(folder, manifest["file"])
            else:
                manifest = verify_published(folder)
                where = folder / manifest["file"]
        except PrivacyGateError:
            return None
        return where if manifest.get("sha256") == release.sha256 else None

    def _publish_s3(
        self,
        release: QuarantinedRelease,
        *,
        dataset: str,
        verdict: str,
        run_id: str | None,
        config_hash: str | None,
        approval: dict[str, Any] | None,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """Data object first, verified by reading it back; the manifest last (the commit)."""
        folder = self.release_dir(release, dataset)
        name = f"{folder.rsplit('/', 1)[-1]}.{release.fmt}"
        if objectstore.get_bytes(objectstore.join(folder, MANIFEST)) is not None:
            manifest = verify_published_s3(
                folder
            )  # published before: only if complete and identical
            if manifest["sha256"] != release.sha256:
                raise PublishError(f"{folder} already holds a different release")
            return objectstore.join(folder, manifest["file"])
        objectstore.check_bucket(folder)
        data_uri = objectstore.join(folder, name)
        objectstore.upload(release.path, data_uri)
        manifest = _manifest(
            release,
            name=name,
            dataset=dataset,
            verdict=verdict,
            run_id=run_id,
            config_hash=config_hash,
            approval=approval,
            extra=extra,
        )
        with tempfile.TemporaryDirectory(prefix="privacy-gate-") as tmp:
            if file_sha256(objectstore.download(data_uri, Path(tmp) / name)) != release.sha256:
                raise PublishError(
                    f"the uploaded {data_uri} does not match its hash; not publishing"
                )
        objectstore.put_bytes(
            json.dumps(manifest, indent=2).encode(), objectstore.join(folder, MANIFEST)
        )
        return data_uri


def read_quarantined(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path) if Path(path).suffix == ".parquet" else pd.read_csv(path)


__all__ = [
    "MANIFEST",
    "PublishError",
    "QuarantinedRelease",
    "ReleaseStore",
    "TempDir",
    "clean_stale",
    "count_rows",
    "dataset_slug",
    "file_sha256",
    "list_published",
    "list_published_s3",
    "quarantined_file",
    "read_quarantined",
    "temp_dir_owner",
    "temp_dirs",
    "verify_published",
    "verify_published_s3",
]
