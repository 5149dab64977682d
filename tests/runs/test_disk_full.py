"""A full disk at any point of a release run: the disk fills at one write (an OS write, a SQLite
commit) and every write after it fails too. Each point ends one of two ways, never a third:

- nothing published, the verdict BLOCK, and the reason names the full disk (no traceback text);
- published, and the publication derivable: ``doctor`` says it IS published (never
  "unpublished"), ``doctor --fix`` records it and closes the run, ``review RUN`` shows where.
"""

from __future__ import annotations

import errno
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import privacy_gate.publication.publish as publish
from privacy_gate import names, tracking
from privacy_gate.config import load_release_config
from privacy_gate.publication.publish import list_published
from privacy_gate.review.decide import review_text
from privacy_gate.review.doctor import doctor
from privacy_gate.runs.release import release_run

from ..conftest import EXAMPLE, lighten

SQL = ("log_params", "log_metrics", "set_tags", "log_dataset_inputs", "end_run")
FILES = ("log_json", "log_text", "log_figure", "log_frame")
PUBLISH_FILES = ("replace_private", "_copy_file", "write_private", "_fsync_dir")


class Disk:
    """Writes through the store and the publication code, until one of them fills the disk."""

    def __init__(self, when: Callable[[str, tuple, dict], bool], root: Path):
        self.when, self.root, self.full, self.failed = when, root, False, 0

    def wrap(self, name: str, fn: Callable[..., Any], *, sql: bool) -> Callable[..., Any]:
        def write(*args: Any, **kwargs: Any) -> Any:
            if self.full or self.when(name, args, kwargs):
                self.full, self.failed = True, self.failed + 1
                if sql:
                    raise sqlite3.OperationalError("database or disk is full")
                raise OSError(
                    errno.ENOSPC, "No space left on device", str(self.root / str(args[-1]))
                )
            return fn(*args, **kwargs)

        return write


def _tags_hold(key: str) -> Callable[[str, tuple, dict], bool]:
    return lambda name, args, kw: name == "set_tags" and key in args[-1]


def _artifact(path: str) -> Callable[[str, tuple, dict], bool]:
    return lambda name, args, kw: name in FILES and args[-1] == path


def _call(fn_name: str, nth: int = 1) -> Callable[[str, tuple, dict], bool]:
    seen = {"n": 0}

    def when(name: str, args: tuple, kw: dict) -> bool:
        if name == fn_name:
            seen["n"] += 1
        return name == fn_name and seen["n"] >= nth

    return when


#: where the disk fills, in run order; True: after the release became visible
POINTS: dict[str, tuple[Callable[[str, tuple, dict], bool], bool]] = {
    "params": (_call("log_params"), False),
    "config_artifact": (_artifact(names.ART_CONFIG), False),
    "quarantine_file": (_call("replace_private"), False),
    "dataset_inputs": (_call("log_dataset_inputs"), False),
    "gate_tables": (_call("log_frame"), False),
    "attack_run": (_call("end_run"), False),
    "headline_metrics": (_call("log_metrics", 2), False),
    "verdict_json": (_artifact(names.ART_VERDICT), False),
    "verdict_tags": (_tags_hold(names.TAG_VERDICT), False),
    "publishing_tag": (_tags_hold(names.TAG_PUBLISHING), False),
    "publish_copy": (_call("_copy_file"), False),
    "manifest": (_call("write_private"), False),
    "staging_fsync": (_call("_fsync_dir", 2), False),
    "target_fsync": (_call("_fsync_dir", 3), True),
    "publication_tag": (_tags_hold(names.TAG_PUBLISHED), True),
    "summary": (_artifact(names.ART_SUMMARY), True),
    "close_run": (lambda name, args, kw: name == "end_run" and "failed" in kw, True),
}


@pytest.fixture(scope="module")
def config(small_adult, tmp_path_factory):
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["dataset"]["path"] = str(small_adult / "real.csv")
    raw["generator"] = {"name": "file", "path": str(small_adult / "independent.csv")}
    raw["attacks"] = [{"name": "dcr"}]
    raw["audit"] = {"intersections": []}
    path = tmp_path_factory.mktemp("disk-full") / "release.yaml"
    path.write_text(yaml.safe_dump(lighten(raw), sort_keys=False))
    return path


def _dead_pid() -> int:
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    return int(out.stdout)


def _doctor(workdir: Path, *, fix: bool) -> list[str]:
    uri = tracking.default_tracking_uri(workdir)
    return doctor(workdir, tracking_uri=uri, fix=fix, min_age=0).lines(fix=fix)


@pytest.mark.parametrize("point", list(POINTS))
def test_a_full_disk_blocks_before_publication_or_leaves_it_derivable(
    config, tmp_path, monkeypatch, caplog, point
):
    when, after_visible = POINTS[point]
    disk = Disk(when, tmp_path)
    with monkeypatch.context() as m:
        for name in SQL + FILES:
            m.setattr(
                tracking.Tracker,
                name,
                disk.wrap(name, getattr(tracking.Tracker, name), sql=name in SQL),
            )
        for name in PUBLISH_FILES:
            m.setattr(publish, name, disk.wrap(name, getattr(publish, name), sql=False))
        result = release_run(load_release_config(config), workdir=tmp_path)
    assert disk.failed, f"the disk never filled at {point}"
    # the disk is freed, and the gating process is gone (its run may be left RUNNING)
    uri = tracking.default_tracking_uri(tmp_path)
    store = tracking.Tracker(uri=uri, experiment=None)
    store.set_tags(result.run_id, {names.TAG_PID: str(_dead_pid())})
    visible = list_published(tmp_path / "published")
    report = "\n".join(_doctor(tmp_path, fix=False))
    assert "[unpublished]" not in report or not visible, report
    if not visible:
        assert not after_visible, f"{point}: nothing published"
        reason = result.verdict.reasons[0].message
        assert result.verdict.decision == "BLOCK" and result.published is None
        assert "the disk holding" in reason and "is full" in reason and "free space" in reason
        assert "Traceback" not in reason and "IS published" not in report
        assert "Traceback" not in caplog.text
    else:
        assert after_visible, f"{point}: published although the disk filled before"
        assert result.verdict.decision == "APPROVE" and result.published
        assert f"the release IS published ({result.published})" in caplog.text
        fixed = "\n".join(_doctor(tmp_path, fix=True))
        assert "[unpublished]" not in fixed, fixed
        run = store.client.get_run(result.run_id)
        assert run.info.status == "FINISHED", fixed
        assert run.data.tags.get(names.TAG_PUBLISHED) == result.published
        assert f"published: {result.published}" in review_text(result.run_id, tracking_uri=uri)
    # never a run left RUNNING after doctor --fix
    _doctor(tmp_path, fix=True)
    assert store.client.get_run(result.run_id).info.status != "RUNNING"
