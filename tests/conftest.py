"""Shared fixtures: quiet telemetry, one Prefect test server per session (per xdist worker), small
seeded Adult data, the plumbing weight of tests that check plumbing rather than statistics
(``FAST_SETTINGS``), and the groups of the 2-worker run (``xdist_group``).

The small tables are seeded samples of the bundled Adult data; the "independent" release is drawn
from Adult rows that are in none of train / holdout / reference (same population, no members).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

for _k, _v in (
    ("MLFLOW_DISABLE_TELEMETRY", "true"),
    ("DO_NOT_TRACK", "true"),
    ("PREFECT_SERVER_ANALYTICS_ENABLED", "false"),
    ("GX_ANALYTICS_ENABLED", "false"),
    ("PREFECT_LOGGING_LEVEL", "WARNING"),
    ("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"),
):
    os.environ.setdefault(_k, _v)

# pytest-xdist: every worker gets its own Prefect home (profiles, local result storage, memo
# store), below the configured one, so two workers never write the same files. Set before anything
# imports Prefect (it reads its settings at import).
if os.environ.get("PYTEST_XDIST_WORKER"):
    _home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect")
    os.environ["PREFECT_HOME"] = str(_home / f"xdist-{os.environ['PYTEST_XDIST_WORKER']}")
    # One core per worker: BLAS and OpenMP pools of one thread in the worker and in every process it
    # starts (gates, servers). With the default (a thread per core) two workers run four spinning
    # pools on two cores. Set before numpy is imported (OpenBLAS sizes its pool at load); a
    # variable already set by the caller is kept. Results do not depend on it: the selection steps
    # use no float sum's order (tests/gate/test_cpu_independence.py).
    for _k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_k, "1")

import copy  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult" / "adult.csv.gz"
EXAMPLE = ROOT / "examples" / "adult.yaml"


def _interrupt_on_sigterm(signum, frame):
    """SIGTERM (a CI timeout, ``kill``) ends the session like Ctrl-C: fixtures' finalizers run and
    stop the services they started. A second SIGTERM kills pytest at once (tests/reaper.py's
    launchers still stop every service then)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise KeyboardInterrupt(f"signal {signum} (SIGTERM)")


def pytest_configure(config):
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    ):
        signal.signal(signal.SIGTERM, _interrupt_on_sigterm)


@pytest.fixture(scope="session")
def adult_full() -> pd.DataFrame:
    return pd.read_csv(ADULT)


@pytest.fixture(scope="session")
def adult_spec():
    from privacy_gate.config import load_spec

    return load_spec(EXAMPLE)


@pytest.fixture(scope="session")
def small_adult(adult_full, tmp_path_factory):
    """3,000 real rows (the private table) and 2,000 disjoint rows of the same population."""
    rng = np.random.default_rng(7)
    order = rng.permutation(len(adult_full))
    real = adult_full.iloc[order[:3000]].reset_index(drop=True)
    outside = adult_full.iloc[order[3000:5000]].reset_index(drop=True)
    folder = tmp_path_factory.mktemp("adult-small")
    real.to_csv(folder / "real.csv", index=False)
    outside.to_csv(folder / "independent.csv", index=False)
    return folder


def write_group_leak(small_adult, folder, *, train: pd.DataFrame | None = None) -> pd.DataFrame:
    """Gate inputs in ``folder``: train / holdout / reference (rows :1800, 1800:2400, 2400: of the
    ``small_adult`` real table; ``train`` replaces the first part when given) and a release that
    is the independent rows plus verbatim copies of one race group's training rows (a REVIEW).
    Returns the training frame written."""
    real = pd.read_csv(small_adult / "real.csv")
    train = real.iloc[:1800] if train is None else train
    holdout, reference = real.iloc[1800:2400], real.iloc[2400:]
    for name, df in {"train": train, "holdout": holdout, "reference": reference}.items():
        df.to_csv(folder / f"{name}.csv", index=False)
    leaked = train[train["race"] == "Asian-Pac-Islander"]
    pd.concat([pd.read_csv(small_adult / "independent.csv"), leaked]).to_csv(
        folder / "synthetic.csv", index=False
    )
    return train


