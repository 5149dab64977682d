"""A lean MLflow run: the headline rule and the tables, on the golden scenarios' figures.

The gate run's own record is checked end to end in ``tests/flows/test_flow_e2e.py``; here, every
golden verdict's ~700-800 figures: at most 100 headline metrics under short keys, chosen by rule,
and every figure in exactly one table cell, with capped, readable group labels.
"""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from privacy_gate import names
from privacy_gate.gate.budget import TESTS
from privacy_gate.tracking import metric_records

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "verdicts.json").read_text())
#: the stages of a gate-only run, and the per-attack times inside its attacks stage
TIMINGS = {
    "load": 1.5,
    "validate_input": 0.5,
    "attacks": 12.0,
    "mace": 3.0,
    "audit": 2.0,
    "attack.dcr": 4.0,
    "attack.domias": 7.5,
}


def _figures(scenario: str) -> dict[str, float | None]:
    verdict = {**GOLDEN[scenario], "budget": {"tests": [{"name": t, "pvalue": 0.5} for t in TESTS]}}
    return metric_records.recorded_figures(verdict, timings=TIMINGS)


@pytest.mark.parametrize("scenario", sorted(GOLDEN))
def test_a_golden_run_logs_at_most_100_short_headline_metrics(scenario):
    figures = _figures(scenario)
    headline = metric_records.headline_metrics(figures)
    print(
        f"{scenario}: {len(GOLDEN[scenario]['metrics']) + len(TIMINGS)} metrics before, "
        f"{len(headline)} after"
    )
    assert len(headline) <= 100
    assert max(map(len, headline)) <= names.MAX_HEADLINE_KEY_LENGTH
    assert not [k for k in headline if k.startswith("subgroup/")]
    metrics = GOLDEN[scenario]["metrics"]
    attacks = {
        k.partition(".")[0]
        for k in metrics
        if k.endswith(".auc") and "/" not in k and k.count(".") == 1
    }
    # the verdict-level figures a reviewer compares, for every attack
    expected = {f"{a}.{m}" for a in attacks for m in names.LEAKAGE_METRICS}
    expected |= {
        f"{a}.mace.{f}"
        for a in attacks | {names.COMBINED}
        for f in ("advantage", "advantage_lower", "advantage_upper", "bias")
        if f"{a}.mace.{f}" in metrics
    }
    expected |= {
        "exposed.share_lower",
        "exposed.count",
        "copies.train_share",
        "copies.holdout_share",
        "inference.risk_upper",
        "singling_out.risk",
        "linkability.risk_lower",
        "utility.quality",
        names.FLAGGED_SUBGROUPS,
        names.TOTAL_TIME,
        *(names.budget_metric(t) for t in TESTS),
    }
    assert expected <= set(headline), sorted(expected - set(headline))
    # per column, per test detail and per stage: tables only
    assert not {
        "inference.age.risk",
        "exposed.scan_tail_pvalue",
        "dcr.mace.radius",
        "time.attacks_s",
    } & set(headline)
    assert (
        headline[names.TOTAL_TIME] == 19.0
    )  # the stages, not the attacks inside the attacks stage again


def test_the_headline_is_a_rule_not_a_cut_of_a_sorted_list():
    """More attacks add their headline figures; more groups or columns add none."""
    figures = _figures("independent")
    base = metric_records.headline_metrics(figures)
    more = dict(figures)
    more.update({f"zz_attack.{m}": 0.5 for m in names.ROC_FIGURES})  # sorts after every other key
    more.update({names.subgroup_metric(("race",), (f"g{i}",), "dcr.auc"): 0.5 for i in range(300)})
    more.update({names.disclosure_metric("inference", "risk", f"col{i}"): 0.1 for i in range(50)})
    grown = metric_records.headline_metrics(more)
    assert set(grown) - set(base) == {f"zz_attack.{m}" for m in names.LEAKAGE_METRICS}


def test_every_figure_is_in_one_table_cell_and_all_json(tmp_path):
    for scenario in sorted(GOLDEN):
        figures = _figures(scenario)
        assert set(GOLDEN[scenario]["metrics"]) <= set(figures)  # nothing recorded before is lost
        tables = metric_records.metric_tables(figures)
        assert list(tables) == list(names.METRIC_TABLES)
        labels = {"attack", "group", "columns", "evaluator", "key"}
        cells = []
        for path, table in tables.items():
            # what is logged reads back as the table (an empty cell for a missing figure)
            back = pd.read_csv(io.StringIO(metric_records.table_text(table)))
            assert back.shape == table.shape, path
            values = (
                table["value"]
                if "value" in table
                else table[[c for c in table if c not in labels]].stack()
            )
            cells += [float(v) for v in values.dropna()]
        given = [v for v in figures.values() if v is not None]
        assert len(cells) == len(given), scenario
        assert sorted(cells) == sorted(given), scenario


def test_group_labels_are_capped_readable_and_never_unhashed():
    metrics = GOLDEN["gate_only"]["metrics"]
    pooled = next(k for k in metrics if k.startswith("subgroup/native_country/Cambodia_Canada"))
    assert len(pooled) > 200  # the 29 pooled countries
    groups = metric_records.metric_tables(_figures("gate_only"))[names.ART_METRICS_SUBGROUPS]
    assert groups["group"].str.len().max() <= names.MAX_TABLE_LABEL_LENGTH
    label = next(g for g in groups["group"] if g.startswith("native_country=Cambodia_Canada"))
    assert "…-h" in label and len(label) == names.MAX_TABLE_LABEL_LENGTH
    assert "sex=Male" in set(groups["group"]) and "race=White" in set(groups["group"])
    # the most significant group first
    p = groups["membership_test.p_adjusted"].tolist()
    assert p == sorted(p, key=lambda x: math.inf if pd.isna(x) else x)
    # a hashed record value is shown as its hash (the '#' label --suppress takes), an intersection
    # as the audit names it
    hashed = names.subgroup_metric(("occupation",), ("#6c1051d176",), "n_members")
    both = names.subgroup_metric(("sex", "race"), ("Female", "Black"), "dcr.auc")
    tables = metric_records.metric_tables({hashed: 12.0, both: 0.61})
    assert set(tables[names.ART_METRICS_SUBGROUPS]["group"]) == {
        "occupation=#6c1051d176",
        "sex=Female&race=Black",
    }
    row = tables[names.ART_METRICS_SUBGROUP_ATTACKS].iloc[0]
    assert (row["group"], row["attack"], row["auc"]) == ("sex=Female&race=Black", "dcr", 0.61)


def test_a_failure_verdict_records_empty_tables_and_its_time():
    figures = metric_records.recorded_figures(
        {"metrics": {}, "flagged_subgroups": []}, timings={"load": 0.25}
    )
    assert figures == {
        names.FLAGGED_SUBGROUPS: 0.0,
        names.TOTAL_TIME: 0.25,
        names.timing_metric("load"): 0.25,
    }
    tables = metric_records.metric_tables(figures)
    assert tables[names.ART_METRICS_SUBGROUPS].empty and list(
        tables[names.ART_METRICS_SUBGROUPS]
    ) == ["group", "columns"]
    assert metric_records.headline_metrics({"dcr.auc": None, "utility.quality": 0.7}) == {
        "utility.quality": 0.7
    }
    long_label = "a" * 200
    assert (
        len(next(iter(metric_records.headline_metrics({f"{long_label}.auc": 0.5}))))
        <= names.MAX_HEADLINE_KEY_LENGTH
    )
