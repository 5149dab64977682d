"""Tests of privacy_gate.generators: generators."""
