"""Running suites with a real Great Expectations 1.x checkpoint.

Each call builds an ephemeral (in-memory) Data Context with a pandas data source, a dataframe
asset, a whole-dataframe batch definition, the suite, a ValidationDefinition and a Checkpoint,
then runs the checkpoint with the dataframe as batch parameter. Nothing is written to disk and
nothing leaves the process. great_expectations is imported lazily (it takes seconds to import),
so ``import privacy_gate.validation`` stays cheap.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from privacy_gate.data.table import row_hashes
from privacy_gate.errors import ConfigError, DataError
from privacy_gate.spec import DatasetSpec
from privacy_gate.validation.report import ExpectationOutcome, ValidationReport, outcome_from_result
from privacy_gate.validation.suites import (
    COPY_INDICATOR_COLUMN,
    build_input_suite,
    build_synthetic_suite,
)

if TYPE_CHECKING:
    import great_expectations as gx

# GE keeps the "current project" in a module-level singleton (gx.get_context sets it), so two
# threads validating at once could see each other's context. Validation is quick; serialise it.
_LOCK = threading.Lock()

# BASIC keeps unexpected counts and percentages; partial_unexpected_count=0 stops GE from even
# collecting example values, which we would drop anyway (they are values of records).
_RESULT_FORMAT = {"result_format": "BASIC", "partial_unexpected_count": 0}


def _gx() -> Any:
    """Import GE (and register our custom expectation) on first use; keep its logging quiet."""
    import great_expectations as gx

    import privacy_gate.validation.expectations  # noqa: F401 - registers the custom expectation

    gx_logger = logging.getLogger("great_expectations")
    if gx_logger.level == logging.NOTSET:  # respect a level the application chose
        gx_logger.setLevel(logging.ERROR)
    return gx


def _context() -> Any:
    gx = _gx()
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    # The default ephemeral config creates temporary Data Docs sites and shows tqdm progress
    # bars for every metric computation; we need neither.
    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        progress_bars=ProgressBarsConfig(globally=False),
        analytics_enabled=False,
    )
    return gx.get_context(mode="ephemeral", project_config=config)


# --------------------------------------------------------------------------- suites <-> GE


def gx_suite_from_dict(suite: dict[str, Any]) -> gx.ExpectationSuite:
    """Build a GE ExpectationSuite from its JSON dict; an invalid expectation is a ConfigError.

    (GE's own constructor only *logs* invalid expectations and drops them, which would silently
    weaken a suite, so each expectation is built here and errors are raised.)
    """
    gx = _gx()
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    name = suite.get("name")
    expectations = []
    for i, exp in enumerate(suite.get("expectations") or []):
        try:
            expectations.append(ExpectationConfiguration(**exp).to_domain_obj())
        except Exception as exc:  # noqa: BLE001 - any failure means the suite is unusable
            what = exp.get("type") if isinstance(exp, dict) else None
            raise ConfigError(
                f"suite '{name}': expectations[{i}] ('{what}') is invalid: "
                f"{exc.__class__.__name__}: {exc}"
            ) from None
    try:
        return gx.ExpectationSuite(
            name=name,
            expectations=expectations,
            suite_parameters=suite.get("suite_parameters"),
            meta=dict(suite["meta"]) if suite.get("meta") else None,
            notes=suite.get("notes"),
            id=suite.get("id"),
        )
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"suite '{name}' is invalid: {exc.__class__.__name__}: {exc}") from None


def gx_suite_to_dict(suite: gx.ExpectationSuite) -> dict[str, Any]:
    """GE's JSON form of a suite (GE adds ``meta.great_expectations_version``)."""
    return suite.to_json_dict()


# --------------------------------------------------------------------------- running


#: A suite of more expectations than this runs as a checkpoint per part of this many, with a
#: progress line after each (a wide table: about 8 ms per column, so minutes at 10,000 columns).
PROGRESS_EXPECTATIONS = 1000

Progress = Callable[[str], None]


