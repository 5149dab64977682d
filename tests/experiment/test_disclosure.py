"""Disclosure risks on cases with known truth (small seeded data, fast): a full copy, an
independent sample (the hardest case for coverage: no signal at all), a release that leaks one
secret column; the spec's attacker keys; no record value in what the gate records."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from privacy_gate.config import SMALLEST_CONTROL, DisclosureConfig
from privacy_gate.errors import InsufficientDataError
from privacy_gate.estimators.disclosure import disclosure_risk
from privacy_gate.experiment.disclosure import attacker, measure_disclosure
from privacy_gate.pipeline.gate_run import GATE_STAGES
from privacy_gate.report.html import ReportInputs, render_report
from privacy_gate.spec import DatasetSpec

COLUMNS = {
    "a": {"kind": "numeric"},
    "b": {"kind": "numeric"},
    "c": {"kind": "numeric"},
    "g": {"kind": "categorical"},
    "s": {"kind": "categorical"},
}
CFG = DisclosureConfig(n_attacks=200, n_attempts=200, min_control=100, subgroup_min_targets=20)


def _spec(**extra) -> DatasetSpec:
    return DatasetSpec.model_validate(
        {"name": "t", "columns": COLUMNS, "subgroups": ["g"], **extra}
    )


def _population(n: int, rng: np.random.Generator) -> pd.DataFrame:
    x = rng.normal(size=(n, 3)).round(3)
    g = rng.choice(["g0", "g1", "g2"], size=n)
    s = np.where(
        x[:, 0] + rng.normal(scale=2.0, size=n) > 0, "yes", "no"
    )  # a weakly predictable secret
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "g": g, "s": s})


def _risks(result) -> dict[str, tuple[float, float, float]]:
    m = result.metrics()
    return {
        k[: -len(".risk")]: (m[k], m[k + "_lower"], m[k + "_upper"])
        for k in m
        if k.endswith(".risk") and not k.startswith("subgroup/")
    }


def test_a_full_copy_gives_risks_near_one_without_crashing():
    rng = np.random.default_rng(0)
    train, control = _population(400, rng), _population(400, rng)
    train["const"] = control["const"] = (
        1.0  # a constant secret: control rate 1, no division by zero
    )
    spec = DatasetSpec.model_validate(
        {
            "name": "t",
            "columns": {**COLUMNS, "const": {"kind": "numeric"}},
            "sensitive": ["s", "const"],
            "linkability": [["a", "b"], ["c", "g"]],
        }
    )
    r = _risks(measure_disclosure(train, train, control, spec, CFG, seed=0))
    assert r["singling_out"][1] > 0.9 and r["linkability"][1] > 0.9
    assert r["inference.s"][0] > 0.8
    assert r["inference.const"] == (0.0, 0.0, 0.0) or abs(r["inference.const"][0]) < 1e-9
    assert all(np.isfinite(v).all() for v in r.values())


def test_intervals_cover_zero_for_an_independent_sample_over_20_seeds():
    """No signal at all (synthetic, training and control records from one population): each
    risk interval (stated coverage >= 95%) must hold 0 in at least 19 of 20 seeds."""
    misses: dict[str, int] = {}
    spec = _spec(sensitive=["s", "a"])
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        syn, train, control = _population(400, rng), _population(400, rng), _population(400, rng)
        for name, (_, lo, hi) in _risks(
            measure_disclosure(syn, train, control, spec, CFG, seed=seed)
        ).items():
            misses[name] = misses.get(name, 0) + int(not lo <= 0 <= hi)
    assert set(misses) >= {"singling_out", "linkability", "inference", "inference.s", "inference.a"}
    assert max(misses.values()) <= 1, misses


def test_a_release_leaking_one_secret_is_caught_by_inference_not_by_singling_out():
    rng = np.random.default_rng(7)
    train, control, syn = _population(500, rng), _population(500, rng), _population(500, rng)
    # the secret of each synthetic record copied from its nearest training record; all else
    # independent
    d = (
        (syn[["a", "b", "c"]].to_numpy()[:, None, :] - train[["a", "b", "c"]].to_numpy()[None]) ** 2
    ).sum(-1)
    syn["s"] = train["s"].to_numpy()[d.argmin(axis=1)]
    spec = _spec(quasi_identifiers=["a", "b", "c", "g"], sensitive=["s"])
    r = _risks(measure_disclosure(syn, train, control, spec, CFG, seed=0))
    assert r["inference.s"][1] > 0.10, r["inference.s"]  # caught: the BLOCK rule's bar
    assert r["singling_out"][1] <= 0.10, r["singling_out"]  # not caught


def test_a_leak_confined_to_one_group_is_gone_once_the_group_is_left_out():
    """Blame's view: the synthetic data copies the g0 training records (everything else is an
    independent sample); without g0's training and control records the risks hold 0 again."""
    from privacy_gate.experiment.disclosure import DisclosureInputs, measure_without

    rng = np.random.default_rng(3)
    train, control, syn = _population(900, rng), _population(900, rng), _population(900, rng)
    leaked = train[train["g"] == "g0"]
    syn = pd.concat([syn[syn["g"] != "g0"], leaked], ignore_index=True)
    spec = _spec(sensitive=["s"])
    whole = _risks(measure_disclosure(syn, train, control, spec, CFG, seed=0))
    assert whole["linkability"][1] > 0.10 and whole["singling_out"][1] > 0.05, whole
    rest = measure_without(
        lambda df: (df["g"] == "g0").to_numpy(),
        syn,
        train,
        DisclosureInputs(control=control, source="control", public={}),
        spec,
        CFG,
        seed=0,
    )
    keys = [
        k[: -len(".risk")] for k in rest if k.endswith(".risk") and not k.startswith("subgroup/")
    ]
    assert {"linkability", "singling_out", "inference.s"} <= set(keys)
    for key in keys:
        assert rest[f"{key}.risk_lower"] <= 0 <= rest[f"{key}.risk_upper"], (key, rest)


