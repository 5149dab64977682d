"""Stage floors and small tables: what a stage asks of the data for power, and what happens below
it.

A floor — ``targets.min_per_class`` (targets per class), ``disclosure.min_control`` (control
records), the calibration records ``exposure.level`` needs to place its threshold — is about
*power*. Below it the stage's p-values and intervals stay valid (they are exact or conservative
at any size); only a leak of the size the gate promises may go unseen. So on a small table the
stage runs with what there is and records a :class:`Shortfall`, and the gate turns each into a
REVIEW for "insufficient evidence" (:func:`privacy_gate.gate.rules.floor_check`) that names the
setting, the count available and how many more records would meet it: never an APPROVE, never a
leak signal, never an error. An explicit setting above what the data hold is treated the same way.

Only below an absolute minimum, where a figure cannot be computed at all, is the run refused (a
fail-closed BLOCK naming the setting): :data:`SMALLEST_PER_CLASS` targets per class (the MACE
bounds' three parts), :data:`~privacy_gate.config.SMALLEST_CONTROL` control records.

Counts and setting names only; never a record value.

>>> s = targets_shortfall(TargetsConfig(), n_train=139, n_holdout=69, n_members=69,
...                       n_non_members=69, cap=16396)
>>> print(s.sentence())
targets.min_per_class is 100, but only 69 member and 69 non-member targets are available; 31 more
holdout records would meet it
>>> calibration_needed(0.01), calibration_level(0.01, 99), round(calibration_level(0.01, 69), 4)
(99, 0.01, 0.0143)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from privacy_gate.config import DisclosureConfig, TargetsConfig
from privacy_gate.estimators.mace.generalized import MIN_TARGETS_PER_CLASS
from privacy_gate.names import INSUFFICIENT_EVIDENCE

#: the fewest targets per class the gate measures with at all, whatever ``targets.min_per_class``
#: says: the MACE bounds split the targets in three parts of at least 10 per class each
SMALLEST_PER_CLASS = MIN_TARGETS_PER_CLASS


@dataclass(frozen=True)
class Shortfall:
    """A floor the data did not meet: the stage ran with ``available`` instead of ``required``."""

    setting: str  # the config key of the floor, e.g. "targets.min_per_class"
    required: int
    available: int
    asks: str  # what the setting asks, after its name: "is 100"
    have: str  # what there was, after "only": "69 member and 69 non-member targets are available"
    remedy: str  # what would meet it: "31 more holdout records"
    note: str = ""  # what the stage did instead, if anything beyond running with fewer records
    scope: str = ""  # which experiment, when one setting floors two ("dependency")

    @property
    def missing(self) -> int:
        return max(0, self.required - self.available)

    @property
    def key(self) -> str:
        """The check key of this shortfall: ``insufficient_evidence.[<scope>.]<setting>``."""
        return ".".join(p for p in (INSUFFICIENT_EVIDENCE, self.scope, self.setting) if p)

    def sentence(self) -> str:
        text = f"{self.setting} {self.asks}, but only {self.have}; {self.remedy} would meet it"
        return text + (f" ({self.note})" if self.note else "")

    def to_dict(self) -> dict[str, object]:
        return {
            "setting": self.setting,
            "scope": self.scope or None,
            "required": self.required,
            "available": self.available,
            "missing": self.missing,
            "message": self.sentence(),
        }


def _more(n: int, what: str) -> str:
    return f"{n:,} more {what}"


def targets_shortfall(
    cfg: TargetsConfig,
    *,
    n_train: int,
    n_holdout: int,
    n_members: int,
    n_non_members: int,
    cap: int | None,
) -> Shortfall | None:
    """``targets.min_per_class`` against the targets drawn (``cap``: the per-class cap the run used
    when ``targets.n_non_members`` is not set); None when it is met. The remedy names the split
    that is short (non-members come from the holdout, members from the training split) and any
    setting of the user's that caps the targets below the floor."""
    floor = cfg.min_per_class
    if min(n_members, n_non_members) >= floor:
        return None
    remedies = []
    if n_non_members < floor:
        if n_holdout < floor:
            remedies.append(_more(floor - n_holdout, "holdout records"))
        if cfg.n_non_members is not None and cfg.n_non_members < floor:
            remedies.append(f"targets.n_non_members of at least {floor:,}")
        elif cfg.n_non_members is None and cap is not None and cap < floor:
            remedies.append(f"targets.max_per_class of at least {floor:,}")
    if n_members < floor:
        if n_train < floor:
            remedies.append(_more(floor - n_train, "training records"))
        if cfg.n_members is not None and cfg.n_members < floor:
            remedies.append(f"targets.n_members of at least {floor:,}")
    return Shortfall(
        setting="targets.min_per_class",
        required=floor,
        available=min(n_members, n_non_members),
        asks=f"is {floor:,}",
        have=f"{n_members:,} member and {n_non_members:,} non-member targets are available",
        remedy=" and ".join(remedies) or "more training and holdout records",
    )


