"""Every name a gate run writes: metric keys, MLflow tags, artefact paths, and the lists of them.

One module because it is the one owner of these conventions (and of how a user's column and
category names become MLflow keys, :func:`key_segment`), so the gate rules, the MLflow sink, the
summaries and the HTML report cannot disagree. Nothing here imports MLflow (``tracking`` applies
these names to an MLflow store); this module is a leaf every layer may import.

>>> metric_name("domias", "auc")
'domias.auc'
>>> mace_metric("dcr", "advantage_lower")
'dcr.mace.advantage_lower'
>>> subgroup_metric(("sex", "race"), ("Female", "Black"), "dcr.auc")
'subgroup/sex_x_race/Female_x_Black/dcr.auc'
>>> check_key(attack="dcr", metric="auc", group="race=Black")
'race=Black: dcr.auc'
>>> subgroup_metric(("age (years)",), (".",), "dcr.auc")
'subgroup/age _years_-h4b35ae8ca4/_-hcdb4ee2aea/dcr.auc'
"""

from __future__ import annotations

import re

# ---- environment variables the code reads ------------------------------------------------------

#: MLflow store when the release config names none (MLflow's own variable; a deployment sets it).
ENV_TRACKING_URI = "MLFLOW_TRACKING_URI"
#: The S3-compatible endpoint (MinIO, moto, ...) for s3:// data and publication targets; MLflow
#: reads the same variable for its S3 artefact store. Credentials: the standard AWS_* variables.
ENV_S3_ENDPOINT = "MLFLOW_S3_ENDPOINT_URL"
#: The user recorded on runs (``mlflow.user``); default the OS user.
ENV_USER = "PRIVACY_GATE_USER"
#: The HMAC key verdicts are signed with at gate time and verified with at review time.
ENV_SIGNING_KEY = "PRIVACY_GATE_SIGNING_KEY"
#: Where the empty MLflow store template is kept (default ``$XDG_CACHE_HOME`` or ``~/.cache``, then
#: ``privacy-gate``).
ENV_CACHE = "PRIVACY_GATE_CACHE"
#: seconds between the progress lines of a generator fit (default 15)
ENV_PROGRESS_SECONDS = "PRIVACY_GATE_PROGRESS_SECONDS"

# ---- metric families ------------------------------------------------------------------------

#: ROC metrics of one attack (``estimators.metrics.roc_metrics``) where larger means more leakage:
#: the strongest attack is the maximum of each.
LEAKAGE_METRICS = ("auc", "tpr_at_fpr_0.01", "tpr_at_fpr_0.001", "advantage")
#: MACE figures of one query (an attack's scores or the combined query).
#: ``advantage`` is the point estimate inside its own bounds; ``advantage_plugin`` the raw plug-in
#: (smoothing / binning lose advantage, so at strong leakage it can fall below the certified lower
#: bound).
MACE_FIGURES = (
    "advantage",
    "advantage_lower",
    "advantage_upper",
    "advantage_plugin",
    "bias",
    "radius",
    "ppv_upper",
    "dp_bound",
)
#: The MACE metrics shown in summaries next to the ROC metrics.
MACE_METRICS = ("mace.advantage", "mace.advantage_lower", "mace.advantage_upper")
#: The pseudo-attack naming the combined query (the vector of all gated attacks' scores).
COMBINED = "combined"
#: ``strongest.<metric>`` is the maximum across gated attacks; tag ``gate.strongest.<metric>`` names
#: it.
STRONGEST = "strongest"
UTILITY = "utility"
UTILITY_QUALITY = "utility.quality"
VALIDATION_SYNTHETIC = "validation.synthetic"
ORACLE_ATTACK = (
    "mama_mia_oracle"  # MAMA-MIA with the generator's real focal points (reported, not gated)
)
#: Exposed-record discovery over the member targets (``estimators.exposure``): ``exposed.count``,
#: ``exposed.share_lower``, ``exposed.share_upper``, ... — plain metrics, not per attack.
EXPOSURE = "exposed"
#: Disclosure risks (``experiment.disclosure``, Giomi et al.): ``singling_out.risk``,
#: ``linkability.risk_lower``, ``inference.risk_upper`` (the worst secret column) and
#: ``inference.<column>.risk`` per secret column.
SINGLING_OUT = "singling_out"
LINKABILITY = "linkability"
INFERENCE = "inference"
DISCLOSURE_FAMILIES = (SINGLING_OUT, LINKABILITY, INFERENCE)
#: the figures of one disclosure risk (``estimators.disclosure.DisclosureRisk.figures``)
DISCLOSURE_FIGURES = (
    "risk",
    "risk_lower",
    "risk_upper",
    "train_rate",
    "control_rate",
    "baseline_rate",
    "n_train",
    "n_control",
    "pvalue",
)
#: the HTML report's disclosure section (attacker's knowledge, risks, baselines; no record values)
ART_DISCLOSURE = "risk/disclosure.json"
ART_DISCLOSURE_PLOT = "plots/disclosure_risk.png"
#: A subgroup's rank test over the gated attacks (``estimators.group_tests``), in each group's
#: metrics.
GROUP_TEST = "membership_test"
#: Suppression label of the exposed records (``privacy-gate approve --suppress exposed``).
SUPPRESS_EXPOSED = "exposed"
#: Suppression label of the synthetic rows that copy training records beyond the twin rate
#: (``privacy-gate approve --suppress copies``; needs no names).
SUPPRESS_COPIES = "copies"
#: The checks of an unmet stage floor (``experiment.floors``): ``insufficient_evidence.<setting>``,
#: e.g. ``insufficient_evidence.targets.min_per_class`` — a REVIEW for "insufficient evidence".
INSUFFICIENT_EVIDENCE = "insufficient_evidence"


