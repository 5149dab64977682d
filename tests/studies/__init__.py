"""Tests of privacy_gate.studies: the dependency study and the DP audit."""
