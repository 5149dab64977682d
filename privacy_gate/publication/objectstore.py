"""``s3://`` locations: input data read from, and approved releases published to, an S3-compatible
object store (AWS S3, MinIO, moto, ...).

The endpoint comes from ``MLFLOW_S3_ENDPOINT_URL`` (the variable MLflow's own S3 artefact store
reads, so one setting serves both); credentials and region from the standard ``AWS_*``
variables. boto3 is imported only when an ``s3://`` location is used.

Failures are split in two, because a scheduled pipeline retries only one of them:

- :class:`~privacy_gate.errors.DataError` / :class:`~privacy_gate.errors.ConfigError`: the object
  or bucket does not exist, access is denied — retrying cannot help;
- :class:`StorageUnavailable`: the endpoint does not answer or times out — an infrastructure
  failure a deployment retries (see :func:`privacy_gate.errors.is_infrastructure_error`).

>>> split_uri("s3://releases/adult/2026")
('releases', 'adult/2026')
>>> is_s3("s3://b/k"), is_s3("/tmp/x.csv")
(True, False)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from privacy_gate.errors import DataError, InfrastructureError
from privacy_gate.names import ENV_S3_ENDPOINT

SCHEME = "s3://"


class StorageUnavailable(InfrastructureError):
    """The object store did not answer (connection refused, timeout, 5xx)."""


def is_s3(location: Any) -> bool:
    return isinstance(location, str) and location.startswith(SCHEME)


def split_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> ``(bucket, key)``; a bucket is required, the key may be empty."""
    if not is_s3(uri):
        raise DataError(f"{uri}: not an s3:// URI")
    bucket, _, key = uri[len(SCHEME) :].partition("/")
    if not bucket:
        raise DataError(f"{uri}: no bucket in the s3:// URI")
    return bucket, key.strip("/")


def join(uri: str, *parts: str) -> str:
    return "/".join([uri.rstrip("/"), *(p.strip("/") for p in parts)])


def client() -> Any:
    """A boto3 S3 client for the configured endpoint, failing fast: a few retries with short
    timeouts, so an unreachable store surfaces as :class:`StorageUnavailable` in seconds."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=os.environ.get(ENV_S3_ENDPOINT) or None,
        config=Config(
            connect_timeout=5,
            read_timeout=60,
            retries={"max_attempts": 3, "mode": "standard"},
            s3={"addressing_style": "path"},
        ),
    )


def translate(exc: Exception, uri: str, *, what: str) -> Exception:
    """A boto3/botocore failure as one of ours, naming the location (never its content)."""
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        EndpointConnectionError,
        NoCredentialsError,
    )
    from botocore.exceptions import ConnectionError as BotoConnectionError

    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code in ("NoSuchKey", "404", "NotFound"):
            return DataError(f"{uri}: no such object ({what})")
        if code == "NoSuchBucket":
            return DataError(f"{uri}: the bucket does not exist ({what})")
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return DataError(
                f"{uri}: access denied ({what}); check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY"
            )
        if status >= 500 or code in (
            "SlowDown",
            "ServiceUnavailable",
            "InternalError",
            "RequestTimeout",
        ):
            return StorageUnavailable(
                f"{uri}: the object store failed ({code or status}) while {what}"
            )
        return DataError(f"{uri}: {code or 'error'} while {what}")
    if isinstance(exc, NoCredentialsError):
        return DataError(
            f"{uri}: no S3 credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        )
    if isinstance(exc, (EndpointConnectionError, BotoConnectionError, BotoCoreError, OSError)):
        endpoint = os.environ.get(ENV_S3_ENDPOINT) or "the AWS default endpoint"
        return StorageUnavailable(
            f"{uri}: the object store at {endpoint} is unreachable while {what} "
            f"({type(exc).__name__})"
        )
    return exc


def download(uri: str, dest: Path) -> Path:
    """Copy the object at ``uri`` to the local file ``dest``."""
    bucket, key = split_uri(uri)
    if not key:
        raise DataError(f"{uri}: names a bucket, not an object")
    try:
        client().download_file(bucket, key, str(dest))
    except Exception as exc:  # noqa: BLE001 - translated: every failure names the location
        raise _reading_error(exc, uri) from None
    return dest


def _reading_error(exc: Exception, uri: str) -> Exception:
    """A failure reading the object at ``uri``, translated; a missing object checks its bucket
    first (a HEAD 404 does not say whether the object or the bucket is missing)."""
    mapped = translate(exc, uri, what="reading")
    if isinstance(mapped, DataError) and "no such object" in str(mapped):
        check_bucket(uri)
    return mapped


def _head(uri: str) -> dict:
    """The HEAD of the object at ``uri`` (nothing is downloaded)."""
    bucket, key = split_uri(uri)
    if not key:
        raise DataError(f"{uri}: names a bucket, not an object")
    try:
        return client().head_object(Bucket=bucket, Key=key)
    except Exception as exc:  # noqa: BLE001
        raise _reading_error(exc, uri) from None


def object_size(uri: str) -> int:
    """The size in bytes of the object at ``uri`` (a HEAD request: nothing is downloaded)."""
    return int(_head(uri)["ContentLength"])


def object_etag(uri: str) -> tuple[str, int]:
    """The ETag and size of the object at ``uri`` (a HEAD request): they change when its bytes
    do."""
    head = _head(uri)
    return str(head.get("ETag", "")).strip('"'), int(head["ContentLength"])


def upload(local: Path, uri: str) -> None:
    bucket, key = split_uri(uri)
    try:
        client().upload_file(str(local), bucket, key)
    except Exception as exc:  # noqa: BLE001
        raise translate(exc, uri, what="writing") from None


def put_bytes(data: bytes, uri: str) -> None:
    bucket, key = split_uri(uri)
    try:
        client().put_object(Bucket=bucket, Key=key, Body=data)
    except Exception as exc:  # noqa: BLE001
        raise translate(exc, uri, what="writing") from None


def get_bytes(uri: str) -> bytes | None:
    """The object's content, or None when there is no such object."""
    bucket, key = split_uri(uri)
    try:
        return client().get_object(Bucket=bucket, Key=key)["Body"].read()
    except Exception as exc:  # noqa: BLE001
        mapped = translate(exc, uri, what="reading")
        if isinstance(mapped, DataError) and "no such object" in str(mapped):
            return None
        raise mapped from None


