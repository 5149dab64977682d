"""The gate's rules and its error budget: :class:`Rule`, the defaults (:data:`DEFAULT_RULES`), the
budget's tests (:data:`BUDGET_TESTS`, :class:`BudgetConfig`), turning a protection off
(:class:`Disable`), the ``gate`` section (:class:`GateConfig`) and which test a rule's bar needs
(:func:`rule_test`).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Literal

from pydantic import Field, model_validator

from privacy_gate.config.sections import AttackConfig, DisclosureConfig, ExposureConfig, Strict
from privacy_gate.names import (
    COMBINED,
    DISCLOSURE_FAMILIES,
    ORACLE_ATTACK,
    PLAIN_FAMILIES,
    STRONGEST,
    is_test_level,
    rule_metric_problem,
)


class Rule(Strict):
    """A gate rule: a metric, a bound (``max`` or ``min``) and an action when it fails.

    ``attack: any`` applies the rule to every attack's metric (and the worst one decides).
    """

    metric: str
    attack: str | None = None
    max: float | None = None
    min: float | None = None
    action: Literal["block", "review"] = "block"
    scope: Literal["global", "subgroup"] = "global"  # subgroup: checked in every audited group

    @model_validator(mode="after")
    def _bound(self) -> Rule:
        if (self.max is None) == (self.min is None):
            raise ValueError(f"rule on '{self.metric}' needs exactly one of 'max' or 'min'")
        # a rule that can read no figure would be skipped (subgroup scope) or block for the wrong
        # reason: a misspelled metric is a config error, whatever the scope
        problem = rule_metric_problem(self.metric, attack=self.attack, scope=self.scope)
        if problem:
            raise ValueError(f"rule '{self.describe()}': {problem}")
        if is_test_level(self.metric):
            raise ValueError(
                f"rule '{self.describe()}' sets a test's level by hand; every test's level comes "
                "from "
                "the error budget (gate.budget: review, block, weights), so the gate's overall "
                "false-alarm rate stays what it states — remove the rule and set the budget instead"
            )
        return self

    @property
    def threshold(self) -> float:
        return self.max if self.max is not None else self.min  # type: ignore[return-value]

    def describe(self) -> str:
        op = "<=" if self.max is not None else ">="
        return f"{self.key} {op} {self.threshold:g}"

    @property
    def key(self) -> str:
        """What the rule reads, without its bound: a user rule with the key of a default replaces
        that default (``any.auc``, ``combined.mace.advantage_lower``, ``[each subgroup] any.auc``).

        >>> Rule(metric="auc", attack="any", max=0.5).key
        'any.auc'
        """
        who = f"{self.attack}." if self.attack else ""
        where = "[each subgroup] " if self.scope == "subgroup" else ""
        return f"{where}{who}{self.metric}"


#: The default rules. Each is a *bar* on an effect size: it raises the verdict only when the test
#: family that owns its figure is also significant at its share of the error budget
#: (``gate.budget``; :mod:`privacy_gate.gate.budget`), so a bar can never add false alarms of its
#: own. A bar on an upper bound (``*_upper``) is "we could not exclude": it never raises the
#: verdict, it says "too few targets to tell" (the budget's power check raises "insufficient
#: evidence").
DEFAULT_RULES: tuple[Rule, ...] = (
    # membership (every gated attack and the combined query): block a leak that is both certain
    # (the attacks' rank test at the block share) and large
    Rule(metric="auc", attack="any", max=0.60, action="block"),
    Rule(metric="tpr_at_fpr_0.01", attack="any", max=0.10, action="block"),
    Rule(metric="mace.advantage_lower", attack="any", max=0.10, action="block"),
    Rule(metric="mace.advantage_lower", attack="combined", max=0.10, action="block"),
    Rule(metric="mace.advantage_upper", attack="any", max=0.20, action="review"),
    Rule(metric="utility.quality", min=0.60, action="block"),
    # exposed member targets: block when we are confident that at least 0.5% of the training
    # records are singled out
    Rule(metric="exposed.share_lower", max=0.005, action="block"),
    Rule(metric="exposed.share_upper", max=0.05, action="review"),
    # disclosure risks (Giomi et al.): block when we are 95% sure a risk is above 0.10
    Rule(metric="singling_out.risk_lower", max=0.10, action="block"),
    Rule(metric="linkability.risk_lower", max=0.10, action="block"),
    Rule(metric="inference.risk_lower", max=0.10, action="block"),
    Rule(metric="singling_out.risk_upper", max=0.30, action="review"),
    Rule(metric="linkability.risk_upper", max=0.30, action="review"),
    Rule(metric="inference.risk_upper", max=0.30, action="review"),
    # verbatim copies beyond the population's own twins (experiment/copies.py): block above 1%
    Rule(metric="copies.excess_share", max=0.01, action="block"),
    # partial copies (experiment/agreement.py): block when more than 1% of the training records
    # are surely reproduced on all but one or two of their columns
    Rule(metric="agreement.excess_share", max=0.01, action="block"),
    Rule(metric="auc", attack="any", max=0.70, action="review", scope="subgroup"),
)


#: The error budget's tests (privacy_gate.gate.budget), in the order the verdict lists them.
BUDGET_TESTS = (
    "membership",
    "targets",
    "scan",
    "agreement",
    "copies",
    "disclosure",
    "subgroups",
    "shadow",
)
#: The tests a run has only when their stage ran (the generator-aware test needs the recipe and
#: decides per run whether it is needed): added to :func:`budget_tests` by the run itself.
RUN_DECIDED_TESTS = ("shadow",)
#: What a ``disable:`` entry may name besides a rule key: a whole test of the budget.
TEST_KEYS = tuple(f"test:{t}" for t in BUDGET_TESTS)


class BudgetConfig(Strict):
    """The gate's error budget (:mod:`privacy_gate.gate.budget`): the most often a release that
    leaks nothing may be held back (``review``: REVIEW or worse) or blocked (``block``), split
    over the tests by ``weights`` (Bonferroni: valid whatever their dependence). ``power``: the
    chance the gate must have of catching the smallest leak it promises (``promise_auc``: an
    attack AUC of that size); a release too small for it goes to REVIEW as "insufficient
    evidence"."""

    review: float = Field(0.02, gt=0, lt=0.5)
    block: float = Field(0.001, gt=0, lt=0.5)
    weights: dict[str, float] = Field(default_factory=dict)
    power: float = Field(0.9, gt=0.5, lt=1)
    promise_auc: float = Field(0.60, gt=0.5, lt=1)

    @model_validator(mode="after")
    def _consistent(self) -> BudgetConfig:
        if self.block > self.review:
            raise ValueError(
                f"budget.block ({self.block:g}) must not exceed budget.review ({self.review:g}): a "
                "BLOCK is also a REVIEW-or-worse"
            )
        for name, w in self.weights.items():
            if f"test:{name}" not in TEST_KEYS:
                raise ValueError(
                    f"budget.weights: unknown test {name!r} (tests: "
                    f"{', '.join(k.removeprefix('test:') for k in TEST_KEYS)})"
                )
            if not (w > 0 and math.isfinite(w)):
                raise ValueError(
                    f"budget.weights.{name}: must be a positive number, got {w!r} (to turn a test "
                    "off, "
                    f"list it under gate.disable with a reason)"
                )
        return self


