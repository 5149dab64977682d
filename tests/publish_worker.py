"""Subprocess for the kill-at-any-instant publication test: publishes one quarantined release
with a slowed writer (every copy chunk and every fsync sleeps), so SIGKILL lands mid-step."""

import sys
import time
from pathlib import Path

import privacy_gate.publication.publish as publish

DELAY = float(sys.argv[4]) if len(sys.argv) > 4 else 0.002


def slow_copy(src: Path, dst: Path) -> None:
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while chunk := fin.read(4096):
            fout.write(chunk)
            fout.flush()
            time.sleep(DELAY)


def slow(fn):
    def wrapped(*args, **kwargs):
        time.sleep(DELAY * 20)
        return fn(*args, **kwargs)

    return wrapped


publish._copy_file = slow_copy
publish._fsync_file = slow(publish._fsync_file)
publish._fsync_dir = slow(publish._fsync_dir)

workdir, target, path = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
store = publish.ReleaseStore(workdir=workdir, target=target)
release = publish.QuarantinedRelease(
    path=path, sha256=publish.file_sha256(path), rows=-1, fmt=path.suffix[1:]
)
print("READY", flush=True)
print(
    store.publish(release, dataset="adult", verdict="APPROVE", run_id="r", config_hash=None),
    flush=True,
)
