"""The leak grammar (``benchmarks/leak_grammar.py``) makes what each choice says, on a small seeded
table (3,000 rows: three numeric, three categorical columns), and its information label orders
leaks as it claims: a verbatim copy of a unique record says more than one of a common record,
and a release that knows nothing of its training records says about 0 bits.

No gate runs here (the benchmark's summary is tested on made-up rows): seconds in all.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchmarks import bench_leak_power, leak_grammar
from benchmarks.calibration_tables import _spec

N_TRAIN = 500


def _table():
    rng = np.random.default_rng(7)
    n = 3000
    df = pd.DataFrame(
        {
            "a": np.round(rng.normal(50, 10, n), 1),
            "b": np.round(np.exp(rng.normal(3, 0.7, n)), 2),
            "c": rng.integers(0, 20, n).astype(float),
            "u": rng.choice(list("ABCDE"), n, p=[0.6, 0.3, 0.08, 0.015, 0.005]),
            "v": rng.choice(["yes", "no"], n),
            "w": rng.choice(["p", "q", "r", "s", "t"], n),
        }
    )
    spec = _spec("toy", df, categorical=["u", "v", "w"])
    return df, spec


@pytest.fixture()
def toy(monkeypatch):
    df, spec = _table()
    monkeypatch.setattr(leak_grammar, "load", lambda name: (df, spec))
    return df, spec


def _leak(grammar, seed=0):
    return leak_grammar.make_leak("toy", seed, N_TRAIN, 0, grammar=grammar)


def _copies(rel):
    """(training records, their released rows), aligned."""
    rows, pos = rel.info["rows"], rel.info["positions"]
    return rel.train.iloc[rows].reset_index(drop=True), rel.synthetic.iloc[pos].reset_index(
        drop=True
    )


NUM, CAT = ["a", "b", "c"], ["u", "v", "w"]


def test_a_scaled_copy_is_the_record_times_the_factor(toy):
    rel = _leak(
        {"which": "random", "keep": "all", "change": "scale", "share": 0.03, "factor": 1.03}
    )
    x, s = _copies(rel)
    assert len(x) == round(0.03 * N_TRAIN)
    np.testing.assert_allclose(s[NUM].to_numpy(float), 1.03 * x[NUM].to_numpy(float))
    assert (s[CAT].to_numpy() == x[CAT].to_numpy()).all()


def test_a_shifted_copy_moves_every_number_by_the_share_of_its_sd(toy):
    rel = _leak(
        {"which": "random", "keep": "all", "change": "shift", "share": 0.02, "shift_sd": 0.05}
    )
    x, s = _copies(rel)
    for c in NUM:
        np.testing.assert_allclose(s[c] - x[c], 0.05 * rel.train[c].std())


def test_a_jittered_copy_is_close_but_not_equal(toy):
    rel = _leak(
        {"which": "random", "keep": "all", "change": "jitter", "share": 0.02, "noise_sd": 0.02}
    )
    x, s = _copies(rel)
    for c in NUM:
        d = (s[c] - x[c]).abs() / rel.train[c].std()
        assert (d > 0).all() and d.max() < 0.02 * 5
    assert (s[CAT].to_numpy() == x[CAT].to_numpy()).all()


def test_a_rounded_copy_sits_on_a_1_2_5_unit(toy):
    rel = _leak(
        {"which": "random", "keep": "all", "change": "round", "share": 0.02, "unit_sd": 0.4}
    )
    x, s = _copies(rel)
    for c in NUM:
        unit = leak_grammar._nice(0.4 * rel.train[c].std())
        q = s[c] / unit
        np.testing.assert_allclose(q, np.round(q), atol=1e-9)
        assert ((s[c] - x[c]).abs() <= unit / 2 + 1e-9).all()


def test_a_smote_copy_lies_between_the_record_and_its_nearest_neighbour(toy):
    rel = _leak(
        {"which": "random", "keep": "all", "change": "smote", "share": 0.04, "lam_max": 0.1}
    )
    x, s = _copies(rel)
    nb = rel.train.iloc[
        leak_grammar.nearest_neighbours(rel.train, rel.spec)[rel.info["rows"]]
    ].reset_index(drop=True)
    for c in NUM:
        gap = nb[c] - x[c]
        ok = gap.abs() > 1e-9
        lam = (s[c] - x[c])[ok] / gap[ok]
        assert lam.between(-1e-9, 0.1 + 1e-9).all()
    assert (s[CAT].to_numpy() == x[CAT].to_numpy()).all()


@pytest.mark.parametrize("change", ["redraw", "swap"])
def test_all_but_k_keeps_all_but_k_columns(toy, change):
    rel = _leak({"which": "random", "keep": "all-but-k", "change": change, "share": 0.05, "k": 2})
    x, s = _copies(rel)
    same = (x[NUM + CAT].astype(str).to_numpy() == s[NUM + CAT].astype(str).to_numpy()).sum(axis=1)
    assert (same >= 4).all()  # a re-drawn value may happen to equal the record's
    assert (same < 6).mean() > 0.5  # ... but mostly it does not: the columns really were changed
    if change == "swap":  # the replaced values come from training records
        for c in NUM:
            assert s[c].isin(rel.train[c]).all()


def test_a_combination_keeps_its_columns_and_takes_the_rest_from_population_rows(toy):
    rel = _leak({"which": "random", "keep": "combo", "change": "redraw", "share": 0.05})
    x, s = _copies(rel)
    combo = rel.info["grammar"]["combo"]
    assert 3 <= len(combo) <= 5
    assert (x[combo].astype(str).to_numpy() == s[combo].astype(str).to_numpy()).all()
    rest = [c for c in NUM if c not in combo]
    for c in rest:  # the rest is someone else's: continuous values almost never coincide
        assert (s[c] != x[c]).mean() > 0.9


def test_a_group_leak_is_one_whole_small_group(toy):
    rel = _leak({"which": "group", "keep": "all", "change": "redraw", "share": 0.01})
    col = rel.info["grammar"]["group_column"]
    x, _ = _copies(rel)
    assert x[col].nunique() == 1
    share = float((rel.train[col] == x[col].iloc[0]).mean())
    assert 0.005 <= share <= 0.03 and len(x) == (rel.train[col] == x[col].iloc[0]).sum()


def test_a_few_people_are_copied_several_times(toy):
    rel = _leak(
        {
            "which": "people",
            "keep": "all",
            "change": "jitter",
            "share": 0.01,
            "people": 25,
            "copies": 4,
            "noise_sd": 0.01,
        }
    )
    assert rel.info["label"]["leaked_records"] == 25 and rel.info["label"]["rows_replaced"] == 100
    assert (pd.Series(rel.info["rows"]).value_counts() == 4).all()


def test_rare_and_outlying_records_are_what_they_say(toy):
    rel = _leak({"which": "rare", "keep": "all", "change": "redraw", "share": 0.05})
    x, s = _copies(rel)
    assert set(rel.info["rows"]) <= set(leak_grammar.rare_rows(rel.train, rel.spec))
    assert (x.astype(str).to_numpy() == s[x.columns].astype(str).to_numpy()).all()  # verbatim
    rel = _leak({"which": "outlying", "keep": "all", "change": "redraw", "share": 0.02})
    top = leak_grammar.outlying_rows(rel.train, rel.spec, 0.02)
    assert set(rel.info["rows"]) == set(top)


@pytest.mark.parametrize("how", ["holdout", "filter"])
def test_an_avoided_release_holds_no_training_record(toy, how):
    rel = _leak({"change": "avoid", "avoid": how, "removed_share": 0.3})
    key = lambda f: set(map(tuple, f[NUM + CAT].astype(str).to_numpy()))  # noqa: E731
    assert not key(rel.train) & key(rel.synthetic)
    assert len(rel.copied) == 0 and rel.info["label"]["info_median"] is None
    if (
        how == "filter"
    ):  # the kept candidates are farther from training than a random population draw
        from sklearn.neighbors import NearestNeighbors

        from benchmarks.calibration_scenarios import _encode

        enc = _encode(
            pd.concat([rel.train, rel.synthetic, rel.holdout], ignore_index=True), rel.spec
        )
        nn = NearestNeighbors(n_neighbors=1).fit(enc[: len(rel.train)])
        d_rel = nn.kneighbors(enc[len(rel.train) : len(rel.train) + len(rel.synthetic)])[0].mean()
        d_ho = nn.kneighbors(enc[len(rel.train) + len(rel.synthetic) :])[0].mean()
        assert d_rel > d_ho


def test_a_verbatim_unique_record_reveals_more_than_a_common_one(toy):
    df, spec = toy
    rel = leak_grammar.make_null("toy", 0, N_TRAIN)
    model = leak_grammar.InfoModel(rel.reference, spec)
    twins = rel.synthetic
    common = rel.train[(rel.train.u == "A")].iloc[[0]].copy()
    common[["a", "b", "c"]] = [
        rel.reference.a.median(),
        rel.reference.b.median(),
        rel.reference.c.median(),
    ]
    unique = rel.train[(rel.train.u.isin(["D", "E"]))].iloc[[0]].copy()
    unique[["a", "b"]] = [rel.reference.a.max() + 30, rel.reference.b.max() * 3]
    lab = lambda x: leak_grammar.information_label(model, x, x, twins, np.array([0]))["info_median"]  # noqa: E731
    assert lab(unique) > lab(common) + 5
    assert lab(common) >= 0  # a verbatim copy never says less than the twin


def test_the_label_is_about_zero_for_a_null_release(toy):
    for seed in (0, 1):
        assert abs(leak_grammar.make_null("toy", seed, N_TRAIN).info["label"]["info_median"]) < 0.5


def test_drawn_grammars_stay_in_their_ranges():
    rng = np.random.default_rng(0)
    gs = [leak_grammar.draw_grammar(rng) for _ in range(400)]
    assert {g["change"] for g in gs} == set(leak_grammar.CHANGE)
    assert {g["which"] for g in gs if "which" in g} == set(leak_grammar.WHICH)
    assert {g["keep"] for g in gs if "keep" in g} == set(leak_grammar.KEEP)
    assert all(0.005 <= g["share"] <= 0.05 for g in gs if "share" in g)
    assert all(1.01 <= g["factor"] <= 1.05 for g in gs if "factor" in g)
    assert all(g["lam_max"] <= 0.1 for g in gs if "lam_max" in g)
    assert all(20 <= g["people"] <= 60 and 2 <= g["copies"] <= 6 for g in gs if "people" in g)
    assert all(g["k"] in (1, 2) for g in gs if "k" in g)


def test_the_benchmark_undeclares_and_bins_power():
    _, spec = _table()
    spec = spec.model_copy(update={"quasi_identifiers": ["a", "u"], "subgroups": ["v"]})
    bare = bench_leak_power.undeclared(spec)
    assert bare.quasi_identifiers is None and bare.subgroups == []
    rows = [
        {
            "table": "t",
            "half": "reported",
            "kind": "leak",
            "decision": d,
            "seed": 0,
            "draw": str(i),
            "cell": "grammar:x",
            "grammar": {"change": "jitter", "which": "random", "keep": "all"},
            "label": {"info_median": info, "share": 0.01},
            "n_train": 2000,
            "seconds": 1.0,
            "reasons": [],
        }
        for i, (d, info) in enumerate([("REVIEW", 12.0), ("APPROVE", 12.5), ("APPROVE", -1.0)])
    ]
    rows.append(
        {
            "table": "t",
            "half": "reported",
            "kind": "null",
            "decision": "APPROVE",
            "seed": 0,
            "draw": "null",
            "cell": "null-independent",
            "grammar": {"change": "null"},
            "label": {"info_median": 0.0, "share": 0.0},
            "seconds": 1.0,
            "reasons": [],
        }
    )
    s = bench_leak_power.summarise(rows)
    assert (
        s["power_by_info"]["[10, 20)"]["n"] == 2
        and s["power_by_info"]["[10, 20)"]["not_approved"] == 1
    )
    assert s["power_by_info"]["[-inf, 0)"]["power"] == 0.0
    assert s["tables"]["t"]["null_approval"] == 1.0 and len(s["approved_leaks"]) == 2


def test_a_copy_of_a_record_whose_twin_is_in_the_population_reveals_nothing_beyond_it(toy):
    df, spec = toy
    rel = leak_grammar.make_null("toy", 0, N_TRAIN)
    model = leak_grammar.InfoModel(rel.reference, spec)
    x = rel.train.iloc[[3]]
    twins = pd.concat([rel.synthetic, x], ignore_index=True)  # the population holds its exact twin
    assert leak_grammar.information_label(model, x, x, twins, np.array([0]))[
        "info_median"
    ] == pytest.approx(0.0)
    assert (
        leak_grammar.information_label(model, x, x, rel.synthetic, np.array([0]))["info_median"] > 1
    )


def test_the_console_never_shows_a_group_value():
    shown = bench_leak_power._shown("clarity=IF: membership_test.p_adjusted")
    assert "IF" not in shown and shown.startswith("clarity=")
    assert (
        bench_leak_power._shown("test:scan") == "test:scan"
        and bench_leak_power._shown("") == "gate-error"
    )


def test_every_named_shape_builds_what_its_name_says(toy):
    for name, grammar in leak_grammar.NAMED_SHAPES.items():
        if name == "qi-unique-3%":  # needs declared quasi-identifiers: the next test
            continue
        rel = _leak(grammar)
        x, s = _copies(rel)
        if name == "verbatim-2%":
            assert (x.astype(str).to_numpy() == s[x.columns].astype(str).to_numpy()).all()
            assert len(x) == round(0.02 * N_TRAIN)
        elif name == "scaled-1.02-2%":
            np.testing.assert_allclose(s[NUM].to_numpy(float), 1.02 * x[NUM].to_numpy(float))
        elif name == "smote-0.1-3%":
            assert (
                len(x) == round(0.03 * N_TRAIN) and (s[CAT].to_numpy() == x[CAT].to_numpy()).all()
            )
        elif name == "people-40x4":
            assert rel.info["label"]["leaked_records"] == 40
            assert rel.info["label"]["rows_replaced"] == 160
        elif name == "partial-2col-3%":
            same = (x.astype(str).to_numpy() == s[x.columns].astype(str).to_numpy()).sum(axis=1)
            assert (same >= len(x.columns) - 2).all() and (same < len(x.columns)).mean() > 0.5
    with pytest.raises(leak_grammar.NotDrawable, match="quasi-identifiers"):
        _leak(leak_grammar.NAMED_SHAPES["qi-unique-3%"])


def test_a_unique_combination_leak_pastes_unique_combinations_into_independent_rows(
    toy, monkeypatch
):
    df, spec = toy
    spec = spec.model_copy(update={"quasi_identifiers": ["a", "u"]})
    monkeypatch.setattr(leak_grammar, "load", lambda name: (df, spec))
    rel = _leak(leak_grammar.NAMED_SHAPES["qi-unique-3%"])
    x, s = _copies(rel)
    assert rel.info["grammar"]["combo"] == ["a", "u"]
    assert (x[["a", "u"]].astype(str).to_numpy() == s[["a", "u"]].astype(str).to_numpy()).all()
    key = df[["a", "u"]].astype(str).agg("|".join, axis=1)
    counts = key.map(key.value_counts())
    leaked = x[["a", "u"]].astype(str).agg("|".join, axis=1)
    assert set(leaked) <= set(key[counts == 1])  # each combination occurs once in the table
    assert (s["b"] != x["b"]).mean() > 0.9  # the rest is someone else's
    # scored on the pasted columns, copy and twin alike: a combination no one else holds says
    # more than the twin's best match on those columns (scored on the whole row, the independent
    # rest would hand the twin the lead)
    assert rel.info["label"]["info_median"] > 0


def test_the_criterion_counts_leaks_above_both_the_share_and_the_bits():
    def row(i, decision, info, share):
        return {
            "table": "t",
            "half": "reported",
            "kind": "leak",
            "decision": decision,
            "seed": 0,
            "draw": f"{bench_leak_power.SHAPE}verbatim-2%" if i == 0 else str(i),
            "cell": "grammar:x",
            "grammar": {"change": "redraw", "which": "random", "keep": "all"},
            "label": {"info_median": info, "share": share},
            "n_train": 12000 if i < 3 else 1400,
            "seconds": 1.0,
            "reasons": [],
        }

    rows = [
        row(0, "REVIEW", 12.0, 0.02),
        row(1, "APPROVE", 12.0, 0.005),  # too few records copied: outside the criterion
        row(2, "APPROVE", 3.0, 0.03),  # below 5 bits
        row(3, "BLOCK", 6.0, 0.03),
    ]
    c = bench_leak_power.summarise(rows)["criterion"]
    assert c["all"][">= 0 bits"]["n"] == 3 and c["all"][">= 0 bits"]["not_approved"] == 2
    assert c["all"][">= 5 bits"]["n"] == 2 and c["all"][">= 5 bits"]["power"] == 1.0
    assert c["development"][">= 0 bits"]["n"] == 0
    assert c["larger"][">= 0 bits"]["n"] == 2 and c["smaller"][">= 0 bits"]["n"] == 1
    # 2/2 held back from 5 bits on, 2/3 from 0 bits: the criterion holds from 5 bits
    assert c["all"]["threshold_reached"] == 5.0
    assert c["smaller"]["threshold_reached"] == 0.0 and c["larger"]["threshold_reached"] == 5.0
    assert c["development"]["threshold_reached"] is None  # no leak there at all
    shapes = bench_leak_power.summarise(rows)["shapes"]
    assert list(shapes) == ["verbatim-2%"] and shapes["verbatim-2%"]["info_medians"] == [12.0]


def test_every_named_shape_has_its_words():
    assert set(leak_grammar.SHAPE_WORDS) == set(leak_grammar.NAMED_SHAPES)


def test_the_label_reads_a_scaled_or_shifted_copy_through_its_own_map(toy):
    """A copy x 1.02 tells what the verbatim copy tells: the same records, the same bits."""
    verbatim = _leak({"which": "random", "keep": "all", "change": "redraw", "share": 0.03})
    scaled = _leak(
        {"which": "random", "keep": "all", "change": "scale", "share": 0.03, "factor": 1.02}
    )
    shifted = _leak(
        {"which": "random", "keep": "all", "change": "shift", "share": 0.03, "shift_sd": 0.05}
    )
    assert list(verbatim.info["rows"]) == list(scaled.info["rows"]) == list(shifted.info["rows"])
    v, sc, sh = (r.info["label"] for r in (verbatim, scaled, shifted))
    assert v["read_through"] is None and sc["read_through"] == "scale 1.02"
    assert sh["read_through"] == "shift 0.05 sd"
    assert sc["info_median"] == pytest.approx(v["info_median"])
    assert sh["info_median"] == pytest.approx(v["info_median"])
    # jitter has no inverse: read as released, it tells less than the copy itself
    jittered = _leak(
        {"which": "random", "keep": "all", "change": "jitter", "share": 0.03, "noise_sd": 0.05}
    )
    assert jittered.info["label"]["read_through"] is None
    assert jittered.info["label"]["info_median"] < v["info_median"]


def test_relabel_recomputes_only_the_labels_the_new_definition_changes(toy, tmp_path):
    rows = []
    for draw in range(12):  # random draws on the toy table: some scale or shift, most not
        rel = bench_leak_power.release_for("toy", N_TRAIN, 0, str(draw))
        label = dict(rel.info["label"])
        if label.get("info_median") is not None:
            label["info_median"] -= 100.0  # what an older definition would have said
        label.pop("read_through", None)
        label.pop("version", None)
        rows.append(
            {
                "key": f"toy|{N_TRAIN}|0|{draw}",
                "table": "toy",
                "n_train_requested": N_TRAIN,
                "seed": 0,
                "draw": str(draw),
                "kind": "leak",
                "decision": "APPROVE",
                "cell": rel.cell,
                "n_train": rel.n_train,
                "n_synthetic": len(rel.synthetic),
                "grammar": rel.info["grammar"],
                "label": label,
                "truth": rel.info["label"],
            }
        )
    jsonl = tmp_path / "leak_power_toy.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    mapped = [r for r in rows if leak_grammar.label_changed(r["grammar"], 1)]
    assert 0 < len(mapped) < len(rows)
    assert bench_leak_power.relabel(jsonl) == len(mapped)
    after = [json.loads(line) for line in jsonl.read_text().splitlines()]
    for r in after:
        assert r["label"]["version"] == leak_grammar.LABEL_VERSION
        if leak_grammar.label_changed(r["grammar"], 1):
            assert r["label"]["info_median"] == pytest.approx(r["truth"]["info_median"])
        elif r["label"].get("info_median") is not None:  # stamped, not recomputed
            assert r["label"]["info_median"] == pytest.approx(r["truth"]["info_median"] - 100.0)
    assert bench_leak_power.relabel(jsonl) == 0  # nothing left to bring up to date
    # a row that does not re-draw its release is refused, the file left as it was
    stale = dict(mapped[0], label={k: v for k, v in mapped[0]["label"].items() if k != "version"})
    stale["cell"] = "grammar:something/else"
    jsonl.write_text(json.dumps(stale) + "\n")
    with pytest.raises(RuntimeError, match="does not re-draw"):
        bench_leak_power.relabel(jsonl)
    assert json.loads(jsonl.read_text())["cell"] == "grammar:something/else"


def test_each_label_version_names_the_leaks_it_changed():
    changed = leak_grammar.label_changed
    assert changed({"keep": "all", "change": "scale"}, 1) and not changed(
        {"keep": "all", "change": "scale"}, 2
    )
    assert changed({"keep": "combo", "change": "redraw"}, 2)
    assert changed({"keep": "all", "change": "swap"}, 2)
    assert not changed({"keep": "all", "change": "jitter"}, 1)
    assert not changed({"change": "avoid"}, 1)