def write_group_copy_release(small_adult, folder: Path, *, name: str, **overrides) -> Path:
    """A release config (plumbing weight) whose generator is a file: the ``small_adult`` real table
    released as its independent rows plus verbatim copies of the training records (in the config's
    own split) of one rare group, race=Asian-Pac-Islander, judged by the example's gate with
    :func:`review_rules` (a REVIEW with that group flagged, not a BLOCK). ``overrides``: more
    config sections (``audit``, ``publish`` ...)."""
    from privacy_gate.config import load_release_config
    from privacy_gate.data import conform, split_by_entity

    folder.mkdir(parents=True, exist_ok=True)
    real = pd.read_csv(small_adult / "real.csv")
    real.to_csv(folder / "real.csv", index=False)
    cfg = load_release_config(
        write_release_config(folder, {"name": "copy_train"}, name="probe.yaml")
    )
    train = split_by_entity(
        conform(real, cfg.dataset.spec, source="real"), cfg.dataset.spec, cfg.split
    ).train
    copies = real.loc[train.index[train["race"] == "Asian-Pac-Islander"]]
    synthetic = pd.concat([pd.read_csv(small_adult / "independent.csv"), copies]).sample(
        frac=1.0, random_state=1
    )
    synthetic.to_csv(folder / "synthetic.csv", index=False)
    gate = yaml.safe_load(EXAMPLE.read_text())["gate"]
    gate["rules"] = review_rules()  # a REVIEW run: without the global exposed-share block rule
    gate["max_verbatim_copy_share"] = (
        0.05  # the copies are ~2% of the release: the subgroup rule must catch them
    )
    return write_release_config(
        folder,
        {"name": "file", "path": str(folder / "synthetic.csv")},
        name=name,
        gate=gate,
        fast=True,
        **overrides,
    )


def review_rules() -> list[dict]:
    """Rules that replace (by key) the global exposed-share and partial-copy block bars.

    Tests of the review mechanics need a REVIEW run with one flagged subgroup; copying a whole
    group exposes more than 0.5% of all training records, which the exposed-share bar blocks (see
    the README's per-sample limits). Rules add to the defaults now, so the bars are loosened by
    key rather than left out of a list.
    """
    return [
        {"metric": "exposed.share_lower", "max": 1.0, "action": "block"},
        {"metric": "agreement.excess_share", "max": 0.05, "action": "block"},
        {"metric": "copies.excess_share", "max": 0.05, "action": "block"},
    ]


#: Plumbing weight. Tests of plumbing (CLI, flows, MLflow records, publication, review, faults,
#: reports, concurrency) need a complete gate run, not production-grade statistics:
#:
#: - ``mace.n_permutations``: the label-permutation null that estimates the plug-in estimator's
#:   bias (200 in production) from 20 permutations; every MACE figure, bound and check is still
#:   computed and recorded, the bias is only a noisier estimate of the same quantity;
#: - ``mama_mia.n_shadow``: at most 4 shadow runs of a marginal generator (50 in production; each is
#:   a Prefect task fitting the generator's selection step), so the shadow variant, its mapped tasks
#:   and its oracle still run. (For any other generator MAMA-MIA is the generic variant, which has
#:   no shadow runs.)
#:
#: Statistical tests (test_mace*, test_exposure*, test_gate_power, the canaries, the golden
#: scenarios) never use it. Targets, data sizes, attacks and rules are unchanged: a plumbing test
#: sees the same decisions with the same checks.
FAST_SETTINGS: dict = {"mace": {"n_permutations": 20}, "mama_mia": {"n_shadow": 4}}


def lighten(raw: dict, settings: dict | None = None) -> dict:
    """``raw`` (a release config, or the judging sections of one) at plumbing weight: its ``mace``
    section with ``n_permutations`` from ``settings`` (default ``FAST_SETTINGS``), every MAMA-MIA
    attack with at most that many shadow runs. Other sections are left as they are."""
    settings = settings or FAST_SETTINGS
    raw = copy.deepcopy(raw)
    raw["mace"] = {**(raw.get("mace") or {}), **settings["mace"]}
    n_shadow = settings["mama_mia"]["n_shadow"]
    attacks = raw.get("attacks")
    if attacks is not None:
        raw["attacks"] = [
            {**a, "n_shadow": min(int(a.get("n_shadow", n_shadow)), n_shadow)}
            if a["name"] == "mama_mia"
            else a
            for a in attacks
        ]
    return raw


@pytest.fixture
def fast_settings() -> dict:
    """The plumbing weight (``FAST_SETTINGS``): configs get it with ``write_release_config(...,
    fast=True)`` or ``lighten(raw)``; tests read it to assert what a lightened run used."""
    return copy.deepcopy(FAST_SETTINGS)


