"""Tests of privacy_gate.experiment: the membership experiment."""
