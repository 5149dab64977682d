"""Tests of privacy_gate.review: decisions, their records and their recovery, doctor."""
