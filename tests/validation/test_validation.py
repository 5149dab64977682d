"""privacy_gate.validation: suites from a spec, GE checkpoint runs, sanitised reports."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privacy_gate.config import load_release_config
from privacy_gate.data import conform
from privacy_gate.errors import ConfigError, DataError, ValidationFailed
from privacy_gate.spec import DatasetSpec
from privacy_gate.validation import (
    COPY_INDICATOR_COLUMN,
    COPY_SHARE_EXPECTATION,
    ValidationReport,
    build_input_suite,
    build_synthetic_suite,
    copy_indicator,
    dump_suite,
    gx_suite_from_dict,
    gx_suite_to_dict,
    load_suite,
    validate_input,
    validate_synthetic,
)

ROOT = Path(__file__).resolve().parents[2]

SPEC = DatasetSpec.model_validate(
    {
        "name": "toy",
        "columns": {
            "pid": {"kind": "categorical"},
            "age": {"kind": "numeric", "min": 17, "max": 90},
            "color": {"kind": "categorical", "categories": ["red", "green", "blue"]},
            "grade": {"kind": "ordinal", "categories": [1, 2, 3]},  # ints -> "1", "2", "3"
            "visit": {"kind": "datetime", "min": 946684800, "max": 1893456000},  # 2000..2030
            "sex": {"kind": "categorical", "categories": ["F", "M"], "nullable": False},
        },
        "entity_id": "pid",
    }
)


def make_table(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    raw = pd.DataFrame(
        {
            "pid": [f"p{i}" for i in range(n)],
            "age": rng.integers(17, 91, n).astype(float),
            "color": rng.choice(["red", "green", "blue", None], n),
            "grade": rng.choice([1, 2, 3], n),
            "visit": pd.Timestamp("2010-01-01")
            + pd.to_timedelta(rng.integers(0, 3650, n), unit="D"),
            "sex": rng.choice(["F", "M"], n),
        }
    )
    return conform(raw, SPEC, source="toy")


def failures_of(report: ValidationReport) -> list[str]:
    assert not report.success
    return report.failures()


# --------------------------------------------------------------------------- suites


def test_input_suite_shape():
    suite = build_input_suite(SPEC)
    assert suite["name"] == "toy.input"
    by_type: dict[str, list[dict]] = {}
    for e in suite["expectations"]:
        by_type.setdefault(e["type"], []).append(e["kwargs"])
    assert by_type["expect_table_columns_to_match_set"] == [{"column_set": list(SPEC.columns)}]
    assert by_type["expect_table_row_count_to_be_between"] == [{"min_value": 1}]
    assert {k["column"] for k in by_type["expect_column_values_to_not_be_null"]} == {"pid", "sex"}
    nonnull = by_type["expect_column_proportion_of_non_null_values_to_be_between"]
    assert [k["column"] for k in nonnull] == list(SPEC.columns)
    assert all(k["min_value"] == 0 and k["strict_min"] for k in nonnull)
    in_set = {k["column"]: k["value_set"] for k in by_type["expect_column_values_to_be_in_set"]}
    assert in_set == {
        "color": ["red", "green", "blue"],
        "grade": ["1", "2", "3"],
        "sex": ["F", "M"],
    }
    between = {
        k["column"]: (k["min_value"], k["max_value"])
        for k in by_type["expect_column_values_to_be_between"]
    }
    assert between == {"age": (17.0, 90.0), "visit": (946684800.0, 1893456000.0)}
    json.dumps(suite)  # JSON-serialisable


def test_synthetic_suite_shape():
    suite = build_synthetic_suite(SPEC, max_copy_share=0.05)
    assert suite["name"] == "toy.synthetic"
    types = [e["type"] for e in suite["expectations"]]
    assert types.count(COPY_SHARE_EXPECTATION) == 1
    copy = next(e for e in suite["expectations"] if e["type"] == COPY_SHARE_EXPECTATION)
    assert copy["kwargs"] == {"max_value": 0.05}
    cols = suite["expectations"][0]["kwargs"]["column_set"]
    assert cols == [*SPEC.columns, COPY_INDICATOR_COLUMN]
    # the synthetic entity id may be freshly generated; only nullable: false is enforced
    not_null = [
        e["kwargs"]["column"]
        for e in suite["expectations"]
        if e["type"] == "expect_column_values_to_not_be_null"
    ]
    assert not_null == ["sex"]
    with pytest.raises(ConfigError, match="max_copy_share"):
        build_synthetic_suite(SPEC, max_copy_share=1.5)


def test_reserved_column_name_is_rejected():
    spec = DatasetSpec.model_validate(
        {"name": "bad", "columns": {COPY_INDICATOR_COLUMN: {"kind": "numeric"}}}
    )
    with pytest.raises(ConfigError, match="reserved"):
        build_input_suite(spec)


def test_suite_round_trips_through_gx_including_custom_expectation():
    from privacy_gate.validation import ExpectTrainingCopyShareToBeAtMost

    assert ExpectTrainingCopyShareToBeAtMost.expectation_type == COPY_SHARE_EXPECTATION
    for suite in (build_input_suite(SPEC), build_synthetic_suite(SPEC, max_copy_share=0.02)):
        gx_suite = gx_suite_from_dict(suite)
        if suite["name"].endswith(".synthetic"):
            custom = [
                e for e in gx_suite.expectations if isinstance(e, ExpectTrainingCopyShareToBeAtMost)
            ]
            assert (
                len(custom) == 1
                and custom[0].column == COPY_INDICATOR_COLUMN
                and custom[0].max_value == 0.02
            )
        back = gx_suite_to_dict(gx_suite)
        # GE only adds its version to meta; everything else is identical
        version = back["meta"].pop("great_expectations_version")
        assert version.startswith("1.")
        assert back == suite


def test_invalid_expectation_is_a_config_error_not_silently_dropped():
    suite = build_input_suite(SPEC)
    suite["expectations"].append({"type": "expect_no_such_thing", "kwargs": {}})
    with pytest.raises(ConfigError, match="expect_no_such_thing"):
        gx_suite_from_dict(suite)


def test_committed_adult_suites_are_up_to_date():
    spec_ = importlib.util.spec_from_file_location(
        "expectations_build", ROOT / "expectations" / "build.py"
    )
    build = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(build)
    built = build.suites()
    assert {p.name for p in built} == {"adult.input.json", "adult.synthetic.json"}
    for path, suite in built.items():
        assert load_suite(path) == suite, f"{path.name} is stale: run python expectations/build.py"
    # and it follows the example config's gate threshold
    cfg = load_release_config(ROOT / "examples" / "adult.yaml")
    assert built[ROOT / "expectations" / "adult.synthetic.json"] == build_synthetic_suite(
        cfg.dataset.spec, max_copy_share=cfg.gate.max_verbatim_copy_share
    )


def test_load_suite_errors_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="nope.json: expectation suite file not found"):
        load_suite(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="bad.json: not valid JSON"):
        load_suite(bad)
    bad.write_text(json.dumps({"name": "x", "expectations": [{"kwargs": {}}]}))
    with pytest.raises(ConfigError, match=r"bad.json: .*expectations\[0\]"):
        load_suite(bad)
    suite = build_input_suite(SPEC)
    suite["expectations"][0]["type"] = "expect_no_such_thing"
    dump_suite(suite, bad)
    with pytest.raises(
        ConfigError,
        match=r"bad.json: suite 'toy.input': expectations\[0\] \('expect_no_such_thing'\)",
    ):
        load_suite(bad)
    good = tmp_path / "good.json"
    dump_suite(build_input_suite(SPEC), good)
    assert load_suite(good) == build_input_suite(SPEC)


# --------------------------------------------------------------------------- input validation


def test_input_suite_passes_on_clean_data():
    report = validate_input(make_table(), SPEC)
    assert report.success, report.failures()
    assert report.suite_name == "toy.input"
    assert report.failures() == []
    assert len(report.results) == len(build_input_suite(SPEC)["expectations"])
    report.raise_if_failed("input data")  # no exception
    assert report.metrics() == {"validation.input.success": 1.0, "validation.input.failed": 0.0}


def test_input_out_of_range_values():
    df = make_table()
    df.loc[[3, 7], "age"] = [5.0, 130.0]
    df.loc[11, "visit"] = pd.Timestamp("1990-05-01")
    lines = failures_of(validate_input(df, SPEC))
    assert lines == [
        "column 'age': 2 value(s) outside [17, 90]",
        "column 'visit': 1 value(s) outside [2000-01-01, 2030-01-01]",
    ]
    age = next(
        r for r in validate_input(df, SPEC).results if r.column == "age" and r.unexpected_count
    )
    assert age.unexpected_percent == pytest.approx(1.0)  # 2 of 200


def test_input_unknown_category_and_null_in_non_nullable():
    df = make_table()
    df.loc[0, "color"] = "purple"
    df.loc[[1, 2], "sex"] = None
    lines = failures_of(validate_input(df, SPEC))
    assert lines == [
        "column 'color': 1 value(s) not among the 3 allowed categories",
        "column 'sex': 2 missing value(s) in a non-nullable column",
    ]


def test_input_schema_problems_and_all_missing_column():
    df = make_table().drop(columns=["grade"])
    df["extra"] = 1.0
    df["color"] = None  # entirely missing (conform would refuse it; the suite catches it too)
    df.loc[5, "pid"] = None  # entity column must not be null
    lines = failures_of(validate_input(df, SPEC))
    assert (
        "columns do not match the spec: missing column(s) ['grade']; 1 column(s) not in the spec"
        in lines
    )
    assert "column 'color': only missing values" in lines
    assert "column 'pid': 1 missing value(s) in a non-nullable column" in lines


def test_raise_if_failed_names_suite_and_failures():
    df = make_table()
    df.loc[0, "color"] = "purple"
    report = validate_input(df, SPEC)
    with pytest.raises(ValidationFailed) as info:
        report.raise_if_failed("input data")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg == (
        "input data: suite 'toy.input' failed 1 expectation(s): column 'color': 1 value(s) not "
        "among the 3 allowed categories"
    )
    assert info.value.failures == report.failures()


def test_validate_with_a_loaded_suite(tmp_path):
    path = tmp_path / "toy.input.json"
    dump_suite(build_input_suite(SPEC), path)
    assert validate_input(make_table(), SPEC, suite=load_suite(path)).success


# --------------------------------------------------------------------------- synthetic validation


def test_copy_share_passes_without_copies():
    train, synthetic = make_table(seed=1), make_table(seed=2)
    assert copy_indicator(synthetic, train, SPEC).sum() == 0
    report = validate_synthetic(synthetic, train, SPEC, max_copy_share=0.01)
    assert report.success, report.failures()
    assert report.suite_name == "toy.synthetic"
    copy = next(r for r in report.results if r.expectation_type == COPY_SHARE_EXPECTATION)
    assert copy.success and copy.observed == 0.0 and copy.column is None
    assert (
        COPY_INDICATOR_COLUMN not in synthetic.columns
    )  # the helper column lives only in GE's batch
    assert synthetic["visit"].dtype.kind == "M"  # datetimes were converted on a copy


def test_copy_share_fails_at_20_percent_copies():
    train, synthetic = make_table(seed=1), make_table(seed=2)
    synthetic.iloc[:40] = train.iloc[50:90].to_numpy()  # 40 of 200 rows copied verbatim
    synthetic["pid"] = [f"s{i}" for i in range(len(synthetic))]  # fresh ids do not hide copies
    report = validate_synthetic(synthetic, train, SPEC, max_copy_share=0.01)
    copy = next(r for r in report.results if r.expectation_type == COPY_SHARE_EXPECTATION)
    assert not copy.success and copy.observed == pytest.approx(0.2)
    assert failures_of(report) == [
        "20% of synthetic rows are verbatim copies of training rows (max 1%)"
    ]
    assert report.metrics() == {
        "validation.synthetic.success": 0.0,
        "validation.synthetic.failed": 1.0,
        "validation.synthetic.copy_share": pytest.approx(0.2),
    }
    # the same data passes a looser threshold
    assert validate_synthetic(synthetic, train, SPEC, max_copy_share=0.25).success


def test_synthetic_domain_checks():
    train, synthetic = make_table(seed=1), make_table(seed=2)
    synthetic.loc[0, "age"] = 200.0
    synthetic.loc[1, "grade"] = "4"
    lines = failures_of(validate_synthetic(synthetic, train, SPEC))
    assert lines == [
        "column 'age': 1 value(s) outside [17, 90]",
        "column 'grade': 1 value(s) not among the 3 allowed categories",
    ]


def test_synthetic_with_reserved_or_missing_columns_is_a_data_error():
    train, synthetic = make_table(seed=1), make_table(seed=2)
    with pytest.raises(DataError, match="reserved"):
        validate_synthetic(synthetic.assign(**{COPY_INDICATOR_COLUMN: 0.0}), train, SPEC)
    with pytest.raises(DataError, match=r"synthetic data: column\(s\) \['age'\]"):
        validate_synthetic(synthetic.drop(columns=["age"]), train, SPEC)


# --------------------------------------------------------------------------- privacy of reports


def test_report_contains_no_raw_values():
    secrets = [
        "SECRET-VALUE-123",
        "SECRET-COLUMN-777",
        "SECRET-CAST-999",
        "424242.5",
        "424242",
        "SECRET-ID-55",
    ]
    df = make_table()
    df.loc[0, "color"] = "SECRET-VALUE-123"  # unknown category
    df.loc[1, "age"] = 424242.5  # out of range
    df.loc[2, "sex"] = "SECRET-VALUE-123"
    df["SECRET-COLUMN-777"] = 1.0  # a column not in the spec (a header can be a record)
    df.loc[3, "pid"] = "SECRET-ID-55"
    report = validate_input(df, SPEC)
    assert not report.success
    # a numeric column holding a string makes GE raise; its message could quote the value
    df2 = make_table().astype({"age": object})
    df2.loc[4, "age"] = "SECRET-CAST-999"
    report2 = validate_input(df2, SPEC)
    assert not report2.success
    assert any("could not be evaluated" in line for line in report2.failures())

    train = make_table(seed=1)
    synthetic = df.drop(columns=["SECRET-COLUMN-777"])
    synthetic.iloc[10:20] = train.iloc[10:20].to_numpy()
    report3 = validate_synthetic(synthetic, train, SPEC)
    assert not report3.success

    for rep in (report, report2, report3):
        text = json.dumps(rep.to_dict())
        for secret in secrets:
            assert secret not in text, (secret, rep.failures())
        # observed is only ever an aggregate rate
        for r in rep.results:
            assert r.observed is None or 0.0 <= r.observed <= 1.0


def test_the_same_bytes_and_suite_are_checked_once_and_any_change_runs_the_checkpoint(monkeypatch):
    """A process that validates the same batch against the same suite again gets the same report
    without a second checkpoint run; one changed cell, dtype or suite threshold runs it again."""
    import privacy_gate.validation.run as run

    calls = []
    real = run._checkpoint
    monkeypatch.setattr(
        run, "_checkpoint", lambda frame, suite: calls.append(1) or real(frame, suite)
    )
    monkeypatch.setattr(run, "_MEMO", type(run._MEMO)())
    suite = {
        "name": "memo.input",
        "expectations": [
            {
                "type": "expect_column_values_to_be_between",
                "kwargs": {"column": "a", "min_value": 0, "max_value": 10},
            }
        ],
    }
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    first = run._run(frame, suite)
    assert run._run(frame.copy(), suite) is first and len(calls) == 1
    changed = frame.copy()
    changed.loc[2, "a"] = 30.0
    assert run._run(changed, suite).success is False and len(calls) == 2
    assert run._run(frame.astype("int64"), suite).success and len(calls) == 3
    wider = {
        **suite,
        "expectations": [
            {
                **suite["expectations"][0],
                "kwargs": {"column": "a", "min_value": 0, "max_value": 100},
            }
        ],
    }
    assert run._run(changed, wider).success and len(calls) == 4
