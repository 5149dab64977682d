"""The dependency study: does training on dependent data make a release leakier than its IID
figures (and its DP bound) say? (Humphries et al., adapted from classifiers to generators.)

For every scenario of ``dependency_study`` (see :class:`privacy_gate.config.DependencyStudyConfig`)
and every repetition, a dependent split is drawn from the real data (train + holdout of the
release config's split; the reference split stays the attacker's) together with its IID
counterpart; every generator (at every epsilon) is **retrained** on each training set, its
release attacked with the configured attacks (MAMA-MIA only for marginal generators), and the
advantage of the strongest attack estimated by MACE over the study's members and non-members
(debiased point estimate; bounds at delta / k over the k attacks). The same split serves every
generator and epsilon of a repetition, so their comparison is paired.

MLflow: one parent run (kind ``dependency_study``) with the settings, every experiment's figures
(``dependency/experiments.parquet``: figures only, no records), the summary, the invariants and
the figure; one nested run per setting x generator x epsilon with the non-IID and IID figures.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from privacy_gate import names, tracking
from privacy_gate.attacks import ThreatModel
from privacy_gate.config import AttackConfig, ReleaseConfig, StudyGenerator, StudyScenario
from privacy_gate.errors import ConfigError
from privacy_gate.estimators.mace.advantage import estimate_advantage
from privacy_gate.experiment.attack_runs import run_attack
from privacy_gate.experiment.inputs import load_real_data, split_release
from privacy_gate.experiment.targets import Targets
from privacy_gate.generators import create_generator, generator_capabilities, sample_synthetic
from privacy_gate.report.dependency_plot import dependency_figure
from privacy_gate.spec import DatasetSpec
from privacy_gate.studies.dependency_splits import (
    Clustering,
    StudySplit,
    bias_split,
    cluster_split,
    iid_counterpart,
    source_split,
    spec_without,
)
from privacy_gate.studies.dependency_summary import check_invariants, invariant_lines, summarise

#: permutations of the null that debiases each attack's plug-in advantage (cheap for 1-d queries)
N_PERMUTATIONS = 20


def _log(logger: Any, msg: str, *args: Any) -> None:
    if logger is not None:
        logger.info(msg, *args)


def study_attacks(attacks: list[AttackConfig], generator: str) -> list[AttackConfig]:
    """The gated attacks, MAMA-MIA only against generators that declare marginal selection."""
    marginal = generator_capabilities(generator).marginal
    return [a for a in attacks if a.gate and (a.name != "mama_mia" or marginal)]


def measure(
    split: StudySplit,
    *,
    generator: StudyGenerator,
    epsilon: float | None,
    spec: DatasetSpec,
    reference: pd.DataFrame,
    attacks: list[AttackConfig],
    prior: float,
    delta: float,
    seed: int,
) -> dict[str, Any]:
    """Retrain ``generator`` on the split's members, attack its release, bound the advantage."""
    started = time.perf_counter()
    drop = list(split.dropped)
    spec_d = spec_without(spec, split.dropped)
    members, non_members = split.members.drop(columns=drop), split.non_members.drop(columns=drop)
    ref = reference.drop(columns=drop)
    params = {
        **generator.params,
        "seed": seed,
        **({"epsilon": epsilon} if epsilon is not None else {}),
    }
    model = create_generator(generator.name, **params).fit(members, spec_d, reference=ref)
    synthetic = sample_synthetic(model, len(members), spec_d)
    targets = Targets(
        records=pd.concat([members, non_members]),
        labels=np.r_[np.ones(len(members), np.int8), np.zeros(len(non_members), np.int8)],
    )
    threat = ThreatModel(
        synthetic=synthetic,
        reference=ref,
        spec=spec_d,
        generator=generator.name,
        generator_params=params,
        n_train=len(members),
    )
    outcomes = [run_attack(a, threat, targets) for a in study_attacks(attacks, generator.name)]
    k = len(outcomes)
    # one MACE estimate per attack at delta / k (Bonferroni: the largest lower bound is a valid
    # lower bound on the strongest attack's advantage), debiased by a small permutation null: the
    # plug-in of a 1-d query is biased upward by ~0.07 at 1,000 per class, a multi-d combination
    # by ~0.2, which would swamp the IID figures
    est = {
        o.name: estimate_advantage(
            o.scores,
            targets.labels,
            prior=prior,
            delta=delta / k,
            n_permutations=N_PERMUTATIONS,
            seed=seed,
        )
        for o in outcomes
    }
    debiased = {a: e.estimate - (e.bias or 0.0) for a, e in est.items()}
    row = {
        "scenario": split.scenario,
        "setting": split.setting,
        "generator": generator.name,
        "epsilon": epsilon,
        "iid": split.iid,
        "n_members": len(members),
        "n_non_members": len(non_members),
        "strongest": max(debiased, key=debiased.get),
        "advantage": max(debiased.values()),
        "advantage_lower": max(e.lower for e in est.values()),
        "advantage_upper": max(e.upper for e in est.values()),
        "auc": max(o.metrics["auc"] for o in outcomes),
    }
    row.update({f"{o.name}.auc": o.metrics["auc"] for o in outcomes})
    row.update({f"{a}.advantage": v for a, v in debiased.items()})
    row["seconds"] = time.perf_counter() - started
    return row


