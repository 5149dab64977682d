"""Tests of privacy_gate.estimators: estimators."""
