"""Fault injection over every stage of a release run (library pipeline, local executor).

Each case makes one function raise (or an attack return degenerate scores) and records what the
run returned, what the MLflow record says and what is visible in the publish target. A case
passes when it fails closed: no APPROVE unless every stage before publication succeeded, no
visible release without an APPROVE recorded, no partial or unmanifested file in the target.
Used by ``tests/test_faults.py`` and ``benchmarks/bench_faults.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from privacy_gate import names, tracking
from privacy_gate.config import load_release_config
from privacy_gate.errors import PrivacyGateError
from privacy_gate.pipeline import mlflow_sink, run, runs
from privacy_gate.publish import ReleaseStore, list_published

# stage label -> (object, attribute) to break
FAULT_POINTS: dict[str, tuple[Any, str]] = {
    "load": (runs, "load_real_data"),
    "validate_input": (runs, "validate_input"),
    "split": (runs, "split_release"),
    "fit": (runs, "fit_generator"),
    "sample": (runs, "sample_synthetic"),
    "quarantine": (ReleaseStore, "quarantine"),
    "validate_synthetic": (run, "validate_synthetic"),
    "targets": (run, "choose_targets"),
    "attacks": (run, "run_attack"),
    "utility": (run, "marginal_quality"),
    "mace": (run, "mace_for_attacks"),
    "audit": (run, "audit"),
    "decide": (run, "decide"),
    "logging": (mlflow_sink.MlflowSink, "record_gate"),
    "log_metrics": (tracking.Tracker, "log_metrics"),
    "record_verdict": (mlflow_sink.MlflowSink, "record_verdict"),
    "summary": (mlflow_sink.MlflowSink, "summary_markdown"),
    "publish": (ReleaseStore, "publish"),
    "publication_tag": (mlflow_sink.MlflowSink, "record_published"),
    "report": (runs, "log_report_of"),
    "end_run": (mlflow_sink.MlflowSink, "end"),
}
#: Stages after publication: their failure is a warning, the APPROVE and the release stand.
AFTER_PUBLICATION = {"publication_tag", "summary", "report", "end_run"}
KINDS = ("unexpected", "own_error")


class InjectedFault(RuntimeError):
    """An unexpected error (its message must never reach the verdict: it could quote data)."""


@dataclass
class FaultOutcome:
    stage: str
    kind: str
    verdict: str
    status: str
    reason: str
    recorded_verdict: str | None
    visible_releases: int
    stray_entries: int
    fail_closed: bool


@contextlib.contextmanager
def injected(stage: str, kind: str) -> Iterator[None]:
    if stage in ("constant_scores", "nan_scores"):
        original = run.run_attack

        def degenerate(*args: Any, **kwargs: Any):
            outcome = original(*args, **kwargs)
            scores = np.zeros_like(outcome.scores) if stage == "constant_scores" else outcome.scores * np.nan
            from privacy_gate.experiment.attack_runs import degenerate_reason
            return type(outcome)(**{**outcome.__dict__, "scores": scores, "invalid": degenerate_reason(scores)})

        run.run_attack = degenerate
        try:
            yield
        finally:
            run.run_attack = original
        return
    owner, attr = FAULT_POINTS[stage]
    original = getattr(owner, attr)

    def broken(*args: Any, **kwargs: Any):
        if kind == "own_error":
            raise PrivacyGateError(f"injected failure in {stage}")
        raise InjectedFault("secret value 12345 from a record")

    setattr(owner, attr, broken)
    try:
        yield
    finally:
        setattr(owner, attr, original)


def run_case(config_path: Path, workdir: Path, stage: str, kind: str) -> FaultOutcome:
    config = load_release_config(config_path)
    try:
        with injected(stage, kind):
            result = runs.release_run(config, workdir=workdir)
        verdict = result["verdict"]
        run_id = result["run_id"]
    except Exception as exc:  # the CLI turns an escaped exception into BLOCK (exit 4)
        verdict = {"verdict": "BLOCK", "status": "error", "reasons": [{"message": f"escaped {type(exc).__name__}"}]}
        run_id = None
    recorded = None
    if run_id:
        with contextlib.suppress(Exception):
            recorded = tracking.Tracker(uri=tracking.default_tracking_uri(workdir), experiment=None).run_tags(
                run_id).get(names.TAG_VERDICT)
    target = workdir / "published"
    visible = len(list_published(target))
    entries = [p for p in target.iterdir()] if target.exists() else []
    stray = len([p for p in entries if not p.name.startswith(".") and p not in list_published(target)])
    stray += len([p for p in entries if p.name.startswith(".")])
    approve = verdict["verdict"] == "APPROVE"
    ok = approve == (stage in AFTER_PUBLICATION) and stray == 0
    if approve:  # published: exactly one complete release, and the store says APPROVE
        ok = ok and visible == 1 and recorded == "APPROVE"
    else:  # not published: nothing visible, and the store never says APPROVE
        ok = ok and visible == 0 and recorded != "APPROVE"
    leaked = "12345" in " ".join(r.get("message", "") for r in verdict.get("reasons", []))
    return FaultOutcome(stage=stage, kind=kind, verdict=verdict["verdict"], status=verdict["status"],
                        reason=(verdict["reasons"][0]["message"] if verdict.get("reasons") else "")[:160],
                        recorded_verdict=recorded, visible_releases=visible, stray_entries=stray,
                        fail_closed=ok and not leaked)


def all_cases() -> list[tuple[str, str]]:
    return [(s, k) for s in FAULT_POINTS for k in KINDS] + [("constant_scores", "attack"), ("nan_scores", "attack")]


def as_rows(outcomes: list[FaultOutcome]) -> list[dict[str, Any]]:
    return [asdict(o) for o in outcomes]


Runner = Callable[[str, str], FaultOutcome]
