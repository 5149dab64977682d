"""Verdict digests: what makes ``verdict.json`` trustworthy when a reviewer acts on it.

With ``PRIVACY_GATE_SIGNING_KEY`` set, the gate writes an HMAC-SHA256 of ``verdict.json`` (tag
``gate.verdict_digest`` = ``hmac-sha256:...``); without it a plain SHA-256 (``sha256:...``), which
catches an edited artefact but not someone who can also rewrite the tags. The document's seal
states ``signed: true`` under the HMAC, and the run is tagged ``gate.signed=true``, so a signed
run can never be passed off as an unsigned one:

- an ``hmac-sha256`` digest is only accepted with the key (without it: set the key);
- a ``sha256`` digest is refused when the document or the tag says the run was signed, and
  whenever this process has a key (an installation that signs accepts nothing unsigned).

Residual: on an installation that never set a key, someone who rewrites the artefact and all
tags consistently (unsigned) cannot be detected — only the key makes a forgery detectable.

>>> verdict_digest("{}", key="").startswith("sha256:")
True
>>> verdict_digest("{}", key="k").startswith("hmac-sha256:")
True
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from typing import Any

from privacy_gate.errors import IntegrityError
from privacy_gate.names import (
    ART_VERDICT,
    ENV_SIGNING_KEY,
    SEAL,
    SEAL_SIGNED,
    TAG_SIGNED,
    TAG_VERDICT,
    TAG_VERDICT_DIGEST,
)

HMAC_SCHEME = "hmac-sha256"
PLAIN_SCHEME = "sha256"


def signing_key() -> str | None:
    """The signing key of this process (an empty variable is no key)."""
    return os.environ.get(ENV_SIGNING_KEY) or None


def verdict_digest(text: str, key: str | None = None) -> str:
    """``hmac-sha256:<hex>`` with ``key`` (default: this process's key), else ``sha256:<hex>``."""
    key = key if key is not None else signing_key()
    if key:
        return f"{HMAC_SCHEME}:" + hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()
    return f"{PLAIN_SCHEME}:" + hashlib.sha256(text.encode()).hexdigest()


def signed_tag(signed: bool) -> str:
    return "true" if signed else "false"


def run_signed(tags: Mapping[str, str]) -> bool:
    """A run whose verdict digest is an HMAC: what is recorded on it later must be HMACs too."""
    return (tags.get(TAG_VERDICT_DIGEST) or "").startswith(f"{HMAC_SCHEME}:")


def run_key(tags: Mapping[str, str]) -> str | None:
    """The key that digests what is recorded on a run after its verdict (the derived seal, void
    records: ``decision_log``), as the verdict's was: the signing key on a signed run (None when
    this process has none), "" (a plain SHA-256) on an unsigned one."""
    return signing_key() if run_signed(tags) else ""


def verify_verdict_text(run_id: str, text: str, tags: Mapping[str, str]) -> dict[str, Any]:
    """The verdict document of ``run_id`` after checking ``text`` against the run's digest, its
    signing state and its verdict tag; an IntegrityError (naming the run and what to do)
    otherwise."""
    recorded = tags.get(TAG_VERDICT_DIGEST) or ""
    scheme, _, _ = recorded.partition(":")
    key = signing_key()
    tag_signed = tags.get(TAG_SIGNED)
    if scheme == HMAC_SCHEME:
        if not key:
            raise IntegrityError(
                f"run {run_id} was signed when the gate ran (its {TAG_VERDICT_DIGEST} is an HMAC) "
                f"and this process has no key to verify it: set {ENV_SIGNING_KEY} to the gate's "
                "signing key — refusing to act on it unverified"
            )
    elif scheme == PLAIN_SCHEME:
        if tag_signed == signed_tag(True):
            raise IntegrityError(
                f"run {run_id} is tagged {TAG_SIGNED}=true but its {TAG_VERDICT_DIGEST} is an "
                "unsigned sha256: a signed verdict was downgraded — refusing to act on it"
            )
        if key:
            raise IntegrityError(
                f"run {run_id} has an unsigned (sha256) verdict digest but {ENV_SIGNING_KEY} is "
                "set here: this installation signs its verdicts and accepts no unsigned one (it "
                "may have been rewritten without the key) — run the gate again with the key"
            )
    else:
        raise IntegrityError(
            f"run {run_id} has no valid {TAG_VERDICT_DIGEST} tag (got {recorded[:24]!r}); it is "
            "not "
            "a finished gate run or its tags were edited — refusing to act on it"
        )
    if not hmac.compare_digest(
        recorded, verdict_digest(text, key if scheme == HMAC_SCHEME else "")
    ):
        raise IntegrityError(
            f"{ART_VERDICT} of run {run_id} does not match the digest recorded when the gate "
            f"decided (tag {TAG_VERDICT_DIGEST}); it was edited or the signing key "
            f"({ENV_SIGNING_KEY}) differs — refusing to act on it"
        )
    try:
        document = json.loads(text)
        seal = document.get(SEAL) or {}
    except (ValueError, AttributeError):
        raise IntegrityError(
            f"{ART_VERDICT} of run {run_id} is not a verdict document; refusing to act on it"
        ) from None
    signed = seal.get(SEAL_SIGNED)
    if scheme == PLAIN_SCHEME and signed:
        raise IntegrityError(
            f"{ART_VERDICT} of run {run_id} states it was signed, but its {TAG_VERDICT_DIGEST} is "
            "an unsigned sha256: a signed verdict was downgraded — refusing to act on it"
        )
    if tag_signed is not None and signed is not None and tag_signed != signed_tag(bool(signed)):
        raise IntegrityError(
            f"run {run_id} is tagged {TAG_SIGNED}={tag_signed} but its {ART_VERDICT} says "
            f"signed={bool(signed)}; the tag was edited — refusing to act on it"
        )
    if document.get("verdict") != tags.get(TAG_VERDICT):
        raise IntegrityError(
            f"{ART_VERDICT} of run {run_id} says {document.get('verdict')} but the run's "
            f"{TAG_VERDICT} tag says {tags.get(TAG_VERDICT)}; refusing to act on it"
        )
    return document


__all__ = [
    "HMAC_SCHEME",
    "PLAIN_SCHEME",
    "run_key",
    "run_signed",
    "signed_tag",
    "signing_key",
    "verdict_digest",
    "verify_verdict_text",
]
