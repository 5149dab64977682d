"""Tests of privacy_gate.config: release and gate-only configs, rules, YAML bounds."""
