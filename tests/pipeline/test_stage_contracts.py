"""Stages declare the state fields they read and write: the declarations are checked against the
state dataclass when a stage list is defined, and each stage's writes as it runs."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

import pytest

from privacy_gate.pipeline import gate_run, group_blame
from privacy_gate.pipeline.executor import LocalExecutor
from privacy_gate.pipeline.stages import (
    Stage,
    StageClock,
    StageContractError,
    check_stage_flow,
    failure_verdict,
    run_stages,
)
from privacy_gate.runs import release


@dataclass
class Run:
    given: int
    made: int | None = None
    maybe: int | None = None
    seen: list[int] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.given + (self.made or 0)


def _noop(state, executor, logger) -> None:
    pass


def _stage(name: str, **kw) -> Stage[Run]:
    return Stage(name, lambda s: name, kw.pop("body", _noop), **kw)


def _check(*stages: Stage[Run], provided=("given",)) -> None:
    check_stage_flow(stages, state_type=Run, provided=provided)


def _problem(*stages: Stage[Run], provided=("given",)) -> str:
    with pytest.raises(StageContractError) as err:
        _check(*stages, provided=provided)
    return str(err.value)


def test_a_read_nobody_writes_names_the_stage_and_the_field():
    msg = _problem(_stage("use", reads=("made",)))
    assert "stage 'use' reads 'made'" in msg and "neither provided nor written" in msg
    _check(_stage("make", writes=("made",)), _stage("use", reads=("given", "made")))


def test_a_read_before_its_writer_names_both_stages():
    msg = _problem(_stage("use", reads=("made",)), _stage("make", writes=("made",)))
    assert "stage 'use' reads 'made' before stage 'make' writes it" in msg


def test_what_an_opt_in_stage_writes_is_read_only_as_reads_if_set():
    opt_in = _stage("sometimes", when=lambda s: s.given > 1, writes=("maybe",))
    msg = _problem(opt_in, _stage("use", reads=("maybe",)))
    assert "stage 'use' reads 'maybe'" in msg and "'sometimes'" in msg and "reads_if_set" in msg
    _check(opt_in, _stage("use", reads_if_set=("maybe",)))
    # reads_if_set still needs a writer before it, and a provided field is always set
    assert "no stage before it writes" in _problem(_stage("use", reads_if_set=("maybe",)))
    assert "declare it in reads" in _problem(_stage("use", reads_if_set=("given",)))


def test_a_name_that_is_not_a_field_fails():
    msg = _problem(_stage("make", writes=("mad",)))
    assert "stage 'make' declares 'mad', which is not a field of Run" in msg
    msg = _problem(_stage("sum", reads=("total",)))
    assert "'total'" in msg and "a property: declare the fields it reads" in msg
    assert "provided 'gift'" in _problem(_stage("x"), provided=("given", "gift"))
    assert "'given' has no default in Run" in _problem(_stage("x"), provided=())
    assert "two stages are named 'x'" in _problem(_stage("x"), _stage("x"))


def test_every_problem_is_reported_at_once():
    msg = _problem(_stage("a", reads=("made",)), _stage("b", writes=("nope",)))
    assert "stage 'a' reads 'made'" in msg and "stage 'b' declares 'nope'" in msg


@pytest.mark.parametrize(
    ("kw", "error", "words"),
    [
        ({"reads": "made"}, TypeError, "must be a tuple of field names, not 'made'"),
        ({"writes": ("made", 3)}, TypeError, "writes entry 3"),
        ({"reads": ("",)}, StageContractError, "reads entry ''"),
        ({"reads": ("not-a-name",)}, StageContractError, "reads entry 'not-a-name'"),
        ({"writes": ("made", "made")}, StageContractError, "writes names 'made' twice"),
        ({"reads": ("made",), "reads_if_set": ("made",)}, StageContractError, "in both reads"),
    ],
)
def test_a_bad_declaration_fails_at_construction(kw, error, words):
    with pytest.raises(error) as err:
        _stage("bad", **kw)
    assert "stage 'bad'" in str(err.value) and words in str(err.value)


def test_a_list_is_kept_as_a_tuple():
    assert _stage("s", reads=["given"]).reads == ("given",)


def _run(stage: Stage[Run], state: Run | None = None) -> tuple[Run, StageClock]:
    clock = StageClock(logger=logging.getLogger("test-stage-contracts"))
    state = state or Run(given=1)
    return run_stages([stage], state, executor=LocalExecutor(), clock=clock), clock


def _make(state, executor, logger) -> None:
    state.made = state.given + 1


def test_a_body_that_sets_an_undeclared_field_fails_naming_stage_and_field():
    with pytest.raises(StageContractError, match="stage 'make' set the state field 'made'") as err:
        _run(_stage("make", body=_make, reads=("given",)))
    # the failure is the stage's: the verdict names it and says why (no data values in it)
    verdict = failure_verdict(err.value, stage="make")
    assert verdict.decision == "BLOCK" and "not among its writes" in verdict.reasons[0].message
    state, clock = _run(_stage("make", body=_make, reads=("given",), writes=("made",)))
    assert state.made == 2 and list(clock.timings) == ["make"]


def test_an_added_attribute_counts_as_a_write():
    def stray(state, executor, logger) -> None:
        state.extra = 1

    with pytest.raises(StageContractError, match="'extra'"):
        _run(_stage("stray", body=stray))


def test_a_change_in_place_is_not_seen_at_run_time():
    """The documented limit: identity catches rebinding, not a list or dict changed in place (such
    fields are declared in ``writes`` all the same)."""

    def append(state, executor, logger) -> None:
        state.seen.append(1)

    state, _ = _run(_stage("append", body=append))
    assert state.seen == [1]


def test_the_real_stage_lists_pass_the_check():
    check_stage_flow(
        gate_run.GATE_STAGES, state_type=gate_run.GateState, provided=gate_run.GATE_PROVIDED
    )
    check_stage_flow(
        release.RELEASE_STAGES,
        state_type=release.ReleaseState,
        provided=release.RELEASE_PROVIDED,
    )


def _replaced(stages, name, **changes):
    return tuple(dataclasses.replace(s, **changes) if s.name == name else s for s in stages)


def test_the_gate_check_fails_when_a_declaration_or_the_order_is_wrong():
    def check(stages):
        with pytest.raises(StageContractError) as err:
            check_stage_flow(stages, state_type=gate_run.GateState, provided=gate_run.GATE_PROVIDED)
        return str(err.value)

    stages = gate_run.GATE_STAGES
    no_targets = _replaced(stages, "targets", writes=("dependency", "shortfalls"))
    assert "stage 'attacks' reads 'targets'" in check(no_targets)
    names = [s.name for s in stages]
    audit_first = (stages[names.index("audit")], *(s for s in stages if s.name != "audit"))
    assert "stage 'audit' reads 'targets' before stage 'targets' writes it" in check(audit_first)
    # the scan is opt-in: a stage that reads its result as always there is refused
    audit = stages[names.index("audit")]
    scan_sure = _replaced(
        stages, "audit", reads=(*audit.reads, "scan"), reads_if_set=("dependency",)
    )
    assert "stage 'audit' reads 'scan', which only the opt-in stage(s) 'scan' write" in check(
        scan_sure
    )


def test_decide_declares_what_blame_reads():
    """``decide`` hands the whole state to blame: what :class:`BlameState` names (and the fields
    behind its ``gated`` property and the run's tests) is among decide's reads."""
    decide = next(s for s in gate_run.GATE_STAGES if s.name == "decide")
    protocol = set(group_blame.BlameState.__annotations__)
    assert protocol <= set(group_blame.READS)
    assert {"outcomes", "shadow"} <= set(group_blame.READS)  # gated, tests
    assert set(group_blame.READS) <= {*decide.reads, *decide.reads_if_set}
