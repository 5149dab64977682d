"""Fault injection over every stage of a release run (library pipeline, local executor).

Each case makes one function raise (or an attack return degenerate scores) and records what the
run returned, what the MLflow record says and what is visible in the publish target. A case
passes when it fails closed: no APPROVE unless every stage before publication succeeded, no
visible release without an APPROVE recorded, no partial or unmanifested file in the target.
Used by ``tests/runs/test_faults.py`` and ``benchmarks/bench_faults.py``.
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
from privacy_gate.experiment.attack_runs import degenerate_reason
from privacy_gate.gate import Verdict
from privacy_gate.pipeline import LocalExecutor
from privacy_gate.publication.publish import list_published
from privacy_gate.runs.release import release_run

#: stage label -> the executor step names it breaks (a name ending in "-" is a prefix: every
#: attack is submitted as ``attack-<key>``). Every step of a run passes through the executor by
#: name (``pipeline/stages.py``), so a fault is a :class:`FaultyExecutor`, not a patched global.
FAULT_POINTS: dict[str, tuple[str, ...]] = {
    "load": ("load_input",),
    "validate_input": ("validate_input",),
    "split": ("split_data",),
    "fit": ("fit_generator",),
    "sample": ("sample_synthetic",),
    "quarantine": ("quarantine",),
    "validate_synthetic": ("validate_synthetic",),
    "targets": ("targets",),
    "attacks": ("attack-",),
    "utility": ("utility",),
    "mace": ("mace",),
    "audit": ("audit",),
    "decide": ("decide",),
    "logging": ("logging",),
    # below the stage seam: the tracking store's metric writes (see ``injected``)
    "log_metrics": (),
    "record_verdict": ("record_verdict",),
    "summary": ("summary",),
    "publish": ("publish",),
    "publication_tag": ("publication_tag",),
    "report": ("report",),
    "end_run": ("end_run",),
}
#: Stages after publication: their failure is a warning, the APPROVE and the release stand.
AFTER_PUBLICATION = {"publication_tag", "summary", "report", "end_run"}
KINDS = ("unexpected", "own_error")
#: faults that do not raise: every attack returns degenerate scores
SCORE_FAULTS = ("constant_scores", "nan_scores")


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
    fired: bool  # the fault really happened (a step of that name ran)
    fail_closed: bool


def _raise(stage: str, kind: str) -> None:
    if kind == "own_error":
        raise PrivacyGateError(f"injected failure in {stage}")
    raise InjectedFault("secret value 12345 from a record")


def _degenerate(outcome: Any, stage: str) -> Any:
    scores = (
        np.zeros_like(outcome.scores) if stage == "constant_scores" else outcome.scores * np.nan
    )
    return type(outcome)(
        **{**outcome.__dict__, "scores": scores, "invalid": degenerate_reason(scores)}
    )


class FaultyExecutor(LocalExecutor):
    """The library's executor, except that the steps of one stage fail (``kind``), or, for the
    score faults, every attack's outcome comes back with degenerate scores."""

    def __init__(self, stage: str, kind: str):
        super().__init__()
        self.stage, self.kind = stage, kind
        self.steps = FAULT_POINTS.get(stage, ("attack-",))
        self.hits = 0  # how often the fault fired (a case whose fault never fires proves nothing)

    def _broken(self, name: str) -> bool:
        hit = any(name.startswith(s) if s.endswith("-") else name == s for s in self.steps)
        self.hits += hit
        return hit

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if not self._broken(name):
            return fn
        if self.stage in SCORE_FAULTS:
            return lambda *a, **k: _degenerate(fn(*a, **k), self.stage)

        def broken(*args: Any, **kwargs: Any) -> Any:
            _raise(self.stage, self.kind)

        return broken

    def run(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return super().run(name, self._wrap(name, fn), *args, **kwargs)

    def submit(self, name: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        return super().submit(name, self._wrap(name, fn), *args, **kwargs)


@contextlib.contextmanager
def injected(stage: str, kind: str) -> Iterator[FaultyExecutor]:
    """The executor that breaks ``stage``. ``log_metrics`` is the one fault below the stage seam
    (the tracking store failing inside a step), so it alone patches the store's method."""
    executor = FaultyExecutor(stage, kind)
    if stage != "log_metrics":
        yield executor
        return
    original = tracking.Tracker.log_metrics

    def broken(*args: Any, **kwargs: Any) -> None:
        executor.hits += 1
        _raise(stage, kind)

    tracking.Tracker.log_metrics = broken
    try:
        yield executor
    finally:
        tracking.Tracker.log_metrics = original


def run_case(config_path: Path, workdir: Path, stage: str, kind: str) -> FaultOutcome:
    config = load_release_config(config_path)
    executor = None
    try:
        with injected(stage, kind) as executor:
            result = release_run(config, workdir=workdir, executor=executor)
        verdict, run_id = result.verdict, result.run_id
    except Exception as exc:  # noqa: BLE001 - the CLI turns an escaped exception into BLOCK (exit 4)
        verdict, run_id = Verdict.error(f"escaped {type(exc).__name__}"), None
    recorded = None
    if run_id:
        with contextlib.suppress(Exception):
            recorded = (
                tracking.Tracker(uri=tracking.default_tracking_uri(workdir), experiment=None)
                .run_tags(run_id)
                .get(names.TAG_VERDICT)
            )
    target = workdir / "published"
    visible = len(list_published(target))
    entries = [p for p in target.iterdir()] if target.exists() else []
    stray = len(
        [p for p in entries if not p.name.startswith(".") and p not in list_published(target)]
    )
    stray += len([p for p in entries if p.name.startswith(".")])
    approve = verdict.decision == "APPROVE"
    ok = approve == (stage in AFTER_PUBLICATION) and stray == 0
    if approve:  # published: exactly one complete release, and the store says APPROVE
        ok = ok and visible == 1 and recorded == "APPROVE"
    else:  # not published: nothing visible, and the store never says APPROVE
        ok = ok and visible == 0 and recorded != "APPROVE"
    leaked = "12345" in " ".join(r.message for r in verdict.reasons)
    return FaultOutcome(
        stage=stage,
        kind=kind,
        verdict=verdict.decision,
        status=verdict.status,
        reason=(verdict.reasons[0].message if verdict.reasons else "")[:160],
        recorded_verdict=recorded,
        visible_releases=visible,
        stray_entries=stray,
        fired=bool(executor and executor.hits),
        fail_closed=ok and not leaked,
    )


def all_cases() -> list[tuple[str, str]]:
    return [(s, k) for s in FAULT_POINTS for k in KINDS] + [(s, "attack") for s in SCORE_FAULTS]


def as_rows(outcomes: list[FaultOutcome]) -> list[dict[str, Any]]:
    return [asdict(o) for o in outcomes]


Runner = Callable[[str, str], FaultOutcome]
