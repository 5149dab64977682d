"""Disclosure risks beyond membership (the Article 29 Working Party's three criteria, measured as
in Giomi et al., PETS 2023): singling out (:mod:`.singling_out`), linkability and attribute
inference (:mod:`.linkability`), each as the attack's success on training records against its
success on control records, with intervals (:mod:`privacy_gate.estimators.disclosure`).

Who the attacker is comes from the spec (:func:`attacker`): the quasi-identifiers (what may be
known), the secrets and the two linkability parts, with defaults that
:attr:`DisclosureResult.assumed` states. Control records (:func:`control_records`): the holdout
records that are not membership targets, plus the reference split when it is exchangeable with the
holdout (the same condition under which it calibrates the member scan). Per-subgroup risks of
linkability and inference are computed for the audit's subgroup columns, each interval at level
``alpha / m`` over the ``m`` groups measured (Bonferroni: family-wise, as the audit's Holm
correction is).

A panel (``spec.entity_id``) counts people, not person-years: linkability and inference attack one
row of each of ``n`` people per side (:func:`_attempts`: a person's years are one attempt
repeated); a singling-out predicate succeeds when the real rows it matches are one person's (one
person's seven near-identical years single them out without isolating a row), and its size
correction and equal-size test count and subsample whole people (:func:`_people`).

Only column names, counts, rates and risks leave this module; never a record value.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate.config import SMALLEST_CONTROL, DisclosureConfig
from privacy_gate.data.split import one_row_each, unit_codes
from privacy_gate.errors import InsufficientDataError
from privacy_gate.estimators.disclosure import (
    ALPHA,
    INTERVAL_METHOD,
    DisclosureRisk,
    disclosure_risk,
    holm_alpha,
)
from privacy_gate.experiment.disclosure_codes import Codes
from privacy_gate.experiment.grouping import value_token
from privacy_gate.experiment.linkability import AttackOutcomes, inference, linkability
from privacy_gate.experiment.singling_out import SinglingOutResult, singling_out
from privacy_gate.label_key import LabelKey
from privacy_gate.names import (
    INFERENCE,
    LINKABILITY,
    SINGLING_OUT,
    disclosure_metric,
    subgroup_metric,
)
from privacy_gate.spec import DatasetSpec

_LOG = logging.getLogger("privacy_gate.experiment")


@dataclass(frozen=True)
class Attacker:
    """What the disclosure attacker knows: quasi-identifiers, secrets, linkability parts."""

    quasi_identifiers: tuple[str, ...]
    secrets: tuple[str, ...]
    link_a: tuple[str, ...]
    link_b: tuple[str, ...]
    assumed: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if set(self.link_a) & set(self.link_b):
            raise ValueError("the linkability parts must not share a column")


def attacker(spec: DatasetSpec) -> Attacker:
    """The attacker the spec declares, defaults filled in (and said).

    >>> cols = {c: {"kind": "numeric"} for c in "abcd"}
    >>> spec = DatasetSpec.model_validate({"name": "t", "columns": cols, "sensitive": ["d"]})
    >>> a = attacker(spec); a.quasi_identifiers, a.secrets, a.link_a, a.link_b
    (('a', 'b', 'c'), ('d',), ('a', 'b'), ('c',))
    """
    attrs = spec.attribute_columns
    assumed = []
    qis = spec.quasi_identifiers
    if qis is None:
        qis = [c for c in attrs if c not in (spec.sensitive or [])]
        assumed.append(
            "quasi-identifiers not declared: the attacker is assumed to know every attribute column"
            + (" except the secrets" if spec.sensitive else "")
        )
    secrets = spec.sensitive
    if secrets is None:
        rest = [c for c in attrs if c not in qis]
        secrets = rest if spec.quasi_identifiers is not None and rest else list(attrs)
        assumed.append(
            "secrets not declared: "
            + (
                "the columns that are not quasi-identifiers are the secrets"
                if secrets is rest
                else "each attribute column is the secret in turn, the others known"
            )
        )
    if spec.linkability is not None:
        link_a, link_b = spec.linkability
    else:
        half = (len(qis) + 1) // 2
        link_a, link_b = qis[:half], qis[half:]
        assumed.append(
            "linkability parts not declared: the quasi-identifiers split in spec order "
            f"({len(link_a)} "
            f"+ {len(link_b)} columns)"
        )
    return Attacker(tuple(qis), tuple(secrets), tuple(link_a), tuple(link_b), tuple(assumed))


def control_records(
    holdout: pd.DataFrame,
    target_ids: np.ndarray,
    reference: pd.DataFrame | None,
    *,
    min_control: int,
) -> tuple[pd.DataFrame, str]:
    """The control records and a sentence naming where they come from: the holdout records that
    are not membership targets, plus the reference when it is exchangeable with the holdout; when
    these are fewer than ``min_control`` (the default targets take the whole holdout), the holdout's
    membership non-member targets too — real records the generator never saw as well, so still
    valid controls (the two experiments then share records: each is valid, they are not
    independent).

    >>> h = pd.DataFrame({"a": range(5)}); r = pd.DataFrame({"a": range(3)})
    >>> [len(control_records(h, np.array([0, 1]), r, min_control=k)[0]) for k in (4, 7)]
    [6, 8]
    """
    targeted = holdout.index.isin(target_ids)
    free = holdout.loc[~targeted]
    parts, source = [free], f"{len(free):,} holdout records that are not membership targets"
    if reference is not None and len(reference):
        parts.append(reference)
        source += f" + {len(reference):,} reference records (exchangeable with the holdout)"
    if sum(len(p) for p in parts) < min_control and targeted.any():
        parts.append(holdout.loc[targeted])
        source += (
            f" + {int(targeted.sum()):,} holdout records that are also the membership experiment's "
            "non-member targets (too few others)"
        )
    return pd.concat(parts), source


@dataclass(frozen=True)
class DisclosureInputs:
    """What a disclosure measurement used beside the splits: the control records, where they came
    from, and the public labels of subgroup values (kept so the risks can be measured again
    without one subgroup)."""

    control: pd.DataFrame
    source: str
    public: dict[str, frozenset[str]]


def _singling_out_note(r: SinglingOutResult) -> str:
    """The report's note on a singling-out row: what a success is on a panel, and the size
    scaling."""
    notes = (
        ["a success: the real records a predicate matches are one person's"] if r.per_person else []
    ) + (
        [
            f"control successes scaled x{r.control_correction:.2f} to the training-set size"
            + (" (in people)" if r.per_person else "")
        ]
        if r.control_correction != 1.0
        else []
    )
    return "; ".join(notes)


@dataclass(frozen=True)
class DisclosureResult:
    """Every disclosure risk of one release, the attacker assumed, and the control records used."""

    attacker: Attacker
    singling_out: tuple[SinglingOutResult, ...]
    linkability: AttackOutcomes | None
    inference: tuple[AttackOutcomes, ...]
    control_source: str
    n_control_records: int
    n_train_records: int
    subgroups: dict[str, float] = field(default_factory=dict)  # subgroup metric keys -> value
    seconds: float = 0.0
    interval_method: str = INTERVAL_METHOD

    @property
    def worst_singling_out(self) -> DisclosureRisk:
        return max((r.risk for r in self.singling_out), key=lambda r: (r.risk_lower, r.risk))

    @property
    def worst_inference(self) -> AttackOutcomes | None:
        return max(self.inference, key=lambda o: (o.risk.risk_lower, o.risk.risk), default=None)

    def metrics(self) -> dict[str, float]:
        out: dict[str, float] = {}

        def put(family: str, risk: DisclosureRisk, column: str | None = None) -> None:
            out.update({disclosure_metric(family, k, column): v for k, v in risk.figures().items()})

        if self.singling_out:
            put(SINGLING_OUT, self.worst_singling_out)
            for r in self.singling_out:
                put(SINGLING_OUT, r.risk, r.mode)
                out[disclosure_metric(SINGLING_OUT, "pvalue", r.mode)] = r.pvalue
        if self.linkability is not None:
            put(LINKABILITY, self.linkability.risk)
        for o in self.inference:
            put(INFERENCE, o.risk, o.name.split(".", 1)[1])
        if self.worst_inference is not None:
            put(INFERENCE, self.worst_inference.risk)
        return {**out, **self.subgroups}

    def summary(self) -> dict[str, Any]:
        """What the report shows: who the attacker is, each risk with its interval and baseline,
        predicates described by column names and counts only."""
        rows = [
            {
                "attack": f"singling out ({r.mode}, {r.n_cols} column(s) per predicate)",
                "knew": f"the synthetic data ({len(r.columns)} columns); {r.n_predicates} "
                "predicates each "
                "isolating one synthetic record",
                **r.risk.figures(),
                "note": _singling_out_note(r),
            }
            for r in self.singling_out
        ]
        if self.linkability is not None:
            rows.append(
                {
                    "attack": "linkability",
                    "knew": f"part A: {', '.join(self.attacker.link_a)}; part B: "
                    f"{', '.join(self.attacker.link_b)}",
                    **self.linkability.risk.figures(),
                    "note": "",
                }
            )
        for o in self.inference:
            rows.append(
                {
                    "attack": f"inference of {o.name.split('.', 1)[1]}",
                    "knew": ", ".join(o.known),
                    **o.risk.figures(),
                    "note": "",
                }
            )
        return {
            "rows": rows,
            "assumed": list(self.attacker.assumed),
            "control": self.control_source,
            "n_control_records": self.n_control_records,
            "n_train_records": self.n_train_records,
            "interval": self.interval_method,
            "seconds": self.seconds,
        }


def _group_risks(
    outcomes: Sequence[AttackOutcomes],
    train_t: pd.DataFrame,
    control_t: pd.DataFrame,
    columns: Sequence[str],
    public: dict[str, frozenset[str]],
    *,
    min_targets: int,
    key: LabelKey | None,
) -> dict[str, float]:
    cells = []
    for col in columns:
        tv, cv = train_t[col].astype(str).to_numpy(), control_t[col].astype(str).to_numpy()
        for value in sorted(set(tv) & set(cv)):
            mt, mc = tv == value, cv == value
            if min(mt.sum(), mc.sum()) >= min_targets:
                cells.append((col, value, mt, mc))
    out: dict[str, float] = {}
    level = holm_alpha(ALPHA, len(cells) * max(len(outcomes), 1))
    for col, value, mt, mc in cells:
        token = value_token(value, public.get(col), key=key)
        for o in outcomes:
            r = disclosure_risk(
                k_train=o.train_hits[mt].sum(),
                n_train=int(mt.sum()),
                k_control=o.control_hits[mc].sum(),
                n_control=int(mc.sum()),
                alpha=level,
            )
            for figure in ("risk", "risk_lower", "risk_upper"):
                family, _, secret = o.name.partition(
                    "."
                )  # "inference.<column>": the column is a key segment
                out[
                    subgroup_metric(
                        (col,), (token,), disclosure_metric(family, figure, secret or None)
                    )
                ] = getattr(r, figure)
    return out


def _people(
    train: pd.DataFrame, control: pd.DataFrame, spec: DatasetSpec
) -> tuple[np.ndarray, np.ndarray] | None:
    """Each training and each control row's person (:func:`unit_codes`) on a panel whose frames
    carry the entity id; None otherwise (rows are the units)."""
    eid = spec.entity_id
    if eid is None or eid not in train.columns or eid not in control.columns:
        return None
    return unit_codes(train, eid), unit_codes(control, eid)


def _attempts(
    train: pd.DataFrame, control: pd.DataFrame, spec: DatasetSpec, *, n_attempts: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The training and control rows linkability and inference attack, as many on each side.

    A panel (``spec.entity_id``): one uniformly drawn row of each of ``n`` people per side. The
    rates' Wilson intervals and the budget's two-proportion test take the attempts as independent;
    a person's years are not (an attack that works on one year of a person works on the others),
    so rows would count one person's luck several times. People are independent, and one row each
    keeps the rate a rate per attempt, comparable between the sides whatever the years per person
    (a person counted as a success when any of their rows is would make the rate grow with the
    rows drawn per person, which differ between training and control)."""
    rng = np.random.default_rng(seed)
    people = _people(train, control, spec)
    if people is None:
        n = min(n_attempts, len(train), len(control))
        return np.sort(rng.choice(len(train), n, replace=False)), np.sort(
            rng.choice(len(control), n, replace=False)
        )
    n = min(n_attempts, *(int(c.max()) + 1 for c in people))
    return one_row_each(people[0], n, rng), one_row_each(people[1], n, rng)


