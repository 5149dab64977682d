"""Inputs checked early and all at once.

- A data file whose header does not match the spec is refused before anything runs (exit 2), in
  one line naming every file and every missing and extra column; it used to be found 25-35 s into
  the run and end BLOCK (exit 4), one file and one kind of problem at a time.
- Every data check names every offending column at once (22 bad columns: 22 names, not the first).
- A spec that contradicts itself (an ordinal with both a range and a category list, ...) is refused
  when it is loaded, naming the column and the conflicting keys.
- Input budgets (``inputs``: bytes per file, columns, bytes per field) are checked from the file's
  size, header and one pass over its bytes, before it is parsed: exit 2 naming the file, the figure
  and the setting. A 10,050-column table used to sit in Great Expectations for minutes; a single
  huge field ran to APPROVE at 20 times the file's size in memory.
- Large validations say how far they are.
"""

from __future__ import annotations

import copy
import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.config import load_spec
from privacy_gate.data import conform, read_table
from privacy_gate.errors import ConfigError, DataError

from .conftest import EXAMPLE, lighten

runner = CliRunner()
BASE = yaml.safe_load(EXAMPLE.read_text())
SPEC = BASE["dataset"]["spec"]
SECRET = "TOPSECRETVALUE"


def _invoke(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args, catch_exceptions=False)
    return result.exit_code, result.stderr + result.stdout


def _errors(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("error:")]


