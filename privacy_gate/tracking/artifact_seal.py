"""The seal over every artifact a reviewer sees, not only ``verdict.json``.

When the gate writes its verdict, the SHA-256 of every artifact the run holds at that moment (the
subgroup audit, the exposed records, the scores, plots, validation reports, config, settings,
timings ...) goes into the verdict document's seal (``seal.artifacts``), so under its digest — an
HMAC on a signed run. Two kinds of artifact are written later and sealed on their own:

- **derived** renderings of the sealed evidence (``summary.md``, ``report/index.html``: written
  after the verdict, the report again after every decision): each write records their SHA-256 in
  the tag ``gate.derived_sha256``, under a digest (``gate.derived_digest``) that binds them to the
  run and to its verdict digest, made with the same key as the verdict's;
- **decision records** (``review/decision-*.json``): the decision log, checked by
  ``decision_log`` and ``review.decision_recovery``, not evidence of the gate.

:func:`changes` compares a run's artifacts now with what was sealed and names each one that was
changed, removed, added afterwards, or (derived) is no longer covered by a digest that verifies.
``review`` prints them first, as a warning; ``approve`` refuses the run.

>>> changes("r1", {"artifacts": {"audit/subgroups.json": "aa"}}, {}, {"audit/subgroups.json": "bb"})
[Change(path='audit/subgroups.json', what='changed')]
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass

from privacy_gate import names
from privacy_gate.tracking import signing

#: what each kind of change means for the reviewer
WHAT = {
    "changed": "changed since the gate sealed it",
    "removed": "sealed by the gate but no longer there",
    "added": "added after the gate sealed the run (the gate never wrote it)",
    "unsealed": "not covered by a seal that verifies (its digest tag "
    f"{names.TAG_DERIVED_DIGEST} is missing, does not match, or was made without the signing key)",
}


@dataclass(frozen=True)
class Change:
    path: str
    what: str  # changed | removed | added | unsealed

    def line(self) -> str:
        return f"{self.path}: {WHAT[self.what]}"


def text_sha256(text: str) -> str:
    """The SHA-256 of ``text`` as logged (UTF-8): what a seal records for a text artifact."""
    return hashlib.sha256(text.encode()).hexdigest()


def is_decision_record(path: str) -> bool:
    return path.startswith(names.DECISIONS_DIR + "/")


def sealed_at_gate_time(path: str) -> bool:
    """Whether the verdict's manifest covers ``path``: everything but the verdict itself, the
    renderings made after it and the decision records."""
    return (
        path != names.ART_VERDICT
        and path not in names.DERIVED_ARTIFACTS
        and not is_decision_record(path)
    )


def manifest(hashes: Mapping[str, str]) -> dict[str, str]:
    """The ``seal.artifacts`` of a verdict written when the run holds ``hashes`` (path ->
    sha256)."""
    return {p: hashes[p] for p in sorted(hashes) if sealed_at_gate_time(p)}


def _derived_digest(
    run_id: str, tags: Mapping[str, str], derived: Mapping[str, str], key: str
) -> str:
    text = json.dumps(
        {
            "run_id": run_id,
            "verdict_digest": tags.get(names.TAG_VERDICT_DIGEST) or "",
            "artifacts": dict(sorted(derived.items())),
        },
        sort_keys=True,
    )
    return signing.verdict_digest(text, key)


def trusted_derived(run_id: str, tags: Mapping[str, str]) -> dict[str, str] | None:
    """The derived artifacts' recorded hashes when their digest verifies (with the signing key on a
    signed run), else None."""
    raw, recorded = tags.get(names.TAG_DERIVED_SHA), tags.get(names.TAG_DERIVED_DIGEST) or ""
    if not raw or not recorded:
        return None
    try:
        derived = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(derived, dict) or not all(isinstance(v, str) for v in derived.values()):
        return None
    key = signing.run_key(tags)
    if key is None:
        return None  # cannot be verified here (reading a signed run needs the key anyway)
    if not hmac.compare_digest(recorded, _derived_digest(run_id, tags, derived, key)):
        return None
    return derived


def derived_tags(run_id: str, tags: Mapping[str, str], path: str, sha256: str) -> dict[str, str]:
    """The derived-seal tags once ``path`` was (re)written with content ``sha256``: the entries of a
    seal that still verifies are kept, those of one that does not are dropped (they then show as
    unsealed until rewritten). On a signed run without the key here, the digest is a plain one,
    which verification refuses: a rendering made without the key is never trusted."""
    derived = {**(trusted_derived(run_id, tags) or {}), path: sha256}
    key = signing.run_key(tags) or ""
    return {
        names.TAG_DERIVED_SHA: json.dumps(dict(sorted(derived.items())), separators=(",", ":")),
        names.TAG_DERIVED_DIGEST: _derived_digest(run_id, tags, derived, key),
    }


def changes(
    run_id: str, seal: Mapping[str, object], tags: Mapping[str, str], current: Mapping[str, str]
) -> list[Change]:
    """What differs between the run's artifacts now (``current``: path -> sha256) and what the
    verdict (``seal``, already verified) and the derived seal cover: every sealed file is listed and
    each one changed or missing is named, the derived renderings included; empty when nothing
    differs. A
    run whose verdict has no manifest (made before this version) gives one ``unsealed`` change
    for ``verdict.json``'s missing ``seal.artifacts``."""
    sealed = seal.get(names.SEAL_ARTIFACTS)
    if not isinstance(sealed, Mapping):
        return [Change(f"{names.ART_VERDICT} (seal.{names.SEAL_ARTIFACTS})", "unsealed")]
    out = []
    for path, sha in sorted(sealed.items()):
        if path not in current:
            out.append(Change(path, "removed"))
        elif not hmac.compare_digest(str(sha), current[path]):
            out.append(Change(path, "changed"))
    derived = trusted_derived(run_id, tags)
    # a rendering the derived seal covers must still be there: deleting the report or the summary
    # (what a reviewer reads first) is a change like deleting any sealed evidence
    out += [
        Change(path, "removed")
        for path in sorted(derived or {})
        if path not in current and path not in sealed
    ]
    for path in sorted(current):
        if path in sealed or path == names.ART_VERDICT or is_decision_record(path):
            continue
        if path in names.DERIVED_ARTIFACTS:
            if derived is None or path not in derived:
                out.append(Change(path, "unsealed"))
            elif not hmac.compare_digest(derived[path], current[path]):
                out.append(Change(path, "changed"))
        else:
            out.append(Change(path, "added"))
    return out


