"""A flagged group's effect size and what suppressing it gives, on real data: the small Adult
table's training split, released as an independent sample plus verbatim copies of one race
group's training records (``write_group_leak``), judged in process by ``evaluate`` at plumbing
weight with the default ``audit.min_group_size`` (50): the group has 18 members among the targets,
too few for the audit's point estimates, and its effect size must be there all the same.

About 20 s: two gates (the release, and the release without the group's rows)."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from privacy_gate import evaluate
from privacy_gate.config.loading import load_gate_only_config
from privacy_gate.experiment.grouping import group_mask
from privacy_gate.pipeline import group_blame
from privacy_gate.pipeline.release_tests import figures_without_rows
from privacy_gate.words.evidence import effect_headline, flagged_evidence

from ..conftest import EXAMPLE, lighten, review_rules, write_group_leak

GROUP = "race=Asian-Pac-Islander"


@pytest.fixture(scope="module")
def leak(small_adult, tmp_path_factory):
    folder = tmp_path_factory.mktemp("group-effects")
    train = write_group_leak(small_adult, folder)
    judging = lighten(
        {
            "gate": {"rules": review_rules(), "max_verbatim_copy_share": 0.05},
            "audit": {"intersections": []},
        }
    )
    (folder / "judging.yaml").write_text(yaml.safe_dump(judging))
    config = load_gate_only_config(folder / "judging.yaml")
    assert config.audit.min_group_size == 50
    kwargs = dict(
        train=folder / "train.csv",
        holdout=folder / "holdout.csv",
        reference=folder / "reference.csv",
        spec=EXAMPLE,
        gate=config.gate,
        attacks=config.attacks,
        targets=config.targets,
        audit=config.audit,
        mace=config.mace,
        exposure=config.exposure,
        disclosure=config.disclosure,
    )
    remeasured: list[dict] = []  # what the what-if measured without the group's rows

    def recording(state, synthetic, tests):
        remeasured.append(figures_without_rows(state, synthetic, tests))
        return remeasured[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(group_blame, "figures_without_rows", recording)
        result = evaluate(synthetic=folder / "synthetic.csv", **kwargs)
    return result, train, folder, kwargs, remeasured


def test_the_flagged_group_gets_its_effect_size_with_intervals_and_its_share_of_the_named(leak):
    result, train, *_ = leak
    verdict = result.verdict
    assert verdict.decision == "REVIEW" and verdict.points_at == GROUP, verdict.reasons
    effect = verdict.group_effects[GROUP]
    # the audit had too few targets for point estimates ("— (small group)"); the effect has them
    rows = [r for r in result.audit.group_rows if r["group"] == GROUP]
    assert rows and all(r.get("auc") is None for r in rows)
    in_group = result.audit.masks[GROUP]
    labels = result.targets.labels.astype(bool)
    assert (effect["members"], effect["non_members"]) == (
        int((in_group & labels).sum()),
        int((in_group & ~labels).sum()),
    )
    # verbatim copies of every training record of the group: the members are told apart perfectly
    assert effect["auc"] == 1.0 and effect["auc_interval"] == "wilson"
    assert 0.5 < effect["auc_lower"] < effect["auc"] == effect["auc_upper"]
    assert (
        effect["tpr"] == 1.0 and effect["caught"] == effect["members"] and effect["tpr_lower"] < 1.0
    )
    # its share of the records the scan points at: the group's copies fill the scan's top set
    # (at plumbing weight BH names none: three views put its p-value floor at 3 / 301)
    group_rows = int((train["race"] == "Asian-Pac-Islander").sum())
    assert effect["training_records"] == group_rows
    in_rows = train.index[train["race"] == "Asian-Pac-Islander"]
    scan = result.scan
    top = scan.records.loc[scan.records["in_top"], "row_id"]
    assert effect["scan_named"] == int(pd.Index(scan.discoveries).isin(in_rows).sum())
    assert effect["scan_named_all"] == scan.count
    assert (effect["top_members"], effect["top_members_all"]) == (
        int(top.isin(in_rows).sum()),
        len(top),
    )
    assert effect["top_members_all"] > 0 and effect["top_members"] >= 0.9 * len(top)
    assert effect["p_adjusted"] < 0.001 and effect["groups_audited"] == len(result.audit.groups)
    # and the audit rows count the scan's named records of every group, not only the flagged one
    assert {r["scan_named"] for r in rows} == {effect["scan_named"]}
    # in words, the group first, the interval and the share beside it
    headline = effect_headline(GROUP, effect)
    share = (
        f"{effect['named']} of {effect['named_all']} named"
        if effect["named_all"]
        else f"{effect['top_members']} of scan's top {len(top)}"
    )
    assert headline.startswith(f"{GROUP}: AUC 1 [0.") and share in headline, headline
    sentence = flagged_evidence([], verdict.to_dict())[0]
    assert sentence.startswith(f"{GROUP}: {effect['members']} members among the targets")


def test_what_suppressing_the_group_gives_is_worked_out_for_a_review(leak):
    """The what-if of a REVIEW: the target tests without the group's targets and the scan and
    copy tests measured again without its synthetic rows; those figures are the ones the re-gate
    of the filtered release measures (the same function on the same rows)."""
    result, _, folder, kwargs, remeasured = leak
    verdict = result.verdict
    significant = {c.key for c in verdict.reasons}
    assert {"test:scan", "test:copies"} <= significant, significant
    without = verdict.decision_without[GROUP]
    synthetic = pd.read_csv(folder / "synthetic.csv")
    rest = synthetic[~group_mask(synthetic, GROUP)].reset_index(drop=True)
    assert without["rows"] == len(synthetic) - len(rest) and without["remeasured"] == [
        "copies",
        "scan",
    ]
    assert without["decision"] == "APPROVE", without
    # the re-gate of the release without the group's rows measures the same scan and copy figures
    regate = evaluate(synthetic=rest, **kwargs)
    assert len(remeasured) == 1 and remeasured[0]
    for key, value in remeasured[0].items():
        assert value == pytest.approx(regate.verdict.metrics[key], rel=1e-12, nan_ok=True), key
    assert regate.verdict.decision == "APPROVE", regate.verdict.reasons
