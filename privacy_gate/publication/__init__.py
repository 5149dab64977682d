"""Where a release is kept and what makes it trustworthy: the quarantine and atomic publication
(:mod:`.publish`, :mod:`.quarantine` for ``s3://`` targets), ``s3://`` locations read from and
published to (:mod:`.objectstore`), and the verdict digests publication and review check
(:mod:`.signing`).

A low layer: it knows nothing of the gate, so the data readers (``s3://`` inputs), the config
(``s3://`` locations), the tracking store and the runs may all use it.
"""