# ---- what a gate rule can read (checked when a config is loaded: a typo must not skip a rule) --

#: ROC figures of one attack's scores (``estimators.metrics.roc_metrics``), incl. the class sizes.
ROC_FIGURES = (
    "auc",
    "tpr_at_fpr_0.01",
    "tpr_at_fpr_0.001",
    "advantage",
    "n_members",
    "n_non_members",
)
#: An attack's membership rank test over all targets (``estimators.group_tests.rank_test_pvalue``):
#: ``<attack>.rank_pvalue``, what the budget's membership test reads.
RANK_PVALUE = "rank_pvalue"
#: The attacks' mean-rank ensemble, tested both ways (``estimators.group_tests.ensemble_figures``):
#: ``membership.ensemble_pvalue`` (two-sided, what the budget's membership test reads beside each
#: attack's rank test), its one-sided parts and its AUC (below 0.5: the release avoids its members).
MEMBERSHIP = "membership"
ENSEMBLE_FIGURES = (
    "ensemble_pvalue",
    "ensemble_upper_pvalue",
    "ensemble_lower_pvalue",
    "ensemble_auc",
)
#: Verbatim copies against the population's own twins (``experiment.copies``): ``copies.pvalue`` ...
COPIES = "copies"
COPY_FIGURES = (
    "pvalue",
    "excess_share",
    "excess_lower",
    "train_share",
    "holdout_share",
    "train_only",
    "holdout_only",
    "compared",
    "n_pool",
)
#: Partial copies: the information-weighted column agreement scan (``experiment.agreement``).
AGREEMENT = "agreement"
AGREEMENT_FIGURES = (
    "pvalue",
    "tail_pvalue",
    "simes_pvalue",
    "count",
    "tested",
    "excess_share",
    "tail_top",
    "calibration",
    "qi_pvalue",
    "linking_pvalue",
    "scanned_share",
    "registered_rows",
)
#: The generator-aware test (``experiment.shadow_gate``): ``shadow.pvalue`` is what the budget's
#: ``shadow`` test reads; the rest say how much compute it used and what it can see.
SHADOW = "shadow"
SHADOW_FIGURES = (
    "pvalue",
    "rank_pvalue",
    "tail_pvalue",
    "fits",
    "looks",
    "out_median",
    "tested",
    "pool",
    "named",
    "named_threshold",
    "top_set",
    "top_members",
    "top_exposed_lower",
    "power",
    "fits_needed",
    "sufficient",
    "seconds",
    "fits_per_second",
    "promise_share",
)
#: Release-level figures without an attack, by family (``exposed.*`` from exposed-record discovery
#: and the member scan, ``dependency.*`` from the source shift, ``utility.*`` from the utility
#: score).
PLAIN_FIGURES = {
    "exposed": (
        "count",
        "tested",
        "calibration",
        "false_expected",
        "share",
        "share_lower",
        "share_upper",
        "threshold",
        "level",
        "attacks",
        "delta",
        "tail_pvalue",
        "tail_top",
        "min_pvalue",
        "naming_needs",
        "scan_count",
        "scan_tested",
        "scan_calibration",
        "scan_threshold",
        "scan_false_bound",
        "scan_tail_pvalue",
        "scan_tail_top",
        "scan_min_pvalue",
        "scan_naming_needs",
        "simes_pvalue",
        "scan_simes_pvalue",
        "share_pvalue",
        "scan_top_set",
        "scan_top_members",
        "scan_top_exposed_lower",
        "scan_views",
        "scan_pool_share",
        "scan_registered_rows",
    ),
    MEMBERSHIP: ENSEMBLE_FIGURES,
    COPIES: COPY_FIGURES,
    AGREEMENT: AGREEMENT_FIGURES,
    SHADOW: SHADOW_FIGURES,
    "dependency": ("source_shift_pvalue", "source_tv", "plausibly_dependent", "dp_bound_excess"),
    **{
        family: DISCLOSURE_FIGURES
        + tuple(
            f"{mode}.{f}" for mode in ("univariate", "multivariate") for f in DISCLOSURE_FIGURES
        )
        for family in DISCLOSURE_FAMILIES
    },
    "utility": (
        "quality",
        "tvd_1way",
        "tvd_2way",
        "worst_1way_tvd",
        "worst_2way_tvd",
        "n_columns",
        "n_pairs",
    ),
}
#: A subgroup's own figures without an attack (its rank test, sizes and exposed records).
GROUP_FIGURES = (
    "membership_test.p_value",
    "membership_test.p_adjusted",
    "n_members",
    "n_non_members",
    "exposed.count",
)