def write_release_config(
    folder: Path, generator: dict, *, name: str = "release.yaml", fast: bool = False, **overrides
) -> Path:
    """A release config for the small Adult table, based on examples/adult.yaml; ``fast=True``: at
    plumbing weight (``FAST_SETTINGS``, applied after ``overrides``: the attacks given there are
    lightened too, a ``mace`` section given there keeps its other keys)."""
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["dataset"]["path"] = str(folder / "real.csv")
    raw["generator"] = generator
    for key, value in overrides.items():
        raw[key] = value
    if fast:
        raw = lighten(raw)
    path = folder / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def prefect_server():
    """One Prefect test server for the whole session (starting one takes several seconds); its
    process is started through tests/reaper.py, so it cannot outlive pytest."""
    from .stack import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=60):
        yield


# ------------------------------------------------------------------------------ pytest-xdist
# `make test` runs the suite on 2 workers (`-n 2 --dist loadgroup`). A work unit goes to whichever
# worker is free; a group is one work unit: one worker runs its tests, in order.
#
# The groups are made by the scheduler below, from the test's module, not by xdist_group marks:
# with pytest 9.2 xdist 3.8's loadgroup silently ignores the marks (it renames the node id, which
# pytest no longer reads: pytest-dev/pytest-xdist#1386). Marks still work where xdist honours them.

#: Tests that must not share the machine with each other: each starts servers on loopback or many
#: processes, or depends on timing (a scheduled run every minute, a server killed mid-run, 8
#: concurrent first runs). One group: one worker runs them one after another (the other worker
#: keeps running ordinary tests). Their ports and homes are their own, so they *could* run side by
#: side; they are kept apart because under load the stack's every-minute schedules and the racing
#: modules starve each other (seen at load 15-19 here), and a flaky CI lands nothing.
SERIAL_MODULES = {
    "test_production_stack",
    "test_browser",
    "test_first_screen",
    "test_glance",
    "test_dask_cluster",
    "test_concurrency",
    "test_infra_retries",
    "test_cleanup",
    "test_dataset_slot",
    "test_group_glance",
}

#: Modules whose tests read one expensive module-scoped result (a finished release run, a server):
#: kept on one worker, so that result is made once, not once per worker.
SHARED_RESULT_MODULES = {
    "test_flow_e2e",
    "test_review",
    "test_regate",
    "test_objectstore",
    "test_report",
    "test_audit_e2e",
    "test_post_decision_faults",
    "test_keyed_labels",
    "test_suspended_review",
}

#: About how long the longest work units take (seconds of one worker on a quiet 2-core machine, from
#: ``--durations=0``): a group above (all its tests), else each test of the module named.
#: Only their order matters: the scheduler hands out the longest units first (longest processing
#: time first), so no long unit starts at the end while the other worker has nothing left. The
#: serial group (the production stack with its scheduled gates and the suspended review past the
#: old crash point, then the other server modules) is the longest one by far: it starts at once.
UNIT_SECONDS = {
    "serial": 1100,
    "test_cpu_independence": 220,
    "test_suspended_review": 140,
    "test_review": 130,
    "test_label_privacy": 66,
    "test_canaries": 50,
    "test_messy_tables": 40,
    "test_real_tables": 30,
    "test_golden": 20,
}


# ------------------------------------------------------------------------------ the two tiers
# `make test` runs the suite without the slow tier (`-m "not slow"`), `make test-slow` the slow
# tier, CI `make test` (`.ci/run --all` both). The slow tier holds the tests that cannot be made
# fast without testing something else: each is here with why. Nothing else may carry the `slow`
# mark.

_STACK = (
    "the production stack as real processes (PostgreSQL, S3, MLflow and Prefect servers, `serve`): it serves "
    "every-minute schedules for 4 minutes, so its length is what it checks"
)
_SERVERS = (
    "starts real servers (MLflow, Prefect, S3, a Dask cluster) or headless Chromium, and runs whole release "
    "flows against them"
)
_PROCESSES = "starts, races or kills whole gate processes (each imports the stack and runs a gate)"
_RELEASE = (
    "whole release runs through the real Prefect flow (a generator trained, GE checkpoints, the MLflow record, "
    "the report), the module's tests reading one shared run"
)
_CANARY = (
    "whole gates on Adult at full weight (every permutation and shadow run): a statistical canary whose "
    "evidence is what it checks"
)
_GATES = (
    "several whole gates (attacks, MACE, disclosure, audit) through the command line or the flow"
)
_SIMULATION = (
    "hundreds of seeded simulated gates' statistics: a level or power check needs the draws"
)

