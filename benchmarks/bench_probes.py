"""The hardening probe table: every test that attacks the gate the way a hostile or unlucky user
would (bad inputs, kills, races, tampering, unreachable services, planted values in artefacts),
run together, grouped by kind, with how many failed closed.

A probe is one test case (a parametrised case counts once per parameter set); it passes only if
the gate refused, blocked or recovered as it must (each asserts what was published, recorded and
printed). Which test cases are probes is decided by the patterns below, matched against
``module::test_name``; the other tests of the same modules (ordinary behaviour) are not counted.

    .venv/bin/python benchmarks/bench_probes.py [--workers 2]   # ~10 min on 2 cores
    .venv/bin/python benchmarks/bench_probes.py --only tests/publish/test_symlinks.py ...

``--only``: run these modules alone and merge their cases into the recorded table; the other
modules' cases are kept as last recorded (``rerun`` in the JSON names what this run measured).

Prints the table (markdown, as in docs/hardening.md) and records it in
``benchmarks/results/probes.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from _common import RESULTS, ROOT, record

#: (kind, what the probes do, patterns over "tests/<path>.py::<test name>")
KINDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "bad input",
        "malformed, contradictory or hostile configs, specs and data files: exit 2 or BLOCK "
        "with one line naming the file, key or column, nothing published",
        (
            r"tests/test_bad_inputs\.py::",
            r"tests/test_input_checks\.py::",
            r"tests/publish/test_published_types\.py::",
            r"tests/publish/test_s3_inputs\.py::",
            r"tests/config/test_config\.py::test_(config_errors|missing_and_invalid|a_rule_that_can_read_nothing|"
            r"an_empty_rule_set|a_key_given_twice|dataset_name_is_validated)",
            r"tests/data/test_table\.py::test_(a_per_row_identifier|unique_per_row|distinct_value_thresholds|"
            r"thresholds_are_spec_settings)",
            r"tests/data/test_encoding\.py::test_(errors_name_the_problem|encoder_refuses)",
            r"tests/cli/test_cli\.py::test_(synthetic_with_other_schema|bad_real_data|input_validation_failure|usage_errors|"
            r"a_holdout_that_is_the_training_file|a_reference_holding_training_records|the_run_itself_refuses_overlapping|"
            r"unwritable_folders)",
            r"tests/pipeline/test_stage_lines\.py::test_a_failing_path_is_named",
            r"tests/publish/test_objectstore\.py::test_missing_object_and_bucket",
            r"tests/cli/test_rules_option\.py::test_(a_rules_file_with_a_misspelled_attack|rules_and_config_files_refuse)",
        ),
    ),
    (
        "kills and faults",
        "a fault injected into every named step, kills at any instant of a publication, "
        "a served config corrupted mid-run, a disk that fills at each of 17 points of a run, runs "
        "of dead processes reconciled, approve and "
        "reject killed at each step of a decision and resolved",
        (
            r"tests/runs/test_faults\.py::",
            r"tests/runs/test_post_decision_faults\.py::",
            r"tests/runs/test_disk_full\.py::",
            r"tests/test_disk_full_errors\.py::",
            r"tests/publish/test_publish_integrity\.py::",
            r"tests/flows/test_release_flow_faults\.py::",
            r"tests/review/test_doctor\.py::",
            r"tests/publish/test_objectstore\.py::test_doctor",
            r"tests/review/test_decision_durability\.py::test_(approve_killed|reject_killed|a_live_decider)",
        ),
    ),
    (
        "races",
        "concurrent first runs on one store, concurrent approve/reject of one run",
        (
            r"tests/runs/test_concurrency\.py::",
            r"tests/review/test_review_hardening\.py::test_(concurrent|claim|cli_second_decision)",
            r"tests/runs/test_keyed_labels\.py::test_concurrent_first_uses",
        ),
    ),
    (
        "tampering",
        "verdicts rewritten unsigned, publish targets and settings edited, tampered "
        "releases, a re-gate's run decided alone (its kind tag edited), evidence "
        "artifacts edited, added or removed after the seal (the report and summary too), "
        "forged void records, another run's decision record copied in, symbolic links "
        "planted in the workdir's quarantine and publish folder",
        (
            r"tests/review/test_review_hardening\.py::test_(signed|fully_rewritten|edited)",
            r"tests/publish/test_objectstore\.py::test_s3_reader_contract",
            r"tests/review/test_rerun_decisions\.py::test_(a_regates_run_cannot|an_edited_kind_tag|a_regate_left_by)",
            r"tests/runs/test_keyed_labels\.py::test_a_regates_run_is_refused_alone",
            r"tests/tracking/test_artifact_seal\.py::",
            r"tests/review/test_decision_durability\.py::test_a_(forged|signed)",
            r"tests/publish/test_symlinks\.py::",
            r"tests/review/test_decision_binding\.py::",
        ),
    ),
    (
        "unreachable services",
        "an MLflow server or object store that does not answer or dies mid-run",
        (
            r"tests/tracking/test_tracking_probe\.py::",
            r"tests/runs/test_infra_retries\.py::",
            r"tests/publish/test_objectstore\.py::test_unreachable_endpoint",
        ),
    ),
    (
        "artefact privacy",
        "values only training records hold, planted and searched for in every file a gate, "
        "a review and an approval leave; raw values in validation reports; hashed labels "
        "attacked with a dictionary, the label key searched for; quarantine and staging "
        "modes under any umask; a password and a token in the tracking URI searched for in every "
        "file, MLflow field and output line, the unreachable-store error included",
        (
            r"tests/runs/test_label_privacy\.py::",
            r"tests/validation/test_validation\.py::test_report_contains_no_raw",
            r"tests/runs/test_keyed_labels\.py::test_(the_dictionary_attack|labels_are_the_stores|the_secret_reaches|"
            r"a_workdirs_key|a_readable_or_damaged|a_gate_on_a_workdir_with_a_readable_key|labels_are_resolved_only|"
            r"a_hashed_label_needs)",
            r"tests/publish/test_private_modes\.py::",
            r"tests/test_secret_masking\.py::test_(an_unreachable_store|a_token_and_a_password)",
        ),
    ),
)


def kind_of(case: str) -> str | None:
    for kind, _, patterns in KINDS:
        if any(re.match(p, case) for p in patterns):
            return kind
    return None


def _modules() -> list[str]:
    found = set()
    for _, _, patterns in KINDS:
        for p in patterns:
            found.add(p.split(r"\.py")[0].replace("\\", "") + ".py")
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="MODULE",
        help="run only these test modules (tests/...py) and merge their cases into the recorded "
        "table",
    )
    args = parser.parse_args()
    modules = args.only or _modules()
    env = {
        **os.environ,
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "true",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "GX_ANALYTICS_ENABLED": "false",
    }
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "probes.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            str(args.workers),
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
            f"--junitxml={xml}",
            *modules,
        ]
        print("running:", " ".join(cmd[1:]), flush=True)
        subprocess.run(cmd, cwd=ROOT, env=env, check=False)
        cases = []
        for tc in ET.parse(xml).getroot().iter("testcase"):
            module = tc.get("classname", "").replace(".", "/")
            case = f"{module}.py::{tc.get('name')}"
            outcome = (
                "failed"
                if tc.find("failure") is not None or tc.find("error") is not None
                else "skipped"
                if tc.find("skipped") is not None
                else "closed"
            )
            cases.append({"case": case, "kind": kind_of(case), "outcome": outcome})
    probes = [c for c in cases if c["kind"]]
    if args.only:  # the other modules' cases as last recorded, re-classified by today's patterns
        kept = [
            c
            for c in json.loads((RESULTS / "probes.json").read_text())["cases"]
            if c["case"].split("::")[0] not in modules
        ]
        probes = [
            c for c in ({**c, "kind": kind_of(c["case"])} for c in kept) if c["kind"]
        ] + probes
    rows = []
    for kind, what, _ in KINDS:
        mine = [c for c in probes if c["kind"] == kind]
        rows.append(
            {
                "kind": kind,
                "what": what,
                "probes": len(mine),
                "closed": sum(c["outcome"] == "closed" for c in mine),
                "failed": sum(c["outcome"] == "failed" for c in mine),
                "skipped": sum(c["outcome"] == "skipped" for c in mine),
            }
        )
    total = {k: sum(r[k] for r in rows) for k in ("probes", "closed", "failed", "skipped")}
    print(
        "\n| kind | what the probes do | probes | closed | failed | skipped "
        "|\n|---|---|---:|---:|---:|---:|"
    )
    for r in rows:
        print(
            f"| {r['kind']} | {r['what']} | {r['probes']} | {r['closed']} | {r['failed']} | "
            f"{r['skipped']} |"
        )
    print(
        f"| **all** | | **{total['probes']}** | **{total['closed']}** | {total['failed']} | "
        f"{total['skipped']} |"
    )
    for c in probes:
        if c["outcome"] != "closed":
            print(f"  {c['outcome']}: {c['case']}")
    record(
        "probes",
        {
            "benchmark": __doc__.splitlines()[0],
            "rows": rows,
            "total": total,
            "seconds": round(time.perf_counter() - start, 1),
            "cases": probes,
            **({"rerun": modules} if args.only else {}),
        },
    )


if __name__ == "__main__":
    main()