#: metric families that name no attack (``exposed.count``, ``membership_test.p_adjusted``, ...):
#: any other first part of a plain rule metric is an attack key (``dcr.auc``)
PLAIN_FAMILIES = frozenset(
    {*PLAIN_FIGURES, "validation", *(f.partition(".")[0] for f in GROUP_FIGURES)}
)


def is_test_level(metric: str) -> bool:
    """A p-value figure: its level is the error budget's to set, never a rule's.

    >>> keys = ("exposed.scan_tail_pvalue", "membership_test.p_adjusted", "auc")
    >>> [is_test_level(k) for k in keys]
    [True, True, False]
    """
    figure = metric.rpartition(".")[2]
    return figure.endswith("pvalue") or figure in ("p_value", "p_adjusted")


def attack_figures() -> tuple[str, ...]:
    """Every figure a rule can read per attack (``<attack>.<figure>``)."""
    mace = tuple(f"mace.{f}" for f in MACE_FIGURES)
    return (
        ROC_FIGURES
        + (RANK_PVALUE,)
        + mace
        + tuple(f"entity.{f}" for f in ROC_FIGURES)
        + tuple(f"dependency.{f}" for f in ROC_FIGURES + mace)
    )


def rule_metric_problem(metric: str, *, attack: str | None, scope: str) -> str | None:
    """Why a rule on ``metric`` (for ``attack``, at ``scope``) could never read a figure, or None.
    Without ``attack`` a metric may also name one (``dcr.auc``); whether that attack runs is the
    config's to check (``config.rules_problem``).

    >>> rule_metric_problem("auc", attack="any", scope="subgroup") is None
    True
    >>> rule_metric_problem("dcr.auc", attack=None, scope="global") is None
    True
    >>> rule_metric_problem("acu", attack="any", scope="subgroup")
    "metric 'acu' is not a figure of an attack in a subgroup (auc, tpr_at_fpr_0.01,
    tpr_at_fpr_0.001, advantage, ...)"
    >>> rule_metric_problem("exposed.share_lowr", attack=None, scope="global")
    "metric 'exposed.share_lowr' is not a figure the gate records (exposed.count,
    exposed.tested, ...)"
    """
    per_attack = (
        attack_figures()
        if scope == "global"
        else ROC_FIGURES + tuple(f"mace.{f}" for f in MACE_FIGURES)
    )
    where = "of an attack" if scope == "global" else "of an attack in a subgroup"
    if attack is not None:
        return (
            None
            if metric in per_attack
            else f"metric {metric!r} is not a figure {where} ({', '.join(per_attack[:4])}, ...)"
        )
    family, _, figure = metric.partition(".")
    if scope == "subgroup" and metric in GROUP_FIGURES:
        return None
    if scope == "global" and family == "validation" and figure.startswith("synthetic."):
        return None  # the synthetic suite's figures (copy_share, failed, success, ...)
    if scope == "global" and family in PLAIN_FIGURES:
        if figure in PLAIN_FIGURES[family] or (
            family == INFERENCE
            and figure.rpartition(".")[2] in DISCLOSURE_FIGURES
            and "." in figure
        ):
            return None
        known = [f"{family}.{f}" for f in PLAIN_FIGURES[family]]
        return f"metric {metric!r} is not a figure the gate records ({', '.join(known[:2])}, ...)"
    if figure in per_attack:
        return None  # <attack>.<figure>
    if scope == "subgroup":
        return (
            f"metric {metric!r} is not a figure of a subgroup ({', '.join(GROUP_FIGURES)}, or "
            "<attack>.<figure>)"
        )
    return (
        f"metric {metric!r} is not a figure the gate records (<attack>.auc, utility.quality, "
        "exposed.count, ...)"
    )


def metric_name(attack: str | None, metric: str) -> str:
    """``domias`` + ``auc`` -> ``domias.auc``; the key gate rules read."""
    return f"{attack}.{metric}" if attack else metric


def mace_metric(query: str, figure: str) -> str:
    return f"{query}.mace.{figure}"


