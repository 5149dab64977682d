"""Messy variants of the real-table corpus, through the command line
(``privacy-gate gate``, default judging, in process with ``--orchestrator local``).

- **Awkward but ordinary names.** Two corpus tables are written the way exports from other tools
  look: column names with spaces, parentheses, slashes, commas, a dash, accents, Greek letters and
  currency signs (``annual income (US$)``, ``debt/income``, ``État (US state)``, ``κ FLC (mg/L)``,
  ``âge (années)``), and the category value ``.`` (loans: the purpose "other" coded ``.``; flchain:
  the missing cause of death written ``.``, as SAS and Stata exports write a missing value). The
  independent release runs to its normal verdict, APPROVE (exit 0), is published with the names
  and the ``.`` value intact, and ``.`` is recorded as a subgroup of its own; the copy is a BLOCK
  (exit 4), nothing published.
- **Refusals** (loans): a synthetic file still carrying the source's column name, a contradictory
  ordinal, bins outside the range, a subgroup and a quasi-identifier naming a column the spec does
  not have. Each exits 2 before anything runs, in one ``error:`` line naming the column and the
  setting (the option or the spec key); no workdir is created, so nothing is published.
- **Bad values** are found by the run, not before it (docs/configuration.md, "The spec against the
  data": only the header is read before the run): text in a numeric column and a category value
  the spec's public list lacks are a BLOCK (exit 4, status ``invalid_input``) naming the file, the
  column and what the spec declares, never quoting the value, nothing published.

Measured on the 2-core machine shared with other jobs: a gate through the command line (with its
MLflow record, HTML report and publication) 9-22 s, a refusal or bad-value BLOCK under 2 s; the
module's 10 tests 39 s in one process (``docs/corpus.md``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.names import key_segment, subgroup_metric

from .tables import corpus_release


@dataclass(frozen=True)
class Messy:
    renamed: dict[str, str]  # source column -> the awkward name the export uses
    recoded: dict[str, dict[str, str]] = field(default_factory=dict)  # column -> {value: code}
    dot_for_missing: tuple[
        str, ...
    ] = ()  # categorical columns whose missing values are written "."
    subgroups: tuple[str, ...] = ()  # (awkward) columns audited per value, so "." becomes a group
    dot_column: str = ""  # the (awkward) column holding the value "."


MESSY = {
    "loans": Messy(
        renamed={
            "annual_income": "annual income (US$)",
            "annual_income_joint": "annual income, joint (US$)",
            "loan_amount": "loan amount $",
            "interest_rate": "interest rate (%)",
            "debt_to_income": "debt/income",
            "emp_length": "emp. length (years)",
            "state": "État (US state)",
            "homeownership": "home ownership – tenure",
            "loan_purpose": "loan purpose",
            "months_since_last_delinq": "months since last delinquency (#)",
        },
        recoded={"loan_purpose": {"other": "."}},
        subgroups=("home ownership – tenure", "loan purpose"),
        dot_column="loan purpose",
    ),
    "flchain": Messy(
        renamed={
            "age": "âge (années)",
            "sample.yr": "sample year",
            "kappa": "κ FLC (mg/L)",
            "lambda": "λ FLC (mg/L)",
            "flc.grp": "FLC group (1/10)",
            "creatinine": "créatinine (mg/dL)",
            "futime": "follow-up (days)",
            "chapter": "cause of death (ICD chapter)",
        },
        dot_for_missing=("chapter",),
        subgroups=("sex", "cause of death (ICD chapter)"),
        dot_column="cause of death (ICD chapter)",
    ),
}
PARTS = ("train", "holdout", "reference", "independent", "copy")


def _messy_frame(df: pd.DataFrame, messy: Messy) -> pd.DataFrame:
    df = df.copy()
    for column, codes in messy.recoded.items():
        df[column] = df[column].replace(codes)
    for column in messy.dot_for_missing:
        df[column] = df[column].fillna(".")
    return df.rename(columns=messy.renamed)


def _messy_spec(spec, messy: Messy) -> dict:
    raw = spec.model_dump(mode="json", exclude_none=True)
    name = lambda c: messy.renamed.get(c, c)  # noqa: E731
    columns = {}
    for column, col in raw["columns"].items():
        if col.get("categories"):
            codes = messy.recoded.get(column, {})
            col["categories"] = sorted(codes.get(v, v) for v in col["categories"])
        if column in messy.dot_for_missing:
            col["categories"] = sorted([*col["categories"], "."])
            col["nullable"] = False
        columns[name(column)] = col
    raw["columns"] = columns
    for key in ("quasi_identifiers", "sensitive"):
        if raw.get(key):
            raw[key] = [name(c) for c in raw[key]]
    raw["subgroups"] = list(messy.subgroups)
    return raw


@pytest.fixture(scope="module")
def messy_files(tmp_path_factory) -> dict[str, Path]:
    """Per messy table, a folder with train / holdout / reference / independent / copy CSV files and
    ``spec.yaml``, all with the awkward names and codes."""
    folders = {}
    for table, messy in MESSY.items():
        rel = corpus_release(table)
        folder = tmp_path_factory.mktemp(f"messy-{table}")
        for part in PARTS:
            _messy_frame(getattr(rel, part), messy).to_csv(folder / f"{part}.csv", index=False)
        (folder / "spec.yaml").write_text(
            yaml.safe_dump(_messy_spec(rel.spec, messy), allow_unicode=True)
        )
        folders[table] = folder
    return folders


def _gate(
    folder: Path, workdir: Path, *, release: str = "independent", **files: Path
) -> tuple[int, str, str]:
    """``privacy-gate gate`` on ``folder``'s files (``release``: the synthetic file's stem), any of
    them replaced by ``files``."""
    paths = {p: folder / f"{p}.csv" for p in ("train", "holdout", "reference")}
    paths["synthetic"] = folder / f"{release}.csv"
    paths["spec"] = folder / "spec.yaml"
    paths.update(files)
    args = [
        "gate",
        *(a for k, p in paths.items() for a in (f"--{k}", str(p))),
        "--workdir",
        str(workdir),
        "--json",
        "--orchestrator",
        "local",
    ]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _summary(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


# --------------------------------------------------------------- awkward names: the normal verdicts


@pytest.mark.parametrize("table", list(MESSY))
def test_awkward_names_and_a_dot_category_run_to_approve(table, messy_files, tmp_path):
    messy, folder = MESSY[table], messy_files[table]
    code, out, err = _gate(folder, tmp_path)
    summary = _summary(out)
    assert (code, summary["verdict"], summary["status"]) == (0, "APPROVE", "ok"), (
        summary["reasons"],
        err[-3000:],
    )
    (published,) = (tmp_path / "published").glob("*/*.parquet")
    release = pd.read_parquet(published)
    spec = yaml.safe_load((folder / "spec.yaml").read_text())
    assert list(release.columns) == list(spec["columns"])  # every awkward name kept, in order
    assert set(messy.renamed.values()) <= set(release.columns)
    assert (release[messy.dot_column] == ".").any()  # "." is a value, not read as missing
    # "." is its own subgroup, recorded under its own key (not a path step, not merged with "_")
    dot_key = subgroup_metric((messy.dot_column,), (".",), "n_members")
    assert dot_key in summary["metrics"], sorted(
        k for k in summary["metrics"] if key_segment(messy.dot_column) in k
    )


def test_a_copy_with_awkward_names_is_blocked(messy_files, tmp_path):
    code, out, err = _gate(messy_files["loans"], tmp_path, release="copy")
    summary = _summary(out)
    assert (code, summary["verdict"], summary["status"]) == (4, "BLOCK", "ok"), (
        summary["reasons"],
        err[-3000:],
    )
    assert any(r["metric"] == "auc" and r["action"] == "block" for r in summary["reasons"])
    assert not (tmp_path / "published").exists()
    assert list((tmp_path / "quarantine").rglob("synthetic.parquet"))


# ----------------------------------------------------------------- refusals: exit 2, before the run


def _spec_change(change):
    def write(folder: Path, tmp_path: Path) -> dict[str, Path]:
        raw = yaml.safe_load((folder / "spec.yaml").read_text())
        change(raw)
        (tmp_path / "spec.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
        return {"spec": tmp_path / "spec.yaml"}

    return write


def _synthetic_with_source_name(folder: Path, tmp_path: Path) -> dict[str, Path]:
    """The release another tool wrote from the source table: one column under its original name."""
    frame = pd.read_csv(folder / "independent.csv").rename(
        columns={"interest rate (%)": "interest_rate"}
    )
    frame.to_csv(tmp_path / "synthetic.csv", index=False)
    return {"synthetic": tmp_path / "synthetic.csv"}


# (id, the change, what the one error line must hold: the column and the setting)
REFUSALS = [
    (
        "synthetic-header",
        _synthetic_with_source_name,
        [
            "--synthetic",
            "column(s) ['interest rate (%)'] of spec 'loans' are missing",
            "column(s) ['interest_rate'] are not in spec 'loans'",
        ],
    ),
    (
        "ordinal-range-and-categories",
        _spec_change(
            lambda r: r["columns"].update(
                {
                    "emp. length (years)": {
                        "kind": "ordinal",
                        "min": 0,
                        "max": 10,
                        "categories": list(range(11)),
                    }
                }
            )
        ),
        ["columns.emp. length (years)", "'min' and 'max' contradict 'categories'"],
    ),
    (
        "bins-outside-range",
        _spec_change(
            lambda r: r["columns"].update(
                {
                    "interest rate (%)": {
                        "kind": "numeric",
                        "min": 0,
                        "max": 40,
                        "bins": [50, 60, 70],
                    }
                }
            )
        ),
        ["columns.interest rate (%)", "'bins' (50 to 70) contradict 'min'/'max' (0 to 40)"],
    ),
    (
        "subgroup-source-name",
        _spec_change(lambda r: r.update(subgroups=["home ownership – tenure", "loan_purpose"])),
        ["subgroups", "unknown column 'loan_purpose'"],
    ),
    (
        "quasi-identifier-unknown",
        _spec_change(lambda r: r.update(quasi_identifiers=["State", "annual income (US$)"])),
        ["quasi_identifiers", "unknown column 'State'"],
    ),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[c[0] for c in REFUSALS])
def test_a_refusal_exits_2_naming_the_column_and_the_setting(case, messy_files, tmp_path):
    _, change, needles = case
    files = change(messy_files["loans"], tmp_path)
    code, out, err = _gate(messy_files["loans"], tmp_path / "wd", **files)
    assert code == 2 and out == "", (code, err[-2000:])
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error:")]
    for needle in needles:
        assert needle in line, line
    assert "Traceback" not in err
    assert not (tmp_path / "wd").exists()  # nothing started, nothing published


# -------------------------------------------------------------- bad values: BLOCK, found by the run

PLANTED = "12.5 pct"  # a value no real record holds: it must not be quoted anywhere


def _text_in_numeric(folder: Path, tmp_path: Path) -> dict[str, Path]:
    train = pd.read_csv(folder / "train.csv")
    train["interest rate (%)"] = train["interest rate (%)"].astype(object)
    train.loc[[3, 50, 700], "interest rate (%)"] = PLANTED
    train.to_csv(tmp_path / "train.csv", index=False)
    return {"train": tmp_path / "train.csv"}


BAD_VALUES = [
    (
        "text-in-numeric",
        _text_in_numeric,
        ["train.csv: column 'interest rate (%)' is numeric but 3 value(s) are not numbers"],
    ),
    (
        "dot-not-in-public-categories",
        _spec_change(
            lambda r: r["columns"]["loan purpose"].update(
                categories=[v for v in r["columns"]["loan purpose"]["categories"] if v != "."]
            )
        ),
        ["column 'loan purpose'", "value(s) not among the 11 allowed categories"],
    ),
]


@pytest.mark.parametrize("case", BAD_VALUES, ids=[c[0] for c in BAD_VALUES])
def test_a_bad_value_blocks_naming_the_column_without_quoting_it(case, messy_files, tmp_path):
    _, change, needles = case
    files = change(messy_files["loans"], tmp_path)
    code, out, err = _gate(messy_files["loans"], tmp_path / "wd", **files)
    summary = _summary(out)
    assert (code, summary["verdict"], summary["status"]) == (4, "BLOCK", "invalid_input"), summary[
        "reasons"
    ]
    (reason,) = summary["reasons"]
    for needle in needles:
        assert needle in reason["message"], reason["message"]
    assert PLANTED not in out + err and "Traceback" not in err
    assert not (tmp_path / "wd" / "published").exists()