SLOW_TIER: dict[str, str] = {
    # modules (all their tests)
    "test_production_stack": _STACK,
    "test_browser": _SERVERS,
    "test_glance": _SERVERS,
    "test_first_screen": "headless Chromium on a rendered report",
    "test_group_glance": _SERVERS,
    "test_dask_cluster": _SERVERS,
    "test_objectstore": _SERVERS,
    "test_infra_retries": _SERVERS,
    "test_concurrency": _PROCESSES,
    "test_cleanup": _PROCESSES,
    "test_dataset_slot": _PROCESSES,
    "test_review": _RELEASE,
    "test_suspended_review": _RELEASE,
    "test_flow_e2e": _RELEASE,
    "test_audit_e2e": _RELEASE,
    "test_keyed_labels": _RELEASE,
    "test_post_decision_faults": _RELEASE,
    "test_disk_full": _RELEASE + ", once for each of 17 points where the disk fills",
    "test_gate_deployment": _GATES,
    # single tests (their modules' other tests are fast)
    "test_canaries::test_copy_canary_is_blocked": _CANARY,
    "test_canaries::test_noisy_copy_canary_is_blocked": _CANARY,
    "test_canaries::test_independent_sample_is_approved": _CANARY,
    "test_exposure_canaries::test_a_one_group_leak_is_reviewed_with_the_group_blamed_and_the_rest_approves": _CANARY,
    "test_exposure_canaries::test_noisy_copies_are_blocked_by_the_per_sample_rules": _CANARY,
    "test_exposure_canaries::test_rare_group_leak_is_flagged_by_name_and_suppression_publishes_without_it": _CANARY,
    "test_exposure_canaries::test_suppressing_exposed_records_removes_their_noisy_copies": _CANARY,
    "test_rare_values::test_a_leak_of_the_rare_countries_records_is_flagged_on_adult": _CANARY,
    "test_cpu_independence::test_the_verdict_is_the_same_under_other_blas_kernels": "four whole gates in fresh processes, one per OpenBLAS kernel",
    "test_cpu_independence::test_the_golden_scenarios_pass_under_other_kernels_and_without_avx512": "the golden scenarios' whole gates twice more, in fresh processes under other kernels",
    "test_cli::test_gate_only_approves_independent_sample_with_json": _GATES,
    "test_cli::test_gate_with_the_recipe_judges_a_small_table": _GATES
    + ", plus 100 refits of the recipe",
    "test_shadow_gate::test_the_gate_gives_a_small_clean_release_a_verdict": "two whole gates of a 500-row table, one of them with 256 refits of MST",
    "test_cli::test_gate_only_blocks_copies": _GATES,
    "test_cli::test_gate_only_in_process_without_prefect": _GATES,
    "test_cli::test_review_prints_complete_commands_that_work_when_pasted": _GATES,
    "test_messy_tables::test_a_copy_with_awkward_names_is_blocked": _GATES,
    "test_messy_tables::test_awkward_names_and_a_dot_category_run_to_approve": _GATES,
    "test_label_privacy::test_a_training_only_value_reaches_no_file": _GATES,
    "test_verdict_states::test_a_blocked_release_ends_blocked_and_its_last_lines_say_why": _RELEASE,
    "test_once_per_release::test_an_unchanged_release_served_three_times_creates_one_review": _RELEASE,
    "test_dp_release::test_dp_generator_release_runs_end_to_end": _RELEASE,
    "test_dp_release::test_same_flow_runs_on_dask": _SERVERS,
    "test_dp_audit_release::test_release_with_dp_audit_records_and_caches": _RELEASE,
    "test_remediation::test_all_rungs_leaky_blocks_and_publishes_nothing": _RELEASE,
    "test_remediation::test_dp_ladder_sums_the_budget_and_refuses_past_the_cap": _RELEASE,
    "test_remediation::test_ladder_runs_in_the_release_flow": _RELEASE,
    "test_remediation::test_leaky_rungs_then_a_safe_one_publishes_only_the_safe_release": _RELEASE,
    "test_decision_durability::test_approve_killed_then_doctor_fix_resolves_it": _PROCESSES,
    "test_decision_durability::test_approve_killed_then_review_resolves_it": _PROCESSES,
    "test_decision_durability::test_approve_killed_then_the_next_approve_resolves_it": _PROCESSES,
    "test_publish_integrity::test_kill_at_any_instant_leaves_nothing_or_a_complete_release": _PROCESSES,
    "test_prefect_yaml::test_prefect_deploy_all_registers_the_deployments": _SERVERS,
    "test_privgan::test_output_conforms_to_the_spec_and_the_same_seed_gives_the_same_release": "trains privGAN twice (a seeded release is compared with itself)",
    "test_privgan::test_privacy_discriminator_pretraining_beats_chance": "trains privGAN's discriminators to a measurable level",
    "test_disclosure_panels::test_no_signal_per_person_holds_its_level_and_per_row_does_not": _SIMULATION,
    "test_scale_view::test_scan_keeps_its_level_with_three_views": _SIMULATION,
    "test_scale_view::test_scan_keeps_its_level_where_natural_twins_are_everywhere": _SIMULATION,
    "test_report::test_load_and_log_report_round_trip": "renders and records whole reports (plots) in an MLflow store",
    "test_report::test_the_report_links_to_the_artifacts_that_hold_every_figure": "renders and records whole reports (plots) in an MLflow store",
    "test_input_checks::test_a_large_validation_reports_progress": "checks 1,102 Great Expectations expectations",
    "test_input_checks::test_a_table_that_encodes_wider_than_10000_features_blocks_before_validation": "a gate process on a table of 5,001 columns (refused after reading and encoding it)",
}


