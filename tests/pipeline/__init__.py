"""Tests of privacy_gate.pipeline: orchestration: whole runs, faults, review, retries, golden
scenarios."""
