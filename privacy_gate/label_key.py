"""The secret that hides record values in group labels.

A category value that may not be shown (one only training records hold, say a rare country or a
free-text entry) still names a subgroup in the audit, in MLflow keys, the verdict and the report.
It is shown as ``#`` + 10 hex digits of an HMAC-SHA256 keyed with a per-store secret: without the
key, nobody can test a guess (an unsalted hash was reversed by hashing a list of country names).
The key is 32 random bytes kept in ``<workdir>/label-key`` (hex), created 0600 on first
use; it never goes into MLflow, an artefact, a log or a message. What the run records is the key's
*fingerprint* (an HMAC of a constant), so a command with another key refuses to resolve the run's
labels instead of silently matching nothing.

Labels are stable within one workdir (``approve --suppress '#…'`` finds the group the gate named)
and differ across workdirs. To decide runs from another machine (an ``s3://`` quarantine), copy
``label-key`` into that machine's workdir (0600). :func:`~privacy_gate.pipeline.evaluate` without
a key uses a fresh one per call: its labels cannot be reversed, nor compared across calls.

>>> key = LabelKey(bytes(32))
>>> key.token("Laos"), key.token("Laos") == LabelKey(bytes([1]) * 32).token("Laos")
('#2ab254c430', False)
>>> key   # the secret is never shown
LabelKey(fingerprint=9417de3a7a2885a8)
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
from pathlib import Path

from privacy_gate.errors import ConfigError
from privacy_gate.names import LABEL_KEY_FILE
from privacy_gate.private_files import write_private

#: hex digits of a hashed label (``#`` + these); names.key_segment reads the same shape
TOKEN_DIGITS = 10
_KEY_BYTES = 32
_FINGERPRINT_INPUT = b"privacy-gate label key fingerprint"
_KEY_TEXT = re.compile(r"[0-9a-f]{64}")


class LabelKey:
    """A label key: :meth:`token` hashes a value; ``fingerprint`` names the key without revealing
    it. Its repr shows only the fingerprint (it may travel to a worker inside the gate's inputs)."""

    __slots__ = ("_secret", "fingerprint")

    def __init__(self, secret: bytes):
        if not isinstance(secret, bytes) or len(secret) < _KEY_BYTES:
            raise ValueError(f"a label key is at least {_KEY_BYTES} bytes")
        self._secret = secret
        self.fingerprint = hmac.new(secret, _FINGERPRINT_INPUT, hashlib.sha256).hexdigest()[:16]

    def token(self, value: str) -> str:
        """``#`` + the first 10 hex digits of HMAC-SHA256(key, value)."""
        digest = hmac.new(
            self._secret, str(value).encode("utf-8", "surrogatepass"), hashlib.sha256
        ).hexdigest()
        return "#" + digest[:TOKEN_DIGITS]

    def __repr__(self) -> str:
        return f"LabelKey(fingerprint={self.fingerprint})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LabelKey) and hmac.compare_digest(self._secret, other._secret)

    def __hash__(self) -> int:
        return hash(self.fingerprint)

    def __reduce__(
        self,
    ):  # pickled for a worker process (Dask): the secret goes with it, as the data does
        return (LabelKey, (self._secret,))

    @classmethod
    def ephemeral(cls) -> LabelKey:
        """A fresh random key (a run with no store: its labels cannot be reversed, nor
        reproduced)."""
        return cls(secrets.token_bytes(_KEY_BYTES))

    @classmethod
    def for_workdir(cls, workdir: str | Path, *, create: bool = True) -> LabelKey:
        """The key of ``workdir`` (``<workdir>/label-key``), created on first use when ``create``.
        Refused (ConfigError naming the file and what to do): a key file others may read, or one
        that is not a key."""
        path = Path(workdir) / LABEL_KEY_FILE
        if not path.exists():
            if not create:
                raise ConfigError(
                    f"{path}: no label key in this workdir (the gate makes one on its first run); "
                    "use the --workdir the gate ran in, or copy its label-key here (mode 0600)"
                )
            _create(path)
        return cls._read(path)

    @classmethod
    def _read(cls, path: Path) -> LabelKey:
        try:
            info = path.stat()
            text = path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise ConfigError(f"{path}: the label key cannot be read ({reason})") from None
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise ConfigError(
                f"{path}: the label key may be read by other users (mode "
                f"{stat.S_IMODE(info.st_mode):04o}); make it private: chmod 600 {path}"
            )
        if not _KEY_TEXT.fullmatch(text):
            raise ConfigError(
                f"{path}: not a label key (64 hex digits expected); restore it from where it was "
                "copied, or remove it to start a new key (the hashed labels of earlier runs then "
                "can no longer be suppressed)"
            )
        return cls(bytes.fromhex(text))


def _create(path: Path) -> None:
    """Write a new key beside ``path`` (0600) and link it into place: concurrent first runs on one
    workdir agree on one key (the link fails for all but the first), and no reader ever sees a
    partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        write_private(scratch, (secrets.token_bytes(_KEY_BYTES).hex() + "\n").encode("ascii"))
        try:
            os.link(scratch, path)
        except FileExistsError:
            pass  # another process made it first: theirs is the key
    finally:
        scratch.unlink(missing_ok=True)


def matching_key(workdir: str | Path, *, fingerprint: str | None, what: str) -> LabelKey:
    """The workdir's key, checked to be the one that hashed ``what``'s labels (``fingerprint``, as
    sealed on the run). ConfigError otherwise: labels hashed with another key name other rows."""
    if not fingerprint:
        raise ConfigError(
            f"{what} hashed its group labels without a label key (it predates keyed labels); its "
            "hashed groups cannot be resolved — run the gate again"
        )
    key = LabelKey.for_workdir(workdir, create=False)
    if not hmac.compare_digest(key.fingerprint, str(fingerprint)):
        raise ConfigError(
            f"{what} hashed its group labels with another label key than "
            f"{Path(workdir) / LABEL_KEY_FILE} (fingerprint {fingerprint}, this one "
            f"{key.fingerprint}); "
            "use the --workdir the gate ran in, or copy its label-key here (mode 0600)"
        )
    return key


__all__ = ["TOKEN_DIGITS", "LabelKey", "matching_key"]
