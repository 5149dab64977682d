"""Tests of privacy_gate.data: data readers, encoders and splits."""
