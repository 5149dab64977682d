"""Pydantic models of the release config and the gate rules, and their YAML loading (the dataset
spec itself lives in :mod:`privacy_gate.spec`).

One module because it is the user-facing contract: the release config, the rules and their YAML
loading form one schema, documented in the README, and are read in one place. Every error names
the file, the key and the problem.

>>> cfg = GateConfig.model_validate({"rules": [{"metric": "auc", "attack": "dcr", "max": 0.6}]})
>>> cfg.rules[0].describe()
'dcr.auc <= 0.6'
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator,
                      model_validator)

from privacy_gate.errors import ConfigError
from privacy_gate.names import (COMBINED, DISCLOSURE_FAMILIES, ORACLE_ATTACK, PLAIN_FAMILIES, STRONGEST,
                                SUPPRESS_COPIES, is_test_level, rule_metric_problem)
from privacy_gate.publication.objectstore import is_s3
from privacy_gate.spec import MAX_ENCODED_WIDTH, DatasetSpec

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: Defaults of the input guards (``inputs`` section, :class:`InputLimits`). 500 MB: a whole CLI
#: gate at 1M Adult rows (about 120 MB of CSV) peaked at 5.4 GB; a field of 128 KiB is Python's
#: own CSV field limit, far above any category or number.
DEFAULT_MAX_FILE_BYTES = 500_000_000
DEFAULT_MAX_FIELD_BYTES = 131_072


def _local_or_s3(value: Any) -> Any:
    """``s3://...`` stays a URI string (a Path would collapse its ``//``); anything else is a Path."""
    if value is None or is_s3(value):
        return value
    return Path(value) if isinstance(value, str) else value


def location_name(location: Path | str) -> str:
    """The file name of a local path or an ``s3://`` object (for progress messages).

    >>> location_name("s3://data/adult/adult.csv"), location_name(Path("/tmp/x.parquet"))
    ('adult.csv', 'x.parquet')
    """
    return str(location).rstrip("/").rsplit("/", 1)[-1]


class DatasetConfig(_Strict):
    """``path`` / ``reference_path``: a local file or an ``s3://bucket/key`` object."""

    path: Path | str
    spec: DatasetSpec
    reference_path: Path | str | None = None  # a public reference file replacing the reference split

    _locations = field_validator("path", "reference_path", mode="before")(classmethod(
        lambda cls, v: _local_or_s3(v)))


class SplitConfig(_Strict):
    train: float = Field(0.6, gt=0, lt=1)
    holdout: float = Field(0.2, gt=0, lt=1)
    reference: float = Field(0.2, ge=0, lt=1)
    seed: int = 0

    @model_validator(mode="after")
    def _sum(self) -> SplitConfig:
        total = self.train + self.holdout + self.reference
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(f"train + holdout + reference must sum to 1, got {total:g}")
        return self


class TargetsConfig(_Strict):
    """How many member / non-member targets the attacks score. ``None`` = as many as possible."""

    n_non_members: int | None = Field(None, gt=0)
    n_members: int | None = Field(None, gt=0)
    # the power floor: with fewer targets per class the gate still runs (its tests stay valid at any
    # size) and answers REVIEW for "insufficient evidence" (experiment/floors.py); below 30 per class
    # (the MACE bounds' three parts of 10) nothing can be measured and the run is refused
    min_per_class: int = Field(100, gt=0)
    # when n_non_members is not set: at most this many per class; None = enough for a MACE
    # radius of 0.015 at mace.delta (16,396 at delta 0.05) — beyond that the figures barely
    # tighten while the attacks' cost grows linearly (estimators/power.py: default_targets_per_class)
    max_per_class: int | None = Field(None, gt=0)
    seed: int = 0


class GeneratorConfig(BaseModel):
    """``name`` picks a registered generator; every other key is passed to it as a parameter."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str
    n_samples: int | None = Field(None, gt=0)  # default: as many rows as the train split
    seed: int | None = None

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class AttackConfig(BaseModel):
    """``name`` picks a registered attack; other keys are its parameters. ``label`` names its
    metrics (default: the name; needed to run one attack twice, e.g. MAMA-MIA and its oracle);
    ``gate: false`` reports an attack without letting ``attack: any`` rules read it."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str
    label: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]+$")
    gate: bool = True

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @property
    def key(self) -> str:
        return self.label or self.name


class Rule(_Strict):
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
            raise ValueError(f"rule '{self.describe()}' sets a test's level by hand; every test's level comes from "
                             "the error budget (gate.budget: review, block, weights), so the gate's overall "
                             "false-alarm rate stays what it states — remove the rule and set the budget instead")
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
#: (``gate.budget``; :mod:`privacy_gate.gate.budget`), so a bar can never add false alarms of its own.
#: A bar on an upper bound (``*_upper``) is "we could not exclude": it never raises the verdict, it
#: says "too few targets to tell" (the budget's power check raises "insufficient evidence").
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
BUDGET_TESTS = ("membership", "targets", "scan", "agreement", "copies", "disclosure", "subgroups")
#: What a ``disable:`` entry may name besides a rule key: a whole test of the budget.
TEST_KEYS = tuple(f"test:{t}" for t in BUDGET_TESTS)


