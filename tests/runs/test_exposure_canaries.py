"""Per-sample canaries on Adult at 8,000 training rows (4,000 + 4,000 targets), default settings:

- k% of the release replaced by noisy copies of training rows (5% of a standard deviation on
  numerics, no verbatim row), k in {2, 5, 10}: BLOCK, by the per-sample rules;
- every release row of a rare group (< 30 targets per class) replaced by near-copies of the
  group's training rows: REVIEW with the group flagged by name; approving with ``--suppress`` of
  it publishes a release without the group;
- an independent sample of the same population: APPROVE, over five seeds;
- ``--suppress exposed`` removes the noisy copies that expose the singled-out records.

The library pipeline (``evaluate``, ``gate_only_run``), no Prefect: the gate's decisions are the
subject here; the flows are covered by the other end-to-end tests.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privacy_gate import evaluate
from privacy_gate.config import GateOnlyConfig, TargetsConfig, load_spec
from privacy_gate.publication import publish
from privacy_gate.review.decide import decide_run
from privacy_gate.runs.release import gate_only_run
from privacy_gate.runs.suppression import exposed_neighbour_mask, singled_out

from ..exposure_scenarios import RARE_GROUP, SPEC, make_scenario


def _evaluate(s, **kw):
    return evaluate(
        train=s.train,
        holdout=s.holdout,
        reference=s.reference,
        synthetic=s.synthetic,
        spec=SPEC,
        **kw,
    )


@pytest.mark.parametrize("share", [0.02, 0.05, 0.10])
def test_noisy_copies_are_blocked_by_the_per_sample_rules(adult_full, share):
    s = make_scenario(11, share=share, adult=adult_full)
    r = _evaluate(s)
    assert r.decision == "BLOCK", r.verdict.reasons
    # below the verbatim-copy expectation (Adult has duplicate people): only the attacks can tell
    assert r.metrics["validation.synthetic.copy_share"] < 0.01
    blocking = {c.key for c in r.verdict.reasons if c.action == "block"}
    assert "exposed.share_lower" in blocking
    # the aggregate rules alone would not have blocked the smallest leak
    if share == 0.02:
        assert blocking == {"exposed.share_lower"}
    assert r.metrics["exposed.share_lower"] <= share <= r.metrics["exposed.share_upper"] + 0.02


@pytest.mark.parametrize("seed", [21, 22, 23, 24, 25])
def test_independent_samples_are_approved(adult_full, seed):
    r = _evaluate(make_scenario(seed, adult=adult_full))
    assert r.decision == "APPROVE", [c.message for c in r.verdict.reasons]
    assert r.metrics["exposed.share_lower"] < 0.005 and r.metrics["exposed.count"] == 0


def test_rare_group_leak_is_flagged_by_name_and_suppression_publishes_without_it(
    adult_full, tmp_path
):
    s = make_scenario(13, rare_group=True, adult=adult_full)
    paths = {}
    for name in ("train", "holdout", "reference", "synthetic"):
        paths[name] = tmp_path / f"{name}.csv"
        getattr(s, name).to_csv(paths[name], index=False)
    judging = GateOnlyConfig(targets=TargetsConfig(n_non_members=1800))
    result = gate_only_run(
        **{k: str(v) for k, v in paths.items()},
        spec=load_spec(SPEC),
        judging=judging,
        workdir=tmp_path / "wd",
    )
    verdict = result.verdict
    col, value = RARE_GROUP
    label = f"{col}={value}"
    metrics = verdict.metrics
    n_mem = metrics[f"subgroup/{col}/{value}/n_members"]
    n_non = metrics[f"subgroup/{col}/{value}/n_non_members"]
    assert max(n_mem, n_non) < 30  # a group the old audit merged into "other"
    assert verdict.decision == "REVIEW", verdict.reasons
    assert label in verdict.flagged_subgroups
    decision = decide_run(
        result.run_id,
        action="approve",
        reviewer="officer",
        suppress=[label],
        tracking_uri=result.tracking_uri,
        workdir=str(tmp_path / "wd"),
    )
    assert decision.published and decision.suppress == (label,)
    published = Path(decision.published)
    folder = published if published.is_dir() else published.parent
    manifest = publish.verify_published(folder)
    released = pd.read_parquet(folder / manifest["file"])
    assert len(released) == len(s.synthetic) - int((s.synthetic[col] == value).sum())
    assert not (released[col] == value).any()


def test_suppressing_exposed_records_removes_their_noisy_copies(adult_full):
    s = make_scenario(13, share=0.05, adult=adult_full)
    r = _evaluate(s)
    ids = singled_out(r.exposure.records, level=r.settings.exposure.level)
    assert len(ids) > 20
    records = s.train.loc[ids]
    drop = exposed_neighbour_mask(s.synthetic, records, s.reference, load_spec(SPEC))
    copies = np.zeros(len(s.synthetic), dtype=bool)
    copies[: len(s.exposed_rows)] = True  # the scenario puts the noisy copies first
    singled_copied = np.isin(ids, s.exposed_rows).sum()
    assert (drop & copies).sum() >= 0.9 * singled_copied  # the copies that exposed them are gone
    assert drop.sum() <= 0.05 * len(s.synthetic)  # and not much else
    after = _evaluate(
        s.__class__(
            train=s.train,
            holdout=s.holdout,
            reference=s.reference,
            synthetic=s.synthetic[~drop].reset_index(drop=True),
            exposed_rows=s.exposed_rows,
        )
    )
    assert after.metrics["exposed.share"] < r.metrics["exposed.share"]


def _group_leak(seed: int, value: str, adult: pd.DataFrame, *, noise: float = 0.02):
    """Every release row of ``race == value`` replaced by near-copies of that group's training
    rows."""
    from privacy_gate.generators.base import clip_to_spec

    from ..exposure_scenarios import noisy_rows

    spec = load_spec(SPEC)
    numeric = [c for c, col in spec.columns.items() if col.is_numeric]
    s = make_scenario(seed, adult=adult)
    rng = np.random.default_rng(seed)
    in_train = np.flatnonzero((s.train["race"] == value).to_numpy())
    in_release = np.flatnonzero((s.synthetic["race"] == value).to_numpy())
    donors = np.resize(rng.permutation(in_train), len(in_release))
    synthetic = s.synthetic.copy()
    synthetic.iloc[in_release] = noisy_rows(
        s.train.iloc[donors], s.train, numeric, noise, rng
    ).to_numpy()
    return s, clip_to_spec(synthetic.astype({c: float for c in numeric}), spec)


def test_a_one_group_leak_is_reviewed_with_the_group_blamed_and_the_rest_approves(
    adult_full, tmp_path
):
    """All training rows of race=Black near-copied (noise 2% sd): the release-wide block rules fail,
    but only because of that group — REVIEW naming it (not BLOCK), the sex groups marked as flagged
    through it, and the re-gate after suppressing it APPROVEs."""
    from privacy_gate.runs.regate import regate_run

    s, synthetic = _group_leak(13, "Black", adult_full)
    paths = {}
    for name, frame in (
        ("train", s.train),
        ("holdout", s.holdout),
        ("reference", s.reference),
        ("synthetic", synthetic),
    ):
        paths[name] = tmp_path / f"{name}.csv"
        frame.to_csv(paths[name], index=False)
    # the default rules, disclosure risks included: blame measures them again without the group
    judging = GateOnlyConfig(mace={"n_permutations": 20})
    result = gate_only_run(
        **{k: str(v) for k, v in paths.items()},
        spec=load_spec(SPEC),
        judging=judging,
        workdir=tmp_path / "wd",
    )
    verdict = result.verdict
    assert verdict.decision == "REVIEW", verdict.reasons
    blame = [c for c in verdict.reasons if c.metric == "blame.concentrated"]
    assert [c.group for c in blame] == ["race=Black"], verdict.reasons
    assert verdict.decision_without["race=Black"]["decision"] != "BLOCK", (
        verdict.decision_without
    )  # the what-if
    assert not [
        c for c in verdict.reasons if c.action == "block"
    ]  # the block rules it explains say so
    assert {g: verdict.explained[g] for g in verdict.explained} == {
        g: "race=Black" for g in verdict.flagged_subgroups if g.startswith("sex=")
    }
    rerun = regate_run(
        run_id=result.run_id,
        suppress=["race=Black"],
        tracking_uri=result.tracking_uri,
        workdir=str(tmp_path / "wd"),
    )
    assert rerun.verdict.decision == "APPROVE", rerun.verdict.reasons


def test_a_block_the_rest_would_still_get_stays_a_block():
    from privacy_gate.gate.blame import concentrated_in
    from privacy_gate.gate.verdict import Check, Verdict

    leak = Check(
        rule="any.auc <= 0.6",
        metric="auc",
        attack="dcr",
        observed=0.7,
        threshold=0.6,
        bound="max",
        action="block",
        passed=False,
        message="high",
    )
    utility = Check(
        rule="utility.quality >= 0.6",
        metric="utility.quality",
        observed=0.3,
        threshold=0.6,
        bound="min",
        action="block",
        passed=False,
        message="useless",
    )
    v = Verdict(decision="BLOCK", status="ok", reasons=(leak,), flagged_subgroups=("race=X",))
    assert concentrated_in(v, group="race=X", targets=30, rest_decision="BLOCK").decision == "BLOCK"
    both = Verdict(
        decision="BLOCK", status="ok", reasons=(leak, utility), flagged_subgroups=("race=X",)
    )
    assert (
        concentrated_in(both, group="race=X", targets=30, rest_decision="APPROVE").decision
        == "BLOCK"
    )
    assert (
        concentrated_in(v, group="race=X", targets=30, rest_decision="REVIEW").decision == "REVIEW"
    )