def problem(run_id: str, found: list[Change]) -> str:
    """One sentence naming every changed artifact of ``run_id`` and what to do."""
    listed = "; ".join(c.line() for c in found)
    return (
        f"run {run_id}: the artifacts a reviewer reads differ from what the gate sealed in its "
        f"{names.ART_VERDICT} — {listed}. The evidence shown is not the gate's: do not decide on "
        "it; run the "
        "gate again for a trustworthy record (and find out who can write to the tracking store)"
    )


def warning_lines(run_id: str, found: list[Change]) -> list[str]:
    """What ``review`` prints first about a run with changed artifacts: each file by name (nothing
    for a run as the gate left it)."""
    if not found:
        return []
    return [
        (
            f"WARNING: run {run_id} was changed after the gate sealed it — the evidence below may "
            "not be the "
            f"gate's ({len(found)} artifact(s)); `privacy-gate approve` refuses it:"
        ),
        *(f"  CHANGED {c.line()}" for c in found),
        "  do not decide on this record: run the gate again, and find out who can write to the "
        "tracking store",
    ]


__all__ = [
    "Change",
    "changes",
    "derived_tags",
    "manifest",
    "problem",
    "sealed_at_gate_time",
    "text_sha256",
    "trusted_derived",
    "warning_lines",
]
