"""Tests of privacy_gate.attacks: attacks."""
