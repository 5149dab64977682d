"""A new workdir's sqlite MLflow store, made from a migrated empty template instead of MLflow's
migrations.

MLflow creates a sqlite store by creating the first schema and then running every Alembic
migration since (about 4 s on these machines, 10 times what the rest of a small gate's recording
costs). The result is the same empty database each time, apart from where the ``Default``
experiment keeps its artefacts and when it was made. So the first store made by an MLflow version
is kept as a template (``~/.cache/privacy-gate``, or ``PRIVACY_GATE_CACHE``), and later new stores
are copies with those two fields set as MLflow would set them. MLflow still checks the copy's
schema version when it opens it (a template of another schema is refused by MLflow, and the name
carries the version so it never is used). Any problem with the template falls back to MLflow's own
creation: the template is a speed-up, never a dependency.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from privacy_gate.locking import file_lock
from privacy_gate.names import ENV_CACHE

log = logging.getLogger("privacy_gate")


def _cache_dir() -> Path:
    explicit = os.environ.get(ENV_CACHE)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "privacy-gate"


def _template_path() -> Path:
    import mlflow

    return _cache_dir() / f"mlflow-{mlflow.__version__}-empty-store.db"


def _build_template(template: Path) -> None:
    """An empty store created by MLflow itself in a scratch folder, moved into place atomically."""
    from mlflow.tracking import MlflowClient

    template.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=template.parent) as scratch:
        db = Path(scratch) / "store.db"
        MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments(max_results=1)
        with sqlite3.connect(db) as con:  # nothing but the Default experiment may be in it
            if con.execute("SELECT COUNT(*) FROM experiments").fetchone()[0] != 1:
                raise RuntimeError("unexpected rows in a new MLflow store")
        os.replace(db, template)


def seed_store(db: Path) -> bool:
    """Create the sqlite store ``db`` (which must not exist yet) from the template; True when it
    did. Callers hold the store's creation lock. On any failure ``db`` does not exist afterwards
    and MLflow creates it the usual way."""
    if db.exists():
        return False
    try:
        template = _template_path()
        if not template.is_file():
            with file_lock(Path(f"{template}.lock"), timeout=120):
                if not template.is_file():
                    _build_template(template)
        partial = db.with_name(f".{db.name}.seeding-{os.getpid()}")
        shutil.copyfile(template, partial)
        now = int(time.time() * 1000)
        # what MLflow writes for a store it creates: the Default experiment's artefacts under
        # ./mlruns of the creating process, and the creation time
        location = str(Path.cwd().resolve() / "mlruns" / "0")
        with sqlite3.connect(partial) as con:
            con.execute(
                "UPDATE experiments SET artifact_location = ?, creation_time = ?, "
                "last_update_time = ? WHERE experiment_id = 0",
                (location, now, now),
            )
        con.close()
        os.replace(partial, db)
        return True
    except Exception as exc:  # noqa: BLE001 - a speed-up only: MLflow makes the store instead
        log.debug("MLflow store template not used (%s: %s)", type(exc).__name__, exc)
        for leftover in db.parent.glob(f".{db.name}.seeding-{os.getpid()}"):
            leftover.unlink(missing_ok=True)
        return False
