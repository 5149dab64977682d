"""A rare group leaked with no subgroups declared is named, first among the reasons, by a name that
reveals no record value.

Small Adult splits (1,800 training rows): a value of ``occupation`` is planted in 40 training
records (and, for the public case, in some holdout and reference records too), and the release is
an independent sample plus those 40 training records near-copied. The spec names no subgroups.
- public case: the value is in the spec's codebook (``categories``): the group is named by it;
- private case: the column has no codebook and fewer records outside training than
  ``audit.label_min_count`` hold the value (8 holdout records: the group's non-member targets): the
  group is named by a keyed hash, and the value appears in no reason, flagged group, metric or note.
  (A value only training records hold has no non-member target to set its members against: the
  within-group rank test cannot see it; the member and agreement scans still do.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

import privacy_gate
from privacy_gate.config import MaceConfig
from privacy_gate.label_key import LabelKey
from privacy_gate.spec import DatasetSpec

from ..conftest import EXAMPLE

PUBLIC, PRIVATE = (
    "Armed-Forces",
    "Qx-Private-Trade-5521",
)  # the first is in the codebook, the second is not
ATTACKS = [{"name": "dcr"}, {"name": "dcr_ratio"}]


def _spec(*, codebook: bool) -> DatasetSpec:
    raw = yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"]
    raw["subgroups"] = []
    if not codebook:
        raw["columns"]["occupation"] = {"kind": "categorical"}
    return DatasetSpec.model_validate(raw)


def _run(
    small_adult,
    value: str,
    *,
    outside: int,
    codebook: bool,
    key: LabelKey,
    in_reference: bool = True,
):
    real = pd.read_csv(small_adult / "real.csv")
    train, holdout, reference = (
        real.iloc[:1800].copy(),
        real.iloc[1800:2400].copy(),
        real.iloc[2400:].copy(),
    )
    planted = train.index[:40]
    train.loc[planted, "occupation"] = value
    holdout.loc[holdout.index[:outside], "occupation"] = value  # non-member targets of the group
    if in_reference:
        reference.loc[reference.index[:outside], "occupation"] = value
    rng = np.random.default_rng(0)
    copies = train.loc[planted].copy()
    for c in ("age", "hours_per_week", "fnlwgt"):  # near copies: 0.01 sd of noise on numbers
        copies[c] = copies[c] + rng.normal(0, 0.01 * real[c].std(), len(copies))
    copies["age"] = copies["age"].clip(17, 90)
    copies["hours_per_week"] = copies["hours_per_week"].clip(1, 99)
    release = pd.concat(
        [pd.read_csv(small_adult / "independent.csv").iloc[:1760], copies], ignore_index=True
    )
    return privacy_gate.evaluate(
        train=train,
        holdout=holdout,
        reference=reference,
        synthetic=release,
        spec=_spec(codebook=codebook),
        attacks=ATTACKS,
        mace=MaceConfig(n_permutations=20),
        label_key=key,
    )


@pytest.fixture(scope="module")
def public_run(small_adult):
    return _run(small_adult, PUBLIC, outside=20, codebook=True, key=LabelKey(bytes(32)))


@pytest.fixture(scope="module")
def private_run(small_adult):
    return _run(
        small_adult, PRIVATE, outside=8, in_reference=False, codebook=False, key=LabelKey(bytes(32))
    )


def test_a_public_rare_group_is_named_first(public_run):
    v = public_run.verdict
    label = f"occupation={PUBLIC}"
    assert v.decision in ("REVIEW", "BLOCK"), [c.message for c in v.reasons]
    assert label in v.flagged_subgroups
    first = (
        [c for c in v.reasons if c.action != "block"][0] if v.decision == "BLOCK" else v.reasons[0]
    )
    assert first.group == label, [c.message for c in v.reasons]
    assert label in first.message


def test_a_private_rare_group_is_named_by_its_hash_and_only_so(private_run):
    v = private_run.verdict
    label = f"occupation={LabelKey(bytes(32)).token(PRIVATE)}"
    assert label.split("=")[1].startswith("#")
    assert label in v.flagged_subgroups, v.flagged_subgroups
    first = (
        [c for c in v.reasons if c.action != "block"][0] if v.decision == "BLOCK" else v.reasons[0]
    )
    assert first.group == label, [c.message for c in v.reasons]
    # the raw value is in no reason, no flagged group, no metric name, no note
    texts = (
        [c.message for c in v.reasons]
        + [str(c.group) for c in v.reasons]
        + list(v.flagged_subgroups)
    )
    texts += list(private_run.metrics) + list(private_run.audit.notes if private_run.audit else [])
    assert not [t for t in texts if PRIVATE in t]
