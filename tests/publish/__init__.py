"""Tests of privacy_gate.publication.publish and privacy_gate.publication.objectstore: quarantine,
publication and object storage."""
