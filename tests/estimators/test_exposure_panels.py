"""The exposed targets of a panel counted per person, on simulations whose truth is known.

A synthetic panel: people with several rows each, the rows of one person almost alike (a person
effect plus little noise), and an "attack" whose score reads the row only — so there is no
leakage, and a person's rows are one piece of evidence, not seven.

- no signal: per person (``units=``) the tail-excess test and the exposed-share lower bound hold
  their levels, nobody is named beyond the FDR's family-wise share; the same figures per row (the
  rows taken as independent targets) reject far too often (the check can fail);
- the targets are drawn as whole people (``choose_targets(entity_id=...)``): a person's maximum
  runs over the same rows on either side, so member people rank like non-member people; rows
  drawn instead (as without an entity id) leave members fewer rows than non-members when the
  training split is the larger, and their maxima rank visibly lower (the check can fail);
- power: twenty people with one copied row each are named, every row of theirs flagged, and the
  tail and share tests see them.
"""

import numpy as np
import pandas as pd

from privacy_gate.config import SplitConfig, TargetsConfig
from privacy_gate.data import split_by_entity
from privacy_gate.data.split import labelled_units, unit_codes, unit_max
from privacy_gate.estimators.exposure import discover_exposed
from privacy_gate.experiment.targets import choose_targets
from privacy_gate.spec import DatasetSpec

PEOPLE, ROWS, DRAWS, ALPHA = 300, 7, 60, 0.05


def _panel_scores(rng, *, people=PEOPLE, rows=ROWS):
    """Member people first; each row's score is its person's effect plus small noise."""
    effect = np.repeat(rng.normal(size=2 * people), rows)
    scores = effect + 0.1 * rng.normal(size=effect.size)
    labels = np.repeat(np.r_[np.ones(people), np.zeros(people)], rows)
    return scores, labels, np.repeat(np.arange(2 * people), rows)


def _rejections(res):
    return [res.tail_pvalue < ALPHA, res.share_lower > 0, res.count > 0]


def test_no_signal_per_person_holds_its_level_and_per_row_does_not():
    rng = np.random.default_rng(0)
    per_row, per_unit = [], []
    for i in range(DRAWS):
        scores, labels, units = _panel_scores(rng)
        kw = dict(q=0.1, level=0.01, delta=ALPHA, seed=i)
        per_row.append(
            _rejections(discover_exposed({"a": scores}, labels, np.arange(scores.size), **kw))
        )
        per_unit.append(
            _rejections(
                discover_exposed({"a": scores}, labels, np.arange(scores.size), units=units, **kw)
            )
        )
    row_rate, unit_rate = np.mean(per_row, axis=0), np.mean(per_unit, axis=0)
    # tail test: exact under exchangeable people; share bound: at most delta; naming: FWER <= q =
    # 0.1. Allowance: about two binomial standard errors at 60 draws
    assert (
        unit_rate[0] <= ALPHA + 0.06 and unit_rate[1] <= ALPHA + 0.06 and unit_rate[2] <= 0.1 + 0.08
    ), unit_rate
    # the same draws per row: a person's seven near-identical rows read as seven independent targets
    assert row_rate[0] >= 3 * ALPHA and row_rate[1] >= 2 * ALPHA, row_rate


def _panel_frame(rng, people=400, rows=ROWS):
    """Rows that vary within a person (so a maximum over more rows is larger)."""
    pid = np.repeat([f"p{i:04d}" for i in range(people)], rows)
    x = np.repeat(rng.normal(size=people), rows) + rng.normal(size=people * rows)
    return pd.DataFrame({"pid": pid, "x": x})


SPEC = DatasetSpec.model_validate(
    {
        "name": "panel",
        "entity_id": "pid",
        "columns": {"pid": {"kind": "categorical"}, "x": {"kind": "numeric"}},
    }
)


def _member_rank(targets):
    """The member people's mean rank (0..1) among all target people, each by their top row."""
    codes, unit_labels = labelled_units(targets.units, targets.labels)
    top = unit_max(targets.records["x"].to_numpy(), codes)
    ranks = (np.argsort(np.argsort(top)) + 0.5) / top.size
    return float(ranks[unit_labels].mean())


def test_targets_are_whole_people_so_member_maxima_rank_like_non_members():
    rng = np.random.default_rng(1)
    whole, rows_drawn = [], []
    for seed in range(40):
        df = _panel_frame(rng)
        splits = split_by_entity(df, SPEC, SplitConfig(seed=seed))  # train three times the holdout
        t = choose_targets(splits, TargetsConfig(seed=seed), entity_id="pid")
        per_person = pd.Series(t.units).value_counts()
        assert (per_person == ROWS).all()  # every chosen person with all their rows
        assert t.count(members=True) == t.count(members=False) == 80  # 400 people, 20 % in holdout
        whole.append(_member_rank(t))
        r = choose_targets(splits, TargetsConfig(seed=seed))  # rows, as without an entity id
        units = np.r_[
            unit_codes(r.records.iloc[: int(r.labels.sum())], "pid"),
            10_000 + unit_codes(r.records.iloc[int(r.labels.sum()) :], "pid"),
        ]
        rows_drawn.append(_member_rank(type(r)(records=r.records, labels=r.labels, units=units)))
    se = np.std(whole) / np.sqrt(len(whole))
    assert abs(np.mean(whole) - 0.5) < 3 * se + 0.01, (np.mean(whole), se)
    # rows drawn: a member keeps about a third of their rows, a non-member all of theirs
    se_rows = np.std(rows_drawn) / np.sqrt(len(rows_drawn))
    assert np.mean(rows_drawn) < 0.5 - max(5 * se_rows, 0.02), (np.mean(rows_drawn), se_rows)


def test_copied_people_are_named_with_all_their_rows():
    rng = np.random.default_rng(2)
    scores, labels, units = _panel_scores(rng)
    copied = np.arange(20)  # member people 0..19: one of their rows copied (far above everyone)
    scores[copied * ROWS + 3] = 9.0 + rng.normal(size=copied.size)
    res = discover_exposed(
        {"a": scores}, labels, np.arange(scores.size), q=0.1, level=0.01, delta=0.05, units=units
    )
    assert res.tested == res.calibration == PEOPLE
    assert res.count >= 18 and res.count <= 22, res.count
    mask = res.target_mask(labels)
    copied_rows = np.isin(units, copied)
    assert (
        mask[copied_rows].mean() >= 0.9 and mask[~copied_rows].sum() <= 2 * ROWS
    )  # all rows of the named
    # the tail test's floor at 600 people: the top 1 % (6 people) all members, p = about 2^-6
    assert res.tail_pvalue < 0.02 and res.share_pvalue < 1e-3 and res.share_lower > 0
    assert res.metrics()["simes_pvalue"] <= 0.1  # BH names at q = 0.1, so Simes is at most q


def test_without_units_nothing_changes():
    rng = np.random.default_rng(3)
    scores, labels, _ = _panel_scores(rng, people=100)
    a = discover_exposed(
        {"a": scores}, labels, np.arange(scores.size), q=0.1, level=0.01, delta=0.05
    )
    b = discover_exposed(
        {"a": scores},
        labels,
        np.arange(scores.size),
        q=0.1,
        level=0.01,
        delta=0.05,
        units=np.arange(scores.size),
    )  # every row its own unit: the same figures
    assert a.metrics() == b.metrics()
    assert a.records["p_value"].tolist() == b.records["p_value"].tolist()
