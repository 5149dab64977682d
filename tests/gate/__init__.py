"""Tests of privacy_gate.gate: rules, findings and verdicts."""