def test_the_attacker_defaults_are_said_and_the_spec_keys_are_checked():
    who = attacker(_spec())
    assert who.secrets == tuple(COLUMNS) and len(who.assumed) == 3
    assert attacker(_spec(quasi_identifiers=["a", "b"])).secrets == ("c", "g", "s")
    for extra, key in [
        ({"quasi_identifiers": ["nope"]}, "quasi_identifiers names unknown column 'nope'"),
        ({"sensitive": ["s"], "quasi_identifiers": ["s", "a"]}, "share ['s']"),
        ({"linkability": [["a"]]}, "exactly two"),
        ({"linkability": [["a", "b"], ["b"]]}, "must not share"),
        ({"sensitive": ["a", "a"]}, "sensitive lists a column more than once"),
    ]:
        with pytest.raises(ValidationError, match=key.replace("[", r"\[").replace("]", r"\]")):
            _spec(**extra)


def test_too_few_control_records_is_refused_by_name():
    """Below SMALLEST_CONTROL nothing is measured (the message names the settings, once); between it
    and disclosure.min_control the risks are measured as they are (the gate REVIEWs for insufficient
    evidence: tests/gate/test_small_tables.py)."""
    rng = np.random.default_rng(0)
    with pytest.raises(InsufficientDataError, match="disclosure.min_control") as err:
        measure_disclosure(
            _population(300, rng),
            _population(300, rng),
            _population(SMALLEST_CONTROL - 1, rng),
            _spec(),
            CFG,
            seed=0,
        )
    assert "disclosure.enabled" in str(err.value) and not str(err.value).startswith("disclosure:")
    few = measure_disclosure(
        _population(300, rng), _population(300, rng), _population(50, rng), _spec(), CFG, seed=0
    )
    assert few.n_control_records == 50 < CFG.min_control
    assert 0 < few.metrics()["linkability.n_control"] <= 50


def test_no_record_value_reaches_the_recorded_figures_or_the_report():
    rng = np.random.default_rng(3)
    train, control = _population(400, rng), _population(400, rng)
    planted = "Zq-Planted-Group-7731"
    train.loc[:59, "g"] = planted  # a subgroup value only training records hold
    train.loc[5, "s"] = "Xv-Secret-0042"  # a secret value only one training record holds
    syn = train.copy()
    result = measure_disclosure(
        syn,
        train,
        control,
        _spec(sensitive=["s"]),
        CFG,
        seed=0,
        subgroups=["g"],
        public={"g": frozenset({"g0", "g1", "g2"})},
    )
    recorded = json.dumps([result.summary(), result.metrics()], default=float)
    html = render_report(
        ReportInputs(
            verdict={"verdict": "BLOCK", "metrics": result.metrics()}, disclosure=result.summary()
        )
    )
    for text in (recorded, html):
        assert planted not in text and "Xv-Secret" not in text
    assert 'id="disclosure"' in html


def test_the_stage_runs_after_the_scan_and_before_the_audit():
    order = [s.name for s in GATE_STAGES]
    assert order.index("scan") < order.index("disclosure") < order.index("audit")


def test_a_control_rate_of_one_never_divides_by_zero():
    r = disclosure_risk(k_train=10, n_train=10, k_control=10, n_control=10)
    assert (r.risk, r.risk_lower, r.risk_upper) == (
        0.0,
        r.risk_lower,
        r.risk_upper,
    ) and -1 <= r.risk_lower <= 0
