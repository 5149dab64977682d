"""Tests of privacy_gate.validation: Great Expectations suites."""
