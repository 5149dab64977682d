"""The gate's error budget: one stated false-alarm rate for the whole verdict.

A release that leaks nothing (its synthetic rows are independent of which real records were in
training) should be held back rarely, and how rarely should be a number the gate states. Every
check that can raise the verdict therefore belongs to one of a few *tests*, each with a valid
p-value under that null:

- ``membership``: each gated attack's rank test, members against non-member targets, and the
  attacks' mean-rank ensemble tested both ways (members ranked higher, or lower: a release that
  avoids its members reveals them by their absence); Bonferroni over the attacks and the ensemble
  (one strong attack is not diluted by weak ones);
- ``targets``: the exposed member targets: the tail-excess test and the Simes test of their
  conformal p-values (the smallest p-value Benjamini–Hochberg could reject), Bonferroni over the
  two;
- ``scan``: the tail-excess test over every training record against the holdout (the member scan;
  its Simes p-value is reported, not tested);
- ``agreement``: partial and quasi-identifier copies, the column-agreement scan;
- ``copies``: verbatim copies beyond the population's own twins at the same size;
- ``disclosure``: singling out, linkability and each inference column, training against control
  targets (a one-sided exact test per evaluator, Bonferroni over them);
- ``subgroups``: the smallest Holm-adjusted rank-test p-value over the audited subgroups;
- ``shadow`` (only in a run where it ran: the generator's recipe is known and the other tests
  alone lack the power): each record's real score against its own scores in refits of the
  generator that never saw it, the members against the other pool records by exact permutation
  (:mod:`privacy_gate.estimators.shadow_stats`).

The review budget ``alpha_R`` (default 2 %) and the block budget ``alpha_B`` (0.1 %) are split
over the enabled tests by weight (Bonferroni). The verdict is REVIEW or worse when some test's
p-value is at most its review share, so by the union bound a leak-free release is held back with
probability at most ``alpha_R`` whatever the tests' dependence. A BLOCK needs a test at its block
share *and* a rule's effect bar crossed (the leak is certain and large), so it happens with
probability at most ``alpha_B``. Bars on upper bounds never raise the verdict: a wide interval
is uncertainty, not risk. Instead, when the membership test could not see the smallest leak the
gate promises (an attack AUC of ``promise_auc``) with the stated power, the verdict is REVIEW for
"insufficient evidence", a reason of its own.

Holm would be uniformly more powerful than Bonferroni here, but the tests are few and the
budget shares are what the report states per test; a share that depends on the other tests'
outcomes would be harder to read for the reviewer.

>>> levels = allocate(review=0.02, block=0.001, weights={"membership": 2, "copies": 1, "scan": 1})
>>> {k: round(v[0], 4) for k, v in levels.items()}
{'membership': 0.01, 'copies': 0.005, 'scan': 0.005}
>>> round(proportion_pvalue(40, 100, 20, 100), 5) < 0.01, proportion_pvalue(20, 100, 20, 100) > 0.5
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from privacy_gate.config import BUDGET_TESTS, BudgetConfig, GateConfig, Rule, rule_test
from privacy_gate.names import (
    AGREEMENT,
    COPIES,
    DISCLOSURE_FAMILIES,
    EXPOSURE,
    GROUP_TEST,
    INFERENCE,
    LINKABILITY,
    MEMBERSHIP,
    RANK_PVALUE,
    SHADOW,
    SINGLING_OUT,
    metric_name,
)

#: The membership test's component for the attacks' mean-rank ensemble (its ``detail`` when
#: smallest).
ENSEMBLE = "ensemble"
#: The tests, in the order the verdict lists them (the config owns the names: ``disable:
#: test:scan``).
TESTS = BUDGET_TESTS
#: Default weights: the attacks, the member scan and the agreement scan carry most of the power
#: for the leaks the gate must catch, so they get twice the share of the others.
DEFAULT_WEIGHTS = {
    "membership": 2.0,
    "targets": 1.0,
    "scan": 2.0,
    "agreement": 2.0,
    "copies": 1.0,
    "disclosure": 1.0,
    "subgroups": 1.0,
    "shadow": 2.0,
}
WHAT = {
    "membership": "the attacks tell training records from holdout records (either way: a release "
    "that avoids its members reveals them too)",
    "targets": "more member targets among the most exposed than chance",
    "scan": "training records with more close synthetic copies than holdout records have",
    "agreement": "training records reproduced on most of their columns more often than holdout "
    "records",
    "copies": "synthetic rows equal to a training row more often than to a holdout row of the same "
    "size",
    "disclosure": "an attacker singles out, links or infers training records better than control "
    "records",
    "subgroups": "a subgroup's members are told apart from its non-members",
    "shadow": "training records score higher on the release than on the generator's own refits "
    "that never saw them, more than the other records do",
}


def allocate(
    *, review: float, block: float, weights: Mapping[str, float]
) -> dict[str, tuple[float, float]]:
    """``{test: (review level, block level)}``: each budget split in proportion to the weights."""
    total = float(sum(weights.values()))
    return {t: (review * w / total, block * w / total) for t, w in weights.items()}


def budget_weights(budget: BudgetConfig, tests: Sequence[str]) -> dict[str, float]:
    """Each test's weight: the default, or the config's ``budget.weights``."""
    return {t: float({**DEFAULT_WEIGHTS, **budget.weights}[t]) for t in tests}


def test_levels(budget: BudgetConfig, tests: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``{test: (review level, block level)}`` of a config's budget over the tests a run has: the
    one place the weights meet the budget."""
    return allocate(review=budget.review, block=budget.block, weights=budget_weights(budget, tests))


