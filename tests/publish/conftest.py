"""moto's S3 server (its own process, loopback) for the publication tests: one per module, with
the ``data`` and ``releases`` buckets; ``s3_env`` points boto3 and MLflow at it."""

from __future__ import annotations

import pytest

from .. import stack


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with stack.s3_server(tmp_path_factory.mktemp("moto"), ("data", "releases")) as endpoint:
        yield endpoint


@pytest.fixture
def s3_env(s3, monkeypatch):
    for key, value in stack.s3_env(s3).items():
        monkeypatch.setenv(key, value)
    return s3
