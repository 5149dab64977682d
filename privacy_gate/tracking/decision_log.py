"""A run's decision log: the ``review/decision-NNN-<action>.json`` records, appended, never edited.

A decision is written ahead of its effects: ``approve`` writes its record, then the approval tags,
then publishes, then tags the publication. A process killed between those steps leaves a record
whose effects are missing; ``review.decision_recovery`` resolves it. When it rolls an approval
back (nothing was published), it appends a **void** record (``decision-NNN-void.json``) naming the
approval it cancels, by path and SHA-256. A void counts only when

- it names an *approval* (a rejection is never voided: it is completed, which publishes nothing);
- the approval's text still has the SHA-256 the void names;
- its digest verifies — an HMAC with the signing key on a signed run (``signing``), a plain
  SHA-256 on an unsigned one — and is listed in the run's ``approval.voids`` tag.

So a forged void needs the signing key on a signed run, and both the artifact store and the tags
on an unsigned one (the residual ``signing`` documents for the verdict itself). A void that does
not count leaves its approval standing: the run stays decided (fail closed).

A decision record names the run it decides (``run_id``) and the release it was taken on
(``data_sha256``): a record that names another run, or another release than the run's, was copied
in from elsewhere and is refused (IntegrityError naming both), never recovered or counted as this
run's decision.

>>> record = ("review/decision-001-approve.json", '{"action": "approve", "reviewer": "ana"}')
>>> log = effective("r", [record], {})
>>> [d["reviewer"] for d in log.decisions], log.voided
(['ana'], [])
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privacy_gate import names
from privacy_gate.errors import IntegrityError
from privacy_gate.tracking import signing
from privacy_gate.tracking.artifact_seal import text_sha256
from privacy_gate.tracking.signing import run_key

VOID = "void"


@dataclass
class DecisionLog:
    decisions: list[dict[str, Any]] = field(
        default_factory=list
    )  # approve / reject records that stand
    paths: list[str] = field(default_factory=list)  # the artifact path of each standing decision
    voided: list[dict[str, Any]] = field(default_factory=list)  # the void records that count
    ignored: list[str] = field(
        default_factory=list
    )  # void records that do not count (why, one line each)
    count: int = 0  # every record, voids included: the next one is count + 1

    def last(self) -> tuple[str, dict[str, Any]] | None:
        return (self.paths[-1], self.decisions[-1]) if self.decisions else None


def _payload_text(payload: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in payload.items() if k != "digest"}, sort_keys=True)


def void_digest(payload: Mapping[str, Any], tags: Mapping[str, str]) -> str | None:
    """The digest of a void record: with the signing key on a signed run (None without it)."""
    key = run_key(tags)
    return None if key is None else signing.verdict_digest(_payload_text(payload), key)


def void_record(
    run_id: str,
    voided_path: str,
    voided_text: str,
    *,
    at: str,
    by: str,
    reason: str,
    tags: Mapping[str, str],
) -> dict[str, Any] | None:
    """A void record cancelling the approval at ``voided_path``; None when it cannot be signed
    (a signed run and no key in this process)."""
    voided = json.loads(voided_text)
    payload = {
        "action": VOID,
        "run_id": run_id,
        "voids": voided_path,
        "voided_sha256": text_sha256(voided_text),
        "voided_reviewer": voided.get("reviewer"),
        "voided_at": voided.get("at"),
        "at": at,
        "by": by,
        "reason": reason,
    }
    digest = void_digest(payload, tags)
    return None if digest is None else {**payload, "digest": digest}


def approval_tags(decision: Mapping[str, Any]) -> dict[str, str]:
    """The approval tags that state ``decision`` (what the MLflow UI lists and filters by)."""
    return {
        names.TAG_APPROVAL_STATUS: "approved" if decision["action"] == "approve" else "rejected",
        names.TAG_APPROVAL_REVIEWER: decision["reviewer"],
        names.TAG_APPROVAL_AT: decision["at"],
        names.TAG_APPROVAL_COMMENT: (decision.get("comment") or "")[:500],
        names.TAG_APPROVAL_SHA: decision["data_sha256"],
        names.TAG_APPROVAL_PUBLISHED: decision.get("published") or "none",
    }


def voids_tag(tags: Mapping[str, str], digest: str) -> str:
    """The ``approval.voids`` tag with ``digest`` added."""
    listed = (tags.get(names.TAG_APPROVAL_VOIDS) or "").split()
    return " ".join([*listed, digest] if digest not in listed else listed)


def _void_counts(
    run_id: str, void: Mapping[str, Any], texts: Mapping[str, str], tags: Mapping[str, str]
) -> str | None:
    """None when ``void`` counts, else why not."""
    target = void.get("voids")
    if void.get("run_id") != run_id or target not in texts:
        return "names no decision record of this run"
    try:
        voided = json.loads(texts[target])
    except ValueError:
        return f"names {target}, which is not a decision record"
    if voided.get("action") != "approve":
        return f"names {target}, which is not an approval (a rejection is never voided)"
    if void.get("voided_sha256") != text_sha256(texts[target]):
        return f"names {target} with another sha256 than it has"
    expected = void_digest(void, tags)
    if expected is None:
        return f"cannot be verified without the signing key ({names.ENV_SIGNING_KEY})"
    if not hmac.compare_digest(str(void.get("digest") or ""), expected):
        return "its digest does not verify"
    if expected not in (tags.get(names.TAG_APPROVAL_VOIDS) or "").split():
        return f"its digest is not listed in the {names.TAG_APPROVAL_VOIDS} tag"
    return None


def _foreign(
    run_id: str, path: str, record: Mapping[str, Any], release_sha256: str | None
) -> str | None:
    """Why the approve / reject ``record`` at ``path`` does not belong to ``run_id`` (None when it
    does)."""
    other = record.get("run_id")
    if other is not None and other != run_id:
        return f"the decision record {path} in the log of run {run_id} decides run {other}"
    sha = record.get("data_sha256")
    if release_sha256 and sha and sha != release_sha256:
        return (
            f"the decision record {path} of run {run_id} was taken on release {str(sha)[:12]}…, "
            "not on the "
            f"run's release {release_sha256[:12]}…"
        )
    return None


def effective(
    run_id: str,
    files: list[tuple[str, str]],
    tags: Mapping[str, str],
    *,
    release_sha256: str | None = None,
) -> DecisionLog:
    """The decisions that stand among ``files`` ((path, text) of every record, in order). A record
    that is not a JSON object, or that names another run or (given ``release_sha256``, the run's
    judged release) another release, is refused (IntegrityError naming it): it is never skipped.

    >>> record = ("review/decision-001-approve.json", '{"action": "approve", "run_id": "s"}')
    >>> effective("r", [record], {})
    Traceback (most recent call last):
    privacy_gate.errors.IntegrityError: the decision record review/decision-001-approve.json in the
    log of run r decides run s: copied from another run's decision log — refusing to act on it; run
    the gate again for a run with a clean log
    """
    texts = dict(files)
    records = []
    for path, text in files:
        try:
            record = json.loads(text)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            raise IntegrityError(
                f"the decision record {path} of run {run_id} is not a JSON object; the run's "
                "decision log was edited — refusing to act on it"
            )
        why = (
            None if record.get("action") == VOID else _foreign(run_id, path, record, release_sha256)
        )
        if why:
            raise IntegrityError(
                f"{why}: copied from another run's decision log — refusing to act on it; run the "
                "gate again for a run with a clean log"
            )
        records.append((path, record))
    log = DecisionLog(count=len(files))
    cancelled: set[str] = set()
    for path, record in records:
        if record.get("action") == VOID:
            why = _void_counts(run_id, record, texts, tags)
            if why is None:
                cancelled.add(record["voids"])
                log.voided.append(record)
            else:
                log.ignored.append(f"{path}: {why}; the approval it names stands")
    for path, record in records:
        if record.get("action") != VOID and path not in cancelled:
            log.decisions.append(record)
            log.paths.append(path)
    return log


__all__ = [
    "VOID",
    "DecisionLog",
    "approval_tags",
    "effective",
    "void_digest",
    "void_record",
    "voids_tag",
]