def proportion_pvalue(k_train: int, n_train: int, k_control: int, n_control: int) -> float:
    """One-sided exact (Fisher) p-value that the training targets' success rate exceeds the
    control targets': given the synthetic data, both are independent draws with one success
    probability when nothing leaks."""
    if n_train <= 0 or n_control <= 0 or k_train + k_control == 0:
        return 1.0
    table = [[k_train, n_train - k_train], [k_control, n_control - k_control]]
    return float(stats.fisher_exact(table, alternative="greater").pvalue)


def _count(rate: float, n: float) -> int:
    return int(min(max(round(float(rate) * float(n)), 0), round(float(n))))


def disclosure_pvalues(metrics: Mapping[str, float]) -> dict[str, float]:
    """Each disclosure evaluator's p-value: singling out (uni- and multivariate), linkability and
    every inference column (not the summary ``inference.*`` figures, which repeat the worst one)."""
    evaluators = []
    for family in DISCLOSURE_FAMILIES:
        prefix = f"{family}."
        names = sorted(
            {
                k[len(prefix) :].rpartition(".")[0]
                for k in metrics
                if k.startswith(prefix) and k.endswith(".train_rate")
            }
        )
        if family == SINGLING_OUT:
            names = [n for n in names if n in ("univariate", "multivariate")] or (
                [""] if f"{prefix}train_rate" in metrics else []
            )
        elif family == LINKABILITY:
            names = [""] if f"{prefix}train_rate" in metrics else []
        else:
            assert family == INFERENCE
            names = [n for n in names if n]  # inference.train_rate ... repeat the worst column
        evaluators += [f"{family}.{n}" if n else family for n in names]
    out = {}
    for ev in evaluators:
        if (
            f"{ev}.pvalue" in metrics
        ):  # an evaluator's own test (singling out: equal sizes, no size model)
            out[ev] = float(metrics[f"{ev}.pvalue"])
            continue
        tr, cr, nt, nc = (
            metrics.get(f"{ev}.{f}") for f in ("train_rate", "control_rate", "n_train", "n_control")
        )
        if (
            tr is None
            or cr is None
            or nt is None
            or nc is None
            or not all(math.isfinite(float(x)) for x in (tr, cr, nt, nc))
        ):
            out[ev] = math.nan
            continue
        out[ev] = proportion_pvalue(_count(tr, nt), int(round(nt)), _count(cr, nc), int(round(nc)))
    return out


@dataclass(frozen=True)
class TestOutcome:
    """One test of the budget: its p-value, its shares of the two budgets, and what it asks."""

    name: str
    weight: float
    review_level: float
    block_level: float
    pvalue: float  # NaN: the figures it needs are missing (the gate fails closed)
    components: int  # how many p-values it combines (Bonferroni inside the test)
    detail: str  # which component is the smallest

    @property
    def review(self) -> bool:
        return not math.isfinite(self.pvalue) or self.pvalue <= self.review_level

    @property
    def block(self) -> bool:
        return not math.isfinite(self.pvalue) or self.pvalue <= self.block_level

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["pvalue"] = None if not math.isfinite(self.pvalue) else self.pvalue
        d["what"] = WHAT[self.name]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TestOutcome:
        """The outcome a ``verdict.json`` records (``to_dict``; a missing p-value is NaN): what the
        reports read back, so "significant" has one definition (:attr:`review`)."""
        p = d.get("pvalue")
        return cls(
            name=str(d.get("name")),
            weight=float(d.get("weight", 0.0)),
            review_level=float(d.get("review_level", 0.0)),
            block_level=float(d.get("block_level", 0.0)),
            pvalue=math.nan if p is None else float(p),
            components=int(d.get("components", 0)),
            detail=str(d.get("detail", "")),
        )