def entity_metric(attack: str, metric: str) -> str:
    return f"{attack}.entity.{metric}"


def dependency_metric(attack: str, metric: str) -> str:
    return f"{attack}.dependency.{metric}"


def dependency_figure(figure: str) -> str:
    """Release-level dependency figures: ``source_tv`` -> ``dependency.source_tv``."""
    return f"dependency.{figure}"


def disclosure_metric(family: str, figure: str, column: str | None = None) -> str:
    """``inference`` + ``risk_lower`` (+ ``income``) -> ``inference.income.risk_lower``.

    >>> disclosure_metric("singling_out", "risk")
    'singling_out.risk'
    >>> disclosure_metric("inference", "risk_upper", "income")
    'inference.income.risk_upper'
    """
    return f"{family}.{key_segment(column)}.{figure}" if column else f"{family}.{figure}"


def exposure_metric(figure: str) -> str:
    """``count`` -> ``exposed.count``."""
    return f"{EXPOSURE}.{figure}"


def group_test_metric(figure: str) -> str:
    """``p_adjusted`` -> ``membership_test.p_adjusted`` (a key inside one subgroup's metrics)."""
    return f"{GROUP_TEST}.{figure}"


def timing_metric(stage: str) -> str:
    return f"time.{stage}_s"


# ---- what a run logs as MLflow metrics (``metric_records`` decides), and where the rest goes ----

#: a headline metric's key at most this long (MLflow's charts show the key as the chart's title); a
#: longer one (a long attack label) is shortened by :func:`bounded_key`
MAX_HEADLINE_KEY_LENGTH = 60
#: a group or evaluator label in the metric tables at most this long: cut, with a hash of the whole
MAX_TABLE_LABEL_LENGTH = 60
#: release-level figures derived from the verdict for the headline (not rule metrics: they are not
#: in ``verdict.metrics``, only in what is logged): each budget test's p-value, the flagged groups,
#: the total time of the stages
BUDGET = "budget"
FLAGGED_SUBGROUPS = "flagged.subgroups"
TOTAL_TIME = timing_metric("total")


def budget_metric(test: str) -> str:
    """``membership`` -> ``budget.membership.pvalue``: the p-value of one test of the error
    budget."""
    return f"{BUDGET}.{test}.pvalue"


#: what MLflow accepts in a key (its pattern ``[/\w.\- :]`` without the colon, which its Windows
#: stores refuse, and without the slash, which separates the segments of our keys)
_KEY_CHARACTERS = re.compile(r"[\w.\- ]+")
#: the tail :func:`key_segment` appends to a name it had to change (a plain name never ends so)
_CHANGED_TAIL = re.compile(r"-h[0-9a-f]{10}$")
#: joins the columns (and the values) of an intersection inside one key segment
INTERSECTION_JOIN = "_x_"
#: a record value's hashed label (``grouping.value_token``: ``#`` + 10 hex digits) and its key
#: segment (``_`` + the digits), which no plain name may spell
_HASHED_LABEL = re.compile(r"#([0-9a-f]{10})")
_HASHED_SEGMENT = re.compile(r"_[0-9a-f]{10}")


def _plain_segment(text: str) -> bool:
    """``text`` is a key segment as it stands: MLflow's characters, not a path step (``.``/``..``),
    no edge spaces, nothing that could be read as an intersection join, a changed name's tail or a
    hashed label's segment."""
    return (
        bool(_KEY_CHARACTERS.fullmatch(text))
        and text not in (".", "..")
        and text == text.strip()
        and INTERSECTION_JOIN not in text
        and not text.startswith("x_")
        and not text.endswith("_x")
        and not _CHANGED_TAIL.search(text)
        and not _HASHED_SEGMENT.fullmatch(text)
    )


def key_segment(text: object) -> str:
    """The one encoder of a user-provided name (a column, a category value or a group token) into a
    segment of an MLflow key: ``text`` itself when it is plain (:func:`_plain_segment`), else its
    MLflow-safe spelling with a stable hash of the original appended (``-h`` + 10 hex digits).

    Injective: a plain name maps to itself and never ends like a changed one, and changed names
    differ in their hashes, so ``a/b`` and ``a_b`` (or ``.`` and ``_``) never share a key; no
    segment holds ``/`` or ``_x_``, so the segments of a key joined by them stay apart. Only names
    reach it that may be shown (public category names, column names, or the ``#`` hashes of
    record values), and the hash is of that name. Key length: :func:`bounded_key` (at MLflow).

    >>> key_segment("marital_status"), key_segment("âge"), key_segment("Married-civ-spouse")
    ('marital_status', 'âge', 'Married-civ-spouse')
    >>> key_segment("age (years)"), key_segment("a/b"), key_segment("a_b")
    ('age _years_-h4b35ae8ca4', 'a_b-hc14cddc033', 'a_b')
    >>> # a hashed record value; a plain name
    >>> key_segment("#9231c165fc"), key_segment("_9231c165fc")
    ('_9231c165fc', '_9231c165fc-h20c7a254a9')
    >>> key_segment("."), key_segment(".."), key_segment("")
    ('_-hcdb4ee2aea', '_-h5ec1f7e700', '_-he3b0c44298')
    """
    text = str(text)
    if _plain_segment(text):
        return text
    hashed = _HASHED_LABEL.fullmatch(text)
    if hashed:
        return f"_{hashed.group(1)}"
    import hashlib

    spelled = re.sub(r"[^\w.\- ]", "_", text).strip()
    # an ``x`` between underscores (or at an edge next to one) would read as an intersection join
    spelled = re.sub(r"(?<=_)x(?=_)|^x(?=_)|(?<=_)x$", "X", spelled)
    if spelled in ("", ".", ".."):
        spelled = "_"
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{spelled}-h{digest}"