def list_prefixes(uri: str) -> list[str]:
    """The immediate "folders" under ``uri`` (as ``s3://bucket/prefix/name`` URIs, sorted)."""
    bucket, key = split_uri(uri)
    prefix = f"{key}/" if key else ""
    out: list[str] = []
    try:
        for page in (
            client()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=bucket, Prefix=prefix, Delimiter="/")
        ):
            out += [
                f"{SCHEME}{bucket}/{p['Prefix'].rstrip('/')}"
                for p in page.get("CommonPrefixes", [])
            ]
    except Exception as exc:  # noqa: BLE001
        raise translate(exc, uri, what="listing") from None
    return sorted(out)


def list_objects(uri: str) -> list[tuple[str, float]]:
    """Every object under the folder ``uri`` (recursively), as ``(s3://... URI, age in
    seconds)``."""
    import time

    bucket, key = split_uri(uri)
    prefix = f"{key}/" if key else ""
    out: list[tuple[str, float]] = []
    try:
        for page in (
            client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        ):
            out += [
                (f"{SCHEME}{bucket}/{o['Key']}", time.time() - o["LastModified"].timestamp())
                for o in page.get("Contents", [])
            ]
    except Exception as exc:  # noqa: BLE001
        raise translate(exc, uri, what="listing") from None
    return sorted(out)


def delete(uri: str) -> None:
    bucket, key = split_uri(uri)
    try:
        client().delete_object(Bucket=bucket, Key=key)
    except Exception as exc:  # noqa: BLE001
        raise translate(exc, uri, what="deleting") from None


def check_bucket(uri: str) -> None:
    """Fail fast when the bucket of ``uri`` is missing, not accessible or unreachable."""
    bucket, _ = split_uri(uri)
    try:
        client().head_bucket(Bucket=bucket)
    except Exception as exc:  # noqa: BLE001
        mapped = translate(exc, uri, what="checking the bucket")
        if isinstance(mapped, DataError) and "no such object" in str(
            mapped
        ):  # HEAD on a bucket: 404
            mapped = DataError(f"{uri}: the bucket {bucket!r} does not exist")
        raise mapped from None


__all__ = [
    "StorageUnavailable",
    "check_bucket",
    "client",
    "delete",
    "download",
    "get_bytes",
    "is_s3",
    "join",
    "list_objects",
    "list_prefixes",
    "object_size",
    "put_bytes",
    "split_uri",
    "translate",
    "upload",
]
