"""The figures behind :mod:`privacy_gate.gate.blame`: the release's figures recomputed without one
flagged group's targets, and each larger flagged group's rank test without a smaller one's.

Recomputed without the group: every gated attack's ROC figures and MACE bounds, the exposure
figures over the member targets (discoveries, tail-excess test, share bounds), and the release-wide
disclosure risks with the group's training and control records left out. On a BLOCK the member
scan's, copy test's and agreement scan's figures are kept as they are (a BLOCK is ruled on the
figures above). On a REVIEW, the reviewer's "what if" for each group also measures those three
tests again, where they are significant, on the synthetic release without the group's rows: the
rows ``approve --suppress GROUP`` removes, so for these tests the figures are the re-gate's own.
Only the three smallest flagged groups are tried: a leak concentrated in a group shows in the
smallest group that holds it.

Statistically this is a *ruling*, not a test: the group is chosen after looking at the data, so
"without it the release would pass" is no approval — it only turns a BLOCK into a human's
decision, and suppressing the group re-gates the rest from scratch.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import numpy as np

from privacy_gate.errors import InsufficientDataError
from privacy_gate.estimators.exposure import discover_exposed
from privacy_gate.estimators.group_tests import group_pvalue, membership_figures
from privacy_gate.estimators.mace.queries import mace_for_attacks
from privacy_gate.estimators.metrics import roc_metrics
from privacy_gate.experiment.attack_runs import strongest
from privacy_gate.experiment.disclosure import DisclosureInputs, measure_without
from privacy_gate.experiment.floors import calibration_level
from privacy_gate.experiment.grouping import group_mask
from privacy_gate.experiment.settings import GateSettings
from privacy_gate.experiment.subgroups import AuditResult
from privacy_gate.experiment.targets import Targets
from privacy_gate.gate import Verdict, decide
from privacy_gate.gate.blame import concentrated_in, explained_groups
from privacy_gate.gate.budget import TestOutcome, run_tests, test_levels
from privacy_gate.names import STRONGEST, exposure_metric, metric_name
from privacy_gate.pipeline.release_tests import SYNTHETIC_SIDE, figures_without_rows


class BlameState(Protocol):
    """What blame reads of a gate run's state (``pipeline.gate_run.GateState`` is one; named here
    so this module does not import the stage list that calls it)."""

    settings: GateSettings
    inputs: Any  # GateInputs: the splits and the synthetic data
    targets: Targets | None
    audit: AuditResult | None
    metrics: dict[str, float]
    disclosure_inputs: DisclosureInputs | None  # set when the disclosure risks were measured
    shortfalls: list[Any]  # stage floors a small table did not meet (REVIEW: too little evidence)

    @property
    def gated(self) -> list[Any]: ...


#: The fields of a gate run's state blame reads: :class:`BlameState`'s, its ``gated`` through
#: ``settings`` and ``outcomes``, and the run's budget tests (``GateState.tests``) through
#: ``shadow``. ``disclosure_inputs`` and ``shadow`` are None when their stages did not run, and
#: blame handles that; so do its checks of ``targets`` and ``audit``.
READS = (*BlameState.__annotations__, "outcomes", "shadow")

#: flagged groups tried as the explanation of a BLOCK, smallest first
MAX_CANDIDATES = 3


def _kept(
    state: BlameState, keep: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The kept targets' labels, entity ids (a panel) and units (people), in the gate run's form."""
    settings, targets = state.settings, state.targets
    labels = np.asarray(targets.labels)[keep]
    entities = (
        None
        if settings.spec.entity_id is None
        else targets.records[settings.spec.entity_id].to_numpy()[keep]
    )
    units = None if targets.units is None else np.asarray(targets.units)[keep]
    return labels, entities, units


def _exposure_without(
    state: BlameState, keep: np.ndarray, scores: dict[str, np.ndarray]
) -> dict[str, float]:
    """The exposed-target figures (``exposed.*``) on the kept targets, measured as the gate run
    measures them (the calibration level a small table allows included)."""
    settings = state.settings
    labels, _, units = _kept(state, keep)
    e = settings.exposure
    n_calibration = (
        int((labels == 0).sum()) if units is None else int(np.unique(units[labels == 0]).size)
    )
    res = discover_exposed(
        scores,
        labels,
        np.asarray(state.targets.row_ids)[keep],
        q=e.fdr,
        level=calibration_level(e.level, n_calibration),
        delta=e.delta,
        method=e.method,
        tail_max_share=e.tail_max_share,
        seed=settings.targets.seed,
        units=units,
    )
    return {exposure_metric(k): v for k, v in res.metrics().items()}


