"""The sections of a release config other than the gate's rules: where the data is and how it is
split, the generator and the attacks, the targets, the exposure, disclosure and subgroup audits,
MACE, review, tracking, publication, the input limits, the runner, schedule and retries, the DP
audit. Each section is a frozen pydantic model that refuses unknown keys (:class:`Strict`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from privacy_gate.publication.objectstore import is_s3
from privacy_gate.spec import MAX_ENCODED_WIDTH, DatasetSpec


class Strict(BaseModel):
    """A config section: frozen, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


#: Defaults of the input guards (``inputs`` section, :class:`InputLimits`). 500 MB: a whole CLI
#: gate at 1M Adult rows (about 120 MB of CSV) peaked at 5.4 GB; a field of 128 KiB is Python's
#: own CSV field limit, far above any category or number.
DEFAULT_MAX_FILE_BYTES = 500_000_000
DEFAULT_MAX_FIELD_BYTES = 131_072


def _local_or_s3(value: Any) -> Any:
    """``s3://...`` stays a URI string (a Path would collapse its ``//``); anything else is a
    Path."""
    if value is None or is_s3(value):
        return value
    return Path(value) if isinstance(value, str) else value


def location_name(location: Path | str) -> str:
    """The file name of a local path or an ``s3://`` object (for progress messages).

    >>> location_name("s3://data/adult/adult.csv"), location_name(Path("/tmp/x.parquet"))
    ('adult.csv', 'x.parquet')
    """
    return str(location).rstrip("/").rsplit("/", 1)[-1]


class DatasetConfig(Strict):
    """``path`` / ``reference_path``: a local file or an ``s3://bucket/key`` object."""

    path: Path | str
    spec: DatasetSpec
    reference_path: Path | str | None = (
        None  # a public reference file replacing the reference split
    )

    _locations = field_validator("path", "reference_path", mode="before")(
        classmethod(lambda cls, v: _local_or_s3(v))
    )


class SplitConfig(Strict):
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


class TargetsConfig(Strict):
    """How many member / non-member targets the attacks score. ``None`` = as many as possible."""

    n_non_members: int | None = Field(None, gt=0)
    n_members: int | None = Field(None, gt=0)
    # the power floor: with fewer targets per class the gate still runs (its tests stay valid at any
    # size) and answers REVIEW for "insufficient evidence" (experiment/floors.py); below 30 per
    # class (the MACE bounds' three parts of 10) nothing can be measured and the run is refused
    min_per_class: int = Field(100, gt=0)
    # when n_non_members is not set: at most this many per class; None = enough for a MACE
    # radius of 0.015 at mace.delta (16,396 at delta 0.05) — beyond that the figures barely
    # tighten while the attacks' cost grows linearly (estimators/power.py:
    # default_targets_per_class)
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


# MAMA-MIA's "auto" variant shadows marginal (DP) generators and falls back to its generic
# variant for any other generator or for gate-only data
# dcr_ratio (DCR calibrated by the reference) is the per-record exposure attack: it singles out
# near-copies of training records that plain DCR confuses with records in dense regions;
# copy_count adds the repetition (a record copied 40 times, not once) that the nearest row hides
DEFAULT_ATTACKS = (
    AttackConfig(name="domias"),
    AttackConfig(name="dcr"),
    AttackConfig(name="dcr_ratio"),
    AttackConfig(name="copy_count"),
    AttackConfig(name="mama_mia"),
)


class ExposureConfig(Strict):
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
    # label-blind linking views of the agreement scan (experiment/agreement.py). The first is the
    # column combination the release reproduces beyond chance (experiment/reproduced_keys.py),
    # found from the pool as one set, scored whether or not quasi-identifiers are declared; further
    # ones, only with none declared, are the combinations that isolate the most reference records
    # (linking_views), which on Adult were high-entropy measurements, not the demographics an
    # attacker pastes (0 of 10 seeds). Each view adds its tail test to the agreement Bonferroni
    # (a factor 3 with one view, against 2)
    linking_views: int = Field(1, ge=0, le=4)


#: the fewest control records the disclosure stage measures with at all (``disclosure.min_control``
#: may not be set lower); between this and ``min_control`` it runs and the gate REVIEWs
SMALLEST_CONTROL = 20


class DisclosureConfig(Strict):
    """Singling out, linkability and inference risks (experiment/disclosure.py; who the attacker
    is comes from the spec's quasi_identifiers / sensitive / linkability)."""

    enabled: bool = True
    # singling-out predicates per evaluator (500, anonymeter's default: each rate's 97.5% Wilson
    # half-width is at most 0.05)
    n_attacks: int = Field(500, ge=20)
    # linkability and inference attempts per side: as many training and control records as the
    # smaller side holds, up to this many. Each attempt is one record attacked once, so every record
    # the data allow narrows the two-proportion test: an attribute leak of 84 % vs 78 % correct is
    # invisible on 500 attempts per side ([-0.08, 0.53]) and plain on 5,000
    n_attempts: int = Field(5000, ge=20)
    n_cols: int = Field(3, ge=2)  # columns per multivariate singling-out predicate
    n_neighbors: int = Field(1, ge=1)  # linkability: synthetic neighbours of each part
    tolerance: float = Field(
        0.05, ge=0
    )  # inference: a number within this relative distance is a hit
    # control records (holdout records not used as membership targets, plus the reference split
    # when it is exchangeable with the holdout): with fewer the risks are still measured (the exact
    # tests stay valid) and the gate answers REVIEW for "insufficient evidence"; below
    # SMALLEST_CONTROL the stage is refused. 200 control targets give a control-rate half-width of
    # at most 0.08
    min_control: int = Field(200, ge=SMALLEST_CONTROL)
    subgroup_min_targets: int = Field(
        30, ge=5
    )  # a subgroup's risk needs this many targets per side