class BudgetConfig(_Strict):
    """The gate's error budget (:mod:`privacy_gate.gate.budget`): the most often a release that
    leaks nothing may be held back (``review``: REVIEW or worse) or blocked (``block``), split
    over the tests by ``weights`` (Bonferroni: valid whatever their dependence). ``power``: the
    chance the gate must have of catching the smallest leak it promises (``promise_auc``: an
    attack AUC of that size); a release too small for it goes to REVIEW as "insufficient evidence"."""

    review: float = Field(0.02, gt=0, lt=0.5)
    block: float = Field(0.001, gt=0, lt=0.5)
    weights: dict[str, float] = Field(default_factory=dict)
    power: float = Field(0.9, gt=0.5, lt=1)
    promise_auc: float = Field(0.60, gt=0.5, lt=1)

    @model_validator(mode="after")
    def _consistent(self) -> BudgetConfig:
        if self.block > self.review:
            raise ValueError(f"budget.block ({self.block:g}) must not exceed budget.review ({self.review:g}): a "
                             "BLOCK is also a REVIEW-or-worse")
        for name, w in self.weights.items():
            if f"test:{name}" not in TEST_KEYS:
                raise ValueError(f"budget.weights: unknown test {name!r} (tests: "
                                 f"{', '.join(k.removeprefix('test:') for k in TEST_KEYS)})")
            if not (w > 0 and math.isfinite(w)):
                raise ValueError(f"budget.weights.{name}: must be a positive number, got {w!r} (to turn a test off, "
                                 f"list it under gate.disable with a reason)")
        return self


class Disable(_Strict):
    """Turning a default protection off: the rule key (``any.auc``) or test (``test:scan``) and why.
    The verdict, the report and the MLflow run show it."""

    key: str = Field(min_length=1)
    reason: str = Field(min_length=10)


