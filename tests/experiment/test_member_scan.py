"""The member scan (``exposure.scan_members``): every training record tested against the holdout.

Known truths: with a release independent of the training data no training record is exposed, so
the p-values are (super-)uniform and BH at q selects nothing in at least 1 - q of the releases —
with the exact and the approximate search alike (the calibration records go through the same
search). With noisy copies of known training records, the discoveries are those records."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privacy_gate.config import ExposureConfig
from privacy_gate.data import Splits
from privacy_gate.experiment.member_scan import scan_members
from privacy_gate.spec import DatasetSpec

SPEC = DatasetSpec.model_validate(
    {
        "name": "sim",
        "columns": {
            **{f"x{i}": {"kind": "numeric", "nullable": False} for i in range(4)},
            "c": {"kind": "categorical", "categories": ["a", "b", "c", "d"]},
        },
    }
)


def _table(rng, n):
    return pd.DataFrame(
        {**{f"x{i}": rng.normal(size=n) for i in range(4)}, "c": rng.choice(list("abcd"), size=n)}
    )


def _release(rng, train, n, *, copies=0, noise=0.01):
    out = _table(rng, n)
    which = rng.choice(len(train), size=copies, replace=False)
    if copies:
        cp = train.iloc[which].reset_index(drop=True).copy()
        for i in range(4):
            cp[f"x{i}"] += rng.normal(0, noise, size=copies)
        out.iloc[:copies] = cp.to_numpy()
        out = out.astype({f"x{i}": float for i in range(4)})
    return out, train.index[which]


def _splits(rng, n_train=1500, n_hold=1000, n_ref=1000):
    table = _table(rng, n_train + n_hold + n_ref)
    return Splits(
        train=table.iloc[:n_train],
        holdout=table.iloc[n_train : n_train + n_hold],
        reference=table.iloc[n_train + n_hold :],
    )


@pytest.mark.parametrize("exact", [True, False])
def test_no_exposure_gives_uniform_pvalues_and_rarely_a_discovery(exact):
    rng = np.random.default_rng(0)
    any_found, low = 0, []
    for _ in range(20):
        splits = _splits(rng)
        release, _ = _release(rng, splits.train, 1500)
        res = scan_members(splits, release, SPEC, q=0.1, exact=exact)
        assert res.search == ("exact" if exact else "approximate")
        any_found += res.count > 0
        low.append(np.mean(res.records["p_value"] <= 0.1))
    # under the global null BH's family-wise error equals its FDR: at most q = 0.1 of releases
    assert any_found <= 5  # binomial(20, 0.1): P(> 5) < 0.012
    assert np.mean(low) <= 0.1 + 0.015  # super-uniform p-values (20 x 1500 members)


@pytest.mark.parametrize("exact", [True, False])
def test_noisy_copies_are_found_with_few_false_discoveries(exact):
    rng = np.random.default_rng(1)
    splits = _splits(rng)
    release, copied = _release(rng, splits.train, 1500, copies=150)
    res = scan_members(splits, release, SPEC, q=0.05, exact=exact)
    found = set(res.discoveries.tolist())
    hits = len(found & set(copied.tolist()))
    assert hits >= 120  # most of the 150 copied records
    assert len(found) - hits <= max(3, 0.1 * len(found))
    assert list(res.records.columns) == [
        "row_id",
        "p_value",
        "exposed",
        "in_top",
    ]  # no record values


def test_the_approximate_search_is_deterministic():
    rng = np.random.default_rng(2)
    splits = _splits(rng, 3000, 1500, 1500)
    release, _ = _release(rng, splits.train, 3000, copies=100)
    a = scan_members(splits, release, SPEC, q=0.05, exact=False, seed=3)
    b = scan_members(splits, release, SPEC, q=0.05, exact=False, seed=3)
    pd.testing.assert_frame_equal(a.records, b.records)


def test_the_gate_runs_the_scan_by_default_and_records_its_figures(adult_full, adult_spec):
    import privacy_gate
    from privacy_gate.config import GateConfig, Rule

    rows = adult_full.sample(n=2400, random_state=3).reset_index(drop=True)
    parts = dict(
        train=rows[:800],
        holdout=rows[800:1200],
        reference=rows[1200:1600],
        spec=adult_spec,
        attacks=[{"name": "dcr_ratio"}],
    )
    synthetic = pd.concat([rows[:200], rows[1600:2200]], ignore_index=True)  # 200 verbatim copies
    off = privacy_gate.evaluate(
        **parts, synthetic=synthetic, exposure=ExposureConfig(scan_members=False)
    )
    assert off.scan is None and "exposed.scan_count" not in off.metrics
    # switching the scan off takes its test out of the budget, and the verdict says so
    assert off.verdict.disabled == {"test:scan": "exposure.scan_members is false"}
    assert "scan" not in {t["name"] for t in off.verdict.budget["tests"]}
    with pytest.raises(
        Exception, match="scan_members is false"
    ):  # a listed rule that reads the scan
        privacy_gate.evaluate(
            **parts,
            synthetic=synthetic,
            exposure=ExposureConfig(scan_members=False),
            gate=GateConfig(rules=[Rule(metric="exposed.scan_count", max=0)]),
        )
    on = privacy_gate.evaluate(**parts, synthetic=synthetic)
    # gate-only: the reference file is the contract's "real records the generator never saw"
    assert (
        on.metrics["exposed.scan_tested"] == 800 and on.metrics["exposed.scan_calibration"] == 800
    )
    alone = privacy_gate.evaluate(
        **parts, synthetic=synthetic, exposure=ExposureConfig(reference_calibrates=False)
    )
    assert alone.metrics["exposed.scan_calibration"] == 400
    assert on.metrics["exposed.scan_count"] >= 150
    assert set(on.scan.discoveries) <= set(range(800))  # row ids of training records
    assert "Member scan" in on.report_html()
    assert "scan" in on.timings


def test_suppress_exposed_also_reads_the_scan_discoveries():
    from privacy_gate import names
    from privacy_gate.review.decide import RunRecord
    from privacy_gate.runs.suppression import singled_out

    frames = {
        names.ART_EXPOSED: pd.DataFrame(
            {"row_id": [1, 2], "p_value": [0.001, 0.5], "exposed": [True, False]}
        ),
        names.ART_SCAN: pd.DataFrame(
            {"row_id": [1, 7, 9], "p_value": [0.001, 0.0001, 0.3], "exposed": [True, True, False]}
        ),
    }

    class Store:
        def read_frame(self, run_id, name):
            return frames[name]

    record = object.__new__(RunRecord)
    record.run_id, record._tracker = "r", Store()
    assert sorted(singled_out(record.exposed_records(), level=0.01).tolist()) == [1, 7]
    del frames[names.ART_SCAN]  # a run without the scan: the target scan alone
    assert sorted(singled_out(record.exposed_records(), level=0.01).tolist()) == [1]


def test_repetition_outranks_exact_population_twins():
    """Ten training records copied eight times each (noise 1% sd) against holdout records that have
    exact twins in the release: the copies score above every twin (a nearest-row score ranks the
    twins first), and the tail-excess test sees the ten although BH cannot name them."""
    rng = np.random.default_rng(11)
    splits = _splits(rng, 2000, 1000, 1000)
    release, _ = _release(rng, splits.train, 2000)
    donors = rng.choice(2000, 10, replace=False)
    copies = splits.train.iloc[np.repeat(donors, 8)].reset_index(drop=True).copy()
    for i in range(4):
        copies[f"x{i}"] += rng.normal(0, 0.01, size=len(copies))
    twins = splits.holdout.iloc[:5].reset_index(
        drop=True
    )  # population twins of five holdout records
    release = pd.concat([copies, twins, release.iloc[len(copies) + 5 :]], ignore_index=True)
    res = scan_members(splits, release, SPEC, q=0.05, exact=True, calibration_reference=True)
    p = res.records.set_index("row_id")["p_value"]
    # above all 2,000 calibration records in one of the three views (Bonferroni: 3 / 2001)
    assert res.views == 3 and res.min_pvalue == 3 / 2001
    assert (p.loc[splits.train.index[donors]] == 3 / 2001).all()
    assert res.tail_pvalue < 0.005 and res.count == 0 and res.naming_needs == 60


def test_reference_calibrates_only_when_exchangeable():
    from privacy_gate.config import ExposureConfig
    from privacy_gate.experiment.settings import resolved_exposure, settings_for_gate_only

    assert settings_for_gate_only(spec=SPEC).exposure.reference_calibrates is True
    # a named recipe that reads the reference (MST takes its bins from it) makes the release
    # depend on the reference records: they no longer calibrate, as in a release run
    from privacy_gate.experiment.settings import GeneratorKnowledge

    def named(name: str) -> bool | None:
        knowledge = GeneratorKnowledge(name=name, params={})
        return settings_for_gate_only(spec=SPEC, generator=knowledge).exposure.reference_calibrates

    assert named("mst") is False and named("privbayes") is False
    assert named("gaussian_copula") is True
    assert (
        settings_for_gate_only(
            spec=SPEC,
            generator=GeneratorKnowledge(name="mst", params={}),
            exposure=ExposureConfig(reference_calibrates=True),
        ).exposure.reference_calibrates
        is True
    )  # an explicit setting stands
    assert (
        resolved_exposure(ExposureConfig(), reference_exchangeable=False).reference_calibrates
        is False
    )
    assert (
        resolved_exposure(
            ExposureConfig(reference_calibrates=False), reference_exchangeable=True
        ).reference_calibrates
        is False
    )


PANEL_SPEC = DatasetSpec.model_validate(
    {
        "name": "panel",
        "entity_id": "pid",
        "columns": {
            "pid": {"kind": "categorical"},
            **{f"x{i}": {"kind": "numeric", "nullable": False} for i in range(4)},
            "c": {"kind": "categorical", "categories": ["a", "b", "c", "d"]},
        },
    }
)


def _panel(rng, people, years, prefix):
    """People with their own level and small year-to-year changes: a person's rows are near each
    other, so rows are not exchangeable between the splits, people are."""
    level = rng.normal(size=(people, 4))
    rows = np.repeat(level, years, axis=0) + rng.normal(0, 0.1, size=(people * years, 4))
    return pd.DataFrame(
        {
            "pid": np.repeat([f"{prefix}{i}" for i in range(people)], years),
            **{f"x{i}": rows[:, i] for i in range(4)},
            "c": rng.choice(list("abcd"), size=people * years),
        }
    )


def test_a_panel_is_scanned_per_person():
    """Counts are people, every row carries its person's p-value, and ten people copied (every
    year, three times) are found by the tail test and named with their rows."""
    rng = np.random.default_rng(11)
    splits = Splits(
        train=_panel(rng, 300, 4, "t"),
        holdout=_panel(rng, 300, 4, "h"),
        reference=_panel(rng, 300, 4, "r"),
    )
    release = _panel(rng, 300, 4, "s")
    clean = scan_members(splits, release, PANEL_SPEC, q=0.05, calibration_reference=True)
    assert (clean.tested, clean.calibration) == (300, 600)
    per_person = pd.Series(
        clean.records["p_value"].to_numpy(), index=splits.train["pid"].to_numpy()
    )
    assert per_person.groupby(level=0).nunique().max() == 1
    leaked = splits.train[splits.train["pid"].isin([f"t{i}" for i in range(10)])]
    copies = pd.concat([leaked] * 3, ignore_index=True).assign(pid="s-copy")
    res = scan_members(
        splits,
        pd.concat([release.iloc[len(copies) :], copies], ignore_index=True),
        PANEL_SPEC,
        q=0.05,
        calibration_reference=True,
    )
    assert res.tail_pvalue <= 0.01
    assert clean.tail_pvalue > 0.01
    named = set(splits.train.loc[splits.train.index.isin(res.discoveries), "pid"])
    assert named <= {f"t{i}" for i in range(10)}


def test_a_panel_scan_holds_its_level_with_no_signal():
    """Person-level calibration: with people whose rows cluster, the tail test's p-values stay
    super-uniform over 40 clean releases (per-row p-values would treat 4 rows as 4 records)."""
    rng = np.random.default_rng(12)
    p = []
    for _ in range(40):
        splits = Splits(
            train=_panel(rng, 150, 4, "t"),
            holdout=_panel(rng, 150, 4, "h"),
            reference=_panel(rng, 150, 4, "r"),
        )
        p.append(
            scan_members(
                splits, _panel(rng, 150, 4, "s"), PANEL_SPEC, q=0.05, calibration_reference=True
            ).tail_pvalue
        )
    p = np.array(p)
    assert np.mean(p <= 0.1) <= 0.1 + 2.5 * np.sqrt(0.09 / 40)


def test_a_few_people_copied_several_times_fill_the_top_set_where_bh_names_none():
    """15 training records near-copied 4 times each into a 1,500-row release: BH at 5 % over 1,500
    training records names few or none, but the top set holds them and its 95 % lower bound (each of
    the three views' at 98.3 %) says several are copies; every record it counts as exposed is one
    (the bound never overcounts here). An independent release gives a top set with no certain
    copy."""
    rng = np.random.default_rng(4)
    splits = _splits(rng)
    release = _table(rng, 1500)
    copied = rng.choice(len(splits.train), size=15, replace=False)
    rows = splits.train.iloc[np.repeat(copied, 4)].reset_index(drop=True).copy()
    for i in range(4):
        rows[f"x{i}"] += rng.normal(0, 0.01, size=len(rows))
    release.iloc[: len(rows)] = rows.to_numpy()
    release = release.astype({f"x{i}": float for i in range(4)})
    res = scan_members(splits, release, SPEC, q=0.05, exact=True)
    top = res.records.loc[res.records["in_top"], "row_id"]
    truly = np.isin(top, splits.train.index[copied])
    assert res.top_exposed_lower >= 3, (res.top_set, res.top_members, res.top_exposed_lower)
    assert res.top_exposed_lower <= truly.sum() and res.top_members == len(top)
    assert res.metrics()["scan_top_exposed_lower"] == res.top_exposed_lower
    clean = scan_members(splits, _table(rng, 1500), SPEC, q=0.05, exact=True)
    assert clean.top_exposed_lower == 0


def test_a_pool_above_the_limit_is_sampled_at_one_rate_and_keeps_its_power(monkeypatch):
    """Above POOL_LIMIT the scan tests a sample of the pool: the share it says, every split at the
    same rate, and 5 % verbatim copies still found by the tail test; the records it returns are
    the sampled training records."""
    import privacy_gate.experiment.member_scan as scan

    rng = np.random.default_rng(8)
    splits = _splits(rng, 2000, 1000, 1000)
    release, _ = _release(rng, splits.train, 2000)
    copied = rng.choice(2000, 100, replace=False)
    release.iloc[:100] = splits.train.iloc[copied].to_numpy()
    monkeypatch.setattr(scan, "POOL_LIMIT", 1500)
    res = scan.scan_members(splits, release, SPEC, q=0.05, exact=True, calibration_reference=True)
    assert 0.3 < res.pool_share < 0.45 and res.metrics()["scan_pool_share"] == res.pool_share
    assert (
        abs(res.tested / 2000 - res.pool_share) < 0.06
        and abs(res.calibration / 2000 - res.pool_share) < 0.06
    )
    assert set(res.records["row_id"]) <= set(splits.train.index) and len(res.records) == res.tested
    assert res.tail_pvalue < 0.002
