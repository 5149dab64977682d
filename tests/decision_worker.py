"""Subprocess for the decision-kill tests: ``privacy-gate ARGS...`` (``approve`` or ``reject``)
that stops at one step of the decision, prints ``AT <step>`` and waits there to be killed
(SIGKILL from the test, through ``tests/reaper.py``).

Steps (``python tests/decision_worker.py STEP approve RUN --reviewer NAME --workdir W``):

- ``decision-file``: the decision record ``review/decision-NNN-<action>.json`` has been written;
- ``tag-set``: the approval tags have been set (``approval.status=approved|rejected``);
- ``publish-started``: the release is staged in the target (data and manifest written), not yet
  renamed into place;
- ``publish-done``: the release is published, ``approval.published`` not yet set.

The hooks wrap the tracker's and the store's own methods, so the decision runs its real code up
to the step. The wait is bounded (a worker nobody kills exits on its own, with status 99).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.publication import publish

STEPS = ("decision-file", "tag-set", "publish-started", "publish-done")


def stop_here(step: str) -> None:
    print(f"AT {step}", flush=True)
    time.sleep(120)
    os._exit(99)


def hook(step: str) -> None:
    if step == "decision-file":
        original = tracking.Tracker.log_json

        def log_json(self, run_id, obj, path):
            text = original(self, run_id, obj, path)
            if path.startswith(f"{names.DECISIONS_DIR}/decision-") and not path.endswith(
                "-void.json"
            ):
                stop_here(step)
            return text

        tracking.Tracker.log_json = log_json
    elif step == "tag-set":
        original_tags = tracking.Tracker.set_tags

        def set_tags(self, run_id, tags):
            original_tags(self, run_id, tags)
            if tags.get(names.TAG_APPROVAL_STATUS) in ("approved", "rejected"):
                stop_here(step)

        tracking.Tracker.set_tags = set_tags
    elif step == "publish-started":
        original_fsync = publish._fsync_dir

        def fsync_dir(folder):
            original_fsync(folder)
            folder = Path(folder)
            if (
                folder.name.startswith(publish.STAGING_PREFIX)
                and (folder / publish.MANIFEST).exists()
            ):
                stop_here(step)  # staged, manifest written: the rename is next

        publish._fsync_dir = fsync_dir
    elif step == "publish-done":
        original_publish = publish.ReleaseStore.publish

        def publish_release(self, *args, **kwargs):
            where = original_publish(self, *args, **kwargs)
            stop_here(step)
            return where

        publish.ReleaseStore.publish = publish_release
    else:
        raise SystemExit(f"unknown step {step!r}; one of {STEPS}")


if __name__ == "__main__":
    hook(sys.argv[1])
    app(args=sys.argv[2:], prog_name="privacy-gate")