class AuditConfig(Strict):
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


class ShadowConfig(Strict):
    """The generator-aware test (experiment/shadow_gate.py): the generator's recipe refitted on
    training sets drawn from the pool, each training record's real score against its own scores in
    the shadows that never saw it. ``enabled``: ``auto`` runs it when the recipe is known (a
    release run, or ``privacy-gate gate --generator``), the table is not a panel, and the
    holdout-calibrated tests alone could not give a verdict (too few targets for the power check
    or a stage floor missed); ``true`` runs it whenever the recipe is known; ``false`` never."""

    enabled: Literal["auto"] | bool = "auto"
    # the compute budget: at most this many shadow fits, and no new batch once this much wall time
    # has gone (the test is then taken at the last completed look)
    max_fits: int = Field(256, ge=2, le=65536)
    max_seconds: float = Field(600.0, gt=0)
    # stop at the look where the decision can no longer change (false: every look up to max_fits,
    # for an audit or a timing that wants exactly max_fits fits)
    stop_early: bool = True
    # worker processes of the fits (1: in this process); torch generators use CUDA when present
    jobs: int = Field(2, ge=1, le=256)
    # the promise that replaces the targets' power check on a small table: a release memorising
    # this share of the training records is held back with gate.budget.power
    promise_share: float = Field(0.10, gt=0, le=1)


class ReviewConfig(Strict):
    """What happens on REVIEW: end as pending (decide later with `privacy-gate approve/reject`)
    or wait for a typed review input in Prefect (and stay pending on timeout): a deployment's run
    is suspended, holding no process or slot for as long as ``timeout_seconds``; any other run
    pauses in its process (flows/review_wait.py)."""

    mode: Literal["pending", "pause"] = "pending"
    timeout_seconds: int = Field(3600, gt=0)
    poll_seconds: int = Field(
        10, gt=0
    )  # how often a flow paused in its process checks for the input
    # a deployment's run of a release (same config, data files and version) already decided or
    # awaiting its review is skipped, naming that run (review/prior_decision.py)
    once_per_release: bool = True


class MaceConfig(Strict):
    """MACE estimators (Liu et al.): confidence 1 - delta, membership prior p (realistic releases
    have few members among candidates: p < 0.5; note the advantage is then at least |2p - 1|)."""

    prior: float = Field(0.5, gt=0, lt=1)
    delta: float = Field(0.05, gt=0, lt=1)
    n_permutations: int = Field(200, ge=0)  # label-permutation null: the estimator's bias at this N


class TrackingConfig(Strict):
    uri: str | None = None  # default: sqlite:///<workdir>/mlflow.db
    experiment: str | None = None  # default: privacy-gate/<dataset name>


class PublishConfig(Strict):
    target: Path | str | None = (
        None  # default: <workdir>/published; a folder or an s3://bucket/prefix
    )

    _target = field_validator("target", mode="before")(classmethod(lambda cls, v: _local_or_s3(v)))
    format: Literal["parquet", "csv"] = "parquet"


class InputLimits(Strict):
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


class RunnerConfig(Strict):
    """Prefect task runner: a local thread pool, or Dask (prefect-dask) for clusters — same flow."""

    kind: Literal["thread", "dask"] = "thread"
    workers: int = Field(4, gt=0)
    dask_address: str | None = None  # an existing Dask scheduler; None = a local cluster
    # each attack scores the gate's targets in this many parts, one task each (on Dask: spread
    # over the workers; the figures are the same as one part's). 1 = one task per attack.
    score_chunks: int = Field(1, ge=1, le=1024)


class ScheduleConfig(Strict):
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
            raise ValueError(
                f"'cron' must have 5 fields (minute hour day month weekday), got {self.cron!r}"
            )
        return self


class RetryConfig(Strict):
    """Retries of a scheduled run when a service it needs (tracking server, object store) does not
    answer. Only such infrastructure failures are retried; a run that exhausts its attempts ends
    BLOCK with the reason. An error never becomes an APPROVE."""

    attempts: int = Field(3, ge=1, le=20)  # total attempts, the first included
    delay_seconds: float = Field(30.0, ge=0)


class DPAuditConfig(Strict):
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
    rows: int | None = Field(
        None, ge=10
    )  # audit on a sample of this many training rows (None: all)

    @model_validator(mode="after")
    def _non_empty(self) -> DPAuditConfig:
        for key in ("targets", "scores"):
            if not getattr(self, key):
                raise ValueError(f"audit_dp.{key} must not be empty")
        return self
