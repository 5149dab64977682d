"""The small exception tree of privacy-gate.

Every message says what is wrong *and* names the file, column or setting, so a user can act on it
without a traceback. Messages never contain values of real records.
"""

from __future__ import annotations


class PrivacyGateError(Exception):
    """Base class of all errors raised on purpose by privacy-gate."""


class ConfigError(PrivacyGateError):
    """A release config, dataset spec or rule set is invalid (bad key, value or combination)."""


class DataError(PrivacyGateError):
    """A data file is missing, unreadable, or does not match its dataset spec."""


class InsufficientDataError(DataError):
    """There are too few rows (or entities) for the requested split, targets or confidence."""


class ValidationFailed(PrivacyGateError):
    """A Great Expectations suite failed; ``failures`` lists the failed expectations."""

    def __init__(self, message: str, failures: list[str] | None = None):
        super().__init__(message)
        self.failures = list(failures or [])


class ReviewError(PrivacyGateError):
    """A review decision was refused (already decided, BLOCKed run, data hash changed, ...)."""


class IntegrityError(ReviewError):
    """A recorded artefact does not match what was recorded at decision time (edited or corrupt)."""
