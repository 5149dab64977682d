"""The quarantine on object storage: when releases are published to ``s3://``, the candidate
release waits there too, so any machine with the tracking store and the bucket can decide on it
(a reviewer's ``approve`` elsewhere, a worker replaced between gate and approval).

Written as publication is (``publish``): the data object is uploaded to
``<target>/.quarantine/<sha16>/synthetic.<fmt>``, read back and hashed, and only then is
``quarantine.json`` (file, sha256, rows, format) written beside it: the commit record. A data
object without it (a killed upload) is not a quarantined release and is overwritten by the next
one of the same content. The folder is hidden (a leading dot), so the publication reader
contract and ``doctor``'s orphan check pass it by.

Reading it back (:func:`fetch`) requires the commit record, downloads the object next to the
local quarantine (``<workdir>/quarantine/<sha16>/``, written atomically) and checks its hash
against the record and against the hash the gate judged.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from privacy_gate.errors import PrivacyGateError
from privacy_gate.private_files import private_dir, private_file, replace_private
from privacy_gate.publication import objectstore

FOLDER = ".quarantine"
COMMIT = "quarantine.json"


class QuarantineError(PrivacyGateError):
    """A quarantined release on object storage that is missing, incomplete or not the judged one."""


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def location(target: str, sha256: str, fmt: str) -> str:
    """Where a release with this hash waits under ``target`` (an ``s3://`` URI)."""
    return objectstore.join(target, FOLDER, sha256[:16], f"synthetic.{fmt}")


def _commit(uri: str) -> dict | None:
    raw = objectstore.get_bytes(objectstore.join(uri.rsplit("/", 1)[0], COMMIT))
    try:
        record = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return (
        record if isinstance(record, dict) and record.get("sha256") and record.get("file") else None
    )


def put(local: Path, *, target: str, sha256: str, rows: int, fmt: str) -> str:
    """Upload the local quarantined file, verify it by reading it back, then commit; returns its
    URI. Idempotent: a release already committed with this hash is not uploaded again."""
    uri = location(target, sha256, fmt)
    committed = _commit(uri)
    if committed is not None and committed["sha256"] == sha256:
        return uri
    objectstore.check_bucket(uri)
    objectstore.upload(Path(local), uri)
    with tempfile.TemporaryDirectory(prefix="privacy-gate-") as tmp:
        if sha256_of(objectstore.download(uri, Path(tmp) / "check")) != sha256:
            raise QuarantineError(f"the uploaded {uri} does not match its hash; not quarantined")
    record = {"file": uri.rsplit("/", 1)[1], "sha256": sha256, "rows": int(rows), "format": fmt}
    objectstore.put_bytes(
        json.dumps(record, indent=2).encode(), objectstore.join(uri.rsplit("/", 1)[0], COMMIT)
    )
    return uri


def fetch(uri: str, *, root: Path, sha256: str | None = None) -> Path:
    """The quarantined release at ``uri`` as a local file under ``root`` (downloaded once, written
    atomically), after checking it against its commit record and against ``sha256`` (the judged
    hash). Raises :class:`QuarantineError` when it is missing or differs."""
    committed = _commit(uri)
    if committed is None:
        raise QuarantineError(f"{uri}: no committed quarantined release ({COMMIT} missing)")
    if sha256 is not None and committed["sha256"] != sha256:
        raise QuarantineError(f"{uri}: the quarantined release is not the one judged")
    folder = Path(root) / committed["sha256"][:16]
    local = folder / uri.rsplit("/", 1)[1]
    # the local quarantine is private (0700 / 0600), as the store's; a link in it is refused, never
    # followed
    workdir = Path(root).parent
    private_dir(Path(root), parents=True, root=workdir)
    private_dir(folder, root=workdir)
    if os.path.lexists(local):
        private_file(local, root=workdir)
        if sha256_of(local) == committed["sha256"]:
            return local
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fetch-")
    os.close(fd)
    try:
        # boto3 writes a file of its own beside ``tmp`` and renames it over: mkstemp's 0600 is lost
        objectstore.download(uri, Path(tmp))
        private_file(Path(tmp), root=workdir)
        if sha256_of(Path(tmp)) != committed["sha256"]:
            raise QuarantineError(f"{uri} does not match the sha256 in its {COMMIT}")
        replace_private(Path(tmp), local, root=workdir)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return local


__all__ = ["COMMIT", "FOLDER", "QuarantineError", "fetch", "location", "put", "sha256_of"]