def shown_segment(segment: str) -> str:
    """A key segment as a label shows it: a hashed record value's segment back to its ``#`` form
    (:func:`key_segment` turned ``#9231c165fc`` into ``_9231c165fc``, which no plain name spells),
    every other segment as it stands.

    >>> [shown_segment(s) for s in ("_9231c165fc", "Married-civ-spouse", "a_b-hc14cddc033")]
    ['#9231c165fc', 'Married-civ-spouse', 'a_b-hc14cddc033']
    """
    return f"#{segment[1:]}" if _HASHED_SEGMENT.fullmatch(segment) else segment


def subgroup_metric(columns: tuple[str, ...], values: tuple[str, ...], key: str) -> str:
    """Intersections join with ``_x_``: ``subgroup/sex_x_race/Female_x_Black/dcr.auc``; every
    column and value goes through :func:`key_segment`."""
    return (
        f"subgroup/{INTERSECTION_JOIN.join(map(key_segment, columns))}/"
        f"{INTERSECTION_JOIN.join(map(key_segment, values))}/{key}"
    )


#: MLflow's limits on a metric/param/tag key and on a tag value (its store refuses longer ones).
MAX_KEY_LENGTH = 250
MAX_TAG_VALUE_LENGTH = 5000


def _valid_key(key: str) -> bool:
    """What MLflow's stores accept as a metric/param/tag key (characters; not a path that
    normalises to another name)."""
    import posixpath

    return (
        bool(re.fullmatch(r"[/\w.\- :]+", key))
        and posixpath.normpath(key) == key
        and not key.startswith(("/", ".."))
        and key != "."
    )


def bounded_key(key: str, limit: int = MAX_KEY_LENGTH) -> str:
    """``key`` if it fits MLflow's limit, else a stable shortened form (prefix + hash): long
    column or category names must never make a run unrecordable. A key MLflow would refuse (a
    name that did not come through :func:`key_segment`) has its offending ``/`` parts encoded by it.

    >>> len(bounded_key("subgroup/" + "x" * 300 + "/dcr.auc")) <= MAX_KEY_LENGTH
    True
    >>> bounded_key("dcr.auc"), bounded_key("inference.wage €.risk")
    ('dcr.auc', 'inference.wage _.risk-he4b8df210f')
    """
    if not _valid_key(key):
        key = "/".join(
            part if part and _valid_key(part) else key_segment(part) for part in key.split("/")
        )
    if len(key) <= limit:
        return key
    import hashlib

    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return f"{key[: limit - 15]}-h{digest}"  # only characters MLflow accepts in names


def check_key(*, attack: str | None, metric: str, group: str | None = None) -> str:
    """The one-string form of what a rule check read: ``[<group>: ][<attack>.]<metric>``."""
    key = metric_name(attack, metric)
    return f"{group}: {key}" if group else key


def split_attack_metric(key: str) -> tuple[str, str] | None:
    """``domias.auc`` -> ``("domias", "auc")`` for release-level attack metrics (not subgroup,
    entity, dependency, utility or timing keys), else None."""
    head, _, rest = key.partition(".")
    if not rest or "/" in head or head in (UTILITY, "time", "validation"):
        return None
    if rest in LEAKAGE_METRICS or rest in MACE_METRICS:
        return head, rest
    return None