def _splits_of(
    sc: StudyScenario,
    pool: pd.DataFrame,
    spec: DatasetSpec,
    clusters: np.ndarray | None,
    *,
    n_members: int,
    n_non_members: int,
    seed: int,
    index: int,
    rep: int,
):
    """(dependent split, IID counterpart) per setting of the scenario for one repetition;
    ``clusters``: the pool rows' clusters of a cluster scenario."""
    shares = sc.shares if sc.kind == "bias" else [None]
    for j, share in enumerate(shares):
        rng = np.random.default_rng([seed, index, j, rep])
        if sc.kind == "source":
            split = source_split(
                pool,
                source=str(spec.source),
                value=sc.value,
                n_members=n_members,
                n_non_members=n_non_members,
                rng=rng,
            )
        elif sc.kind == "cluster":
            split = cluster_split(
                pool,
                clusters,
                clusters=sc.clusters,
                n_members=n_members,
                n_non_members=n_non_members,
                rng=rng,
            )
        else:
            split = bias_split(
                pool,
                attribute=str(sc.attribute),
                value=sc.value,
                at_least=sc.at_least,
                share=float(share),
                n_members=n_members,
                n_non_members=n_non_members,
                rng=rng,
            )
        yield split, iid_counterpart(split, rng=rng)


def plan_size(config: ReleaseConfig) -> int:
    """How many generator fits (and attacks) the study makes."""
    st = config.dependency_study
    total = 0
    for sc in st.scenarios:
        fits = sum(len(g.epsilons or [None]) for g in (sc.generators or st.generators))
        total += 2 * fits * st.repetitions * (len(sc.shares) if sc.kind == "bias" else 1)
    return total


def run_dependency_study(
    config: ReleaseConfig, *, workdir: str | Path, logger: Any = None
) -> dict[str, Any]:
    """Run the study of ``config.dependency_study``; returns run id, summary and invariants."""
    study = config.dependency_study
    if study is None:
        raise ConfigError(
            "dependency-study: the config has no 'dependency_study' section (see README, "
            "'Dependency study')"
        )
    spec = config.dataset.spec
    for g in {
        g.name: g for sc in study.scenarios for g in (sc.generators or study.generators)
    }.values():
        create_generator(g.name, **g.params)  # names and parameters checked before any work
    real, public = load_real_data(config)
    parts = split_release(config, real, public)
    pool, reference = pd.concat([parts.train, parts.holdout]), parts.reference
    tracker = tracking.Tracker.for_workdir(
        workdir=Path(workdir),
        dataset=spec.name,
        uri=config.tracking.uri,
        experiment=config.tracking.experiment,
    )
    parent = tracker.start_run(
        name=f"dependency-study-{spec.name}",
        kind="dependency_study",
        tags={names.TAG_DATASET: spec.name},
    )
    try:
        tracker.log_params(
            parent,
            {
                "members": study.members,
                "non_members": study.non_members,
                "repetitions": study.repetitions,
                "seed": study.seed,
                "scenarios": json.dumps([s.model_dump(exclude_none=True) for s in study.scenarios]),
                "generators": json.dumps(
                    [g.model_dump(exclude_none=True) for g in study.generators]
                ),
                "attacks": ",".join(a.key for a in config.attacks),
            },
        )
        rows = _experiments(config, pool, reference, logger)
        result = _record(tracker, parent, config, rows)
    except BaseException:
        tracker.end_run(parent, failed=True)
        raise
    tracker.end_run(parent)
    for line in invariant_lines(result["invariants"]):
        _log(logger, "%s", line)
    return {**result, "run_id": parent, "tracking_uri": tracker.uri}


