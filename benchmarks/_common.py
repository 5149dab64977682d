"""Shared set-up for the benchmark scripts: the bundled Adult data split as the gate splits it,
and recording results as JSON under benchmarks/results/."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def adult_splits(seed: int = 0):
    """(spec, Splits) of the bundled Adult data with the example config's split."""
    from privacy_gate.config import load_release_config
    from privacy_gate.data import conform, read_table, split_by_entity

    cfg = load_release_config(ROOT / "examples" / "adult.yaml")
    spec = cfg.dataset.spec
    real = conform(read_table(cfg.dataset.path), spec, source="adult")
    return spec, split_by_entity(real, spec, cfg.split.model_copy(update={"seed": seed}))


def machine() -> dict:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def record(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{name}.json"
    payload = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        **payload,
    }
    out.write_text(json.dumps(payload, indent=2, default=float) + "\n")
    print(f"recorded in {out.relative_to(ROOT)}")
    return out