# ---- MLflow tags ------------------------------------------------------------------------------
EXPERIMENT_PREFIX = "privacy-gate/"
TAG_VERDICT = "gate.verdict"
TAG_STATUS = "gate.status"
TAG_VERDICT_DIGEST = (
    "gate.verdict_digest"  # digest (or HMAC) of verdict.json as written at decision time
)
TAG_FLAGGED = "gate.flagged_subgroups"
TAG_DISABLED = "gate.disabled"  # default protections turned off: "key: reason; ..." or "none"
TAG_BUDGET = "gate.error_budget"  # "review 0.02, block 0.001"
TAG_FLAGGED_THROUGH = (
    "gate.flagged_through"  # "larger <- smaller": flagged only through the smaller group
)
#: the flagged group the evidence points at (else the first) with its effect size: "race=X: AUC 1
#: [0.82, 1], 44 of 46 named records" (words.evidence.effect_headline), or "none"
TAG_FLAGGED_EFFECT = "gate.flagged_effect"
TAG_KIND = (
    "gate.run_kind"  # release | gate_only | review_rerun | ladder | ladder_filter | attack ...
)
TAG_DATASET = "gate.dataset"
TAG_SYNTHETIC_SHA = "gate.synthetic_sha256"
TAG_QUARANTINE = "gate.quarantine_path"
TAG_WORKDIR = (
    "gate.workdir"  # the run's workdir (absolute): the suggested decision commands name it
)
TAG_PUBLISH_TARGET = "gate.publish_target"
TAG_PUBLISHED = "gate.published"  # where the approved release was published (set after the verdict)
#: where the approved release is going, written (and read back) before it leaves quarantine: a
#: store that cannot take this write (a full disk) publishes nothing
TAG_PUBLISHING = "gate.publishing"
#: the release a run judged: its config, data and privacy-gate version (review/prior_decision.py)
TAG_RELEASE_KEY = "gate.release_key"
TAG_FLOW_RUN = "gate.prefect_flow_run"  # the Prefect flow run (and deployment) that made the run
TAG_LADDER = "gate.ladder_run"  # on each remediation attempt: the ladder's parent run
TAG_ATTEMPT = "gate.attempt"  # 1, 2, ...: a retried release's attempt runs, nested under one parent
TAG_ATTEMPTS = "gate.attempts"  # on that parent: how many attempts were made
TAG_FINAL_RUN = "gate.final_run"  # on that parent: the attempt run whose verdict stands
KIND_ATTEMPTS = "release_attempts"  # the parent run of a retried release's attempts
TAG_LADDER_RUNG = "gate.ladder_rung"  # 0 = the configured generator, 1.. = the ladder's rungs
# a gate re-run on a filtered release (review with --suppress, a ladder filter rung)
TAG_RERUN_OF = "gate.rerun_of"
# "true" on the re-gate of ``approve --suppress --dry-run``
TAG_DRY_RUN = "gate.dry_run"
#: the run of ``approve RUN --suppress``'s re-gate: decided with RUN, never alone
KIND_REVIEW_RERUN = "review_rerun"
#: a remediation ladder's filter rung: the previous attempt's release re-gated without the rows it
#: removes
KIND_LADDER_FILTER = "ladder_filter"
TAG_APPROVAL_STATUS = "approval.status"  # not_required | pending | approved | rejected
TAG_APPROVAL_REVIEWER = "approval.reviewer"
TAG_APPROVAL_AT = "approval.decided_at"
TAG_APPROVAL_COMMENT = "approval.comment"
TAG_APPROVAL_SHA = "approval.data_sha256"
TAG_APPROVAL_PUBLISHED = "approval.published"
TAG_SIGNED = (
    "gate.signed"  # "true" when verdict.json was HMAC-signed (its seal says so too, under the HMAC)
)
TAG_DECISION_CLAIM = (
    "approval.claim"  # who is deciding: written, then re-read, before a decision acts
)
#: the digests of the void records (``review/decision-NNN-void.json``) that cancel an approval a
#: killed ``approve`` recorded but never published (``review.decision_recovery``): a void counts
#: only when its digest (an HMAC on a signed run) is listed here too
TAG_APPROVAL_VOIDS = "approval.voids"
TAG_APPROVAL_RECOVERED = (
    "approval.recovered"  # what the last recovery of an interrupted decision did
)
#: the process that made a run (``processes``): ``privacy-gate doctor`` marks a run left RUNNING
#: KILLED only when this host's PID is gone (or now another process: a different start token)
TAG_HOST = "gate.host"
TAG_PID = "gate.pid"
TAG_PROCESS_START = "gate.process_start"
TAG_KILLED_REASON = "gate.killed_reason"  # why doctor marked a RUNNING run KILLED
#: why doctor closed a RUNNING run FINISHED: its release is published (found in its target) but
#: its process ended before recording that (a full disk)
TAG_CLOSED_REASON = "gate.closed_reason"
#: run kinds that publish on their own APPROVE (a review re-run's release is published by its
#: approval)
PUBLISHING_KINDS = ("release", "gate_only")


#: the run name once the verdict is known: ``REVIEW · gate-adult`` (the run list shows it at a
#: glance)
RUN_NAME_VERDICT_SEPARATOR = " · "
VERDICT_NAMES = ("APPROVE", "REVIEW", "BLOCK")


