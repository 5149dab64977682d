"""Where a release is kept: the quarantine and atomic publication (:mod:`.publish`,
:mod:`.quarantine` for ``s3://`` targets) and ``s3://`` locations read from and published to
(:mod:`.objectstore`). The verdict digests publication and review check are part of the run's
record (:mod:`privacy_gate.tracking.signing`).

A low layer: it knows nothing of the gate, so the data readers (``s3://`` inputs), the config
(``s3://`` locations), the tracking store and the runs may all use it.
"""
