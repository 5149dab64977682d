"""Stages as data: a run is a declared list of :class:`Stage` s executed by :func:`run_stages`.

Every stage has a name; the runner times it, prints its progress line and labels a failure with
it. A stage's work goes through the :class:`~privacy_gate.pipeline.executor.Executor` under that
name (``executor.run("mace", ...)``; the attacks as ``attack-<key>``), so the Prefect UI shows a
task per stage and a test injects a fault by handing the run an executor that fails one name
(``tests/faults.py: FaultyExecutor``) instead of patching module globals.

A stage declares the fields of the state it reads and the ones it sets (``reads``,
``reads_if_set``, ``writes``: kedro's node inputs and outputs, on one state object).
:func:`check_stage_flow` checks a stage list against its state dataclass when the list is defined
(at import), and :func:`run_stages` checks each stage's writes as it runs:

>>> from dataclasses import dataclass
>>> @dataclass
... class Tally:
...     n: int = 0
...     note: str = ""
>>> def add(state, executor, logger):
...     state.n = executor.run("add", lambda n: n + 2, state.n)
>>> from privacy_gate.pipeline.executor import LocalExecutor
>>> stages = [Stage("add", lambda s: "adding two", add, reads=("n",), writes=("n",)),
...           Stage("skip", lambda s: "never", add, when=lambda s: s.n > 5,
...                 reads=("n",), writes=("n",))]
>>> check_stage_flow(stages, state_type=Tally, provided=("n",))
>>> clock = StageClock(logger=logging.getLogger("doctest"))
>>> state = run_stages(stages, Tally(), executor=LocalExecutor(), clock=clock)
>>> state.n, sorted(clock.timings)
(2, ['add'])

A stage that reads a field no earlier stage writes fails the check; a stage that sets a field it
did not declare fails when it runs (labelled with its name, like any failure of the stage):

>>> try:
...     check_stage_flow([Stage("show", str, add, reads=("note",))], state_type=Tally,
...                      provided=("n",))
... except StageContractError as exc:
...     print(exc)
stages over Tally: stage 'show' reads 'note', which is neither provided nor written by any stage
>>> try:
...     run_stages([Stage("add", str, add, reads=("n",))], Tally(), executor=LocalExecutor(),
...                clock=clock)
... except StageContractError as exc:
...     print(exc)
stage 'add' set the state field 'n', which is not among its writes
>>> clock.current
'add'
"""

from __future__ import annotations

import contextlib
import dataclasses
import keyword
import logging
import os
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import MISSING, dataclass, field
from typing import Any, Generic, TypeVar

from privacy_gate.errors import (
    PrivacyGateError,
    ValidationFailed,
    is_infrastructure_error,
    safe_reason,
)
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


class StageContractError(PrivacyGateError, ValueError):
    """A stage list whose declared reads and writes do not hold: a stage reads a field that no
    earlier stage writes, names a field its state does not have, or sets a field it did not
    declare. A fault of the stage list, never of the data (the message names stages and fields
    only, so a verdict may quote it)."""


def _names(stage: str, kind: str, value: Any) -> tuple[str, ...]:
    """``value`` as a tuple of field names, or a clear error naming the stage and the bad entry."""
    if isinstance(value, str):  # ("metrics") is a string, not a tuple: each letter a name
        raise TypeError(f"stage {stage!r}: {kind} must be a tuple of field names, not {value!r}")
    out = tuple(value)
    for name in out:
        if not isinstance(name, str):
            raise TypeError(f"stage {stage!r}: {kind} entry {name!r} is not a field name")
        if not name.isidentifier() or keyword.iskeyword(name):
            raise StageContractError(f"stage {stage!r}: {kind} entry {name!r} is not a field name")
    twice = sorted({n for n in out if out.count(n) > 1})
    if twice:
        raise StageContractError(f"stage {stage!r}: {kind} names {twice[0]!r} twice")
    return out