def validate_input(
    df: pd.DataFrame,
    spec: DatasetSpec,
    *,
    suite: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> ValidationReport:
    """Validate the real input table (already through ``conform()``) against its input suite.
    ``progress``: called with a line before and after each part of a large suite."""
    return _run(_batch_frame(df), suite if suite is not None else build_input_suite(spec), progress)


def validate_synthetic(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    spec: DatasetSpec,
    *,
    suite: dict[str, Any] | None = None,
    max_copy_share: float = 0.01,
    progress: Progress | None = None,
) -> ValidationReport:
    """Validate synthetic data (through ``conform()``, like ``train``) against its synthetic suite.

    ``max_copy_share`` is only used when ``suite`` is None (a given suite carries its threshold).
    """
    if COPY_INDICATOR_COLUMN in synthetic.columns:
        raise DataError(f"synthetic data: column name '{COPY_INDICATOR_COLUMN}' is reserved")
    if suite is None:
        suite = build_synthetic_suite(spec, max_copy_share=max_copy_share)
    frame = _batch_frame(synthetic)
    frame[COPY_INDICATOR_COLUMN] = copy_indicator(synthetic, train, spec)
    return _run(frame, suite, progress)


def copy_indicator(synthetic: pd.DataFrame, train: pd.DataFrame, spec: DatasetSpec) -> np.ndarray:
    """1.0 for each synthetic row equal to some training row on the attribute columns, else 0.0.

    The entity id is left out on purpose: it identifies, it does not describe, so a synthetic
    row repeating a training record's attributes under a fresh id is still a copy. Both frames
    must have gone through ``conform()`` so equal values have equal types (and hashes).
    """
    cols = spec.attribute_columns
    for what, df in (("synthetic data", synthetic), ("training data", train)):
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise DataError(f"{what}: column(s) {missing} of spec '{spec.name}' are missing")
    seen = row_hashes(train[cols])
    return np.isin(row_hashes(synthetic[cols]), seen).astype("float64")


def _batch_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A shallow copy for GE with datetimes as seconds since the epoch (the spec's min/max unit)."""
    out = df.copy(deep=False)
    for name in out.columns:
        s = out[name]
        if isinstance(s.dtype, pd.DatetimeTZDtype):
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        if pd.api.types.is_datetime64_any_dtype(s.dtype):
            out[name] = (s - pd.Timestamp("1970-01-01")).dt.total_seconds()
    return out


#: The last reports, keyed by the content of the batch and of the suite: a process that gates the
#: same inputs again (a remediation ladder's rungs, a re-gate after suppression, a retried attempt)
#: does not run the same checkpoint on the same bytes twice. A report is a frozen value.
_MEMO: OrderedDict[str, ValidationReport] = OrderedDict()
_MEMO_SIZE = 16


def _memo_key(frame: pd.DataFrame, suite: dict[str, Any]) -> str | None:
    """sha256 of the batch (values, index, column names and dtypes) and the suite; None when the
    batch cannot be hashed (then the checkpoint simply runs)."""
    try:
        rows = pd.util.hash_pandas_object(frame, index=True).to_numpy()
    except Exception:  # noqa: BLE001 - unhashable cells: no memo
        return None
    h = hashlib.sha256(rows.tobytes())
    h.update(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode())
    h.update(json.dumps(suite, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _run(
    frame: pd.DataFrame, suite: dict[str, Any], progress: Progress | None = None
) -> ValidationReport:
    key = _memo_key(frame, suite)
    with _LOCK:
        if key is not None and key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
    report = _checkpoint_in_parts(frame, suite, progress)
    if key is not None:
        with _LOCK:
            _MEMO[key] = report
            while len(_MEMO) > _MEMO_SIZE:
                _MEMO.popitem(last=False)
    return report


def _checkpoint_in_parts(
    frame: pd.DataFrame, suite: dict[str, Any], progress: Progress | None
) -> ValidationReport:
    """``suite`` on ``frame``: one checkpoint, or (more than ``PROGRESS_EXPECTATIONS`` expectations
    and a ``progress`` callback) one per part, in suite order, with a line after each: the columns
    checked so far, of how many, and the time. The parts' outcomes make one report; it succeeds
    only if every part does (fail closed)."""
    expectations = list(suite.get("expectations") or [])
    if progress is None or len(expectations) <= PROGRESS_EXPECTATIONS:
        return _checkpoint(frame, suite)
    columns = len(frame.columns) - (COPY_INDICATOR_COLUMN in frame.columns)
    progress(
        f"{len(frame):,} rows x {columns:,} columns, {len(expectations):,} expectations: a "
        "progress line "
        f"every {PROGRESS_EXPECTATIONS:,}"
    )
    start = time.monotonic()
    outcomes: list[ExpectationOutcome] = []
    success = True
    seen: set[str] = set()
    for i in range(0, len(expectations), PROGRESS_EXPECTATIONS):
        part = expectations[i : i + PROGRESS_EXPECTATIONS]
        report = _checkpoint(frame, {**suite, "expectations": part})
        outcomes += report.results
        success = success and report.success
        seen.update(
            str(e.get("kwargs", {}).get("column"))
            for e in part
            if e.get("kwargs", {}).get("column")
        )
        done = i + len(part)
        progress(
            f"{done:,} of {len(expectations):,} expectations checked "
            f"({done / len(expectations):.0%}; "
            f"{min(len(seen), columns):,} of {columns:,} columns), {time.monotonic() - start:.0f} s"
        )
    return ValidationReport(
        suite_name=str(suite.get("name")), success=success, results=tuple(outcomes)
    )


def _checkpoint(frame: pd.DataFrame, suite: dict[str, Any]) -> ValidationReport:
    """Run ``suite`` on ``frame`` as a Great Expectations checkpoint."""
    gx = _gx()
    with _LOCK:
        context = _context()
        gx_suite = context.suites.add(gx_suite_from_dict(suite))
        asset = context.data_sources.add_pandas("privacy_gate").add_dataframe_asset("batch")
        batch_def = asset.add_batch_definition_whole_dataframe("whole")
        vdef = context.validation_definitions.add(
            gx.ValidationDefinition(
                name=f"{gx_suite.name}.validation", data=batch_def, suite=gx_suite
            )
        )
        checkpoint = context.checkpoints.add(
            gx.Checkpoint(
                name=f"{gx_suite.name}.checkpoint",
                validation_definitions=[vdef],
                result_format=dict(_RESULT_FORMAT),
            )
        )
        result = checkpoint.run(batch_parameters={"dataframe": frame})

    outcomes: list[ExpectationOutcome] = []
    for suite_result in result.run_results.values():
        for r in suite_result.results:
            cfg = r.expectation_config
            outcomes.append(
                outcome_from_result(
                    cfg.type, dict(cfg.kwargs), r.success, r.result, r.exception_info, cfg.meta
                )
            )
    # fail closed: GE's overall flag and every single outcome must agree on success
    success = bool(result.success) and all(o.success for o in outcomes)
    return ValidationReport(suite_name=gx_suite.name, success=success, results=tuple(outcomes))


def load_suite(path: str | Path) -> dict[str, Any]:
    """Read a suite JSON file; a missing file or an invalid suite is a ConfigError naming it.

    "Invalid" includes what only GE can tell (an unknown expectation type, bad kwargs), so this
    builds the suite with GE once, which imports great_expectations.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: expectation suite file not found")
    try:
        raw = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.__class__.__name__})") from None
    problem = _structure_problem(raw)
    if problem:
        raise ConfigError(f"{path}: not a Great Expectations suite: {problem}")
    try:
        gx_suite_from_dict(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return raw


def _structure_problem(raw: Any) -> str | None:
    if not isinstance(raw, dict):
        return "expected a JSON object"
    if not isinstance(raw.get("name"), str) or not raw["name"]:
        return "'name' must be a non-empty string"
    exps = raw.get("expectations")
    if not isinstance(exps, list):
        return "'expectations' must be a list"
    for i, exp in enumerate(exps):
        if not isinstance(exp, dict) or not isinstance(exp.get("type"), str):
            return f"expectations[{i}] needs a string 'type'"
        if not isinstance(exp.get("kwargs", {}), dict):
            return f"expectations[{i}] ('{exp['type']}'): 'kwargs' must be an object"
    return None
