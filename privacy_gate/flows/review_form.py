"""The typed review a release flow waits for (``review.mode: pause``; suspended in a deployment's
run, paused elsewhere: ``review_wait``): the form the Prefect UI shows on "Resume", or
``resume_flow_run(id, run_input={...})``.

The form is made for the run (:func:`review_form`): its description leads with what the gate
found (the run's review text: one sentence of evidence per flagged group, the reasons) and how to
decide; ``decision`` has no default (a reviewer must choose approve or reject); ``suppress``
offers exactly the run's flagged groups (a multi-select). What gets recorded is what was removed
(``privacy_gate.review.decide.decide_run``): a flagged group whose rows all go with a suppressed
one (``sex=Female&race=Black`` inside ``race=Black``) is recorded as suppressed, not approved.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from prefect.input import RunInput
from pydantic import Field, WithJsonSchema, create_model

from privacy_gate.names import SUPPRESS_EXPOSED
from privacy_gate.pipeline.result import RunOutcome

SUPPRESS_HELP = (
    "flagged subgroups to leave out: their synthetic rows are removed and the gate re-runs before "
    "anything is published (a group inside a suppressed one goes with it)"
)


class ReviewInput(RunInput):
    """What a reviewer answers. ``decision``: approve (publish, without the suppressed groups'
    rows) or reject (publish nothing) — required, no default. ``suppress``: flagged groups to
    leave out. ``subgroups``: per flagged group ``approve`` or ``reject`` (a rejected group is
    suppressed; the form's ``suppress`` is the simpler way to say it). ``suppress_exposed``: also
    remove the exposed records' closest synthetic rows before the re-gate."""

    reviewer: str = Field(min_length=1, description="who decides (recorded with the decision)")
    decision: Literal["approve", "reject"] = Field(
        description="approve: publish; reject: publish nothing"
    )
    suppress: list[str] = Field(default_factory=list, description=SUPPRESS_HELP)
    subgroups: dict[str, Literal["approve", "reject"]] = Field(default_factory=dict)
    suppress_exposed: bool = False
    comment: str = Field(default="", description="why (recorded with the decision)")

    def suppressed(self) -> list[str]:
        """Every label to suppress: the ``suppress`` selection, the rejected ``subgroups`` and
        ``exposed`` when asked; none when the decision is reject (nothing is published)."""
        if self.decision != "approve":
            return []
        labels = list(self.suppress) + [g for g, a in self.subgroups.items() if a == "reject"]
        labels += [SUPPRESS_EXPOSED] if self.suppress_exposed else []
        return sorted(set(labels))


def review_form(result: RunOutcome, *, evidence: str | None = None) -> type[ReviewInput]:
    """:class:`ReviewInput` for this run: ``suppress`` limited to its flagged groups (an enum the
    UI shows as a multi-select), and a description that lists them, with ``evidence`` (the run's
    ``privacy-gate review`` text) first when there is one."""
    flagged = list(result.verdict.flagged_subgroups or [])
    if flagged:
        # an enum in the form's schema even for one group (pydantic writes a lone Literal as
        # "const", which the Prefect UI does not offer as a choice)
        choice: Any = Annotated[
            Literal[tuple(flagged)],  # type: ignore[valid-type]
            WithJsonSchema({"type": "string", "enum": flagged}),
        ]
        form = create_model(
            "ReviewInput",
            __base__=ReviewInput,
            suppress=(list[choice], Field(default_factory=list, description=SUPPRESS_HELP)),
        )
    else:
        form = create_model(
            "ReviewInput",
            __base__=ReviewInput,
            suppress=(
                list[str],
                Field(default_factory=list, max_length=0, description="no subgroup was flagged"),
            ),
        )
    lines = [
        (
            f"**REVIEW** of MLflow run `{result.run_id}` (dataset {result.dataset}). Choose a "
            "**decision**: "
            "*approve* publishes the release (without the groups you select under *suppress*), "
            "*reject* "
            "publishes nothing."
        )
    ]
    if flagged:
        lines += ["", f"Flagged subgroups ({len(flagged)}), to approve or suppress:"]
        lines += [f"- `{g}`" for g in flagged]
    if evidence:
        lines += [
            "",
            "What the gate found (`privacy-gate review`):",
            "",
            "```",
            evidence.strip(),
            "```",
        ]
    return form.with_initial_data(description="\n".join(lines))


__all__ = ["ReviewInput", "SUPPRESS_HELP", "review_form"]