def measure_disclosure(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    control: pd.DataFrame,
    spec: DatasetSpec,
    cfg: DisclosureConfig,
    *,
    seed: int,
    control_source: str = "control records",
    subgroups: Sequence[str] = (),
    public: dict[str, frozenset[str]] | None = None,
    label_key: LabelKey | None = None,
) -> DisclosureResult:
    """Every disclosure risk of ``synthetic`` (see the module docstring); per value of each of
    ``subgroups``, named as ``public`` allows, else by its hash with ``label_key``."""
    started = time.perf_counter()
    if len(control) < SMALLEST_CONTROL:
        # fewer than cfg.min_control are measured as they are (the pipeline records the shortfall)
        raise InsufficientDataError(
            f"only {len(control)} control records ({control_source}); at least {SMALLEST_CONTROL} "
            "are needed to "
            "measure a disclosure risk, whatever disclosure.min_control says: hold out more "
            "records, or set "
            f"disclosure.enabled: false"
        )
    who = attacker(spec)
    numeric = {c for c, col in spec.columns.items() if col.is_numeric}
    columns = spec.attribute_columns
    codes = Codes.of([synthetic, train, control], columns=columns, numeric=numeric)
    results = []
    people = _people(train, control, spec)
    for n_cols in (1, cfg.n_cols):
        results.append(
            singling_out(codes, n_attacks=cfg.n_attacks, n_cols=n_cols, seed=seed, units=people)
        )
        _LOG.info(
            "  singling out (%s): %d predicates, risk %.3f [%.3f, %.3f]",
            results[-1].mode,
            results[-1].n_predicates,
            results[-1].risk.risk,
            results[-1].risk.risk_lower,
            results[-1].risk.risk_upper,
        )
    train_idx, control_idx = _attempts(train, control, spec, n_attempts=cfg.n_attempts, seed=seed)
    link = None
    if who.link_a and who.link_b:
        link = linkability(
            codes,
            who.link_a,
            who.link_b,
            train_idx=train_idx,
            control_idx=control_idx,
            n_neighbors=cfg.n_neighbors,
            seed=seed,
        )
        _LOG.info(
            "  linkability: risk %.3f [%.3f, %.3f]",
            link.risk.risk,
            link.risk.risk_lower,
            link.risk.risk_upper,
        )
    inferred = []
    for i, secret in enumerate(who.secrets):
        aux = tuple(c for c in who.quasi_identifiers if c != secret)
        if not aux:
            continue
        inferred.append(
            inference(
                codes,
                secret,
                aux,
                train_idx=train_idx,
                control_idx=control_idx,
                seed=seed + i,
                tolerance=cfg.tolerance,
            )
        )
        if len(who.secrets) > 3:
            _LOG.info("  inference: %d of %d secret columns done", i + 1, len(who.secrets))
    worst = max(inferred, key=lambda o: o.risk.risk_lower, default=None)
    if worst is not None:
        _LOG.info(
            "  inference (%d secret column(s)): worst risk %.3f [%.3f, %.3f] (%s)",
            len(inferred),
            worst.risk.risk,
            worst.risk.risk_lower,
            worst.risk.risk_upper,
            worst.name,
        )
    per_target = ([link] if link is not None else []) + inferred
    groups = (
        _group_risks(
            per_target,
            train.iloc[train_idx],
            control.iloc[control_idx],
            [c for c in subgroups if c in columns],
            public or {},
            min_targets=cfg.subgroup_min_targets,
            key=label_key,
        )
        if subgroups
        else {}
    )
    return DisclosureResult(
        attacker=who,
        singling_out=tuple(results),
        linkability=link,
        inference=tuple(inferred),
        control_source=control_source,
        n_control_records=len(control),
        n_train_records=len(train),
        subgroups=groups,
        seconds=time.perf_counter() - started,
    )


def measure_without(
    mask_of: Callable[[pd.DataFrame], np.ndarray],
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    inputs: DisclosureInputs,
    spec: DatasetSpec,
    cfg: DisclosureConfig,
    *,
    seed: int,
) -> dict[str, float]:
    """The release-wide disclosure risks with the training and control records in the subgroup
    ``mask_of`` selects left out (the synthetic data unchanged): what the risks would be if that
    group's records were nobody's. Raises :class:`InsufficientDataError` when fewer than
    ``SMALLEST_CONTROL`` control records remain."""
    control = inputs.control
    rest = measure_disclosure(
        synthetic,
        train.loc[~mask_of(train)],
        control.loc[~mask_of(control)],
        spec,
        cfg,
        seed=seed,
        control_source=inputs.source,
    )
    return rest.metrics()


__all__ = [
    "Attacker",
    "DisclosureInputs",
    "DisclosureResult",
    "attacker",
    "control_records",
    "measure_disclosure",
    "measure_without",
]
