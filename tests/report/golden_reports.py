"""Realistic verdicts for the report tests: the figures of the golden scenarios
(tests/golden/verdicts.json: real gate runs) judged again by the default gate with its budget, so
every check, message and budget record is what a run records. Hand-made only where the golden
runs have no such case: a REVIEW (the scan's tail test significant), and
a BLOCK that blame turns into a REVIEW naming one group."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from privacy_gate.config import DEFAULT_RULES, BudgetConfig, budget_tests
from privacy_gate.gate import Verdict, decide
from privacy_gate.gate.blame import concentrated_in
from privacy_gate.report.inputs import ReportInputs
from privacy_gate.words.figures import gated_attacks

GOLDEN = json.loads((Path(__file__).resolve().parents[1] / "golden" / "verdicts.json").read_text())
RUN_ID = "0123abcd" * 4


def golden_verdict(
    name: str, *, flagged: dict[str, float] | None = None, **figures: float
) -> Verdict:
    """The golden scenario ``name`` judged by the default gate; ``flagged``: subgroup -> its
    Holm-adjusted rank-test p-value; ``figures`` override recorded figures (dots as ``__``)."""
    g = GOLDEN[name]
    metrics = {k: v for k, v in g["metrics"].items() if v is not None}
    metrics.update({k.replace("__", "."): v for k, v in figures.items()})
    groups = {label: {"membership_test.p_adjusted": p} for label, p in (flagged or {}).items()}
    verdict = decide(
        DEFAULT_RULES,
        metrics,
        attacks=gated_attacks(metrics),
        tests=budget_tests({}),
        groups=groups,
        budget=BudgetConfig(),
        data_hashes=g["data_hashes"],
        rules_hash=g["rules_hash"],
    )
    return verdict.with_run_id(RUN_ID)


def block_verdict() -> Verdict:
    """Verbatim copies of the training split: BLOCK, with every flagged group the golden run had
    (long pooled labels included: the cards must still fit the first screen)."""
    flagged = {g: 0.0001 * (i + 1) for i, g in enumerate(GOLDEN["copy_train"]["flagged_subgroups"])}
    return golden_verdict("copy_train", flagged=flagged)


def review_verdict() -> Verdict:
    """An independent sample whose member scan finds a few people copied (its tail test at
    p = 0.00025, the issue's case) and one flagged group: REVIEW."""
    return golden_verdict(
        "independent", flagged={"race=Black": 0.0008}, exposed__scan_tail_pvalue=0.0002499
    )


def blamed_verdict(group: str = "race=Black", targets: int = 40) -> Verdict:
    """A BLOCK on the exposed share that one group explains, as blame rules it: REVIEW naming the
    group, with what the rest decides without its targets."""
    block = golden_verdict(
        "independent",
        flagged={group: 0.0004},
        exposed__share=0.025,
        exposed__share_lower=0.02,
        exposed__share_upper=0.03,
        exposed__tail_pvalue=1e-7,
    )
    assert block.decision == "BLOCK", block.reasons
    ruled = concentrated_in(block, group=group, targets=targets, rest_decision="APPROVE")
    return dataclasses.replace(
        ruled, decision_without={group: {"decision": "APPROVE", "targets": targets}}
    )


def report_inputs(verdict: Verdict, **over) -> ReportInputs:
    g = verdict.metrics
    kw = dict(
        verdict=verdict.to_dict(),
        run_id=verdict.run_id,
        dataset="adult",
        tracking_uri="sqlite:////tmp/wd/mlflow.db",
        utility={
            "quality": g.get("utility.quality"),
            "worst_1way_column": "capital_gain",
            "worst_1way_tvd": 0.094,
        },
    )
    kw.update(over)
    return ReportInputs(**kw)
