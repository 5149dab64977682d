"""A served release run whose config became unusable after `serve` started (edited, corrupted,
deleted) ends BLOCK, in the Failed state (the gate did not complete), and emits the verdict event
the normal path emits, so an automation that notifies on BLOCK hears about it."""

from __future__ import annotations

import pytest

import privacy_gate.flows.gate_flows as gate_flows
from privacy_gate.flows.coordination import emit_verdict_event
from privacy_gate.flows.verdict_states import outcome_of


@pytest.mark.parametrize(
    "damage, needle",
    [
        (lambda p: p.write_text("dataset: [unclosed\n"), "not valid YAML"),
        (lambda p: p.write_bytes(b"\xff\xfe\x00garbage"), "not valid YAML"),
        (lambda p: p.unlink(), "file not found"),
    ],
)
def test_a_corrupt_served_config_still_blocks_and_emits_the_verdict_event(
    prefect_server, tmp_path, monkeypatch, damage, needle
):
    from prefect import tags

    emitted = []

    def record(result):
        emitted.append(result)
        emit_verdict_event(result)  # the real event too: it must accept a run without a config

    monkeypatch.setattr(gate_flows, "emit_verdict_event", record)
    cfg = tmp_path / "nightly.yaml"
    cfg.write_text("placeholder: true\n")
    damage(cfg)
    with tags("privacy-gate", "dataset:adult"):  # what a served deployment's run carries
        state = gate_flows.release_flow(
            config_path=str(cfg), workdir=str(tmp_path / "wd"), return_state=True
        )
    assert state.is_failed() and state.name == "Failed", (
        state
    )  # no verdict: the run failed (fail closed: BLOCK)
    result = outcome_of(state)
    assert state.message.startswith(
        "BLOCK (gate did not complete): The gate did not finish: release config unusable"
    )
    assert result.verdict.decision == "BLOCK" and result.verdict.status == "error"
    assert (
        needle in result.verdict.reasons[0].message
        and str(cfg) in result.verdict.reasons[0].message
    )
    assert result.published is None and not (tmp_path / "wd" / "published").exists()
    assert (
        len(emitted) == 1
        and emitted[0].verdict.decision == "BLOCK"
        and emitted[0].dataset == "adult"
    )