def verdict_run_name(name: str, verdict: str, decided: str | None = None) -> str:
    """``gate-adult`` + ``REVIEW`` -> ``REVIEW · gate-adult``: the verdict first, where MLflow's
    run list (which cuts names at about 20 characters) still shows it; a recorded-again verdict
    replaces the old one. ``decided``: a reviewer's decision on a REVIEW (``approved`` /
    ``rejected``), right after the verdict; None puts the name back to the verdict alone.

    >>> verdict_run_name("gate-adult", "REVIEW"), verdict_run_name("REVIEW · gate-adult", "BLOCK")
    ('REVIEW · gate-adult', 'BLOCK · gate-adult')
    >>> # a run named before the verdict came first
    >>> verdict_run_name("gate-adult · REVIEW", "APPROVE")
    'APPROVE · gate-adult'
    >>> verdict_run_name("REVIEW · gate-adult", "REVIEW", "approved")
    'REVIEW approved · gate-adult'
    >>> verdict_run_name("REVIEW approved · gate-adult", "REVIEW")  # an approval rolled back
    'REVIEW · gate-adult'
    """
    parts = name.split(RUN_NAME_VERDICT_SEPARATOR)
    head = parts[0].split(" ")
    base = parts[-1] if len(parts) > 1 and head[0] in VERDICT_NAMES else parts[0]
    return f"{verdict}{f' {decided}' if decided else ''}{RUN_NAME_VERDICT_SEPARATOR}{base}"


def strongest_tag(metric: str) -> str:
    return f"gate.{STRONGEST}.{metric}"


# ---- artefacts --------------------------------------------------------------------------------
DECISIONS_DIR = "review"  # one JSON per decision: review/decision-001-approve.json
ART_VERDICT = "verdict.json"
ART_CONFIG = "config/release.json"
ART_SETTINGS = "config/gate_settings.json"  # the resolved settings a re-gate reuses
ART_SCORES = "risk/per_record_scores.parquet"
ART_ROC = "plots/roc.png"
ART_SUMMARY = "summary.md"
ART_TIMINGS = "timings.json"
ART_UTILITY = "utility.json"
ART_SUBGROUPS = "audit/subgroups.json"
#: per flagged group (at most MAX_GROUP_ROCS), its ROC curve per attack: members vs non-members of
#: the group, as points (fpr, tpr) with the group's counts and AUC; no row ids, no values
ART_GROUP_ROC = "audit/flagged_roc.json"
MAX_GROUP_ROCS = 6
ART_EXPOSED = (
    "risk/exposed_records.parquet"  # row_id, p_value, exposed, attack, p_<attack> (no values)
)
ART_SCAN = (
    "risk/exposed_members.parquet"  # the member scan: row_id, p_value, exposed, in_top (no values)
)
#: the generator-aware test per training record: row_id, p_value, z, n_out, n_in, named, in_top
#: (no values); its named records' real score against their own shadow scores, as a plot and as
#: numbers (row id, real, out and in scores)
ART_SHADOW = "risk/shadow_records.parquet"
ART_SHADOW_PLOT = "plots/shadow_evidence.png"
ART_SHADOW_EVIDENCE = "risk/shadow_evidence.json"
ART_MACE = "risk/mace_per_record.parquet"  # row_id, risk, risk_lower, risk_upper, f
ART_MACE_ESTIMATES = "risk/mace_estimates.json"  # every MACE estimate with its settings
ART_MACE_PLOT = "plots/mace_risk.png"
ART_LADDER = (
    "remediation/ladder.json"  # every attempt of a remediation ladder, the choice and the budget
)
ART_REPORT = "report/index.html"  # self-contained HTML report, re-rendered after every decision
#: every figure of the run (the verdict's metrics, the stage timings, the headline's derived
#: figures) by its full key: what is not an MLflow metric is here (``metric_records``)
METRICS_DIR = "metrics"
ART_METRICS_ALL = f"{METRICS_DIR}/all.json"
#: the same figures as tables (CSV: the MLflow artifact viewer shows them as sortable tables)
ART_METRICS_ATTACKS = (
    f"{METRICS_DIR}/attacks.csv"  # one row per attack (and combined, strongest): every figure
)
ART_METRICS_DISCLOSURE = (
    f"{METRICS_DIR}/disclosure.csv"  # one row per disclosure evaluator (each inference column)
)
ART_METRICS_RELEASE = f"{METRICS_DIR}/release.csv"  # every other release-level figure: key, value
#: one row per audited group (rank test, sizes), the most significant first
ART_METRICS_SUBGROUPS = f"{METRICS_DIR}/subgroups.csv"
ART_METRICS_SUBGROUP_ATTACKS = (
    f"{METRICS_DIR}/subgroup_attacks.csv"  # one row per group x attack: ROC and MACE figures
)
ART_METRICS_SUBGROUP_DISCLOSURE = (
    f"{METRICS_DIR}/subgroup_disclosure.csv"  # one row per group x disclosure evaluator
)
METRIC_TABLES = (
    ART_METRICS_ATTACKS,
    ART_METRICS_DISCLOSURE,
    ART_METRICS_RELEASE,
    ART_METRICS_SUBGROUPS,
    ART_METRICS_SUBGROUP_ATTACKS,
    ART_METRICS_SUBGROUP_DISCLOSURE,
)
ART_STUDY_EXPERIMENTS = (
    "dependency/experiments.parquet"  # one row per experiment: figures only, no records
)
ART_STUDY_SUMMARY = (
    "dependency/summary.json"  # per setting x generator x epsilon x IID: means and intervals
)
ART_STUDY_INVARIANTS = (
    "dependency/invariants.json"  # the paper's invariants, held or not, with the numbers
)
ART_STUDY_PLOT = "plots/dependency_advantage.png"
ART_DP_AUDIT = (
    "dp_audit/audit.json"  # the DP audit's result: bounds, claim, the (FPR, FNR) curve (no records)
)
ART_DP_AUDIT_PLOT = (
    "plots/dp_audit_tradeoff.png"  # empirical (FPR, FNR) points vs the claimed DP / GDP curves
)
DP_AUDIT_METRICS = (
    "dp_audit.epsilon_lower",
    "dp_audit.epsilon_claimed",
    "dp_audit.mu_lower",
    "dp_audit.mu_estimate",
    "dp_audit.mu_claimed",
    "dp_audit.max_certifiable_epsilon",
    "dp_audit.runs",
    "dp_audit.seconds",
    "dp_audit.cached",
)
TAG_DP_AUDIT = "gate.dp_audit"  # on the release run: the DP audit's nested run id