@dataclass(frozen=True)
class Stage(Generic[S]):
    """One step of a run: ``body(state, executor, logger)`` fills its part of the typed ``state``;
    ``describe(state)`` is its progress line; ``when(state)`` False skips it (an opt-in stage).

    What the stage touches of ``state`` — its body, the helpers the body hands ``state`` to, and
    its ``describe`` and ``when`` — is declared by field name:

    - ``reads``: fields it reads as they were before it ran; each must be provided or written by
      an earlier stage that always runs (:func:`check_stage_flow`);
    - ``reads_if_set``: fields it reads that may still hold their default (``None``, ``()``):
      their writer is an opt-in stage that may have been skipped, or sets them only on some paths;
      the stage handles the default;
    - ``writes``: fields it sets, whether by assignment or in place (``metrics.update``,
      ``shortfalls.append``). Reading back a field it writes needs no ``reads`` (nor reading its
      default on a path of the body that does not set it).

    Properties of the state are not fields: a stage declares the fields a property reads.
    """

    name: str
    describe: Callable[[S], str]
    body: Callable[[S, Executor, Any], None]
    when: Callable[[S], bool] = _always
    reads: tuple[str, ...] = field(default=(), kw_only=True)
    reads_if_set: tuple[str, ...] = field(default=(), kw_only=True)
    writes: tuple[str, ...] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"a stage's name must be a non-empty string, not {self.name!r}")
        for kind in ("reads", "reads_if_set", "writes"):
            # frozen: the normalised tuple replaces what was given (a list, say)
            object.__setattr__(self, kind, _names(self.name, kind, getattr(self, kind)))
        both = [n for n in self.reads if n in self.reads_if_set]
        if both:
            raise StageContractError(
                f"stage {self.name!r}: {both[0]!r} is in both reads and reads_if_set"
            )

    @property
    def opt_in(self) -> bool:
        """Whether ``when`` may skip the stage (its writes then do not happen)."""
        return self.when is not _always


def _field_defaults(state_type: type) -> dict[str, bool]:
    """``{field: has a default}`` of the dataclass ``state_type``."""
    if not dataclasses.is_dataclass(state_type):
        raise TypeError(f"check_stage_flow: {state_type!r} is not a dataclass")
    return {
        f.name: f.default is not MISSING or f.default_factory is not MISSING
        for f in dataclasses.fields(state_type)
    }


def _unknown(name: str, where: str, state_type: type) -> str:
    hint = (
        " (a property: declare the fields it reads)"
        if isinstance(getattr(state_type, name, None), property)
        else ""
    )
    return f"{where} {name!r}, which is not a field of {state_type.__name__}{hint}"


def _read_problem(
    stage: Stage, name: str, writers: dict[str, list[Stage]], first: dict[str, str]
) -> str | None:
    """Why ``stage`` may not read ``name`` (declared in its ``reads``, not provided), given the
    stages before it (``writers``: field -> the earlier stages writing it) and the first stage of
    the list writing each field (``first``); None when it may."""
    earlier = writers.get(name, [])
    if any(not w.opt_in for w in earlier):
        return None
    if earlier:
        opt_in = ", ".join(repr(w.name) for w in earlier)
        return (
            f"stage {stage.name!r} reads {name!r}, which only the opt-in stage(s) {opt_in} "
            "write: declare it in reads_if_set if the stage handles its default"
        )
    if name in first:
        return f"stage {stage.name!r} reads {name!r} before stage {first[name]!r} writes it"
    return (
        f"stage {stage.name!r} reads {name!r}, which is neither provided nor written by any stage"
    )