def dependency_shortfall(
    cfg: TargetsConfig, *, source: str, members: int, non_members: int, per_class: int
) -> Shortfall | None:
    """``targets.min_per_class`` for the dependency stress test: ``members`` training records from
    the tested ``source`` value and ``non_members`` holdout records from the others were there,
    ``per_class`` were drawn of each."""
    floor = cfg.min_per_class
    if per_class >= floor:
        return None
    remedies = []
    if members < floor:
        remedies.append(_more(floor - members, f"training records from the tested {source} value"))
    if non_members < floor:
        remedies.append(_more(floor - non_members, f"holdout records from other {source} values"))
    if cfg.n_non_members is not None and cfg.n_non_members < floor:
        remedies.append(f"targets.n_non_members of at least {floor:,}")
    return Shortfall(
        setting="targets.min_per_class",
        required=floor,
        available=per_class,
        asks=f"is {floor:,}",
        have=f"{per_class:,} targets per class are available to the dependency test",
        scope="dependency",
        remedy=" and ".join(remedies) or "more training and holdout records",
    )


def control_shortfall(
    cfg: DisclosureConfig, *, n_control: int, reference_counts: bool
) -> Shortfall | None:
    """``disclosure.min_control`` against the control records the disclosure stage had;
    ``reference_counts``: the reference split is among them (exchangeable with the holdout)."""
    if n_control >= cfg.min_control:
        return None
    where = "holdout or reference records" if reference_counts else "holdout records"
    return Shortfall(
        setting="disclosure.min_control",
        required=cfg.min_control,
        available=n_control,
        asks=f"is {cfg.min_control:,}",
        have=f"{n_control:,} control records are available",
        remedy=_more(cfg.min_control - n_control, where),
    )


def calibration_needed(level: float) -> int:
    """The fewest calibration records (non-member targets) that place a threshold at conformal
    level ``level``: ``n`` with ``level * (n + 1) >= 1`` (the largest of them is then the
    threshold)."""
    return max(1, math.ceil(1.0 / level - 1e-9) - 1)


def calibration_level(level: float, n_calibration: int) -> float:
    """``level`` when the calibration records can place it, else the finest level they can,
    ``1 / (n + 1)`` (the largest calibration score as the threshold). The exposed-share bounds stay
    valid bounds of the share at the level used; the member-excess test already reads the largest
    calibration score at such sizes."""
    if n_calibration >= calibration_needed(level) or n_calibration < 1:
        return level
    return 1.0 / (n_calibration + 1.0)


def level_shortfall(level: float, n_calibration: int) -> Shortfall | None:
    """``exposure.level`` against the non-member targets that calibrate it; None when they
    suffice."""
    needed = calibration_needed(level)
    if n_calibration >= needed:
        return None
    return Shortfall(
        setting="exposure.level",
        required=needed,
        available=n_calibration,
        asks=f"{level:g} needs at least {needed:,} non-member targets to place its threshold",
        have=f"{n_calibration:,} are available",
        remedy=_more(needed - n_calibration, "holdout records"),
        note="the exposed share is measured at level "
        f"{calibration_level(level, n_calibration):.3g}, "
        "the finest these allow",
    )


__all__ = [
    "SMALLEST_PER_CLASS",
    "Shortfall",
    "calibration_level",
    "calibration_needed",
    "control_shortfall",
    "dependency_shortfall",
    "level_shortfall",
    "targets_shortfall",
]