@pytest.fixture(scope="module")
def files(small_adult, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    real = pd.read_csv(small_adult / "real.csv")
    for name, part in {
        "train": real.iloc[:1800],
        "holdout": real.iloc[1800:2400],
        "reference": real.iloc[2400:],
    }.items():
        part.to_csv(folder / f"{name}.csv", index=False)
    pd.read_csv(small_adult / "independent.csv").to_csv(folder / "synthetic.csv", index=False)
    (folder / "spec.yaml").write_text(yaml.safe_dump(SPEC))
    return folder


def _gate(folder: Path, workdir: Path, *extra: str, **files: Path) -> list[str]:
    paths = {k: folder / f"{k}.csv" for k in ("train", "holdout", "reference", "synthetic")}
    paths["spec"] = folder / "spec.yaml"
    paths.update(files)
    return [
        "gate",
        *(a for k, p in paths.items() for a in (f"--{k}", str(p))),
        "--workdir",
        str(workdir),
        "--orchestrator",
        "local",
        *extra,
    ]


def _judging(tmp_path: Path, **inputs) -> Path:
    cfg = tmp_path / "judging.yaml"
    cfg.write_text(yaml.safe_dump(lighten({"attacks": [{"name": "dcr"}], "inputs": inputs})))
    return cfg


# -------------------------------------------------------------- item 4: the header, before any work


def test_gate_refuses_a_column_mismatch_in_every_file_at_once_before_the_run(files, tmp_path):
    train = pd.read_csv(files / "train.csv").drop(columns=["age"]).assign(ssn=1)
    train.to_csv(tmp_path / "train.csv", index=False)
    synthetic = (
        pd.read_csv(files / "synthetic.csv")
        .drop(columns=["race", "sex"])
        .assign(colour="x", shade=2)
    )
    synthetic.to_csv(tmp_path / "synthetic.csv", index=False)
    start = time.perf_counter()
    code, output = _invoke(
        _gate(
            files,
            tmp_path / "wd",
            train=tmp_path / "train.csv",
            synthetic=tmp_path / "synthetic.csv",
        )
    )
    assert code == 2, output[-2000:]
    assert time.perf_counter() - start < 20
    errors = _errors(output)
    assert len(errors) == 1, output
    line = errors[0]
    for needle in (
        f"--train {tmp_path / 'train.csv'}: column(s) ['age'] of spec 'adult' are missing",
        "column(s) ['ssn'] are not in spec 'adult'",
        f"--synthetic {tmp_path / 'synthetic.csv'}: column(s) ['race', 'sex'] of spec 'adult' are "
        "missing",
        "column(s) ['colour', 'shade'] are not in spec 'adult'",
    ):
        assert needle in line, line
    assert "--holdout" not in line and "--reference" not in line
    assert "Traceback" not in output
    assert not (tmp_path / "wd").exists()  # nothing started


def test_a_parquet_header_is_read_from_its_footer(files, tmp_path):
    pd.read_csv(files / "synthetic.csv").drop(columns=["income"]).to_parquet(
        tmp_path / "s.parquet", index=True
    )
    code, output = _invoke(_gate(files, tmp_path / "wd", synthetic=tmp_path / "s.parquet"))
    assert code == 2 and len(_errors(output)) == 1, output[-2000:]
    assert "column(s) ['income'] of spec 'adult' are missing" in output
    assert "not in spec" not in output  # the index pandas stored is not a column
    assert not (tmp_path / "wd").exists()


def test_run_refuses_a_data_file_that_does_not_match_the_spec(small_adult, tmp_path):
    real = (
        pd.read_csv(small_adult / "real.csv").iloc[:1200].drop(columns=["age", "sex"]).assign(ssn=1)
    )
    real.to_csv(tmp_path / "real.csv", index=False)
    raw = copy.deepcopy(BASE)
    raw["dataset"]["path"] = str(tmp_path / "real.csv")
    (tmp_path / "release.yaml").write_text(yaml.safe_dump(raw))
    code, output = _invoke(
        [
            "run",
            str(tmp_path / "release.yaml"),
            "--workdir",
            str(tmp_path / "wd"),
            "--orchestrator",
            "local",
        ]
    )
    assert code == 2, output[-2000:]
    errors = _errors(output)
    assert len(errors) == 1 and f"dataset.path {tmp_path / 'real.csv'}" in errors[0], output
    assert (
        "['age', 'sex'] of spec 'adult' are missing" in errors[0]
        and "['ssn'] are not in spec" in errors[0]
    )
    assert not (tmp_path / "wd").exists()


# ------------------------------------------------------------------ item 4: every offending column


def _bad_columns(n_rows: int = 300) -> tuple[pd.DataFrame, dict]:
    """22 offending columns of four kinds, and a good one."""
    rng = np.random.default_rng(0)
    data, columns = {"ok": rng.normal(size=n_rows)}, {"ok": {"kind": "numeric"}}
    for i in range(8):  # identifiers declared categorical
        data[f"ident_{i}"] = [f"{SECRET}-{i}-{r}" for r in range(n_rows)]
        columns[f"ident_{i}"] = {"kind": "categorical"}
    for i in range(8):  # text in a numeric column
        data[f"number_{i}"] = [SECRET if r % 7 == 0 else str(r) for r in range(n_rows)]
        columns[f"number_{i}"] = {"kind": "numeric"}
    for i in range(3):
        data[f"empty_{i}"] = [None] * n_rows
        columns[f"empty_{i}"] = {"kind": "numeric"}
    for i in range(3):
        data[f"inf_{i}"] = np.where(np.arange(n_rows) < 2, np.inf, 1.0)
        columns[f"inf_{i}"] = {"kind": "numeric"}
    return pd.DataFrame(data), {"name": "bad", "columns": columns}


def test_conform_reports_every_offending_column_at_once():
    from privacy_gate.spec import DatasetSpec

    df, spec = _bad_columns()
    with pytest.raises(DataError) as err:
        conform(df, DatasetSpec.model_validate(spec), source="bad.csv")
    msg = str(err.value)
    bad = [c for c in spec["columns"] if c != "ok"]
    assert len(bad) == 22
    missing = [c for c in bad if f"'{c}'" not in msg]
    assert not missing, f"not named: {missing}\n{msg}"
    assert msg.startswith("bad.csv: ") and "8 columns look like identifiers" in msg
    assert "column 'number_3' is numeric but 43 value(s) are not numbers" in msg
    assert (
        "column 'empty_1' has only missing values" in msg
        and "column 'inf_2' has 2 infinite value(s)" in msg
    )
    assert SECRET not in msg


def test_the_gate_blocks_naming_all_22_bad_columns(files, tmp_path):
    df, spec = _bad_columns(2400)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    parts = {
        "train": df.iloc[:1200],
        "holdout": df.iloc[1200:1800],
        "reference": df.iloc[1800:],
        "synthetic": df.iloc[1800:],
    }
    for name, part in parts.items():
        part.to_csv(tmp_path / f"{name}.csv", index=False)
    args = _gate(
        tmp_path, tmp_path / "wd", "--config", str(_judging(tmp_path)), spec=tmp_path / "spec.yaml"
    )
    code, output = _invoke(args)
    assert code == 4, output[-2000:]
    lines = [ln for ln in output.splitlines() if "look like identifiers" in ln]
    assert lines, output[-3000:]
    missing = [c for c in spec["columns"] if c != "ok" and not any(f"'{c}'" in ln for ln in lines)]
    assert not missing, f"not named: {missing}"
    assert SECRET not in output and "Traceback" not in output
    assert not (tmp_path / "wd" / "published").exists()


def test_the_encoder_names_every_over_wide_column():
    from privacy_gate.data.encoding import MixedEncoder
    from privacy_gate.spec import DatasetSpec

    spec = DatasetSpec.model_validate(
        {
            "name": "w",
            "max_categories": 10,
            "columns": {
                "a": {"kind": "categorical"},
                "b": {"kind": "categorical"},
                "c": {"kind": "categorical"},
            },
        }
    )
    df = pd.DataFrame(
        {"a": [f"a{i}" for i in range(40)], "b": [f"b{i % 20}" for i in range(40)], "c": ["x"] * 40}
    )
    with pytest.raises(DataError) as err:
        MixedEncoder(spec=spec).fit(df)
    assert (
        "'a' (40)" in str(err.value)
        and "'b' (20)" in str(err.value)
        and "'c'" not in str(err.value)
    )


# ------------------------------------------------------------------ item 4: contradictory specs


def _spec_with(tmp_path: Path, change) -> Path:
    raw = copy.deepcopy(SPEC)
    change(raw)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


CONTRADICTIONS = [
    (
        "ordinal-range-and-categories",
        lambda r: r["columns"].update(
            education_num={"kind": "ordinal", "min": 1, "max": 16, "categories": list(range(1, 17))}
        ),
        ["columns.education_num", "'min' and 'max' contradict 'categories'"],
    ),
    (
        "ordinal-min-and-categories",
        lambda r: r["columns"].update(
            education_num={"kind": "ordinal", "min": 1, "categories": [1, 2, 3]}
        ),
        ["columns.education_num", "'min' contradict 'categories'"],
    ),
    (
        "ordinal-bins-and-categories",
        lambda r: r["columns"].update(
            education_num={"kind": "ordinal", "bins": [0, 8, 16], "categories": [1, 2]}
        ),
        ["columns.education_num", "'bins' contradict 'categories'"],
    ),
    (
        "bins-outside-range",
        lambda r: r["columns"].update(
            age={"kind": "numeric", "min": 17, "max": 90, "bins": [100, 120, 140]}
        ),
        ["columns.age", "'bins' (100 to 140) contradict 'min'/'max' (17 to 90)"],
    ),
    (
        "entity-as-subgroup",
        lambda r: r.update(entity_id="native_country", subgroups=["sex", "native_country"]),
        ["subgroups names the entity_id 'native_country'"],
    ),
    (
        "subgroup-twice",
        lambda r: r.update(subgroups=["sex", "race", "sex"]),
        ["subgroups lists a column more than once"],
    ),
    (
        "source-is-entity",
        lambda r: r.update(entity_id="native_country", source="native_country"),
        ["source and entity_id are both 'native_country'"],
    ),
]


@pytest.mark.parametrize("case", CONTRADICTIONS, ids=[c[0] for c in CONTRADICTIONS])
def test_a_contradictory_spec_is_refused_when_loaded(case, tmp_path):
    _, change, needles = case
    path = _spec_with(tmp_path, change)
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    for needle in needles:
        assert needle in str(err.value), str(err.value)
    assert str(err.value).startswith(str(path))


def test_gate_refuses_an_ordinal_with_a_range_and_categories_before_the_run(files, tmp_path):
    spec = _spec_with(tmp_path, CONTRADICTIONS[0][1])
    start = time.perf_counter()
    code, output = _invoke(_gate(files, tmp_path / "wd", spec=spec))
    assert code == 2 and time.perf_counter() - start < 20, output[-2000:]
    (line,) = _errors(output)
    assert "columns.education_num" in line and "'min' and 'max' contradict 'categories'" in line
    assert not (tmp_path / "wd").exists()


# ------------------------------------------------------------------ item 6: budgets before parsing


def _wide(
    folder: Path, n_columns: int, n_rows: int = 60, *, spec_columns: int | None = None
) -> dict[str, Path]:
    rng = np.random.default_rng(1)
    names = [f"x{i}" for i in range(n_columns)]
    out = {}
    for k in ("train", "holdout", "reference", "synthetic"):
        pd.DataFrame(rng.normal(size=(n_rows, n_columns)).round(3), columns=names).to_csv(
            folder / f"{k}.csv", index=False
        )
        out[k] = folder / f"{k}.csv"
    n_spec = n_columns if spec_columns is None else spec_columns
    (folder / "spec.yaml").write_text(
        yaml.safe_dump(
            {"name": "wide", "columns": {f"x{i}": {"kind": "numeric"} for i in range(n_spec)}}
        )
    )
    out["spec"] = folder / "spec.yaml"
    return out


def _subprocess_gate(args: list[str], timeout: float) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    try:
        out = subprocess.run(
            [sys.executable, "-m", "privacy_gate.cli", *args],
            capture_output=True,
            text=True,
            check=False,
            env=env,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"still running after {timeout:.0f} s (the budget is checked before validation)"
        )
    return out.returncode, out.stderr + out.stdout


def test_a_table_wider_than_10000_columns_is_refused_at_once(tmp_path):
    """The issue's 10,050 columns: refused from the spec before any file is read, and a file that
    wide is refused from its header (not listed as 10,040 extra columns)."""
    paths = _wide(tmp_path, 10_050)
    start = time.perf_counter()
    code, output = _subprocess_gate(_gate(tmp_path, tmp_path / "wd", **paths), timeout=120)
    assert code == 2, output[-2000:]
    assert time.perf_counter() - start < 60
    (line,) = _errors(output)
    assert (
        f"--spec {paths['spec']}: spec 'wide' has 10,050 columns, more than inputs.max_columns "
        "(10,000)"
    ) in line
    assert "raise inputs.max_columns in a --config file" in line
    assert not (tmp_path / "wd").exists()

    narrow = tmp_path / "narrow"
    narrow.mkdir()
    paths = _wide(narrow, 10_050, spec_columns=10)
    code, output = _invoke(_gate(narrow, narrow / "wd", **paths))
    assert code == 2
    (line,) = _errors(output)
    for k in ("train", "holdout", "reference", "synthetic"):
        assert f"--{k} {paths[k]}: 10,050 columns, more than inputs.max_columns (10,000)" in line, (
            line
        )
    assert "not in spec" not in line and len(line) < 3000


def test_the_width_budget_is_a_setting(tmp_path):
    paths = _wide(tmp_path, 25)
    code, output = _invoke(
        _gate(
            tmp_path, tmp_path / "wd", "--config", str(_judging(tmp_path, max_columns=20)), **paths
        )
    )
    assert code == 2, output[-2000:]
    (line,) = _errors(output)
    assert "spec 'wide' has 25 columns, more than inputs.max_columns (20)" in line
    assert f"raise inputs.max_columns in the --config file {tmp_path / 'judging.yaml'}" in line


def test_a_table_that_encodes_wider_than_10000_features_blocks_before_validation(tmp_path):
    """5,001 nullable numeric columns are 10,002 features (a value and a missing indicator each):
    refused when the tables are read, before Great Expectations spends minutes on them."""
    paths = _wide(tmp_path, 5_001)
    start = time.perf_counter()
    code, output = _subprocess_gate(
        _gate(tmp_path, tmp_path / "wd", "--config", str(_judging(tmp_path)), **paths), timeout=300
    )
    assert code == 4, output[-2000:]
    assert (
        time.perf_counter() - start < 150
    )  # about 35 s alone on 2 cores; validation alone took minutes
    assert (
        "encoding the reference data reference.csv would make 10002 features, more than its "
        "maximum width"
    ) in output
    assert "nullable: false" in output
    assert "validating train data" not in output  # 5,001 columns would print its progress lines
    assert not (tmp_path / "wd" / "published").exists()


def test_a_file_over_the_size_budget_is_refused_naming_file_figure_and_setting(files, tmp_path):
    size = (files / "train.csv").stat().st_size
    code, output = _invoke(
        _gate(files, tmp_path / "wd", "--config", str(_judging(tmp_path, max_file_bytes=size - 1)))
    )
    assert code == 2, output[-2000:]
    (line,) = _errors(output)
    assert (
        f"--train {files / 'train.csv'}: is {size:,} bytes, more than inputs.max_file_bytes "
        f"({size - 1:,})"
    ) in line
    assert f"raise inputs.max_file_bytes in the --config file {tmp_path / 'judging.yaml'}" in line
    assert "--holdout" not in line  # smaller files pass
    assert not (tmp_path / "wd").exists()


def test_a_compressed_file_is_held_to_what_it_decompresses_to(files, tmp_path):
    big = pd.concat([pd.read_csv(files / "train.csv")] * 30, ignore_index=True)
    with gzip.open(tmp_path / "train.csv.gz", "wt") as fh:
        big.to_csv(fh, index=False)
    compressed = (tmp_path / "train.csv.gz").stat().st_size
    budget = 3 * compressed
    code, output = _invoke(
        _gate(
            files,
            tmp_path / "wd",
            "--config",
            str(_judging(tmp_path, max_file_bytes=budget)),
            train=tmp_path / "train.csv.gz",
        )
    )
    assert code == 2, output[-2000:]
    (line,) = _errors(output)
    assert f"--train {tmp_path / 'train.csv.gz'}: decompresses to " in line and "bytes (" in line
    assert f"inputs.max_file_bytes ({budget:,})" in line


def test_a_parquet_file_is_held_to_its_uncompressed_size(files, tmp_path):
    pd.read_csv(files / "synthetic.csv").to_parquet(
        tmp_path / "s.parquet", index=False, compression="gzip", use_dictionary=False
    )  # ten times smaller on disk
    on_disk = (tmp_path / "s.parquet").stat().st_size
    code, output = _invoke(
        _gate(
            files,
            tmp_path / "wd",
            "--config",
            str(_judging(tmp_path, max_file_bytes=on_disk + 1)),
            synthetic=tmp_path / "s.parquet",
        )
    )
    assert code == 2, output[-2000:]
    (line,) = _errors(output)
    assert (
        f"--synthetic {tmp_path / 's.parquet'}: holds " in line
    )  # its footer's figure, not its size on disk
    assert f"bytes of uncompressed data, more than inputs.max_file_bytes ({on_disk + 1:,})" in line


def test_one_huge_field_is_refused_without_quoting_it(files, tmp_path):
    """The issue's 420 MB field, scaled down: 1 MB in one quoted cell (with commas and line breaks
    inside, which do not end it) is refused before parsing, by line and column, never quoted."""
    synthetic = pd.read_csv(files / "synthetic.csv")
    synthetic["occupation"] = synthetic["occupation"].astype(object)
    synthetic.loc[7, "occupation"] = (SECRET + ", \n") * 70_000
    synthetic.to_csv(tmp_path / "synthetic.csv", index=False)
    start = time.perf_counter()
    code, output = _invoke(_gate(files, tmp_path / "wd", synthetic=tmp_path / "synthetic.csv"))
    assert code == 2 and time.perf_counter() - start < 20, output[-2000:]
    (line,) = _errors(output)
    assert (
        f"--synthetic {tmp_path / 'synthetic.csv'}: a field of 1,190,002 bytes or more "
        "(data row 8, column "
        "'occupation'), more than inputs.max_field_bytes (131,072)" in line
    ), line
    assert "raise inputs.max_field_bytes in a --config file" in line
    assert SECRET not in output
    assert not (tmp_path / "wd").exists()


def test_one_huge_parquet_field_is_refused(files, tmp_path):
    synthetic = pd.read_csv(files / "synthetic.csv")
    synthetic["occupation"] = synthetic["occupation"].astype(object)
    synthetic.loc[3, "occupation"] = SECRET * 20_000
    synthetic.to_parquet(tmp_path / "s.parquet", index=False)
    code, output = _invoke(_gate(files, tmp_path / "wd", synthetic=tmp_path / "s.parquet"))
    assert code == 2, output[-2000:]
    (line,) = _errors(output)
    assert (
        f"a field of {len(SECRET) * 20_000:,} bytes (column 'occupation'), more than "
        "inputs.max_field_bytes"
    ) in line
    assert SECRET not in output


def test_the_run_holds_every_file_to_the_budgets_too(files, tmp_path):
    """Library callers, flows and files that changed after the command's check: ``read_table``
    applies the same guards (a DataError, which the run records as an invalid-input BLOCK)."""
    from privacy_gate.config import InputLimits

    with pytest.raises(
        DataError,
        match=r"train.csv: a field of 21 bytes or more \(data row 118, column "
        r"'marital_status'\), more than inputs.max_field_bytes \(20\)",
    ):
        read_table(files / "train.csv", limits=InputLimits(max_field_bytes=20))
    with pytest.raises(DataError, match=r"more than inputs.max_columns \(3\)"):
        read_table(files / "train.csv", limits=InputLimits(max_columns=3))
    assert len(read_table(files / "train.csv", limits=InputLimits())) == 1800


def test_a_stray_quote_is_not_taken_for_a_long_field(tmp_path):
    """A quote inside an unquoted field is literal to CSV readers (pandas, Python's csv): the
    quick scan loses track of quoting after it, so its long field is checked by a reader first."""
    from privacy_gate.config import InputLimits

    rows = ["size,name", '12" pizza,a'] + [f"{i},b{i}" for i in range(5000)]
    (tmp_path / "t.csv").write_text("\n".join(rows) + "\n")
    df = read_table(tmp_path / "t.csv", limits=InputLimits(max_field_bytes=100))
    assert len(df) == 5001 and df.loc[0, "size"] == '12" pizza'
    (tmp_path / "u.csv").write_text("\n".join([*rows, f'1,"{"z" * 500}"']) + "\n")
    with pytest.raises(
        DataError,
        match=r"a field of more than 100 bytes \(data row 5,002\), more than "
        r"inputs.max_field_bytes \(100\)",
    ):
        read_table(tmp_path / "u.csv", limits=InputLimits(max_field_bytes=100))


def test_raised_budgets_also_hold_for_the_split_files_comparison(files, tmp_path):
    """The split files are compared (``check_split_files``) within the --config file's budgets, not
    the defaults: a field over the default budget, allowed by the config, does not skip the
    check."""
    train = pd.read_csv(files / "train.csv")
    train["occupation"] = train["occupation"].astype(object)
    train.loc[5, "occupation"] = "x" * 200_000
    train.to_csv(tmp_path / "train.csv", index=False)
    pd.read_csv(files / "train.csv").iloc[:600].to_csv(
        tmp_path / "holdout.csv", index=False
    )  # train's people
    code, output = _invoke(
        _gate(
            files,
            tmp_path / "wd",
            "--config",
            str(_judging(tmp_path, max_field_bytes=10**6)),
            train=tmp_path / "train.csv",
            holdout=tmp_path / "holdout.csv",
        )
    )
    assert code == 2, output[-2000:]
    (line,) = _errors(output)
    assert "holdout holdout.csv and train train.csv share records" in line, line
    assert not (tmp_path / "wd").exists()


def test_limits_are_validated(tmp_path):
    code, output = _invoke(["check-config", str(_judging(tmp_path, max_columns=20_000))])
    assert code == 2 and "inputs.max_columns" in output and "10000" in output.replace(",", "")
    code, output = _invoke(["check-config", str(_judging(tmp_path, max_file_bytes=0))])
    assert code == 2 and "inputs.max_file_bytes" in output


# ------------------------------------------------------------ item 6: progress on large validations


def test_a_large_validation_reports_progress():
    from privacy_gate.spec import DatasetSpec
    from privacy_gate.validation import validate_input

    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(50, 1_100)), columns=[f"c{i}" for i in range(1_100)])
    spec = DatasetSpec.model_validate(
        {"name": "w", "columns": {c: {"kind": "numeric"} for c in df.columns}}
    )
    lines: list[str] = []
    report = validate_input(df, spec, progress=lines.append)
    assert report.success and len(report.results) == 1_102
    assert lines[0].startswith("50 rows x 1,100 columns, 1,102 expectations")
    assert lines[1].startswith("1,000 of 1,102 expectations checked (91%; 998 of 1,100 columns)")
    assert lines[-1].startswith(
        "1,102 of 1,102 expectations checked (100%; 1,100 of 1,100 columns)"
    )
    # a failure in any part fails the whole report (fail closed)
    bad = df.copy()
    bad.loc[:, "c1050"] = np.nan
    failed = validate_input(bad, spec, progress=lines.append)
    assert not failed.success and [o.column for o in failed.results if not o.success] == ["c1050"]