SQLITE_FILE = "mlflow.db"
#: the workdir's secret that keys the hashes of record values in group labels (``label_key``):
#: 0600, never logged, never in MLflow or an artefact
LABEL_KEY_FILE = "label-key"
ARTIFACT_DIR = "mlartifacts"
LOCK_DIR = "locks"  # beside a local MLflow store: one lock file per run being decided

# ---- the seal: what publication uses, inside verdict.json (so under its digest / HMAC) -------
SEAL = "seal"  # the verdict document's key holding the fields below
SEAL_SIGNED = "signed"
SEAL_DATASET = "dataset"
SEAL_PUBLISH_TARGET = "publish_target"
SEAL_QUARANTINE = "quarantine_path"
SEAL_SYNTHETIC_SHA = "synthetic_file_sha256"
SEAL_SETTINGS_SHA = "settings_sha256"  # sha256 of the ART_SETTINGS text as logged
SEAL_CONFIG_SHA = "config_sha256"  # sha256 of the ART_CONFIG text as logged
SEAL_REGATE_OF = (
    "regate_of"  # a review re-run's parent run: the re-run is decided with it, never alone
)
SEAL_LABEL_KEY = (
    "label_key_fingerprint"  # which label key hashed the run's group labels (not the key)
)
#: sha256 of every artifact the run held when its verdict was written (``artifact_seal``): the
#: evidence a reviewer reads is covered by the verdict's digest (its HMAC on a signed run)
SEAL_ARTIFACTS = "artifacts"
#: artifacts rendered after the verdict from what it seals (re-rendered after every decision): each
#: write records their sha256 in TAG_DERIVED_SHA, under a digest bound to the verdict's
#: (TAG_DERIVED_DIGEST)
DERIVED_ARTIFACTS = (ART_SUMMARY, ART_REPORT)
TAG_DERIVED_SHA = "gate.derived_sha256"
TAG_DERIVED_DIGEST = "gate.derived_digest"
#: the run tag that must agree with each sealed field (an edited tag is refused, never followed)
SEAL_TAGS = {
    SEAL_DATASET: TAG_DATASET,
    SEAL_PUBLISH_TARGET: TAG_PUBLISH_TARGET,
    SEAL_QUARANTINE: TAG_QUARANTINE,
    SEAL_SYNTHETIC_SHA: TAG_SYNTHETIC_SHA,
}


def validation_artifact(suite: str) -> str:
    return f"validation/{suite}.json"


def decision_lock_file(run_id: str) -> str:
    """The lock file (inside ``LOCK_DIR``) of a decision on ``run_id``; ``run_id`` is a checked
    id."""
    return f"decision-{run_id}.lock"


def decision_artifact(n: int, action: str) -> str:
    return f"{DECISIONS_DIR}/decision-{n:03d}-{action}.json"


def experiment_name(dataset: str, override: str | None = None) -> str:
    return override or f"{EXPERIMENT_PREFIX}{dataset}"
