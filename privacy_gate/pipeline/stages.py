"""Stages as data: a run is a declared list of :class:`Stage` s executed by :func:`run_stages`.

Every stage has a name; the runner times it, prints its progress line and labels a failure with
it. A stage's work goes through the :class:`~privacy_gate.pipeline.executor.Executor` under that
name (``executor.run("mace", ...)``; the attacks as ``attack-<key>``), so the Prefect UI shows a
task per stage and a test injects a fault by handing the run an executor that fails one name
(``tests/faults.py: FaultyExecutor``) instead of patching module globals.

>>> from dataclasses import dataclass
>>> @dataclass
... class Tally:
...     n: int = 0
>>> def add(state, executor, logger):
...     state.n = executor.run("add", lambda n: n + 2, state.n)
>>> from privacy_gate.pipeline.executor import LocalExecutor
>>> clock = StageClock(logger=logging.getLogger("doctest"))
>>> state = run_stages([Stage("add", lambda s: "adding two", add),
...                     Stage("skip", lambda s: "never", add, when=lambda s: s.n > 5)],
...                    Tally(), executor=LocalExecutor(), clock=clock)
>>> state.n, sorted(clock.timings)
(2, ['add'])
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from privacy_gate.errors import ValidationFailed, is_infrastructure_error, safe_reason
from privacy_gate.gate import Verdict
from privacy_gate.pipeline.executor import Executor

log = logging.getLogger("privacy_gate")

#: Stages whose failure means the *input* was bad (status ``invalid_input``), not the gate.
INPUT_STAGES = ("load", "validate_input")

S = TypeVar("S")


@dataclass
class StageClock:
    """The running stage of a run, its timings, and progress lines on ``logger``. A failure is
    labelled with the stage that was running when it happened."""

    logger: Any = field(default_factory=lambda: log)
    timings: dict[str, float] = field(default_factory=dict)
    current: str = "start"

    @contextlib.contextmanager
    def stage(self, name: str, what: str) -> Iterator[None]:
        self.current = name
        self.logger.info("▶ %s ...", what)
        start = time.perf_counter()
        yield
        self.timings[name] = time.perf_counter() - start
        self.logger.info("✔ %s done in %.1f s", what, self.timings[name])


def _always(state: Any) -> bool:
    return True


@dataclass(frozen=True)
class Stage(Generic[S]):
    """One step of a run: ``body(state, executor, logger)`` fills its part of the typed ``state``;
    ``describe(state)`` is its progress line; ``when(state)`` False skips it (an opt-in stage)."""

    name: str
    describe: Callable[[S], str]
    body: Callable[[S, Executor, Any], None]
    when: Callable[[S], bool] = _always


def run_stages(stages: Sequence[Stage[S]], state: S, *, executor: Executor, clock: StageClock) -> S:
    """Run ``stages`` in order on ``state`` (the one place that times, logs and labels them)."""
    for stage in stages:
        if stage.when(state):
            with clock.stage(stage.name, stage.describe(state)):
                stage.body(state, executor, clock.logger)
    return state


def failure_verdict(
    exc: BaseException,
    *,
    stage: str,
    data_hashes: dict[str, str] | None = None,
    where: str | os.PathLike | None = None,
) -> Verdict:
    """Turn any exception into a BLOCK. Our own errors carry safe messages, and a full disk is
    named (the failing file's, else ``where``, the workdir's); for anything else only the type and
    stage are reported, since foreign messages may quote data values."""
    reason = safe_reason(exc, where=where)
    if reason is not None:
        msg = f"{stage}: {reason}"
    elif is_infrastructure_error(exc):
        msg = (
            f"{stage}: infrastructure failure ({type(exc).__name__}: a service the gate needs "
            "did not answer)"
        )
    else:
        msg = (
            f"{stage}: unexpected {type(exc).__name__} (set PRIVACY_GATE_DEBUG=1 for the traceback)"
        )
        if os.environ.get("PRIVACY_GATE_DEBUG"):
            traceback.print_exception(exc)
    status = (
        "invalid_input" if isinstance(exc, ValidationFailed) or stage in INPUT_STAGES else "error"
    )
    return Verdict.error(msg, status=status, data_hashes=dict(data_hashes or {}))