def rest_figures(state: BlameState, group: str) -> dict[str, float]:
    """The release-wide figures without ``group``: on the targets outside it, and the disclosure
    risks without its training and control records."""
    settings, targets = state.settings, state.targets
    keep = ~group_mask(targets.records, group, key=state.inputs.label_key)
    labels, entities, units = _kept(state, keep)
    out: dict[str, float] = {}
    rest = [
        dataclasses.replace(
            o, scores=o.scores[keep], metrics=dict(roc_metrics(o.scores[keep], labels))
        )
        for o in state.gated
    ]
    for o in rest:
        out.update({metric_name(o.name, k): float(v) for k, v in o.metrics.items()})
    scores = {o.name: o.scores for o in rest}
    out.update(membership_figures(scores, labels, entities, seed=settings.targets.seed))
    out.update({metric_name(STRONGEST, k): v for k, (v, _) in strongest(rest).items()})
    # a panel: over the people with a target row outside the group, each by their rows outside it
    m = settings.mace
    out.update(
        mace_for_attacks(
            scores,
            labels,
            np.asarray(targets.row_ids)[keep],
            prior=m.prior,
            delta=m.delta,
            n_permutations=m.n_permutations,
            epsilon=settings.epsilon,
            units=units,
        ).metrics
    )
    out.update(_exposure_without(state, keep, scores))
    if state.disclosure_inputs is not None:
        key = state.inputs.label_key
        out.update(
            measure_without(
                lambda df: group_mask(df, group, key=key),
                state.inputs.synthetic,
                state.inputs.splits.train,
                state.disclosure_inputs,
                settings.spec,
                settings.disclosure,
                seed=settings.targets.seed,
            )
        )
    return out


def _tests(state: BlameState) -> list[str]:
    """The budget's tests of the run: the gate state's own (with the tests the run decided to add,
    the generator-aware test), else the settings'."""
    return list(getattr(state, "tests", None) or state.settings.budget_tests)


def _group_level(state: BlameState) -> float | None:
    """The level of the subgroup rank-test rule (``membership_test.p_adjusted >= level``), if
    any."""
    if "subgroups" not in _tests(state):
        return None
    return test_levels(state.settings.gate.budget, _tests(state))["subgroups"][0]


def _explained(
    state: BlameState,
    order: list[str],
    masks: dict[str, np.ndarray],
    labels: np.ndarray,
    *,
    level: float,
) -> dict[str, str]:
    """``{group: other}`` for each flagged group that is not significant without ``other``'s
    targets while ``other`` stays significant without its own (or, when they share one leak, is
    the smaller of the two): the flag is ``other``'s. Each group's
    rest p-value is multiplied by the audit's number of groups (Bonferroni: conservative against
    the Holm-adjusted value that flagged it). Smaller explaining groups are preferred."""
    gated = {o.name: o.scores for o in state.gated}
    family = max(1, len(state.audit.groups))

    def significant_without(group: str, removed: str) -> bool:
        p, _ = group_pvalue(gated, masks[group] & ~masks[removed], labels, seed=0)
        return min(1.0, p * family) < level

    explained: dict[str, str] = {}
    for small in order:  # smallest first: the most specific explanation wins
        if small in explained:
            continue
        # ``big`` is flagged through ``small`` when it is not significant without it, and either
        # ``small`` holds its own without ``big`` or — the two share one leak — ``small`` is smaller
        rest_p = {
            big: 0.0 if significant_without(big, small) else 1.0
            for big in order
            if big != small
            and big not in explained
            and (masks[big] & masks[small]).any()
            and (masks[small].sum() < masks[big].sum() or significant_without(small, big))
        }
        explained.update(explained_groups(rest_p, smaller=small, level=level))
    return explained


