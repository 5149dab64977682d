"""A new sqlite store made from the migrated template is the store MLflow would have made."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from privacy_gate.tracking import Tracker
from privacy_gate.tracking import store as tracking_store


def _schema(db: Path) -> tuple[dict, list[tuple]]:
    """Every table and index with the lines of its definition, as a set: MLflow itself emits the
    constraints of a table in varying order from one creation to the next."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        version = con.execute("SELECT version_num FROM alembic_version").fetchall()
    return {
        (t, n): frozenset(line.strip().rstrip(",") for line in (sql or "").splitlines())
        for t, n, sql in rows
    }, version


def test_a_seeded_store_has_mlflows_schema_and_default_experiment(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVACY_GATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'fresh.db'}").search_experiments(
        max_results=1
    )
    assert tracking_store.seed_store(tmp_path / "seeded.db")  # builds the template, then copies it
    assert tracking_store.seed_store(tmp_path / "seeded2.db")  # from the kept template
    assert not tracking_store.seed_store(tmp_path / "seeded.db")  # never over an existing store
    assert _schema(tmp_path / "seeded.db") == _schema(tmp_path / "fresh.db")
    with sqlite3.connect(tmp_path / "seeded2.db") as con:
        default = con.execute(
            "SELECT name, artifact_location, lifecycle_stage FROM experiments"
        ).fetchall()
    assert default == [("Default", str(tmp_path.resolve() / "mlruns" / "0"), "active")]
    tracker = Tracker(uri=f"sqlite:///{tmp_path / 'seeded2.db'}", experiment="privacy-gate/t")
    run = tracker.client.create_run(tracker.experiment_id)
    tracker.client.log_metric(run.info.run_id, "auc", 0.5)
    assert tracker.client.get_run(run.info.run_id).data.metrics == {"auc": 0.5}


def test_a_broken_template_falls_back_to_mlflows_own_creation(tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("a file where the cache folder should be")
    monkeypatch.setenv("PRIVACY_GATE_CACHE", str(tmp_path / "cache"))
    db = tmp_path / "wd" / "mlflow.db"
    db.parent.mkdir()
    assert not tracking_store.seed_store(db) and not db.exists() and list(db.parent.iterdir()) == []
    tracker = Tracker(uri=f"sqlite:///{db}", experiment="privacy-gate/t")  # MLflow makes it
    assert tracker.experiment_id is not None and db.is_file()