def check_stage_flow(
    stages: Sequence[Stage[Any]], *, state_type: type, provided: Sequence[str]
) -> None:
    """Check ``stages`` against their state dataclass ``state_type``; ``provided``: the fields set
    before the first stage (those without a default, and those whose default the stages start
    from, such as an empty dict they fill).

    Every name declared is a field of ``state_type``, and in the order of ``stages``:

    - a field in a stage's ``reads`` is provided, or written by an earlier stage that always
      runs (no ``when``): a stage that reads what an opt-in stage writes must say it handles the
      field's default, by declaring it in ``reads_if_set`` instead;
    - a field in ``reads_if_set`` is written by an earlier stage (opt-in or not) and is not
      provided (then it is always set: ``reads``).

    What cannot be seen from the declarations is left to them: that a body reads no more than it
    declares, and that a field in ``reads_if_set`` is handled at its default. A stage's writes are
    checked as it runs (:func:`run_stages`). Raises :class:`StageContractError` naming every
    stage and field at fault."""
    defaults = _field_defaults(state_type)
    problems = [_unknown(n, "provided", state_type) for n in provided if n not in defaults]
    problems += [
        f"{n!r} has no default in {state_type.__name__}, so it must be provided"
        for n, has_default in defaults.items()
        if not has_default and n not in provided
    ]
    named = [s.name for s in stages]
    problems += [f"two stages are named {n!r}" for n in sorted(set(named)) if named.count(n) > 1]
    first: dict[str, str] = {}  # field -> the first stage writing it
    for stage in stages:
        for n in stage.writes:
            first.setdefault(n, stage.name)
    writers: dict[str, list[Stage]] = {}
    for stage in stages:
        declared = [*stage.reads, *stage.reads_if_set, *stage.writes]
        problems += [
            _unknown(n, f"stage {stage.name!r} declares", state_type)
            for n in dict.fromkeys(declared)
            if n not in defaults
        ]
        for n in stage.reads:
            if n in defaults and n not in provided:
                why = _read_problem(stage, n, writers, first)
                problems += [] if why is None else [why]
        for n in stage.reads_if_set:
            if n in provided:
                problems.append(
                    f"stage {stage.name!r} reads_if_set {n!r}, which is provided: declare it in "
                    "reads"
                )
            elif n in defaults and n not in writers:
                problems.append(
                    f"stage {stage.name!r} reads_if_set {n!r}, which no stage before it writes"
                )
        for n in stage.writes:
            writers.setdefault(n, []).append(stage)
    if problems:
        raise StageContractError(f"stages over {state_type.__name__}: " + "; ".join(problems))


def _bindings(state: Any) -> dict[str, Any]:
    """The objects ``state``'s fields are bound to (references, so identity is exact: an object
    replaced and freed mid-stage cannot hand its id to the next one)."""
    if hasattr(state, "__dict__"):
        return dict(vars(state))
    return {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}


def _check_writes(stage: Stage, before: dict[str, Any], after: dict[str, Any]) -> None:
    rebound = [n for n in after if n not in before or after[n] is not before[n]]
    rebound += [n for n in before if n not in after]  # a field deleted is a write too
    undeclared = [n for n in rebound if n not in stage.writes]
    if undeclared:
        fields_ = ", ".join(repr(n) for n in undeclared)
        raise StageContractError(
            f"stage {stage.name!r} set the state field{'s' if len(undeclared) > 1 else ''} "
            f"{fields_}, which {'are' if len(undeclared) > 1 else 'is'} not among its writes"
        )


def run_stages(stages: Sequence[Stage[S]], state: S, *, executor: Executor, clock: StageClock) -> S:
    """Run ``stages`` in order on ``state`` (the one place that times, logs and labels them).

    Each stage's ``writes`` are enforced: the objects the state's fields are bound to are noted
    before the stage and compared after it; a field bound to another object (or added, or
    deleted) that the stage did not declare raises :class:`StageContractError`, labelled with the
    stage. This sees assignment only, not a dict or list changed in place (``metrics.update``):
    those fields are declared in ``writes`` all the same, for the reader and the flow check. The
    cost is one reference per field per stage (the previous objects live until the stage ends)."""
    for stage in stages:
        if stage.when(state):
            with clock.stage(stage.name, stage.describe(state)):
                before = _bindings(state)
                stage.body(state, executor, clock.logger)
                _check_writes(stage, before, _bindings(state))
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