#: the release-wide tests the what-if can recompute without a group's targets (the member scan, the
#: agreement scan, the copy test and the disclosure risks read every training record: not
#: attributed)
TARGET_TESTS = ("membership", "targets")


def target_tests_without(
    state: BlameState, group_mask_: np.ndarray, tests: list[str]
) -> dict[str, bool]:
    """For each of ``tests`` (among :data:`TARGET_TESTS`), whether it is still significant at its
    review share on the targets outside the group: the membership test's rank tests and ensemble,
    and the targets test's tail, Simes and share tests, computed as the gate run computes them."""
    settings = state.settings
    keep = ~group_mask_
    labels, entities, _ = _kept(state, keep)
    scores = {o.name: o.scores[keep] for o in state.gated}
    figures = dict(membership_figures(scores, labels, entities, seed=settings.targets.seed))
    if "targets" in tests:
        figures.update(_exposure_without(state, keep, scores))
    outcomes = run_tests(
        {**state.metrics, **figures},
        tests=_tests(state),
        budget=settings.gate.budget,
        attacks=settings.gated_attacks,
    )
    return {t.name: t.review for t in outcomes if t.name in tests}


def points_at(
    state: BlameState, verdict: Verdict, order: list[str], masks: dict[str, np.ndarray]
) -> str | None:
    """The flagged group the evidence points at, if one: the smallest flagged group (not flagged
    through another) holding at most half the targets, such that every release-wide test that is
    significant and can be recomputed without the group's targets (:data:`TARGET_TESTS`) is no
    longer significant without them. A ruling read off the data, like blame's: it orders the
    reasons, it decides nothing."""
    recomputable = [t for t in _significant(verdict) if t in TARGET_TESTS]
    for g in order:
        if g in verdict.explained or 2 * masks[g].sum() > len(masks[g]):
            continue
        if not recomputable:
            return g
        try:
            still = target_tests_without(state, masks[g], recomputable)
        except (ValueError, KeyError, InsufficientDataError):  # the rest cannot be measured
            continue
        if not any(still.values()):
            return g
        # the smallest candidate does not explain the evidence: a larger one would hold more
        return None
    return None


def lead_with(verdict: Verdict, group: str) -> Verdict:
    """``verdict`` with ``group``'s reasons first among the review-level ones (a BLOCK's blocking
    reasons stay first: they decided it). The headline a reader sees (``deciding_reason``, the
    first reasons of a summary) then names the group the evidence points at, not only the
    release-wide tests it moved."""
    reasons = list(verdict.reasons)
    blocking = [c for c in reasons if c.action == "block"]
    own = [c for c in reasons if c.action != "block" and c.group == group]
    rest = [c for c in reasons if c.action != "block" and c.group != group]
    return dataclasses.replace(verdict, reasons=tuple(blocking + own + rest), points_at=group)


def _significant(verdict: Verdict) -> list[str]:
    """The budget tests significant at their review share in ``verdict``."""
    return [t["name"] for t in verdict.budget.get("tests", ()) if TestOutcome.from_dict(t).review]


def rest_decision(
    state: BlameState,
    group: str,
    mask: np.ndarray,
    *,
    extra_failures: list,
    synthetic_side: list[str] = (),
) -> dict[str, Any] | None:
    """What the release-wide figures decide without ``group`` (``mask``: its targets), as blame
    records it in ``Verdict.decision_without``: the decision, the group's targets, and, for the
    tests in ``synthetic_side`` (among :data:`~privacy_gate.pipeline.release_tests.SYNTHETIC_SIDE`),
    measured again on the release without the group's synthetic rows, how many rows that is.
    None when the rest cannot be measured."""
    settings = state.settings
    try:
        figures = rest_figures(state, group)
        rows = None
        if synthetic_side:
            synthetic = state.inputs.synthetic
            drop = group_mask(synthetic, group, key=state.inputs.label_key)
            rows = int(drop.sum())
            figures.update(
                figures_without_rows(
                    state, synthetic[~drop].reset_index(drop=True), list(synthetic_side)
                )
            )
    except (ValueError, KeyError, InsufficientDataError):  # the rest cannot be measured
        return None
    rules = [r for r in settings.active_rules if r.scope == "global"]
    rest = decide(
        rules,
        {**state.metrics, **figures},
        attacks=settings.gated_attacks,
        extra_failures=extra_failures,
        budget=settings.gate.budget,
        tests=[t for t in _tests(state) if t != "subgroups"],
        shortfalls=getattr(state, "shortfalls", ()),
    )
    out: dict[str, Any] = {"decision": rest.decision, "targets": int(mask.sum())}
    if rows is not None:
        out.update(rows=rows, remeasured=sorted(synthetic_side))
    return out


