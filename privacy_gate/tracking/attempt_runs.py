"""The attempts of one retried release as nested MLflow runs under one parent run.

``runs.retrying`` opens an :class:`AttemptGroup` around its attempts and numbers them. A run
the first attempt records stays a plain run (a release that needs no retry looks as before). From
the second attempt on, the first top-level run an attempt starts (``Tracker.start_run`` asks
:func:`current`) creates the parent run, in the same experiment, once; the earlier attempts' runs
are moved under it (MLflow nests by the ``mlflow.parentRunId`` tag) and every run is tagged with
its attempt number. :meth:`AttemptGroup.finish` puts the final verdict on the parent: its tag, its
name, the number of attempts and the run whose verdict stands.

The group travels as a context variable: attempts run in the same thread or in threads that copy
the context (Prefect's task runners do); an attempt run in another process (a Dask worker)
records a plain run. Only the tracker's own methods are used here (``tracking`` talks to MLflow).

>>> with attempts() as group:
...     current() is group, group.attempt
(True, 1)
>>> current() is None
True
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from privacy_gate import names

PARENT_TAG = "mlflow.parentRunId"
_current: contextvars.ContextVar[AttemptGroup | None] = contextvars.ContextVar(
    "privacy_gate_attempts", default=None
)


@dataclass(eq=False)
class AttemptGroup:
    attempt: int = 1
    parent_id: str | None = None
    tracker: Any = None  # the Tracker that made the parent
    runs: list[tuple[int, str, Any]] = field(
        default_factory=list
    )  # (attempt, run id, tracker) of top-level runs

    def parent_for(self, tracker: Any, name: str, tags: dict[str, str]) -> str | None:
        """The parent a top-level run of this attempt nests under (made on the second attempt's
        first run, the earlier runs moved under it); None during the first attempt."""
        if self.attempt < 2:
            return None
        if self.parent_id is None:
            keep = {k: v for k, v in tags.items() if k in (names.TAG_DATASET, names.TAG_FLOW_RUN)}
            self.parent_id = tracker.start_run(name=name, kind=names.KIND_ATTEMPTS, tags=keep)
            self.tracker = tracker
            for n, run_id, owner in self.runs:
                with contextlib.suppress(
                    Exception
                ):  # best effort: the run itself is complete either way
                    owner.set_tags(run_id, {PARENT_TAG: self.parent_id, names.TAG_ATTEMPT: str(n)})
        return self.parent_id

    def record(self, run_id: str, tracker: Any) -> None:
        self.runs.append((self.attempt, run_id, tracker))

    def finish(self, *, verdict: str, status: str, run_id: str | None, logger: Any = None) -> None:
        """The final verdict on the parent (when there is one), which then ends."""
        if self.parent_id is None:
            return
        try:
            self.tracker.set_tags(
                self.parent_id,
                {
                    names.TAG_VERDICT: verdict,
                    names.TAG_STATUS: status,
                    names.TAG_ATTEMPTS: str(self.attempt),
                    names.TAG_FINAL_RUN: run_id or "none",
                },
            )
            self.tracker.name_with_verdict(self.parent_id, verdict)
            self.tracker.end_run(self.parent_id, failed=status != "ok")
        except Exception as exc:  # noqa: BLE001 - the attempts' own records stand
            (logger or logging.getLogger("privacy_gate")).warning(
                "could not record the final verdict on the attempts' parent run %s (%s)",
                self.parent_id,
                type(exc).__name__,
            )


@contextlib.contextmanager
def attempts() -> Iterator[AttemptGroup]:
    group = AttemptGroup()
    token = _current.set(group)
    try:
        yield group
    finally:
        _current.reset(token)


def current() -> AttemptGroup | None:
    return _current.get()


__all__ = ["AttemptGroup", "attempts", "current"]