def test_the_run_prints_validation_progress(files, tmp_path, monkeypatch):
    """In a run, the progress lines of the input validation reach the console (here with parts of
    ten expectations: the run then blocks on a value outside the public range)."""
    import privacy_gate.validation.run as validation_run

    monkeypatch.setattr(validation_run, "PROGRESS_EXPECTATIONS", 10, raising=False)
    train = pd.read_csv(files / "train.csv")
    train.loc[:4, "age"] = 150
    train.to_csv(tmp_path / "train.csv", index=False)
    code, output = _invoke(_gate(files, tmp_path / "wd", train=tmp_path / "train.csv"))
    assert code == 4, output[-2000:]
    assert "validating train data train.csv: 1,800 rows x 15 columns" in output
    assert "validating train data train.csv: 10 of " in output


# ------------------------------------------------------------------ not UTF-8


def _latin1(files: Path, tmp_path: Path, *, row: int = 40, name: str = "synthetic.csv") -> Path:
    """The synthetic table with one value holding an ``é``, saved as latin-1 (a spreadsheet
    export)."""
    synthetic = pd.read_csv(files / "synthetic.csv")
    synthetic["occupation"] = synthetic["occupation"].astype(object)
    synthetic.loc[row - 2, "occupation"] = "Zoé" + SECRET
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wb") as fh:
            fh.write(synthetic.to_csv(index=False).encode("latin-1"))
    else:
        synthetic.to_csv(path, index=False, encoding="latin-1")
    return path


