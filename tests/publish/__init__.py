"""Tests of privacy_gate.publish and privacy_gate.objectstore: quarantine, publication and object storage."""
