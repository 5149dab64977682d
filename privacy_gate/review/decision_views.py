"""A REVIEW's decision on the MLflow surfaces people look at: the run's name (``REVIEW approved ·
gate-adult``, what the run list shows) and its description (the decision on its first line, the
decision commands gone). Derived from the run's standing decisions, so a decision rolled back
(``decision_recovery``) puts both back to pending. The report is re-rendered separately
(``decision_recovery.refresh_report``).
"""

from __future__ import annotations

import logging

from privacy_gate import names, tracking
from privacy_gate.gate.verdict import Verdict
from privacy_gate.report.summary import run_description
from privacy_gate.tracking.review_records import decision_words

log = logging.getLogger("privacy_gate")

#: a decision's action as the run's name says it
ACTED = {"approve": "approved", "reject": "rejected"}


def show_decision(tracker: tracking.Tracker, run_id: str) -> None:
    """Name and describe ``run_id`` with its standing decision (or as pending when it has none);
    the decision stands even if this fails (a warning)."""
    try:
        tags = tracker.run_tags(run_id)
        decisions = tracker.decisions(run_id)
        decision = decisions[0] if decisions else None
        verdict = Verdict.from_dict(tracker.read_verified_verdict(run_id)).with_run_id(run_id)
        tracker.name_with_verdict(
            run_id, verdict.decision, decided=ACTED.get(decision["action"]) if decision else None
        )
        summary = (
            tracker.read_text(run_id, names.ART_SUMMARY)
            if tracker.artifact_exists(run_id, names.ART_SUMMARY)
            else ""
        )
        published = tags.get(names.TAG_APPROVAL_PUBLISHED)
        decided = decision_words(decision, published=published) if decision else None
        tracker.set_description(
            run_id,
            run_description(
                tracker,
                run_id,
                verdict,
                summary=summary,
                workdir=tags.get(names.TAG_WORKDIR),
                decided=decided,
            ),
        )
    except Exception as exc:  # noqa: BLE001 - the record stands; name and description are derived
        log.warning(
            "could not show the decision in the name and description of run %s (%s)",
            run_id,
            type(exc).__name__,
        )


__all__ = ["ACTED", "show_decision"]