class Disable(Strict):
    """Turning a default protection off: the rule key (``any.auc``) or test (``test:scan``) and why.
    The verdict, the report and the MLflow run show it."""

    key: str = Field(min_length=1)
    reason: str = Field(min_length=10)


class GateConfig(Strict):
    """``rules`` are *added* to the defaults; a rule with a default's key (``Rule.key``) replaces
    it. A default goes away only through ``disable`` with a reason.

    >>> rule = {"metric": "auc", "attack": "any", "max": 0.55}
    >>> cfg = GateConfig.model_validate({"rules": [rule]})
    >>> [r.describe() for r in cfg.effective_rules][:2]
    ['any.auc <= 0.55', 'any.tpr_at_fpr_0.01 <= 0.1']
    >>> len(cfg.effective_rules) == len(DEFAULT_RULES)
    True
    """

    rules: list[Rule] = Field(default_factory=list)
    disable: list[Disable] = Field(default_factory=list)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    # the old verbatim-copy bar; now the block bar of the copy test (copies.excess_share)
    max_verbatim_copy_share: float = Field(0.01, ge=0, le=1)
    # a gate without rules approves whatever the attacks find: only when asked for in so many words
    allow_no_rules: bool = False

    @model_validator(mode="after")
    def _some_rules(self) -> GateConfig:
        keys = [r.key for r in self.rules]
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise ValueError(
                f"rules: {dupes} listed more than once (a rule's key is what it reads; one bound "
                "each)"
            )
        known = {r.key for r in DEFAULT_RULES} | set(keys) | set(TEST_KEYS)
        for d in self.disable:
            if d.key not in known:
                raise ValueError(
                    f"disable: {d.key!r} is neither a rule key nor a test; rule keys: "
                    f"{', '.join(sorted({r.key for r in DEFAULT_RULES}))}; tests: "
                    f"{', '.join(TEST_KEYS)}"
                )
        if not self.effective_rules and not self.allow_no_rules:
            raise ValueError(
                "rules: empty — a gate with no rules approves every release, however leaky; list "
                "rules (or leave 'rules' out for the defaults), or set allow_no_rules: true"
            )
        return self

    @property
    def disabled(self) -> dict[str, str]:
        return {d.key: d.reason for d in self.disable}

    @classmethod
    def only(cls, rules: list[Rule], *, reason: str, **kw: Any) -> GateConfig:
        """A gate with exactly ``rules``: every other default is disabled, each with ``reason``
        (which the verdict shows), e.g. for an experiment that studies one figure.

        >>> g = GateConfig.only([], reason="a study of one figure", allow_no_rules=True)
        >>> g.effective_rules, len(g.disabled) == len(DEFAULT_RULES)
        ([], True)
        """
        own = {r.key for r in rules}
        off = [Disable(key=r.key, reason=reason) for r in DEFAULT_RULES if r.key not in own]
        return cls(rules=list(rules), disable=off, **kw)

    @property
    def effective_rules(self) -> list[Rule]:
        """The defaults, each replaced by a user rule of the same key, then the user's new rules;
        without the disabled ones. The copy test's bar follows ``max_verbatim_copy_share``."""
        own = {r.key: r for r in self.rules}
        copy_bar = Rule(
            metric="copies.excess_share", max=self.max_verbatim_copy_share, action="block"
        )
        defaults = [copy_bar if r.key == copy_bar.key else r for r in DEFAULT_RULES]
        merged = [own.pop(r.key, r) for r in defaults] + list(own.values())
        off = self.disabled
        return [r for r in merged if r.key not in off]

    def rules_hash(self) -> str:
        payload = json.dumps(
            {
                "rules": [r.model_dump() for r in self.effective_rules],
                "budget": self.budget.model_dump(),
                "disable": self.disabled,
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


def rule_test(metric: str, attack: str | None, scope: str) -> str | None:
    """The budget test whose significance a rule's bar needs to raise the verdict, or None for a
    requirement that is not a leak test (utility, the synthetic suite).

    >>> rule_test("auc", "any", "global"), rule_test("exposed.share_lower", None, "global")
    ('membership', 'targets')
    >>> rule_test("utility.quality", None, "global") is None
    True
    """
    if scope == "subgroup":
        return "subgroups"
    if attack is not None:
        return "membership"
    family, _, figure = metric.partition(".")
    if family == "exposed":
        return "scan" if figure.startswith("scan_") else "targets"
    if family in DISCLOSURE_FAMILIES:
        return "disclosure"
    if family in ("copies", "agreement", "shadow"):
        return family
    if family in ("utility", "validation", "dependency"):
        return None  # requirements, and the opt-in dependency stress test (outside the budget)
    return "membership"  # <attack>.<figure> written without attack:


def active_rules(gate: GateConfig, off: dict[str, str]) -> list[Rule]:
    """The effective rules without those whose test is off (a switched-off stage has no figures)."""
    return [
        r
        for r in gate.effective_rules
        if f"test:{rule_test(r.metric, r.attack, r.scope)}" not in off
    ]


def protections_off(
    gate: GateConfig, exposure: ExposureConfig, disclosure: DisclosureConfig
) -> dict[str, str]:
    """Default protections a run goes without, and why: ``gate.disable`` entries and switched-off
    stages (the member scan, the disclosure risks)."""
    off = dict(gate.disabled)
    if not exposure.scan_members:
        off.setdefault("test:scan", "exposure.scan_members is false")
    if not disclosure.enabled:
        off.setdefault("test:disclosure", "disclosure.enabled is false")
    return off


def budget_tests(off: dict[str, str], *, ran: tuple[str, ...] = ()) -> list[str]:
    """The budget's tests a run has, given what is off; a test of :data:`RUN_DECIDED_TESTS` only
    when the run says it ran (``ran``)."""
    return [
        t
        for t in BUDGET_TESTS
        if f"test:{t}" not in off and (t not in RUN_DECIDED_TESTS or t in ran)
    ]


def rules_problem(
    rules: list[Rule] | tuple[Rule, ...],
    attacks: list[AttackConfig] | tuple[AttackConfig, ...],
    exposure: ExposureConfig | None = None,
    disclosure: DisclosureConfig | None = None,
    *,
    at: str = "gate.rules",
) -> str | None:
    """A rule naming an attack the config does not run (a typo such as ``dcrr``) could never read a
    figure: what is wrong, or None. ``at``: where the rules list is in the file, as the message
    names it.

    >>> rules_problem([Rule(metric="auc", attack="dcrr", max=0.6)], [AttackConfig(name="dcr")])
    "gate.rules[0] (dcrr.auc <= 0.6): attack 'dcrr' is not a configured attack (dcr) nor any,
    combined or strongest"
    """
    keys = [a.key for a in attacks]
    allowed = {"any", COMBINED, STRONGEST, ORACLE_ATTACK, *keys}
    for i, rule in enumerate(rules):
        named = rule.attack
        if named is None and rule.metric.partition(".")[0] not in PLAIN_FAMILIES:
            named = rule.metric.partition(".")[0]  # a metric written as <attack>.<figure>
        if named is not None and named not in allowed:
            # a look-alike letter (a Cyrillic 'о' in 'dоmias') is spelled out, or the message would
            # seem to refuse a name it lists
            shown = (
                repr(named)
                if named.isascii()
                else f"{named!r} (spelled {ascii(named)}: not plain ASCII)"
            )
            return (
                f"{at}[{i}] ({rule.describe()}): attack {shown} is not a configured attack "
                f"({', '.join(keys)}) nor any, {COMBINED} or {STRONGEST}"
            )
        if (
            disclosure is not None
            and not disclosure.enabled
            and rule.metric.partition(".")[0] in DISCLOSURE_FAMILIES
        ):
            return (
                f"{at}[{i}] ({rule.describe()}) reads a disclosure risk, but disclosure.enabled is "
                "false: "
                "turn it on or list gate.rules without singling_out/linkability/inference rules"
            )
        if (
            exposure is not None
            and not exposure.scan_members
            and rule.metric.startswith("exposed.scan_")
        ):
            return (
                f"{at}[{i}] ({rule.describe()}) reads the member scan, but exposure.scan_members "
                "is "
                "false: turn the scan on or list gate.rules without exposed.scan_* rules"
            )
    return None