def _candidates(order: list[str], masks: dict[str, np.ndarray]) -> list[str]:
    """The groups blame tries: the smallest flagged ones holding at most half the targets."""
    out = []
    for g in order[:MAX_CANDIDATES]:
        if 2 * masks[g].sum() > len(masks[g]):
            break  # not a small group: it holds most targets (and larger ones follow)
        out.append(g)
    return out


def blame_groups(state: BlameState, verdict: Verdict, *, extra_failures: list) -> Verdict:
    """``verdict`` with the flagged groups explained by smaller ones, a BLOCK that one flagged
    group explains turned into a REVIEW naming it (:mod:`privacy_gate.gate.blame`), and what the
    release-wide figures decide without each of the smallest flagged groups (a BLOCK's or a
    REVIEW's "what if")."""
    flagged = list(verdict.flagged_subgroups)
    if not flagged or state.audit is None or state.targets is None:
        return verdict
    records, labels = state.targets.records, np.asarray(state.targets.labels).astype(bool)
    masks = {}
    for g in flagged:
        try:
            masks[g] = group_mask(records, g, key=state.inputs.label_key)
        except (KeyError, ValueError):  # a label the targets cannot resolve: nothing to blame it on
            continue
    order = sorted(masks, key=lambda g: (int(masks[g].sum()), g))
    level = _group_level(state)
    if level is not None and len(order) > 1:
        verdict = dataclasses.replace(
            verdict, explained=_explained(state, order, masks, labels, level=level)
        )
    if verdict.decision != "BLOCK":
        verdict = _review_what_if(state, verdict, order, masks, extra_failures)
        return _led(state, verdict, order, masks)
    # every group tried is recorded with what the rest decides (the reviewer's "what if"), also
    # when the rest still blocks: then suppressing that group alone would not do
    tried: dict[str, dict[str, Any]] = {}
    for g in _candidates(order, masks):
        rest = rest_decision(state, g, masks[g], extra_failures=extra_failures)
        if rest is None:
            continue
        tried[g] = rest
        ruled = concentrated_in(
            verdict, group=g, targets=rest["targets"], rest_decision=rest["decision"]
        )
        if ruled is not verdict:
            return _led(state, dataclasses.replace(ruled, decision_without=tried), order, masks)
    return dataclasses.replace(verdict, decision_without=tried) if tried else verdict


def _review_what_if(
    state: BlameState,
    verdict: Verdict,
    order: list[str],
    masks: dict[str, np.ndarray],
    extra_failures: list,
) -> Verdict:
    """A REVIEW with what the release-wide figures decide without each of its smallest flagged
    groups; the significant tests that read every training record measured again without the
    group's synthetic rows. Nothing here changes the decision."""
    if verdict.decision != "REVIEW":
        return verdict
    synthetic_side = [t for t in _significant(verdict) if t in SYNTHETIC_SIDE]
    tried = {}
    for g in _candidates(order, masks):
        rest = rest_decision(
            state, g, masks[g], extra_failures=extra_failures, synthetic_side=synthetic_side
        )
        if rest is not None:
            tried[g] = rest
    return dataclasses.replace(verdict, decision_without=tried) if tried else verdict


def _led(
    state: BlameState, verdict: Verdict, order: list[str], masks: dict[str, np.ndarray]
) -> Verdict:
    group = points_at(state, verdict, order, masks)
    return verdict if group is None else lead_with(verdict, group)


__all__ = [
    "MAX_CANDIDATES",
    "READS",
    "TARGET_TESTS",
    "blame_groups",
    "lead_with",
    "points_at",
    "rest_decision",
    "rest_figures",
    "target_tests_without",
]