def _experiments(
    config: ReleaseConfig, pool: pd.DataFrame, reference: pd.DataFrame, logger: Any
) -> list[dict]:
    study, spec = config.dependency_study, config.dataset.spec
    total, done, started = plan_size(config), 0, time.perf_counter()
    _log(
        logger,
        "dependency study: %d generator fits over %d scenario(s), %d repetition(s)",
        total,
        len(study.scenarios),
        study.repetitions,
    )
    rows: list[dict[str, Any]] = []
    for i, sc in enumerate(study.scenarios):
        gens = sc.generators or study.generators
        # fitted (and the pool assigned) once per scenario, like the paper's clustering: the
        # repetitions re-draw the records
        clusters = (
            Clustering.fit(reference, spec, k=sc.k, seed=study.seed).assign(pool)
            if sc.kind == "cluster"
            else None
        )
        for rep in range(study.repetitions):
            for pair in _splits_of(
                sc,
                pool,
                spec,
                clusters,
                n_members=study.members,
                n_non_members=study.non_members,
                seed=study.seed,
                index=i,
                rep=rep,
            ):
                for g in gens:
                    for eps in g.epsilons or [None]:
                        got = [
                            measure(
                                sp,
                                generator=g,
                                epsilon=eps,
                                spec=spec,
                                reference=reference,
                                attacks=list(config.attacks),
                                prior=config.mace.prior,
                                delta=config.mace.delta,
                                seed=study.seed + rep,
                            )
                            for sp in pair
                        ]
                        rows += [{**r, "rep": rep} for r in got]
                        done += 2
                        eta = (time.perf_counter() - started) / done * (total - done)
                        _log(
                            logger,
                            "  [%d/%d] %s, %s%s, rep %d: advantage non-IID %.3f, IID %.3f (ETA "
                            "%.0f s)",
                            done,
                            total,
                            pair[0].setting,
                            g.name,
                            "" if eps is None else f" eps {eps:g}",
                            rep,
                            got[0]["advantage"],
                            got[1]["advantage"],
                            eta,
                        )
    return rows


def _record(
    tracker: tracking.Tracker, parent: str, config: ReleaseConfig, rows: list[dict]
) -> dict[str, Any]:
    """Summary, invariants, nested runs and the figure, logged to the parent run."""
    summary = summarise(rows, prior=config.mace.prior)
    invariants = check_invariants(summary)
    tracker.log_frame(parent, pd.DataFrame(rows), names.ART_STUDY_EXPERIMENTS)
    tracker.log_json(parent, summary, names.ART_STUDY_SUMMARY)
    tracker.log_json(parent, invariants, names.ART_STUDY_INVARIANTS)
    tracker.log_figure(
        parent, dependency_figure(summary, prior=config.mace.prior), names.ART_STUDY_PLOT
    )
    tracker.log_metrics(
        parent,
        {
            f"invariant.{k}": float(inv["holds"])
            for k, inv in enumerate(invariants, 1)
            if inv["holds"] is not None
        },
    )
    cells: dict[tuple, dict[str, Any]] = {}
    for c in summary:
        cells.setdefault((c["setting"], c["generator"], c["epsilon"]), {})[
            "iid" if c["iid"] else "non_iid"
        ] = c
    for (setting, gen, eps), pair in cells.items():
        eps_txt = "" if eps is None else f" eps={eps:g}"
        child = tracker.start_run(
            name=f"{setting} {gen}{eps_txt}",
            kind="dependency_cell",
            parent=parent,
            tags={
                names.TAG_DATASET: config.dataset.spec.name,
                "study.setting": setting,
                "study.generator": gen,
            },
        )
        tracker.log_params(child, {"setting": setting, "generator": gen, "epsilon": eps})
        metrics = {
            f"{kind}.{f}": float(c[f])
            for kind, c in pair.items()
            for f in (
                "advantage_mean",
                "advantage_ci",
                "advantage_lower_mean",
                "advantage_upper_mean",
                "auc_mean",
            )
            if c[f] is not None and not np.isnan(c[f])
        }
        if eps is not None:
            metrics["dp_bound"] = float(next(iter(pair.values()))["dp_bound"])
        tracker.log_metrics(child, metrics)
        tracker.end_run(child)
    return {"summary": summary, "invariants": invariants, "experiments": rows}
