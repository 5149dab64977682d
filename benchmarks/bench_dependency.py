"""The dependency study on Adult (Humphries et al., adapted to generators): the natural source
split (workclass), the cluster split and the sex / education bias sweeps, each generator
retrained on the dependent training set and on its IID counterpart; the paper's invariants
checked and printed.

``python benchmarks/bench_dependency.py [--repetitions 3] [--members 1000]`` runs
``examples/adult-dependency.yaml`` (MST, PrivBayes, Private-GSD over an epsilon grid and the
non-DP Gaussian copula; see the config) and records the summary, the invariants and the wall
time in ``benchmarks/results/dependency_adult.json``; the figure goes to the MLflow run and to
``benchmarks/results/dependency_adult.png``. ``--default-time`` also times the study at the
config section's defaults (1,000 members, 5 repetitions) on the source scenario with MST alone.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import RESULTS, ROOT, record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "examples" / "adult-dependency.yaml"))
    ap.add_argument("--repetitions", type=int, default=None, help="default: the config's")
    ap.add_argument(
        "--members", type=int, default=None, help="members and non-members (default: the config's)"
    )
    ap.add_argument(
        "--default-time", action="store_true", help="also time a study at the section's defaults"
    )
    args = ap.parse_args()

    from privacy_gate.config import (
        DependencyStudyConfig,
        StudyGenerator,
        StudyScenario,
        load_release_config,
    )
    from privacy_gate.report.dependency_plot import dependency_figure
    from privacy_gate.studies.dependency_study import plan_size, run_dependency_study
    from privacy_gate.studies.dependency_summary import invariant_lines

    logging.basicConfig(level=logging.WARNING)
    logger = logging.getLogger("privacy_gate.bench")
    logger.setLevel(logging.INFO)
    cfg = load_release_config(args.config)
    update = {
        k: v
        for k, v in (
            ("repetitions", args.repetitions),
            ("members", args.members),
            ("non_members", args.members),
        )
        if v is not None
    }
    cfg = cfg.model_copy(
        update={"dependency_study": cfg.dependency_study.model_copy(update=update)}
    )
    fits = plan_size(cfg)
    with tempfile.TemporaryDirectory() as workdir:
        started = time.perf_counter()
        result = run_dependency_study(cfg, workdir=workdir, logger=logger)
        seconds = time.perf_counter() - started
        default_seconds = None
        if args.default_time:
            d = cfg.model_copy(
                update={
                    "dependency_study": DependencyStudyConfig(
                        scenarios=[StudyScenario(kind="source")],
                        generators=[StudyGenerator(name="mst", epsilons=[1.0])],
                    )
                }
            )
            started = time.perf_counter()
            run_dependency_study(d, workdir=workdir, logger=None)
            default_seconds = time.perf_counter() - started
    print(f"\n{fits} generator fits in {seconds:.0f} s ({seconds / fits:.1f} s each)")
    if default_seconds is not None:
        print(
            "study at the section's defaults (source split, MST epsilon 1, 1,000 members, 5 "
            "repetitions): "
            f"{default_seconds:.0f} s"
        )
    print("\n".join(invariant_lines(result["invariants"])))
    fig = dependency_figure(result["summary"], prior=cfg.mace.prior)
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / "dependency_adult.png", dpi=110)
    record(
        "dependency_adult",
        {
            "settings": {
                **cfg.dependency_study.model_dump(mode="json"),
                "attacks": [a.key for a in cfg.attacks],
            },
            "seconds": round(seconds, 1),
            "generator_fits": fits,
            "default_study_seconds": None if default_seconds is None else round(default_seconds, 1),
            "invariants": result["invariants"],
            "summary": result["summary"],
        },
    )


if __name__ == "__main__":
    main()
