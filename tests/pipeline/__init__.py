"""Tests of privacy_gate.pipeline: the gate run itself (stages, evaluate, blame and group
effects), the whole-flow canaries and the golden scenarios."""