def _bonferroni(parts: Mapping[str, float]) -> tuple[float, int, str]:
    if not parts:
        return math.nan, 0, "no figures"
    if any(not math.isfinite(p) for p in parts.values()):
        missing = sorted(k for k, p in parts.items() if not math.isfinite(p))
        return math.nan, len(parts), f"missing: {', '.join(missing)}"
    name = min(sorted(parts), key=lambda k: parts[k])
    return min(1.0, len(parts) * parts[name]), len(parts), name


def _get(metrics: Mapping[str, float], key: str) -> float:
    v = metrics.get(key)
    return math.nan if v is None else float(v)


def test_pvalue(
    name: str,
    metrics: Mapping[str, float],
    *,
    attacks: Sequence[str],
    groups: Mapping[str, Mapping[str, float]] | None,
) -> tuple[float, int, str]:
    """``(p-value, components, smallest component)`` of one test from the recorded figures."""
    if name == "membership":
        parts = {a: _get(metrics, metric_name(a, RANK_PVALUE)) for a in attacks}
        if attacks:  # the mean-rank ensemble, two-sided: also a release that avoids its members
            parts[ENSEMBLE] = _get(metrics, f"{MEMBERSHIP}.ensemble_pvalue")
        return _bonferroni(parts)
    if name == "targets":
        return _bonferroni(
            {
                k: _get(metrics, f"{EXPOSURE}.{k}")
                for k in ("tail_pvalue", "simes_pvalue", "share_pvalue")
            }
        )
    if name == "scan":
        # the scan's Simes p-value is reported, not tested: its conformal floor 1 / (n_cal + 1) lets
        # it reach the level only when hundreds of records are exposed, where the tail test is far
        # smaller
        return _bonferroni({"scan_tail_pvalue": _get(metrics, f"{EXPOSURE}.scan_tail_pvalue")})
    if name == "agreement":
        return _bonferroni({"agreement": _get(metrics, f"{AGREEMENT}.pvalue")})
    if name == "copies":
        return _bonferroni({"copies": _get(metrics, f"{COPIES}.pvalue")})
    if name == "shadow":  # looks and parts combined inside (estimators/shadow_stats.py)
        return _bonferroni({"shadow": _get(metrics, f"{SHADOW}.pvalue")})
    if name == "disclosure":
        return _bonferroni(disclosure_pvalues(metrics))
    if name == "subgroups":
        ps = {
            g: float(m.get(f"{GROUP_TEST}.p_adjusted", math.nan)) for g, m in (groups or {}).items()
        }
        if not ps:
            return 1.0, 0, "no audited subgroup"
        if any(not math.isfinite(p) for p in ps.values()):
            return math.nan, len(ps), "a subgroup without its rank test"
        g = min(sorted(ps), key=lambda k: ps[k])
        return ps[g], len(ps), g  # Holm-adjusted already: the family-wise error over the groups
    raise ValueError(f"unknown test {name!r} (tests: {', '.join(TESTS)})")


