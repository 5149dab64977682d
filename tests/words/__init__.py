"""Tests of privacy_gate.words: a verdict, its figures and its evidence in words."""
