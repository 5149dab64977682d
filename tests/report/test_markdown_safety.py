"""A category value that closes the run description's code fence or holds
Markdown / HTML renders as literal text on the MLflow run page (no image, no bold "ALL CLEAR", no
link, no raw HTML); the summary the description ends with is escaped the same way."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from privacy_gate import names
from privacy_gate.gate.verdict import Check, Verdict
from privacy_gate.runs.mlflow_sink import MlflowSink
from privacy_gate.safe_text import markdown_code, markdown_fence, markdown_text

RUN_ID = "0123abcd" * 4
PAYLOAD = (
    "x\n```\n\n![chart](http://evil.example/x.png) **ALL CLEAR** [details](http://evil.example) "
    "<img src=x onerror=alert(1)> `` ~~gone~~ <http://evil.example>"
)
GROUP = f"race={PAYLOAD}"


class _Tracker:
    uri = "sqlite:////wd/mlflow.db"
    experiment_id = None

    def __init__(self):
        self.notes = {}

    def artifact_exists(self, run_id, path):
        return path == names.ART_SUBGROUPS

    def read_json(self, run_id, path):
        return [
            {
                "group": GROUP,
                "attack": "dcr",
                "n_members": 64,
                "n_non_members": 60,
                "auc": 0.91,
                "tpr_at_fpr_0.01": 0.31,
                "test_p_adjusted": 0.0008,
            }
        ]

    def set_description(self, run_id, markdown):
        self.notes[run_id] = markdown


def _verdict(decision: str) -> Verdict:
    check = Check(
        rule="subgroup any.auc <= 0.7",
        metric=f"{GROUP}: dcr.auc",
        observed=0.91,
        threshold=0.7,
        bound="max",
        action="review",
        passed=False,
        group=GROUP,
        message=f"{GROUP}: dcr.auc = 0.91 violates max 0.7 (<=)",
    )
    return Verdict(
        decision=decision,
        status="ok",
        reasons=(check,),
        checks=(check,),
        metrics={"dcr.auc": 0.55},
        flagged_subgroups=(GROUP,) if decision == "REVIEW" else (),
        run_id=RUN_ID,
    )


def _rendered(markdown: str) -> str:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)


@pytest.mark.parametrize("decision", ["REVIEW", "BLOCK"])
def test_the_run_description_renders_data_as_text(decision):
    tracker = _Tracker()
    sink = MlflowSink(tracker, RUN_ID)
    verdict = _verdict(decision)
    sink.record_description(verdict, sink.summary_markdown(verdict))
    html = _rendered(tracker.notes[RUN_ID])
    for markup in ("<img", "<a ", "<strong>ALL CLEAR", "<s>gone", "<h", "onerror=alert(1)>"):
        assert markup not in html.replace("<h1>", "").replace("<h2>", ""), (markup, html)
    assert html.count("<pre>") == (
        1 if decision == "REVIEW" else 0
    )  # the Decide block only, never closed early
    if decision == "REVIEW":
        block = html[html.index("<pre>") : html.index("</pre>")]
        assert "privacy-gate reject" in block and "privacy-gate review" in block
    assert "ALL CLEAR" in html and "chart" in html  # shown, as text


def test_markdown_helpers():
    assert (
        markdown_text("race=Black: AUC 0.68 [0.61, 0.75] (<=)")
        == "race=Black: AUC 0.68 [0.61, 0.75] (&lt;=)"
    )
    assert "<strong>" not in _rendered("- " + markdown_text("**bold** __b__"))
    assert "<code>" not in _rendered("- " + markdown_text("`code`"))
    assert _rendered("- " + markdown_code("a `` b")).count("<code>") == 1
    fence = markdown_fence(["echo ```", "x\n```"])
    assert len(fence) == 4 and fence[0] == fence[-1] == "````"
    assert _rendered("\n".join(fence)).count("<pre>") == 1