class GateConfig(_Strict):
    """``rules`` are *added* to the defaults; a rule with a default's key (``Rule.key``) replaces
    it. A default goes away only through ``disable`` with a reason.

    >>> cfg = GateConfig.model_validate({"rules": [{"metric": "auc", "attack": "any", "max": 0.55}]})
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
            raise ValueError(f"rules: {dupes} listed more than once (a rule's key is what it reads; one bound each)")
        known = {r.key for r in DEFAULT_RULES} | set(keys) | set(TEST_KEYS)
        for d in self.disable:
            if d.key not in known:
                raise ValueError(f"disable: {d.key!r} is neither a rule key nor a test; rule keys: "
                                 f"{', '.join(sorted({r.key for r in DEFAULT_RULES}))}; tests: {', '.join(TEST_KEYS)}")
        if not self.effective_rules and not self.allow_no_rules:
            raise ValueError("rules: empty — a gate with no rules approves every release, however leaky; list "
                             "rules (or leave 'rules' out for the defaults), or set allow_no_rules: true")
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
        copy_bar = Rule(metric="copies.excess_share", max=self.max_verbatim_copy_share, action="block")
        defaults = [copy_bar if r.key == copy_bar.key else r for r in DEFAULT_RULES]
        merged = [own.pop(r.key, r) for r in defaults] + list(own.values())
        off = self.disabled
        return [r for r in merged if r.key not in off]

    def rules_hash(self) -> str:
        payload = json.dumps({"rules": [r.model_dump() for r in self.effective_rules],
                              "budget": self.budget.model_dump(), "disable": self.disabled}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]


class ExposureConfig(_Strict):
    """Exposed-record discovery: one combined score per member target (the highest rank any attack
    gives it), its conformal p-value, false discovery rate ``fdr`` over the members
    (Benjamini–Hochberg, or Benjamini–Yekutieli under any dependence), the tail-excess test, and
    exposed-share bounds at false-alarm rate ``level`` with confidence ``1 - delta``."""

    fdr: float = Field(0.05, gt=0, lt=1)
    method: Literal["bh", "by"] = "bh"
    level: float = Field(0.01, gt=0, lt=1)
    delta: float = Field(0.05, gt=0, lt=1)
    # also test every training record (not only the member targets) against the whole holdout
    # with the copy-multiplicity score, FDR-controlled, plus its tail-excess test
    # (experiment/member_scan.py): exposed.scan_count, exposed.scan_tail_pvalue
    scan_members: bool = True
    # the reference split joins the scan's calibration set (more power: a smaller p-value floor).
    # None = decided per run: yes for a split of the real table that the generator never read,
    # no for a public reference file or a generator that takes its bins from the reference
    reference_calibrates: bool | None = None
    # the tail-excess tests look at the most extreme records up to this share of the pool
    tail_max_share: float = Field(0.01, gt=0, le=0.2)


#: the fewest control records the disclosure stage measures with at all (``disclosure.min_control``
#: may not be set lower); between this and ``min_control`` it runs and the gate REVIEWs
SMALLEST_CONTROL = 20


class DisclosureConfig(_Strict):
    """Singling out, linkability and inference risks (experiment/disclosure.py; who the attacker
    is comes from the spec's quasi_identifiers / sensitive / linkability)."""

    enabled: bool = True
    # attacks per evaluator and side: singling-out predicates; training and control targets of
    # linkability and of each inference (500 per side, anonymeter's default: each rate's 97.5%
    # Wilson half-width is at most 0.05)
    n_attacks: int = Field(500, ge=20)
    n_cols: int = Field(3, ge=2)  # columns per multivariate singling-out predicate
    n_neighbors: int = Field(1, ge=1)  # linkability: synthetic neighbours of each part
    tolerance: float = Field(0.05, ge=0)  # inference: a number within this relative distance is a hit
    # control records (holdout records not used as membership targets, plus the reference split
    # when it is exchangeable with the holdout): with fewer the risks are still measured (the exact
    # tests stay valid) and the gate answers REVIEW for "insufficient evidence"; below SMALLEST_CONTROL
    # the stage is refused. 200 control targets give a control-rate half-width of at most 0.08
    min_control: int = Field(200, ge=SMALLEST_CONTROL)
    subgroup_min_targets: int = Field(30, ge=5)  # a subgroup's risk needs this many targets per side


class AuditConfig(_Strict):
    """Subgroup, entity (set-level) and dependency (Humphries et al.) audits."""

    # targets per class a group needs for point estimates (AUC, TPR, MACE); every group, however
    # small, gets the rank test
    min_group_size: int = Field(50, gt=0)
    # records carrying a category value fewer than this many training rows hold (any categorical
    # column) are tested as one family: alone where a value has the power, pooled per column where
    # it does not (experiment/grouping.py: rare_value_groups). 0 = off
    rare_value_max_count: int = Field(20, ge=0)
    # a category value taken from the data appears in a group label (MLflow keys, verdict, report)
    # only when the spec declares it or at least this many holdout + reference records hold it;
    # any other value is shown as a stable hash (experiment/grouping.py: label_values)
    label_min_count: int = Field(10, ge=1)
    intersections: list[list[str]] = Field(default_factory=list)  # e.g. [[sex, race]]
    dependency_test: bool = False  # members from one `source` value, non-members from the others
    dependency_source_value: str | None = None  # default: the most frequent value
    dependency_max_auc_gap: float = Field(0.10, gt=0)  # a larger AUC gap vs IID is a warning
    # train vs reference source distributions: p below this says "plausibly dependent"
    dependency_alpha: float = Field(0.01, gt=0, lt=1)
    # a DP release whose dependency-test lower bound exceeds the IID DP bound goes to REVIEW
    dependency_dp_review: bool = True


class ReviewConfig(_Strict):
    """What happens on REVIEW: end as pending (decide later with `privacy-gate approve/reject`)
    or wait for a typed review input in Prefect (and stay pending on timeout): a deployment's run
    is suspended, holding no process or slot for as long as ``timeout_seconds``; any other run
    pauses in its process (flows/review_wait.py)."""

    mode: Literal["pending", "pause"] = "pending"
    timeout_seconds: int = Field(3600, gt=0)
    poll_seconds: int = Field(10, gt=0)  # how often a flow paused in its process checks for the input
    # a deployment's run of a release (same config, data files and version) already decided or
    # awaiting its review is skipped, naming that run (review/prior_decision.py)
    once_per_release: bool = True


class MaceConfig(_Strict):
    """MACE estimators (Liu et al.): confidence 1 - delta, membership prior p (realistic releases
    have few members among candidates: p < 0.5; note the advantage is then at least |2p - 1|)."""

    prior: float = Field(0.5, gt=0, lt=1)
    delta: float = Field(0.05, gt=0, lt=1)
    n_permutations: int = Field(200, ge=0)  # label-permutation null: the estimator's bias at this N


class TrackingConfig(_Strict):
    uri: str | None = None  # default: sqlite:///<workdir>/mlflow.db
    experiment: str | None = None  # default: privacy-gate/<dataset name>


class PublishConfig(_Strict):
    target: Path | str | None = None  # default: <workdir>/published; a folder or an s3://bucket/prefix

    _target = field_validator("target", mode="before")(classmethod(lambda cls, v: _local_or_s3(v)))
    format: Literal["parquet", "csv"] = "parquet"


class InputLimits(_Strict):
    """What one data file may cost, checked before it is parsed (``privacy_gate.data.guards``):
    its size in bytes (a compressed file: what it decompresses to; Parquet: its uncompressed
    data), its width in columns and the longest single field. A file over a budget is refused at
    once, naming the file, the figure and the setting; raise the setting on a machine that can
    hold the table (the gate's peak memory is a few times to 40 times the file, see
    docs/configuration.md)."""

    max_file_bytes: int = Field(DEFAULT_MAX_FILE_BYTES, ge=1)
    # every column is at least one feature of the attacks' encoding, which holds at most
    # MAX_ENCODED_WIDTH: a wider budget could never run
    max_columns: int = Field(MAX_ENCODED_WIDTH, ge=1, le=MAX_ENCODED_WIDTH)
    max_field_bytes: int = Field(DEFAULT_MAX_FIELD_BYTES, ge=1)


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
    if family in ("copies", "agreement"):
        return family
    if family in ("utility", "validation", "dependency"):
        return None  # requirements, and the opt-in dependency stress test (outside the budget)
    return "membership"  # <attack>.<figure> written without attack:


def active_rules(gate: GateConfig, off: dict[str, str]) -> list[Rule]:
    """The effective rules without those whose test is off (a switched-off stage has no figures)."""
    return [r for r in gate.effective_rules if f"test:{rule_test(r.metric, r.attack, r.scope)}" not in off]


def protections_off(gate: GateConfig, exposure: ExposureConfig, disclosure: DisclosureConfig) -> dict[str, str]:
    """Default protections a run goes without, and why: ``gate.disable`` entries and switched-off
    stages (the member scan, the disclosure risks)."""
    off = dict(gate.disabled)
    if not exposure.scan_members:
        off.setdefault("test:scan", "exposure.scan_members is false")
    if not disclosure.enabled:
        off.setdefault("test:disclosure", "disclosure.enabled is false")
    return off


def budget_tests(off: dict[str, str]) -> list[str]:
    """The budget's tests a run has, given what is off."""
    return [t for t in BUDGET_TESTS if f"test:{t}" not in off]


# MAMA-MIA's "auto" variant shadows marginal (DP) generators and falls back to its generic
# variant for any other generator or for gate-only data
# dcr_ratio (DCR calibrated by the reference) is the per-record exposure attack: it singles out
# near-copies of training records that plain DCR confuses with records in dense regions;
# copy_count adds the repetition (a record copied 40 times, not once) that the nearest row hides
DEFAULT_ATTACKS = (AttackConfig(name="domias"), AttackConfig(name="dcr"), AttackConfig(name="dcr_ratio"),
                   AttackConfig(name="copy_count"), AttackConfig(name="mama_mia"))


def _attack_list_problem(attacks: list[AttackConfig]) -> str | None:
    """What is wrong with a config's attack list (empty, or a metric name used twice), or None."""
    names = [a.key for a in attacks]
    if not names:
        return "attacks: at least one attack is required (the gate cannot approve unattacked data)"
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        return f"attacks: {dupes} listed more than once (metric names would collide; give one a different 'label')"
    return None


def rules_problem(rules: list[Rule] | tuple[Rule, ...], attacks: list[AttackConfig] | tuple[AttackConfig, ...],
                  exposure: ExposureConfig | None = None, disclosure: DisclosureConfig | None = None, *,
                  at: str = "gate.rules") -> str | None:
    """A rule naming an attack the config does not run (a typo such as ``dcrr``) could never read a
    figure: what is wrong, or None. ``at``: where the rules list is in the file, as the message names it.

    >>> rules_problem([Rule(metric="auc", attack="dcrr", max=0.6)], [AttackConfig(name="dcr")])
    "gate.rules[0] (dcrr.auc <= 0.6): attack 'dcrr' is not a configured attack (dcr) nor any, combined or strongest"
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
            shown = repr(named) if named.isascii() else f"{named!r} (spelled {ascii(named)}: not plain ASCII)"
            return (f"{at}[{i}] ({rule.describe()}): attack {shown} is not a configured attack "
                    f"({', '.join(keys)}) nor any, {COMBINED} or {STRONGEST}")
        if disclosure is not None and not disclosure.enabled and rule.metric.partition(".")[0] in DISCLOSURE_FAMILIES:
            return (f"{at}[{i}] ({rule.describe()}) reads a disclosure risk, but disclosure.enabled is false: "
                    "turn it on or list gate.rules without singling_out/linkability/inference rules")
        if exposure is not None and not exposure.scan_members and rule.metric.startswith("exposed.scan_"):
            return (f"{at}[{i}] ({rule.describe()}) reads the member scan, but exposure.scan_members is "
                    "false: turn the scan on or list gate.rules without exposed.scan_* rules")
    return None


def _audit_problem(audit: AuditConfig, spec: DatasetSpec) -> str | None:
    """Audit settings the spec cannot support (intersections of non-subgroups, a dependency test
    without a source column), or None."""
    for combo in audit.intersections:
        if len(combo) < 2 or any(c not in spec.subgroups for c in combo):
            return f"audit.intersections: {combo} must list two or more of the spec's subgroups {spec.subgroups}"
    if audit.dependency_test and spec.source is None:
        return "audit.dependency_test needs a 'source' column in the dataset spec"
    return None


class DPAuditConfig(_Strict):
    """``audit_dp``: audit the generator's DP claim before the release (``studies/dp_audit.py``).

    An empirical epsilon lower bound above ``max_ratio`` x the claimed epsilon BLOCKs the release
    (the generator's DP implementation is broken); any audit error BLOCKs too (fail closed). The
    audit is cached per generator version, settings and public domain under the workdir."""

    runs: int = Field(200, ge=4, le=100_000)  # fits per side and target
    max_ratio: float = Field(1.0, ge=1.0, allow_inf_nan=False)
    alpha: float = Field(0.05, gt=0, lt=1)
    seed: int = Field(0, ge=0)
    targets: tuple[Literal["worst_case", "outlier"], ...] = ("worst_case", "outlier")
    scores: tuple[Literal["whitebox", "blackbox"], ...] = ("whitebox", "blackbox")
    rows: int | None = Field(None, ge=10)  # audit on a sample of this many training rows (None: all)

    @model_validator(mode="after")
    def _non_empty(self) -> DPAuditConfig:
        for key in ("targets", "scores"):
            if not getattr(self, key):
                raise ValueError(f"audit_dp.{key} must not be empty")
        return self


class RunnerConfig(_Strict):
    """Prefect task runner: a local thread pool, or Dask (prefect-dask) for clusters — same flow."""

    kind: Literal["thread", "dask"] = "thread"
    workers: int = Field(4, gt=0)
    dask_address: str | None = None  # an existing Dask scheduler; None = a local cluster
    # each attack scores the gate's targets in this many parts, one task each (on Dask: spread
    # over the workers; the figures are the same as one part's). 1 = one task per attack.
    score_chunks: int = Field(1, ge=1, le=1024)


class ScheduleConfig(_Strict):
    """When a deployment of this config runs (``privacy-gate serve`` / ``deploy``): a cron string
    or an interval; ``--cron`` / ``--interval`` on the command line override it."""

    cron: str | None = None
    interval_seconds: float | None = Field(None, gt=0)
    timezone: str = "UTC"

    @model_validator(mode="after")
    def _one(self) -> ScheduleConfig:
        if (self.cron is None) == (self.interval_seconds is None):
            raise ValueError("set exactly one of 'cron' and 'interval_seconds'")
        if self.cron is not None and len(self.cron.split()) not in (5, 6):
            raise ValueError(f"'cron' must have 5 fields (minute hour day month weekday), got {self.cron!r}")
        return self


class RetryConfig(_Strict):
    """Retries of a scheduled run when a service it needs (tracking server, object store) does not
    answer. Only such infrastructure failures are retried; a run that exhausts its attempts ends
    BLOCK with the reason. An error never becomes an APPROVE."""

    attempts: int = Field(3, ge=1, le=20)  # total attempts, the first included
    delay_seconds: float = Field(30.0, ge=0)


#: What a ``{filter: ...}`` rung of ``remediate.ladder`` removes from the previous attempt's release:
#: ``copies``, the rows ``privacy-gate approve --suppress copies`` removes (no names needed).
LADDER_FILTERS = (SUPPRESS_COPIES,)


class RemediateConfig(_Strict):
    """What to try when the gate BLOCKs the configured generator: ``ladder`` is an ordered list of
    rungs. A generator rung is generator settings (a rung without ``name`` changes only the given
    parameters of the configured generator); a filter rung, ``{filter: copies}``, re-gates the
    previous attempt's release without the rows that copy training records (it must follow a
    generator attempt: the configured generator or a generator rung). ``choose``: the ``first``
    rung that passes, or the ``most_useful`` by ``utility.quality`` among the rungs that pass (all
    rungs are then tried). A REVIEW stops the ladder. ``max_total_epsilon``: refuse a ladder whose
    DP generators could spend more in total (attempts on the same data compose: their epsilons add
    up; a filter rung spends none)."""

    ladder: list[dict[str, Any]] = Field(min_length=1)
    choose: Literal["first", "most_useful"] = "first"
    max_total_epsilon: float | None = Field(None, gt=0)


def _ladder_problem(remediate: RemediateConfig | None) -> str | None:
    """What is wrong with the ladder's filter rungs, or None (generator rungs are checked against
    their generator by ``runs.remediation.check_ladder``)."""
    after_filter = False
    for i, rung in enumerate(remediate.ladder if remediate else []):
        where = f"remediate.ladder[{i}]"
        if "filter" not in rung:
            after_filter = False
            continue
        extra = sorted(str(k) for k in rung if k != "filter")
        if extra:
            return (f"{where}: a filter rung has only the key 'filter', not {', '.join(extra)} (generator "
                    "settings go in a rung of their own)")
        if not isinstance(rung["filter"], str) or rung["filter"] not in LADDER_FILTERS:
            return f"{where}: unknown filter {rung['filter']!r}; allowed: {', '.join(LADDER_FILTERS)}"
        if after_filter:
            return (f"{where}: a filter rung must follow a generator attempt (the configured generator or a "
                    f"generator rung), not remediate.ladder[{i - 1}], another filter rung: filtering a filtered "
                    "release again only removes more clean rows")
        after_filter = True
    return None


class StudyGenerator(_Strict):
    """One generator of a dependency study: ``name``, fixed ``params``, and for a DP generator the
    ``epsilons`` to sweep (each becomes its ``epsilon`` parameter); none for a non-DP generator."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    epsilons: list[float] | None = Field(None, min_length=1)

    @field_validator("epsilons")
    @classmethod
    def _positive(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and any(e <= 0 for e in v):
            raise ValueError("every epsilon must be positive")
        return v


class StudyScenario(_Strict):
    """A split that makes the training set dependent (Humphries et al.):

    - ``source``: members from one value of the spec's ``source`` column (``value``; default the
      most frequent), non-members from the other values;
    - ``cluster``: k-means with ``k`` clusters fitted on the *reference* encoding; members from
      one cluster, non-members from another (``clusters``; default the two largest);
    - ``bias``: a share ``p`` of the training set has ``attribute`` = ``value`` (or, for a numeric
      attribute, ``>= at_least``), for each p in ``shares``; non-members half and half; the
      attribute is dropped from everything the attacker sees, as in the paper.

    ``generators`` overrides the study's list for this scenario."""

    kind: Literal["source", "cluster", "bias"]
    value: str | None = None
    k: int = Field(2, ge=2)
    clusters: tuple[int, int] | None = None
    attribute: str | None = None
    at_least: float | None = None
    shares: list[float] = Field(default_factory=lambda: [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
    generators: list[StudyGenerator] | None = None

    @model_validator(mode="after")
    def _check(self) -> StudyScenario:
        if self.kind == "bias":
            if self.attribute is None:
                raise ValueError("a bias scenario needs 'attribute'")
            if (self.value is None) == (self.at_least is None):
                raise ValueError("a bias scenario needs exactly one of 'value' (categorical) or 'at_least' (numeric)")
            if not self.shares or any(not 0 <= p <= 1 for p in self.shares):
                raise ValueError("'shares' must be values in [0, 1]")
        elif self.attribute is not None or self.at_least is not None:
            raise ValueError(f"'attribute' and 'at_least' belong to bias scenarios, not {self.kind}")
        if self.clusters is not None and (self.kind != "cluster" or self.clusters[0] == self.clusters[1]):
            raise ValueError("'clusters' is two different cluster numbers of a cluster scenario")
        return self

    @property
    def label(self) -> str:
        if self.kind == "source":
            return f"source={self.value}" if self.value else "source"
        if self.kind == "cluster":
            return f"cluster k={self.k}"
        return f"bias {self.attribute}{'=' + self.value if self.value else '>=' + format(self.at_least, 'g')}"


class DependencyStudyConfig(_Strict):
    """The dependency study (``privacy-gate dependency-study CONFIG``): for each scenario and
    repetition, a dependent split of ``members`` / ``non_members`` records and its IID counterpart
    (the same records merged and re-split at the same sizes), each generator retrained on both,
    attacked, and MACE-bounded. ``attacks``: default the release config's (MAMA-MIA only for
    marginal generators)."""

    scenarios: list[StudyScenario] = Field(min_length=1)
    generators: list[StudyGenerator] = Field(min_length=1)
    members: int = Field(1000, ge=20)
    non_members: int = Field(1000, ge=20)
    repetitions: int = Field(5, ge=2)
    seed: int = 0


def _study_problem(study: DependencyStudyConfig | None, spec: DatasetSpec) -> str | None:
    """What a dependency study asks of the spec that it does not have, or None."""
    for i, sc in enumerate(study.scenarios if study else []):
        where = f"dependency_study.scenarios[{i}]"
        if sc.kind == "source" and spec.source is None:
            return f"{where}: a source scenario needs a 'source' column in the dataset spec"
        if sc.kind == "bias":
            col = spec.columns.get(sc.attribute)
            if col is None or sc.attribute == spec.entity_id:
                return f"{where}: attribute {sc.attribute!r} is not an attribute column of the spec"
            if sc.at_least is not None and not col.is_numeric:
                return f"{where}: 'at_least' needs a numeric attribute; {sc.attribute!r} is {col.kind} (use 'value')"
            if sc.value is not None and col.is_numeric:
                return f"{where}: 'value' needs a categorical attribute; {sc.attribute!r} is {col.kind} (use 'at_least')"
    return None


class ReleaseConfig(_Strict):
    dataset: DatasetConfig
    generator: GeneratorConfig
    split: SplitConfig = Field(default_factory=SplitConfig)
    targets: TargetsConfig = Field(default_factory=TargetsConfig)
    attacks: list[AttackConfig] = Field(default_factory=lambda: list(DEFAULT_ATTACKS))
    gate: GateConfig = Field(default_factory=GateConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    mace: MaceConfig = Field(default_factory=MaceConfig)
    exposure: ExposureConfig = Field(default_factory=ExposureConfig)
    disclosure: DisclosureConfig = Field(default_factory=DisclosureConfig)
    review: ReviewConfig = Field(default_factory=ReviewConfig)
    runner: RunnerConfig = Field(default_factory=RunnerConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    schedule: ScheduleConfig | None = None
    retries: RetryConfig = Field(default_factory=RetryConfig)
    remediate: RemediateConfig | None = None
    publish: PublishConfig = Field(default_factory=PublishConfig)
    inputs: InputLimits = Field(default_factory=InputLimits)
    dependency_study: DependencyStudyConfig | None = None
    audit_dp: DPAuditConfig | None = None

    @model_validator(mode="after")
    def _unique_attacks(self) -> ReleaseConfig:
        problem = _attack_list_problem(self.attacks) or rules_problem(self.gate.rules, self.attacks, self.exposure, self.disclosure)
        if problem is None and self.split.reference == 0 and self.dataset.reference_path is None:
            problem = ("split.reference is 0 but dataset.reference_path is not set: the attacker's reference "
                       "data must come from one of them")
        problem = problem or _audit_problem(self.audit, self.dataset.spec)
        problem = problem or _study_problem(self.dependency_study, self.dataset.spec)
        problem = problem or _ladder_problem(self.remediate)
        if problem:
            raise ValueError(problem)
        return self

    def config_hash(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- YAML loading


#: Bounds on what a config or spec file may make the loader build: a file larger than this is
#: refused unread, and YAML aliases (``*name``) are bounded in number and in what they expand to —
#: nested aliases ("billion laughs") make a few hundred bytes into billions of values.
MAX_YAML_BYTES = 5_000_000
MAX_YAML_ALIASES = 200
MAX_YAML_NODES = 200_000


class _YamlTooLarge(Exception):
    """Raised inside the loader; ``_read_yaml`` turns it into a ConfigError naming the file."""


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes ``root`` stands for once every alias is expanded (aliases are shared nodes in
    the composed graph: each counts once per place it is used), stopping past ``MAX_YAML_NODES``."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            sizes[key] = min(MAX_YAML_NODES + 1, 1 + sum(sizes[id(c)] for c in children))
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _YamlTooLarge("an alias refers to a node that contains it (a recursive structure)")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)
    if sizes[id(root)] > MAX_YAML_NODES:
        raise _YamlTooLarge(f"its aliases expand to more than {MAX_YAML_NODES:,} values")
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a key given twice in one mapping is an error: with the plain
    loader the last one silently wins, so a second ``rules:`` or ``max:`` would replace the first.
    Aliases are bounded (``MAX_YAML_ALIASES``, ``MAX_YAML_NODES``) before anything is constructed."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise _YamlTooLarge(f"more than {MAX_YAML_ALIASES} aliases (*name)")
        return super().compose_node(parent, index)

    def construct_document(self, node: Any) -> Any:
        _expanded_size(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path) -> Any:
    if not path.exists():
        raise ConfigError(f"{path}: file not found")
    try:
        with path.open("rb") as fh:  # read at most the budget: the size on disk may lie (a pipe, a growing file)
            data = fh.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > MAX_YAML_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_YAML_BYTES:,} bytes; a config or spec file is refused unread "
                          "beyond that")
    try:
        # UTF-8 (a UTF-8 byte-order mark allowed): other encodings are refused, not guessed
        return yaml.load(data.decode("utf-8-sig"), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader
    except _YamlTooLarge as exc:
        raise ConfigError(f"{path}: refused: {exc} (write the values out instead of nesting aliases)") from None
    except RecursionError:
        raise ConfigError(f"{path}: refused: nested too deeply") from None
    except yaml.MarkedYAMLError as exc:  # one line: file, line, column and the parser's complaint
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p) or "syntax error"
        raise ConfigError(f"{path}: not valid YAML: {where}{what}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid YAML ({type(exc).__name__})") from None


def _format_validation_error(path: Path, prefix: str, exc: ValidationError, *, gate_key: str = "gate") -> ConfigError:
    """One line naming the file and each problem's key. ``gate_key``: what the file calls the model's
    ``gate`` section (a bare ``rules:`` file has none: ``""``)."""
    problems = []
    for err in exc.errors():
        where = tuple(err["loc"])
        if gate_key != "gate" and where[:1] == ("gate",):
            where = ((gate_key,) if gate_key else ()) + where[1:]
        loc = ".".join(str(p) for p in (prefix, *where) if p != "")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        problems.append(f"{loc}: {msg}" if loc else msg)
    return ConfigError(f"{path}: " + "; ".join(problems))


def _spec_from(raw: Any, path: Path, prefix: str = "") -> DatasetSpec:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {prefix or 'spec'}: expected a mapping")
    try:
        return DatasetSpec.model_validate(raw)
    except ValidationError as exc:
        raise _format_validation_error(path, prefix, exc) from None


def load_spec(path: str | Path) -> DatasetSpec:
    """Load a dataset spec from YAML; a file that holds a whole release config works too."""
    path = Path(path)
    raw = _read_yaml(path)
    if isinstance(raw, dict) and "dataset" in raw and isinstance(raw["dataset"], dict):
        return _spec_from(raw["dataset"].get("spec"), path, "dataset.spec")
    return _spec_from(raw, path)


class GateOnlyConfig(_Strict):
    """The judging sections of a release config, for gate-only runs (``privacy-gate gate --config``):
    synthetic data made elsewhere is judged with the same attacks, targets, audit and MACE settings
    a release would use."""

    targets: TargetsConfig = Field(default_factory=TargetsConfig)
    attacks: list[AttackConfig] = Field(default_factory=lambda: list(DEFAULT_ATTACKS))
    gate: GateConfig = Field(default_factory=GateConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    mace: MaceConfig = Field(default_factory=MaceConfig)
    exposure: ExposureConfig = Field(default_factory=ExposureConfig)
    disclosure: DisclosureConfig = Field(default_factory=DisclosureConfig)
    inputs: InputLimits = Field(default_factory=InputLimits)

    @model_validator(mode="after")
    def _attacks(self, info: ValidationInfo) -> GateOnlyConfig:
        # ``rules_at`` (validation context): where the file holds the rules (a --rules file may hold
        # a bare ``rules:`` list), so the message names the key as the user wrote it
        at = (info.context or {}).get("rules_at", "gate.rules")
        problem = _attack_list_problem(self.attacks) or rules_problem(self.gate.rules, self.attacks, self.exposure,
                                                                      self.disclosure, at=at)
        if problem:
            raise ValueError(problem)
        return self

    def check_against(self, spec: DatasetSpec, source: str) -> None:
        """Settings that need the spec: audited intersections, the dependency test."""
        problem = _audit_problem(self.audit, spec)
        if problem:
            raise ConfigError(f"{source}: {problem}")


def load_gate_only_config(path: str | Path) -> GateOnlyConfig:
    """Load the judging sections (targets, attacks, gate, audit, mace, exposure, disclosure) and the input
    limits (inputs) from YAML; a whole release
    config works too (its other sections are ignored)."""
    path = Path(path)
    raw = _read_yaml(path)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with keys targets, attacks, gate, audit, mace, exposure, "
                          "disclosure, inputs")
    fields = set(GateOnlyConfig.model_fields)
    return _judging_from({k: v for k, v in raw.items() if k in fields or k not in ReleaseConfig.model_fields}, path)


def _judging_from(raw: dict[str, Any], path: Path, *, gate_key: str = "gate") -> GateOnlyConfig:
    """The one validation of judging sections, for ``--config`` and ``--rules`` files alike.
    ``gate_key``: what the file calls the gate section (``""`` for a bare ``rules:`` file), so
    every message names the key as written."""
    try:
        return GateOnlyConfig.model_validate(raw, context={"rules_at": ".".join(p for p in (gate_key, "rules") if p)})
    except ValidationError as exc:
        raise _format_validation_error(path, "", exc, gate_key=gate_key) from None


def load_rules_config(path: str | Path) -> GateOnlyConfig:
    """A ``--rules`` file (``gate: {rules: [...]}`` or just ``rules: [...]``) as the judging config it
    stands for: the gate section from the file, every other section at its default, validated by
    the same code as a ``--config`` file (a rule naming an attack that does not run is refused)."""
    path = Path(path)
    raw = _read_yaml(path)
    if isinstance(raw, dict) and "gate" in raw:
        return _judging_from({"gate": raw["gate"] if raw["gate"] is not None else {}}, path)
    return _judging_from({"gate": raw if raw is not None else {}}, path, gate_key="")


def load_rules(path: str | Path) -> GateConfig:
    """The gate section of a ``--rules`` file (:func:`load_rules_config`)."""
    return load_rules_config(path).gate


def load_judging(*, rules: str | Path | None = None, config: str | Path | None = None) -> GateOnlyConfig | None:
    """The judging config of a gate-only run: from a ``--rules`` file or a ``--config`` file (not
    both: each sets the rules), None for neither (the defaults)."""
    if rules and config:
        raise ConfigError(f"{rules} and {config} both set the gate rules; put them in the gate section of {config}")
    if rules:
        return load_rules_config(rules)
    return load_gate_only_config(config) if config else None


def load_release_config(path: str | Path) -> ReleaseConfig:
    """Load a release config; relative paths in it are resolved against the config's folder."""
    path = Path(path)
    raw = _read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with keys dataset, generator, ...")
    base = path.resolve().parent
    ds = raw.get("dataset")
    if isinstance(ds, dict):
        ds = dict(ds)
        if isinstance(ds.get("spec"), str):  # spec kept in its own file
            spec_path = (base / ds["spec"]).resolve()
            ds["spec"] = load_spec(spec_path).model_dump()
        for key in ("path", "reference_path"):
            if isinstance(ds.get(key), str) and not is_s3(ds[key]):
                ds[key] = str((base / ds[key]).resolve())
        raw = {**raw, "dataset": ds}
    pub = raw.get("publish")
    if isinstance(pub, dict) and isinstance(pub.get("target"), str) and not is_s3(pub["target"]):
        raw = {**raw, "publish": {**pub, "target": str((base / pub["target"]).resolve())}}
    try:
        return ReleaseConfig.model_validate(raw)
    except ValidationError as exc:
        raise _format_validation_error(path, "", exc) from None