@pytest.mark.parametrize("name", ["synthetic.csv", "synthetic.csv.gz"])
def test_a_latin1_file_is_refused_naming_the_file_and_the_line(files, tmp_path, name):
    """It used to end the run in a BLOCK saying only ``UnicodeDecodeError``."""
    path = _latin1(files, tmp_path, name=name)
    code, output = _invoke(_gate(files, tmp_path / "wd", synthetic=path))
    assert code == 2, output[-2000:]
    (line,) = _errors(output)
    assert f"{path}: not UTF-8 text (line 40 holds a byte sequence that is not UTF-8" in line, line
    assert "save the table as UTF-8" in line and "UnicodeDecodeError" not in output
    assert SECRET not in output and "Zo" not in output
    assert not (tmp_path / "wd").exists()
    with pytest.raises(
        DataError, match="not UTF-8 text"
    ) as caught:  # library callers: the run's BLOCK says so
        read_table(path)
    assert SECRET not in str(caught.value)


def test_a_character_cut_by_a_read_chunk_is_still_utf8(tmp_path, monkeypatch):
    from privacy_gate.data import guards

    monkeypatch.setattr(guards, "_CHUNK", 5)  # every 2-byte é crosses a chunk boundary somewhere
    (tmp_path / "t.csv").write_text(
        "name,n\n" + "".join(f"Zoé{i},{i}\n" for i in range(200)), encoding="utf-8"
    )
    assert len(read_table(tmp_path / "t.csv")) == 200
