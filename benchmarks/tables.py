"""The tables of the docs and the README that restate benchmark results, generated from
``benchmarks/results/*.json`` so that no table can drift from the results it quotes.

A page holds a generated table between two marker comments::

    <!-- table:calibration_power -->
    ...generated, do not edit...
    <!-- /table -->

``python benchmarks/tables.py --write`` rewrites every marked table of :data:`PAGES` from the JSON;
``python benchmarks/tables.py`` (or ``--check``) prints the tables that differ and exits 1
(``tests/test_docs_site.py`` runs that check in ``make test``). Each table is one function of
:data:`TABLES`, reading one or a few results files; the figures are printed as the JSON has them
(rounded for display, never recomputed from other sources). A table whose figures are not all in
a results file stays hand-written: the per-script headlines of docs/benchmarks.md (sentences
over many files, some figures measured outside them), the DP audit's tightness table
(docs/dp-audit.md: what the white-box score sees and its mu ceiling are not in
``dp_audit.json``), the dependency study's table (docs/subgroups-and-dependency.md: a chosen
selection of ``dependency_adult.json``'s cells, merged by hand) and the corpus tables.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import RESULTS, ROOT
from benchmarks.bench_calibration import NOT_SIGNAL_PREFIXES, side_by_side, signal_reasons, wilson
from benchmarks.leak_grammar import SHAPE_WORDS

#: the pages that hold generated tables
PAGES = (
    "README.md",
    "docs/benchmarks.md",
    "docs/scale.md",
    "docs/per-sample.md",
    "docs/hardening.md",
    "docs/generators.md",
    "docs/dp-audit.md",
    "docs/shadow.md",
)

MARKER = re.compile(r"<!-- table:(?P<name>[a-z0-9_]+) -->\n(?P<body>.*?)<!-- /table -->", re.S)

#: the releases of benchmarks/calibration_scenarios.py in words (its module docstring defines them)
LEAKS = {
    "verbatim-1%": "verbatim copies 1 %",
    "verbatim-5%": "verbatim copies 5 %",
    "near-copy-1%": "near copies 1 %",
    "near-copy-5%": "near copies 5 %",
    "people-10x8": "10 people x 8 near copies",
    "people-10x40": "10 people x 40 near copies",
    "outliers-0.5%": "the most outlying 0.5 % copied",
    "rare-values": "rare values copied",
    "noisy-1%": "noisy copies 1 % (0.05 sd)",
    "qi-unique-3%": "quasi-identifier copies of 3 %, combination unique in the population",
    "qi-random-3%": "quasi-identifier copies of 3 %, random combinations",
    "partial-1col-2%": "partial copies 2 %, one column re-drawn",
    "partial-2col-2%": "partial copies 2 %, two columns re-drawn",
    "coarsened-2%": "coarsened copies 2 % (numbers rounded)",
    "scaled-2%": "scaled copies 2 % (every number x 1.02)",
    "people-40x4": "40 people x 4 near copies",
}


@cache
def load(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def source(*names: str) -> str:
    files = ", ".join(f"`benchmarks/results/{n}.json`" for n in names)
    return f"*Generated from {files} by `benchmarks/tables.py`.*"


def _table(head: list[str], rows: list[list[str]], align: list[str] | None = None) -> str:
    align = align or ["---"] * len(head)
    return "\n".join(
        [
            "| " + " | ".join(head) + " |",
            "|" + "|".join(align) + "|",
            *("| " + " | ".join(r) + " |" for r in rows),
        ]
    )


def _pct(x: float, digits: int = 0) -> str:
    return f"{100 * x:.{digits}f} %"


def _ci(ci, digits: int = 0) -> str:
    return f"[{100 * ci[0]:.{digits}f}, {100 * ci[1]:.{digits}f}]"


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 100 else f"{s:.0f} s"


def reasons(counts: dict[str, int]) -> str:
    """A summary's ``reason_counts`` in words: the tests (``test:*``), the effect bars, the
    requirements (utility, validation) and insufficient evidence, each with its number of gates.
    Per-subgroup keys (``sex=Male: ...``) are left out: ``subgroups`` counts them."""
    tests, bars, reqs, insufficient = [], [], [], 0
    for key, n in counts.items():
        if ": " in key:
            continue
        if key.startswith("test:"):
            tests.append(f"{key[5:]} {n}")
        elif key.startswith(("insufficient_evidence.", "power.")):
            insufficient = max(insufficient, n)
        elif key.startswith(NOT_SIGNAL_PREFIXES):
            reqs.append(f"{key} {n}")
        else:
            bars.append(f"`{key}` {n}")
    parts = [", ".join(tests)] if tests else []
    parts += [f"bars: {', '.join(bars)}"] if bars else []
    parts += [f"requirements: {', '.join(reqs)}"] if reqs else []
    parts += [f"insufficient evidence {insufficient}"] if insufficient else []
    return "; ".join(parts) or "–"


# ------------------------------------------------------------------------------------ the tables


def calibration_nulls() -> str:
    """Clean releases per table: approved share with its Wilson interval, BLOCKs, what held back."""
    d = load("calibration_nulls")
    by_table: dict[str, dict[str, dict]] = {}
    for s in d["summary"]:
        by_table.setdefault(s["table"], {})[s["cell"]] = s
    rows = []
    for table, cells in by_table.items():
        ss = [cells[c] for c in ("null-independent", "null-copula")]
        rows.append(
            [
                table,
                f"{ss[0]['n_train']:,}",
                "independent / copula",
                " / ".join(str(s["n"]) for s in ss),
                " / ".join(
                    f"{s['approved']} ({_pct(s['approved_share'])} {_ci(s['approved_ci'])})"
                    for s in ss
                ),
                " / ".join(str(s["block"]) for s in ss),
                " / ".join(reasons(s["reason_counts"]) for s in ss),
            ]
        )
    head = [
        "table",
        "training rows",
        "release",
        "gates",
        "approved (share [Wilson 95 %])",
        "BLOCK",
        "what held releases back (gates)",
    ]
    return _table(head, rows) + "\n\n" + source("calibration_nulls")


def calibration_nulls_total() -> str:
    """The clean releases together: approved, BLOCKed, and held back by a leak signal (the error
    budget's false alarms), over the tables with enough data to judge and over all of them."""
    d = load("calibration_nulls")
    runs = [r for r in d["runs"] if r.get("decision")]
    enough = [
        r
        for r in runs
        if not any(c["key"].startswith(("insufficient_evidence.", "power.")) for c in r["reasons"])
    ]
    few = sorted({r["table"] for r in runs} - {r["table"] for r in enough})
    rows = []
    for label, rs in (
        (
            f"tables with enough data to judge ({', '.join(sorted({r['table'] for r in enough}))})",
            enough,
        ),
        (f"all {len({r['table'] for r in runs})} tables (with {', '.join(few)})", runs),
    ):
        n = len(rs)
        a = sum(r["decision"] == "APPROVE" for r in rs)
        b = sum(r["decision"] == "BLOCK" for r in rs)
        alarms = sum(bool(signal_reasons(r)) for r in rs)
        rows.append(
            [
                label,
                f"{n:,}",
                f"{a:,} ({_pct(a / n, 1)} {_ci(wilson(a, n), 1)})",
                str(b),
                f"{alarms} ({_pct(alarms / n, 1)} {_ci(wilson(alarms, n), 1)})",
            ]
        )
    head = [
        "clean releases",
        "gates",
        "approved (share [Wilson 95 %])",
        "BLOCK",
        "held back by a leak signal (share [Wilson 95 %])",
    ]
    return _table(head, rows) + "\n\n" + source("calibration_nulls")


#: the clean-release grids of the nine tables (``bench_calibration.py --out ...``)
NULLS_9 = ("calibration_nulls_9tables",)
NULLS_9_FRESH = ("calibration_nulls_9tables_fresh",)


def calibration_nulls_halves() -> str:
    """Clean releases on the nine tables of the leak-power benchmark, by half (development: tuned
    on; reported: only measured) and per table: approved with its Wilson interval, BLOCKs, leak
    signals, and the membership ensemble's own false alarms at its share of the budget."""
    return _nulls_table(_null_rows(NULLS_9), NULLS_9)


def calibration_nulls_fresh() -> str:
    """The same on fresh seeds (17-33) judged by a later commit: that run alone by half, then both
    runs pooled by half and per table."""
    both = NULLS_9_FRESH + NULLS_9
    rows = _null_rows(NULLS_9_FRESH, prefix="fresh seeds: ", per_table=False)
    return _nulls_table(rows + _null_rows(both, prefix="both runs: "), both)


def _null_rows(
    names: tuple[str, ...], *, prefix: str = "", per_table: bool = True
) -> list[list[str]]:
    """A row per half, for all nine tables and (``per_table``) per table, over ``names``' runs."""
    from benchmarks.calibration_tables import LEAK_DEVELOPMENT, LEAK_REPORTED

    runs = [r for name in names for r in load(name)["runs"] if r.get("decision")]
    groups = [
        ("development half (" + ", ".join(LEAK_DEVELOPMENT) + ")", set(LEAK_DEVELOPMENT)),
        ("reported half (" + ", ".join(LEAK_REPORTED) + ")", set(LEAK_REPORTED)),
        ("all nine tables", set(LEAK_DEVELOPMENT) | set(LEAK_REPORTED)),
    ]
    if per_table:
        groups += [(t, {t}) for t in (*LEAK_DEVELOPMENT, *LEAK_REPORTED)]
    rows = []
    for label, tables in groups:
        rs = [r for r in runs if r["table"] in tables]
        if rs:
            rows.append([prefix + label, *_null_cells(rs)])
    return rows


def _nulls_table(rows: list[list[str]], names: tuple[str, ...]) -> str:
    head = [
        "clean releases",
        "gates",
        "approved (share [Wilson 95 %])",
        "BLOCK",
        "held back by a leak signal",
        f"ensemble p <= {ENSEMBLE_SHARE:g} alone",
    ]
    return _table(head, rows) + "\n\n" + source(*names)


def _null_cells(rs: list[dict]) -> list[str]:
    n = len(rs)
    a = sum(r["decision"] == "APPROVE" for r in rs)
    b = sum(r["decision"] == "BLOCK" for r in rs)
    alarms = sum(bool(signal_reasons(r)) for r in rs)
    ens = [r.get("ensemble", {}).get("ensemble_pvalue") for r in rs]
    ens_alarms = sum(p is not None and p <= ENSEMBLE_SHARE for p in ens)
    return [
        f"{n:,}",
        f"{a:,} ({_pct(a / n, 1)} {_ci(wilson(a, n), 1)})",
        str(b),
        f"{alarms} ({_pct(alarms / n, 1)})",
        f"{ens_alarms}",
    ]


def calibration_panel_nulls() -> str:
    """Clean panel releases (whole independent people): the membership test's p-value at 1 %, at
    its review share and at 5 %, with Wilson intervals, and the gate's approvals, per panel."""
    d = load("calibration_panel_nulls")
    runs = [r for r in d["runs"] if r.get("decision")]
    rows = []
    for table in sorted({r["table"] for r in runs}):
        rs = [r for r in runs if r["table"] == table]
        n = len(rs)
        p = [r["pvalues"]["membership"] for r in rs]
        a = sum(r["decision"] == "APPROVE" for r in rs)
        cells = [
            f"{k} ({_pct(k / n, 1)} {_ci(wilson(k, n), 1)})"
            for k in (sum(v <= level for v in p) for level in (0.01, MEMBERSHIP_SHARE, 0.05))
        ]
        rows.append(
            [
                table,
                f"{rs[0]['n_train']:,}",
                str(n),
                *cells,
                f"{a} ({_pct(a / n, 1)} {_ci(wilson(a, n), 1)})",
            ]
        )
    head = [
        "panel",
        "training rows",
        "gates",
        "membership p <= 0.01",
        f"p <= {MEMBERSHIP_SHARE:g} (its share)",
        "p <= 0.05",
        "approved",
    ]
    return _table(head, rows) + "\n\n" + source("calibration_panel_nulls")


def _membership_share() -> float:
    """The membership test's share of the default review budget over the tests a default run has
    (the generator-aware test joins only runs that know the recipe: the budget module allocates)."""
    from privacy_gate.config import BudgetConfig, budget_tests
    from privacy_gate.gate.budget import test_levels

    return test_levels(BudgetConfig(), budget_tests({}))["membership"][0]


#: the membership test's share of the default 2 % review budget (weight 2 of 10)
MEMBERSHIP_SHARE = _membership_share()


def calibration_transforms() -> str:
    """Transformed copies at 12,000 requested training rows on the reported tables: not approved
    with its Wilson interval, BLOCKs and the tests that raised the verdict, per table and leak."""
    d = load("calibration_transforms_12000")
    rows = []
    for s in d["summary"]:
        n = s["n"]
        rows.append(
            [
                s["table"],
                f"{s['n_train']:,}",
                LEAKS.get(s["cell"], s["cell"]),
                str(n),
                f"{n - s['approved']}/{n} {_ci(s['not_approved_ci'])}",
                str(s["block"]),
                reasons(s["reason_counts"]),
            ]
        )
    head = [
        "table",
        "training rows",
        "leak",
        "gates",
        "not approved [Wilson 95 %]",
        "BLOCK",
        "what raised the verdict (gates)",
    ]
    return _table(head, rows) + "\n\n" + source("calibration_transforms_12000")


#: the membership ensemble's share of the review budget with five attacks (0.4 % / 6 components)
ENSEMBLE_SHARE = MEMBERSHIP_SHARE / 6


def calibration_power() -> str:
    """Leaks at 12,000 training rows: not approved (power) with its interval, BLOCKs, what raised
    the verdict, and the records the member scan named (total over the seeds, mean FDP)."""
    d = load("calibration_power_12000")
    summary = {s["cell"]: s for s in d["summary"]}
    order = [c for c in d["settings"]["cells"] if c in summary] + [
        c for c in summary if c not in d["settings"]["cells"]
    ]
    rows = []
    for cell in order:
        s = summary[cell]
        n = s["n"]
        named = round(s.get("scan_named_mean", 0) * n)
        rows.append(
            [
                f"{LEAKS.get(cell, cell)} (`{cell}`)",
                str(n),
                f"{n - s['approved']}/{n} {_ci(s['not_approved_ci'])}",
                str(s["block"]),
                reasons(s["reason_counts"]),
                f"{named:,} ({_pct(s['scan_fdp_mean'], 1)})" if named else "0",
            ]
        )
    head = [
        "leak",
        "gates",
        "not approved [Wilson 95 %]",
        "BLOCK",
        "what raised the verdict (gates)",
        "scan: named (mean FDP)",
    ]
    return _table(head, rows) + "\n\n" + source("calibration_power_12000")


def calibration_power_short() -> str:
    """The README's short form of :func:`calibration_power`: leak, not approved, the tests."""
    d = load("calibration_power_12000")
    summary = {s["cell"]: s for s in d["summary"]}
    rows = []
    for cell in [c for c in d["settings"]["cells"] if c in summary]:
        s = summary[cell]
        tests = [k[5:] for k in s["reason_counts"] if k.startswith("test:")]
        extra = [k for k in s["reason_counts"] if k.startswith("validation.")]
        verdict = f"{s['n'] - s['approved']}/{s['n']}" + (
            f" ({s['block']} BLOCK)" if s["block"] else ""
        )
        rows.append([LEAKS.get(cell, cell), verdict, ", ".join(tests + extra)])
    return (
        _table(["leak", "not approved", "tests that raised it (in any seed)"], rows)
        + "\n\n"
        + source("calibration_power_12000")
    )


def calibration_side_by_side() -> str:
    """The same releases judged by the gate and by distance checks (``--baselines``): the table
    ``bench_calibration.py --markdown`` prints, rendered from both side-by-side runs' summaries."""
    names = ("calibration_side_by_side", "calibration_side_by_side_hi")
    parts = [side_by_side(load(n)["summary"]).splitlines() for n in names]
    return (
        "\n".join(parts[0] + [line for p in parts[1:] for line in p[2:]]) + "\n\n" + source(*names)
    )


def gate_time() -> str:
    """The whole gate's wall time on full Adult against a baseline, alternating in one benchmark."""
    b = load("gate_time_budget")
    d = load("gate_time_disclosure")
    v = load("gate_time_versions")
    runs = lambda xs: " / ".join(f"{x:.1f}" for x in xs)  # noqa: E731

    def versus(result: dict, label: str) -> list[str]:
        """One ``bench_budget_time.py`` result: this gate against its baseline commit."""
        return [
            label,
            str(len(result["runs"]["budget"])),
            _seconds(result["median_seconds"]["budget"]),
            _seconds(result["median_seconds"]["baseline"]),
            f"{result['ratio']:.2f}x",
            f"{runs(r['seconds'] for r in result['runs']['budget'])} vs "
            f"{runs(r['seconds'] for r in result['runs']['baseline'])}",
        ]

    rows = [
        versus(
            v,
            f"`bench_budget_time.py --baseline {v['baseline_commit']}`: this gate (commit "
            f"{v['commit'][:7]}) vs the one before the detectors that need no declarations "
            f"(goal <= {v['goal']}x)",
        ),
        versus(
            b,
            f"`bench_budget_time.py`: this gate vs commit {b['baseline_commit']} (before the "
            "error budget)",
        ),
        [
            "`bench_gate_time.py --mode disclosure`: with vs without the disclosure stage",
            str(d["repeats"]),
            _seconds(d["median_seconds"]["new"]),
            _seconds(d["median_seconds"]["today"]),
            f"{d['ratio_new_over_today']:.2f}x",
            f"{runs(d['seconds']['new'])} vs {runs(d['seconds']['today'])}",
        ],
    ]
    head = [
        "benchmark (full Adult, alternating runs)",
        "runs each",
        "median",
        "baseline median",
        "ratio",
        "every run (s)",
    ]
    return (
        _table(head, rows)
        + "\n\n"
        + source("gate_time_versions", "gate_time_budget", "gate_time_disclosure")
    )


def scale() -> str:
    """The whole gate from 10,000 to 1,000,000 Adult-like rows: four paths, time, peak memory,
    verdict."""
    names = (
        "scale",
        "scale_cli_independent",
        "scale_release_independent",
        "scale_library_noisy_copies",
    )
    by = [{r["rows"]: r for r in load(n)["runs"]} for n in names]
    rows = []
    for size in sorted(set().union(*by)):
        cells = [f"{size:,}"]
        for i, runs in enumerate(by):
            r = runs.get(size)
            if r is None:
                cells.append("not measured")
            elif i < 3:
                cells.append(
                    f"{_seconds(r['gate_seconds'])}, {r['peak_rss_gb']:.1f} GB, {r['decision']}"
                )
            else:
                cells.append(
                    f"{r['decision']} (`exposed.share_lower` {r['exposed_share_lower']:.3f})"
                )
        rows.append(cells)
    slopes = ["log-log slope of time, 20,000 -> 160,000 rows"]
    for i, runs in enumerate(by):
        ends = [runs.get(n) for n in (20_000, 160_000)]
        slopes.append(
            f"{math.log(ends[1]['gate_seconds'] / ends[0]['gate_seconds']) / math.log(8):.2f}"
            if i < 3 and all(ends)
            else ""
        )
    rows.append(slopes)
    measured = sorted(r["measured"][:16] for runs in by[:3] for r in runs.values())
    head = [
        "rows",
        "library gate (independent)",
        "CLI `gate` (Parquet in, MLflow, report)",
        "MST release (`run`)",
        "5% noisy copies (library)",
    ]
    when = f"The gate paths measured {measured[0]} to {measured[-1]} UTC. " if measured else ""
    return _table(head, rows) + "\n\n" + when + source(*names)


def exposure() -> str:
    """Per-sample detection on Adult (``bench_exposure.py``): the table its ``--table`` prints."""
    from benchmarks.bench_exposure import markdown_table

    return markdown_table(load("exposure_adult")["summary"]) + "\n\n" + source("exposure_adult")


def probes() -> str:
    """The hardening probes by kind (``bench_probes.py``): how many failed closed."""
    d = load("probes")
    rows = [
        [
            r["kind"],
            r["what"],
            str(r["probes"]),
            str(r["closed"]),
            str(r["failed"]),
            str(r["skipped"]),
        ]
        for r in d["rows"]
    ]
    t = d["total"]
    rows.append(
        [
            "**all**",
            "",
            f"**{t['probes']}**",
            f"**{t['closed']}**",
            str(t["failed"]),
            str(t["skipped"]),
        ]
    )
    head = ["kind", "what the probes do", "probes", "closed", "failed", "skipped"]
    return (
        _table(head, rows, ["---", "---", "---:", "---:", "---:", "---:"])
        + "\n\n"
        + source("probes")
    )


def privgan() -> str:
    """privGAN against the plain GAN on Adult (``bench_privgan.py``): means over the seeds, one row
    per generator and number of generators, the privacy weights (lambda) side by side."""
    d = load("privgan_adult")
    groups: dict[tuple, list[dict]] = {}
    for s in d["summary"]:
        groups.setdefault((s["generator"], s["n_generators"]), []).append(s)
    rows = []
    for (gen, n), ss in groups.items():
        ss = sorted(ss, key=lambda s: s["privacy_weight"])
        col = lambda k, ss=ss: " / ".join(f"{s[k]:.3f}" for s in ss)  # noqa: E731
        rows.append(
            [
                f"`{gen}`",
                str(n),
                " / ".join(f"{s['privacy_weight']:g}" for s in ss),
                col("auc_mean"),
                col("white_box_auc_mean"),
                col("utility_quality_mean"),
            ]
        )
    head = [
        "generator",
        "N",
        "lambda",
        "strongest black-box AUC",
        "white-box AUC (discriminator)",
        "utility quality",
    ]
    return _table(head, rows) + "\n\n" + source("privgan_adult")


#: the generators of ``bench_dp_audit.py --teeth`` in words
DP_AUDIT_TEETH = {
    "mst": "MST (honest)",
    "privbayes": "PrivBayes (honest)",
    "private_gsd": "Private-GSD (honest)",
    "mst_tenth_noise (broken)": "MST, noise / 10 (broken)",
    "privbayes_train_bins (broken)": "PrivBayes, bins from the training split (broken)",
}


def dp_audit_teeth() -> str:
    """Honest and broken DP generators audited over seeds (``bench_dp_audit.py --teeth``): how many
    audits show the claim exceeded, the epsilon lower bounds' range, and the score that gave the
    largest bound when one exceeded the claim."""
    d = load("dp_audit_teeth")
    seeds = d["seeds"]
    rows = []
    for gen, s in d["summary"].items():
        exceeds = str(s["exceeds_claim"])
        bound = f"{s['epsilon_lower_min']:.2f} – {s['epsilon_lower_max']:.2f}"
        if s["exceeds_claim"]:
            exceeds = f"**{exceeds}**"
            best = {
                a["best_score"] for a in d["audits"] if a["generator"] == gen and a["exceeds_claim"]
            }
            bound += " (" + ", ".join(sorted(b.replace("box", "-box") for b in best)) + ")"
        rows.append([DP_AUDIT_TEETH.get(gen, gen), str(s["audits"]), exceeds, bound])
    head = [
        "generator",
        f"audits (seeds {seeds[0]}–{seeds[-1]})",
        "`exceeds_claim` at 95%",
        "epsilon >= (min – max over seeds)",
    ]
    return _table(head, rows) + "\n\n" + source("dp_audit_teeth")


def naming() -> str:
    """Target-level naming at 12,000 training rows (``bench_naming.py``): per cell, gates where
    any record was named and the mean named, with equal shares q/k and with the label-blind
    shares, the largest false-discovery proportion, and the twin floor's range."""
    d = load("naming_12000")
    rows = []
    for cell, s in d["summary"].items():
        mine = [r for r in d["rows"] if r["cell"] == cell]
        twins = [r["twins_at_copy_median"] for r in mine]
        copied = [r["copied_tested"] for r in mine]
        w, e = s["weighted"], s["equal"]
        rows.append(
            [
                f"{LEAKS.get(cell, cell)} (`{cell}`)",
                f"{min(copied)}–{max(copied)}",
                f"{e['named_any']}/{e['gates']}, {e['named_mean']:.1f}",
                f"{w['named_any']}/{w['gates']}, {w['named_mean']:.1f}",
                _pct(w["fdp_max"], 1),
                f"{min(twins)}–{max(twins)}",
            ]
        )
    head = [
        "leak",
        "copied member targets",
        "equal shares q/k: gates naming any, mean named",
        "label-blind shares: gates naming any, mean named",
        "largest FDP",
        "twins at the copies' median",
    ]
    return _table(head, rows) + "\n\n" + source("naming_12000")


def _power_cell(cell: dict | None, digits: int = 0) -> str:
    if not cell or not cell.get("n"):
        return "–"
    return (
        f"{cell['not_approved']}/{cell['n']} ({_pct(cell['power'], digits)} "
        f"{_ci(cell['power_ci'], digits)})"
    )


def _leak_power_by_info(name: str) -> str:
    d = load(name)
    s = d["summary"]
    bins = list(s["power_by_info"])
    rows = [
        [
            b,
            _power_cell(s["power_by_info"].get(b)),
            _power_cell(s["halves"]["development"]["power_by_info"].get(b)),
            _power_cell(s["halves"]["reported"]["power_by_info"].get(b)),
        ]
        for b in bins
    ]
    rows.append(["avoided (no per-record label)", _power_cell(s["avoided"]), "", ""])
    head = [
        "information beyond the twin (median bits per leaked record)",
        "all tables",
        "development half",
        "reported half",
    ]
    return _table(head, rows) + "\n\n" + source(name)


def leak_power() -> str:
    """Leaks drawn from the grammar, nothing declared, 2,000 training rows: not approved by the
    information a leak reveals beyond the natural twin, per half."""
    return _leak_power_by_info("leak_power_undeclared")


def leak_power_12000() -> str:
    """The same at 12,000 training rows (the tables large enough for it)."""
    return _leak_power_by_info("leak_power_12000")


def leak_power_criterion() -> str:
    """At 12,000 training rows, the leaks that copy at least 1 % of the training records, by the
    least information they reveal beyond the natural twin: not approved, nothing declared and
    with the spec's declarations, all tables and the reported half."""
    undeclared, declared = load("leak_power_12000"), load("leak_power_declared_12000")
    cu, cd = undeclared["summary"]["criterion"], declared["summary"]["criterion"]
    parts = ((cu, "all"), (cu, "reported"), (cu, "larger"), (cd, "all"), (cd, "reported"))
    bins = [b for b in cu["all"] if b.endswith("bits")]
    rows = [
        [f"copies >= {100 * cu['share_at_least']:g} %, {bits}"]
        + [_power_cell(c[part][bits]) for c, part in parts]
        for bits in bins
    ]
    rows.append(
        [f"least threshold holding {100 * cu['power_asked']:g} % from there on"]
        + [
            "none" if (t := c[part]["threshold_reached"]) is None else f"{t:g} bits"
            for c, part in parts
        ]
    )
    head = [
        "leaks (median bits beyond the twin per leaked record)",
        "nothing declared: all tables",
        "nothing declared: reported half",
        f"nothing declared: tables giving >= {cu['min_train_larger']:,} training rows",
        "declared: all tables",
        "declared: reported half",
    ]
    return _table(head, rows) + "\n\n" + source("leak_power_12000", "leak_power_declared_12000")


def leak_power_shapes() -> str:
    """The named shapes at 12,000 training rows, on the reported half and on adult: not approved
    with nothing declared and with the declarations, and the information each reveals (the
    smallest and the median of the releases' median bits beyond the twin, nothing declared)."""
    runs = (
        ("reported half", "leak_power_shapes_12000", "leak_power_shapes_declared_12000"),
        ("adult", "leak_power_shapes_adult_12000", "leak_power_shapes_adult_declared_12000"),
    )
    rows = []
    for where, undeclared_name, declared_name in runs:
        undeclared = load(undeclared_name)["summary"]["shapes"]
        declared = load(declared_name)["summary"]["shapes"]
        for name, words in SHAPE_WORDS.items():
            u = undeclared.get(name)
            if not u:
                continue
            infos = u["info_medians"]
            rows.append(
                [
                    words,
                    where,
                    _power_cell(u),
                    _power_cell(declared.get(name)),
                    f"{infos[0]:.1f} / {infos[len(infos) // 2]:.1f}" if infos else "–",
                ]
            )
    head = [
        "named shape",
        "tables",
        "not approved, nothing declared",
        "not approved, declared",
        "bits beyond the twin (smallest / median release)",
    ]
    return _table(head, rows) + "\n\n" + source(*(name for run in runs for name in run[1:]))


def leak_power_tables() -> str:
    """Per table: clean releases approved and leaks held back (nothing declared, 2,000 rows)."""
    d = load("leak_power_undeclared")
    rows = []
    for table, t in d["summary"]["tables"].items():
        rows.append(
            [table, t["half"], f"{t['null_approved']}/{t['nulls']}", _power_cell(t["leaks"])]
        )
    return (
        _table(["table", "half", "clean releases approved", "leaks held back"], rows)
        + "\n\n"
        + source("leak_power_undeclared")
    )


def leak_power_short() -> str:
    """The README's form: the reported half only, by information beyond the twin, at 12,000
    training rows requested."""
    d = load("leak_power_12000")
    rep = d["summary"]["halves"]["reported"]["power_by_info"]
    nulls = [t for t in d["summary"]["tables"].values() if t["half"] == "reported"]
    rows = [[b, _power_cell(rep.get(b))] for b in rep]
    approved, n = sum(t["null_approved"] for t in nulls), sum(t["nulls"] for t in nulls)
    rows.append(["clean releases approved", f"{approved}/{n}"])
    return (
        _table(
            [
                "information beyond the twin (bits per leaked record)",
                "leaks not approved [Wilson 95 %]",
            ],
            rows,
        )
        + "\n\n"
        + source("leak_power_12000")
    )


def leak_power_shapes_short() -> str:
    """The README's form of :func:`leak_power_shapes`: the reported half, nothing declared."""
    shapes = load("leak_power_shapes_12000")["summary"]["shapes"]
    rows = [
        [words, _power_cell(shapes.get(name))]
        for name, words in SHAPE_WORDS.items()
        if name in shapes
    ]
    return (
        _table(
            ["named shape (reported half, nothing declared)", "not approved [Wilson 95 %]"], rows
        )
        + "\n\n"
        + source("leak_power_shapes_12000")
    )


#: the generators of ``bench_sok_mia.py`` in words
SOK_GENERATORS = {"mst": "MST", "privbayes": "PrivBayes", "private_gsd": "Private-GSD"}


def sok_mia() -> str:
    """Our attacks against our DP generators in the SoK's Adult setting (``bench_sok_mia.py``): per
    generator and epsilon, the SoK's published AUCs (theirs, one run), ours as mean (min–max) over
    the seeds, the DP ceiling on the AUC, and the highest TPR at 1% FPR of any attack against its
    ceiling."""
    d = load("sok_mia_adult")
    labels = list(d["setup"]["attacks"])
    rows = []
    for s in d["summary"]:
        ours = [
            f"{s['ours'][a]['auc_mean']:.3f} "
            f"({s['ours'][a]['auc_min']:.3f}–{s['ours'][a]['auc_max']:.3f})"
            for a in labels
        ]
        best = max(labels, key=lambda a: s["ours"][a]["tpr_at_fpr_0.01_max"])
        ceiling = s["dp_ceiling"]
        rows.append(
            [
                SOK_GENERATORS[s["generator"]],
                f"{s['epsilon']:g}",
                f"{s['published']['SynthDistance']:.3f}",
                f"{s['published']['NNDR']:.3f}",
                *ours,
                f"{ceiling['auc']:.3f}",
                f"{s['ours'][best]['tpr_at_fpr_0.01_max']:.3f} (`{best}`) / "
                f"{ceiling['tpr_at_fpr_0.01']:.3f}",
            ]
        )
    head = [
        "generator",
        "ε",
        "SoK SynthDistance",
        "SoK NNDR",
        *(f"`{a}`" for a in labels),
        "DP ceiling (AUC)",
        "TPR at 1 % FPR: highest / ceiling",
    ]
    return (
        _table(head, rows, ["---", "---:", *["---:"] * (len(head) - 2)])
        + "\n\n"
        + source("sok_mia_adult")
    )


def _shadow_cells(part_is_power: bool) -> list[dict]:
    return [c for c in load("shadow_gate")["cells"] if (c["part"] == "power") == part_is_power]


def _count(k: int | None, n: int, ci) -> str:
    return "—" if k is None else f"{k}/{n} {_ci(ci)} %"


def shadow_validity() -> str:
    """The generator-aware test on releases that cannot single anyone out (``bench_shadow_gate.py
    --part level | validity``): per cell, the test alone at its share and at 5 %, and for whole
    gates how many were approved, held back for privacy, or stopped by the utility bar only."""
    rows = []
    for c in _shadow_cells(False):
        k, (first, last) = c["seeds"], c["seed_range"]
        rows.append(
            [
                c["part"],
                c["table"],
                str(c["n_train"]),
                f"`{c['generator']}`",
                f"{k} ({first}–{last})",
                _count(c["shadow_rejects_at_share"], k, c["shadow_rejects_at_share_wilson"]),
                _count(c["shadow_rejects_at_0.05"], k, c["shadow_rejects_at_0.05_wilson"]),
                _count(c["approved"], k, c["approved_wilson"]),
                _count(c.get("held_back_for_privacy"), k, c.get("held_back_for_privacy_wilson")),
                "—" if c.get("utility_only") is None else str(c["utility_only"]),
                f"{c['median_fits']:.0f}",
                f"{c['median_seconds']:.0f}",
            ]
        )
    head = [
        "part",
        "table",
        "rows",
        "generator",
        "seeds",
        "test alone rejects at its share [Wilson]",
        "at 5 % [Wilson]",
        "gate approves [Wilson]",
        "held back for privacy [Wilson]",
        "utility bar only",
        "fits (median)",
        "s per gate (median)",
    ]
    return _table(head, rows) + "\n\n" + source("shadow_gate")


def shadow_power() -> str:
    """Memorising generators (``bench_shadow_gate.py --part power``): not approved with the recipe
    known and by the holdout-calibrated gate alone on the same releases, the test's rejections,
    and the records it named with their mean false discovery proportion."""
    rows = []
    for c in _shadow_cells(True):
        k, (first, last) = c["seeds"], c["seed_range"]
        rows.append(
            [
                c["table"],
                str(c["n_train"]),
                f"`{c['generator']}`",
                f"{k} ({first}–{last})",
                _count(c["not_approved"], k, c["not_approved_wilson"]),
                _count(
                    c.get("holdout_only_not_approved"),
                    k,
                    c.get("holdout_only_not_approved_wilson"),
                ),
                f"{c['shadow_rejects_at_share']}/{k}",
                f"{c.get('named_mean', 0):.0f}",
                f"{c.get('named_fdp_mean', 0):.3f}",
            ]
        )
    head = [
        "table",
        "rows",
        "generator",
        "seeds",
        "with the recipe: not approved [Wilson]",
        "holdout-calibrated gate alone: not approved [Wilson]",
        "test rejects at its share",
        "named (mean)",
        "false discovery proportion of the named (mean)",
    ]
    return _table(head, rows) + "\n\n" + source("shadow_gate")


TABLES: dict[str, Callable[[], str]] = {
    f.__name__: f
    for f in (
        naming,
        calibration_panel_nulls,
        calibration_transforms,
        calibration_nulls_halves,
        calibration_nulls_fresh,
        leak_power,
        leak_power_criterion,
        leak_power_shapes,
        leak_power_shapes_short,
        leak_power_12000,
        leak_power_tables,
        leak_power_short,
        calibration_nulls,
        calibration_nulls_total,
        calibration_power,
        calibration_power_short,
        calibration_side_by_side,
        gate_time,
        scale,
        exposure,
        probes,
        privgan,
        dp_audit_teeth,
        sok_mia,
        shadow_validity,
        shadow_power,
    )
}


# ------------------------------------------------------------------------------ pages and checks


def regenerate(text: str, where: str = "page") -> str:
    """``text`` with every marked table rendered afresh; an unknown table name is an error."""

    def one(m: re.Match) -> str:
        name = m["name"]
        if name not in TABLES:
            raise KeyError(f"{where}: unknown table {name!r} (known: {', '.join(TABLES)})")
        return f"<!-- table:{name} -->\n\n{TABLES[name]()}\n\n<!-- /table -->"

    return MARKER.sub(one, text)


def drift(root: Path = ROOT) -> list[str]:
    """A unified diff per page whose marked tables differ from what the results give."""
    out = []
    for page in PAGES:
        text = (root / page).read_text()
        new = regenerate(text, page)
        if new != text:
            out.append(
                "".join(
                    difflib.unified_diff(
                        text.splitlines(True),
                        new.splitlines(True),
                        f"{page} (committed)",
                        f"{page} (from benchmarks/results)",
                    )
                )
            )
    return out


def marked(root: Path = ROOT) -> Counter:
    """How many times each table is marked across the pages."""
    return Counter(m["name"] for page in PAGES for m in MARKER.finditer((root / page).read_text()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="rewrite the marked tables of the pages")
    g.add_argument(
        "--check", action="store_true", help="exit 1 when a marked table differs (the default)"
    )
    g.add_argument("--print", metavar="TABLE", choices=list(TABLES), help="print one table")
    args = ap.parse_args(argv)
    if args.print:
        print(TABLES[args.print]())
        return 0
    if args.write:
        for page in PAGES:
            path = ROOT / page
            text = path.read_text()
            new = regenerate(text, page)
            if new != text:
                path.write_text(new)
                print(f"rewrote the tables of {page}")
        return 0
    diffs = drift()
    for d in diffs:
        print(d)
    if diffs:
        print(
            "tables differ from benchmarks/results: run `python benchmarks/tables.py --write`",
            file=sys.stderr,
        )
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
