"""Tests of privacy_gate.tracking: the parts of a run's record, one module at a time."""