def run_tests(
    metrics: Mapping[str, float],
    *,
    tests: Sequence[str],
    budget: BudgetConfig,
    attacks: Sequence[str],
    groups: Mapping[str, Mapping[str, float]] | None = None,
) -> tuple[TestOutcome, ...]:
    """Every enabled test with its p-value and budget shares."""
    weights, levels = budget_weights(budget, tests), test_levels(budget, tests)
    out = []
    for t in TESTS:
        if t not in levels:
            continue
        p, k, detail = test_pvalue(t, metrics, attacks=attacks, groups=groups)
        out.append(
            TestOutcome(
                name=t,
                weight=weights[t],
                review_level=levels[t][0],
                block_level=levels[t][1],
                pvalue=p,
                components=k,
                detail=detail,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class PowerNeed:
    """The membership test's reach: the smallest AUC it detects with ``power`` at its level."""

    detectable_auc: float
    promise_auc: float
    per_class_needed: int

    @property
    def sufficient(self) -> bool:
        return self.detectable_auc <= self.promise_auc


def membership_power(
    n_members: int, n_non_members: int, *, level: float, power: float, promise_auc: float
) -> PowerNeed:
    """The rank test's detectable AUC (normal approximation of the Mann–Whitney statistic's null
    spread: ``sqrt((n1 + n0 + 1) / (12 n1 n0))``) and the targets per class that reach
    ``promise_auc``.

    >>> p = membership_power(1000, 1000, level=0.001, power=0.9, promise_auc=0.6)
    >>> round(p.detectable_auc, 3), p.sufficient
    (0.556, True)
    >>> membership_power(40, 40, level=0.001, power=0.9, promise_auc=0.6).sufficient
    False
    """
    z = float(stats.norm.isf(level) + stats.norm.ppf(power))
    if n_members <= 0 or n_non_members <= 0:
        return PowerNeed(
            detectable_auc=1.0, promise_auc=promise_auc, per_class_needed=_needed(z, promise_auc)
        )
    sd = math.sqrt((n_members + n_non_members + 1) / (12.0 * n_members * n_non_members))
    return PowerNeed(
        detectable_auc=min(1.0, 0.5 + z * sd),
        promise_auc=promise_auc,
        per_class_needed=_needed(z, promise_auc),
    )


def copies_detectable(twins: int, compared: int, *, level: float, power: float) -> float:
    """The smallest share of training records copied verbatim that the copy test sees with
    ``power`` at ``level``, where ``twins`` distinct release rows equal a record of the holdout
    sample (``compared`` records per side) and none of the training sample: natural twins, which
    the training side has about as many of under no leakage. ``c`` copies of sampled training
    records make the sign statistic ``c / sqrt(n0 + c)`` standard deviations with ``n0 = 2 twins``,
    so the test reaches ``z_level + z_power`` from ``c = (Z^2 + sqrt(Z^4 + 4 Z^2 n0)) / 2``; a copy
    lands in the sample with probability ``compared / training records``, so the share of training
    records is ``c / compared``. (Copies of records whose twin is in the holdout sample are not
    counted by the test: the share is a lower limit of what it misses.)

    >>> # no twins: a handful of copies
    >>> round(copies_detectable(0, 1000, level=0.002, power=0.9), 4)
    0.0173
    >>> round(copies_detectable(500, 1000, level=0.002, power=0.9), 3)  # twins hide more
    0.14
    """
    z = float(stats.norm.isf(level) + stats.norm.ppf(power))
    n0 = 2.0 * max(0, twins)
    c = (z * z + math.sqrt(z**4 + 4.0 * z * z * n0)) / 2.0
    return min(1.0, c / max(1, compared))


def _needed(z: float, promise_auc: float) -> int:
    # n per class with (2n + 1) / (12 n^2) <= ((promise - 0.5) / z)^2
    d = (promise_auc - 0.5) / z
    a = 12.0 * d * d
    return int(np.ceil((2.0 + math.sqrt(4.0 + 4.0 * a)) / (2.0 * a)))


def describe_gate(
    gate: GateConfig, *, tests: Sequence[str], disabled: Mapping[str, str], rules: Sequence[Rule]
) -> str:
    """The effective gate of a config, as ``privacy-gate check-config`` prints it: the budget, each
    test's levels, the rules (bars) with the test each needs, and what is turned off and why."""
    b = gate.budget
    w, levels = budget_weights(b, tests), test_levels(b, tests)
    lines = [
        "error budget: a release that leaks nothing goes to REVIEW or worse at most "
        f"{b.review:.2%} of the time, "
        f"to BLOCK at most {b.block:.2%}",
        f"power: the membership test must detect an attack AUC of {b.promise_auc:g} with "
        f"{b.power:.0%} power, else "
        "REVIEW for insufficient evidence",
        "",
        "tests (Bonferroni shares of the budget):",
        f"  {'test':<12} {'weight':>6} {'review at':>10} {'block at':>10}  asks whether",
    ]
    for t in tests:
        lines.append(f"  {t:<12} {w[t]:>6g} {levels[t][0]:>10.4g} {levels[t][1]:>10.4g}  {WHAT[t]}")
    if SHADOW not in tests and f"test:{SHADOW}" not in disabled:
        extra = test_levels(b, [*tests, SHADOW])[SHADOW]
        lines.append(
            f"  {SHADOW:<12} {budget_weights(b, [SHADOW])[SHADOW]:>6g} {extra[0]:>10.4g} "
            f"{extra[1]:>10.4g}  only in a run where the generator-aware test runs (the "
            "recipe known, shadow.enabled): the others' shares then shrink to make room"
        )
    lines += ["", "rules (effect bars; each raises the verdict only with its test significant):"]
    for r in rules:
        test = rule_test(r.metric, r.attack, r.scope)
        kind = (
            "upper bound: reported, never raises"
            if r.metric.endswith("_upper")
            else f"{r.action} with test {test}"
            if test
            else f"{r.action} (a requirement, not a leak test)"
        )
        lines.append(f"  {r.describe():<48} {kind}")
    lines += [
        "",
        "turned off:" if disabled else "turned off: nothing (every default protection is on)",
    ]
    lines += [f"  {k}: {v}" for k, v in sorted(disabled.items())]
    return "\n".join(lines) + "\n"


__all__ = [
    "ENSEMBLE",
    "copies_detectable",
    "describe_gate",
    "test_levels",
    "budget_weights",
    "DEFAULT_WEIGHTS",
    "PowerNeed",
    "TESTS",
    "TestOutcome",
    "allocate",
    "disclosure_pvalues",
    "membership_power",
    "proportion_pvalue",
    "rule_test",
    "run_tests",
    "test_pvalue",
]
