"""Tests of privacy_gate.cli: the commands, their help, their start-up time and their options."""
