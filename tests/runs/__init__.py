"""Tests of privacy_gate.runs: release runs, faults and retries, re-gates, remediation."""