def _module(nodeid: str) -> str:
    """The module of a node id (``tests/x/test_y.py::t`` -> ``test_y``): what the tiers, groups and
    unit estimates are keyed by."""
    return Path(nodeid.split("::", 1)[0]).stem


def slow_tier_reason(nodeid: str) -> str | None:
    """Why the test ``nodeid`` is in the slow tier (``SLOW_TIER``), or None.

    >>> slow_tier_reason("tests/flows/test_production_stack.py::test_x") is not None
    True
    >>> slow_tier_reason("tests/estimators/test_mace.py::test_x") is None
    True
    """
    module, name = _module(nodeid), nodeid.partition("::")[2]
    return SLOW_TIER.get(module) or SLOW_TIER.get(f"{module}::{name.split('[', 1)[0]}")


def pytest_collection_modifyitems(config, items):
    """The slow tier's tests get the ``slow`` mark (``make test`` deselects it, ``make test-slow``
    selects it). A ``slow`` mark written in a module outside ``SLOW_TIER`` is an error: every slow
    test says why it is slow, in one place."""
    for item in items:
        if slow_tier_reason(item.nodeid) is not None:
            item.add_marker(pytest.mark.slow)
        elif item.get_closest_marker("slow") is not None:
            raise pytest.UsageError(
                f"{item.nodeid} is marked slow but its module is not in tests/conftest.py "
                f"SLOW_TIER: add it there with the reason it cannot be fast, or remove the mark"
            )


def xdist_group(nodeid: str) -> str | None:
    """The group of a test (by its node id), or None for a test that may run anywhere.

    >>> xdist_group("tests/runs/test_concurrency.py::test_concurrent_first_runs_on_one_workdir_all_succeed[8]")
    'serial'
    >>> xdist_group("tests/review/test_review.py::test_rare_subgroup_copies_are_flagged_exactly"), xdist_group("tests/estimators/test_mace.py::x")
    ('test_review', None)
    """
    module = _module(nodeid)
    if module in SERIAL_MODULES:
        return "serial"
    return module if module in SHARED_RESULT_MODULES else None


def unit_seconds(scope: str, nodeids) -> float:
    """The estimated length of a work unit (``UNIT_SECONDS``; a unit not listed: one second a test).

    >>> unit_seconds("serial", ["a", "b"]) > unit_seconds("tests/data/test_split.py::test_x", ["x"])
    True
    """
    module = scope if scope in UNIT_SECONDS else _module(scope)
    return UNIT_SECONDS.get(module, float(len(nodeids)))


try:
    from xdist.scheduler import LoadGroupScheduling
except ImportError:  # pytest-xdist not installed: the suite runs in one process
    LoadGroupScheduling = None

if LoadGroupScheduling is not None:

    class ModuleGroupScheduling(LoadGroupScheduling):
        """``--dist loadgroup`` with the groups of ``xdist_group``; other tests as xdist groups them
        (each test on its own, or by an xdist_group mark where xdist still honours it). Work units
        are handed out longest first (``unit_seconds``)."""

        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid) or super()._split_scope(nodeid)

        def _assign_work_unit(self, node) -> None:
            if (
                not self._ordered
            ):  # the first assignment: the queue is complete (xdist built it just before)
                self._ordered = True
                units = sorted(
                    self.workqueue.items(), key=lambda unit: -unit_seconds(*unit)
                )  # stable
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") == "loadgroup":
            return ModuleGroupScheduling(config, log)
        return None


class LogLines(logging.Handler):
    """A logging handler that keeps each record's message (tests read what a run logged)."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())
