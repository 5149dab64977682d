"""The MLflow record of a gate run: one parent run per release, a child run per attack, the
verdict as tags and ``verdict.json``. All names come from :mod:`privacy_gate.names`; all MLflow
calls go through :class:`privacy_gate.tracking.Tracker`.

Never logged: values of real records. Per-record results are keyed by row id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: figures are rendered to PNG artefacts, never shown
import matplotlib.pyplot as plt
import numpy as np

from privacy_gate import names, tracking
from privacy_gate.errors import PrivacyGateError
from privacy_gate.estimators.metrics import roc_curve_points
from privacy_gate.experiment.attack_runs import scores_frame
from privacy_gate.gate import Verdict
from privacy_gate.pipeline.result import GateResult
from privacy_gate.report.plots import (
    disclosure_figure,
    dp_audit_figure,
    dp_audit_figure_inputs,
    risk_profile_figure,
    roc_figure,
    shadow_figure,
)
from privacy_gate.report.summary import run_description, verdict_markdown  # noqa: E402
from privacy_gate.tracking import metric_records
from privacy_gate.tracking.artifact_seal import text_sha256


def table_digest(df: Any) -> str:
    """A content digest of a table (row ids and values, hashed): identifies it, reveals nothing."""
    import hashlib

    import pandas as pd

    return hashlib.sha256(
        pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes()
    ).hexdigest()


def _thin(fpr: np.ndarray, tpr: np.ndarray, points: int = 300) -> tuple[list[float], list[float]]:
    """At most about ``points`` points of a ROC curve, dense at low FPR (its log axis), ends
    kept."""
    if len(fpr) <= points:
        return [float(x) for x in fpr], [float(x) for x in tpr]
    grid = np.r_[np.logspace(-6, 0, points // 2), np.linspace(0, 1, points // 2)]
    keep = np.unique(np.r_[0, np.clip(np.searchsorted(fpr, grid), 0, len(fpr) - 1), len(fpr) - 1])
    return [float(x) for x in fpr[keep]], [float(x) for x in tpr[keep]]


def flagged_group_rocs(result: GateResult) -> dict[str, Any]:
    """The ROC curve of every attack inside each flagged group (its members vs its non-members),
    for the first ``names.MAX_GROUP_ROCS`` flagged groups; ``omitted`` counts the rest."""
    flagged = list(result.verdict.flagged_subgroups)
    labels = np.asarray(result.targets.labels).astype(bool)
    groups = []
    for group in flagged[: names.MAX_GROUP_ROCS]:
        mask = result.audit.masks.get(group)
        if mask is None:
            continue
        y = labels[mask]
        if y.all() or not y.any():
            continue
        curves = []
        for o in result.outcomes:
            s = np.asarray(o.scores, float)[mask]
            ok = np.isfinite(s)
            if ok.sum() < 2 or len(set(y[ok].tolist())) < 2:
                continue
            fpr, tpr = roc_curve_points(s[ok], y[ok].astype(int))
            f, t = _thin(np.asarray(fpr), np.asarray(tpr))
            curves.append(
                {"attack": o.name, "auc": float(roc_auc(s[ok], y[ok])), "fpr": f, "tpr": t}
            )
        groups.append(
            {
                "group": group,
                "n_members": int(y.sum()),
                "n_non_members": int((~y).sum()),
                "curves": curves,
            }
        )
    return {
        "groups": groups,
        "flagged": len(flagged),
        "omitted": max(len(flagged) - names.MAX_GROUP_ROCS, 0),
    }


def roc_auc(scores: np.ndarray, members: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(members.astype(int), scores))


def record_publishing(tracker: Any, run_id: str, where: Any) -> None:
    """Where a run's release is going (``gate.publishing``), written and read back before it
    leaves quarantine: a store that cannot take the write (a full disk) publishes nothing."""
    tracker.set_tags(run_id, {names.TAG_PUBLISHING: str(where)})
    if tracker.run_tags(run_id).get(names.TAG_PUBLISHING) != str(where):
        raise PrivacyGateError(
            f"{names.TAG_PUBLISHING} could not be read back from the tracking store; "
            "nothing was published"
        )


class MlflowSink:
    """Records one gate run in the MLflow run ``run_id`` of ``tracker``."""

    def __init__(self, tracker: tracking.Tracker, run_id: str, *, dataset: str | None = None):
        self.tracker = tracker
        self.run_id = run_id
        # what publication will use, sealed into verdict.json (under its digest) with the verdict
        self.seal: dict[str, Any] = {names.SEAL_DATASET: dataset} if dataset is not None else {}
        self.workdir: str | None = None  # set with the quarantine: the decision commands name it

    @classmethod
    def start(
        cls,
        tracker: tracking.Tracker,
        *,
        name: str,
        kind: str,
        dataset: str,
        tags: dict[str, str] | None = None,
    ) -> MlflowSink:
        run_id = tracker.start_run(
            name=name, kind=kind, tags={names.TAG_DATASET: dataset, **(tags or {})}
        )
        return cls(tracker, run_id, dataset=dataset)

    # ---- before the gate
    def record_params(self, params: dict[str, Any]) -> None:
        self.tracker.log_params(self.run_id, params)

    def record_json(self, obj: Any, path: str) -> None:
        text = self.tracker.log_json(self.run_id, obj, path)
        sealed = {
            names.ART_CONFIG: names.SEAL_CONFIG_SHA,
            names.ART_SETTINGS: names.SEAL_SETTINGS_SHA,
        }.get(path)
        if (
            sealed
        ):  # the config and settings a re-gate and publication read back are checked against these
            self.seal[sealed] = text_sha256(text)

    def record_validation(self, report: Any) -> None:
        self.tracker.log_json(
            self.run_id, report.to_dict(), names.validation_artifact(report.suite_name)
        )

    def record_inputs(self, tables: dict[str, Any], *, sources: dict[str, str]) -> None:
        """The tables the gate judged as MLflow dataset inputs (digest, rows, schema; no values)."""
        self.tracker.log_dataset_inputs(
            self.run_id,
            tables,
            digests={k: table_digest(df) for k, df in tables.items()},
            sources=sources,
        )

    def record_quarantine(self, quarantined: Any, *, target: Any, workdir: Any = None) -> None:
        """Where the release waits and would be published (sealed), and the ``workdir`` whose
        quarantine and label key a decision on the run needs (a hint the decision commands name)."""
        where = {
            names.SEAL_SYNTHETIC_SHA: quarantined.sha256,
            names.SEAL_QUARANTINE: quarantined.location,
            names.SEAL_PUBLISH_TARGET: str(target),
        }
        self.seal.update(where)
        tags = {names.SEAL_TAGS[k]: v for k, v in where.items()}
        if workdir is not None:
            self.workdir = str(Path(workdir).resolve())
            tags[names.TAG_WORKDIR] = self.workdir
        self.tracker.set_tags(self.run_id, tags)

    # ---- the gate (Sink protocol)
    def record_gate(self, result: GateResult) -> None:
        if result.validation is not None:
            self.record_validation(result.validation)
        self.tracker.set_tags(
            self.run_id, {names.strongest_tag(k): v for k, v in result.strongest.items()}
        )
        if result.targets is not None and result.outcomes:
            self._record_attacks(result)
        if result.utility is not None:
            self.tracker.log_json(self.run_id, result.utility, names.ART_UTILITY)
        if result.audit is not None:
            self.tracker.log_json(self.run_id, result.audit.group_rows, names.ART_SUBGROUPS)
        if (
            result.audit is not None
            and result.targets is not None
            and result.verdict.flagged_subgroups
        ):
            self.tracker.log_json(self.run_id, flagged_group_rocs(result), names.ART_GROUP_ROC)
        if result.mace is not None:
            self._record_mace(result)
        if result.exposure is not None:
            # row ids and p-values only: which training records are exposed, never their values
            self.tracker.log_frame(self.run_id, result.exposure.records, names.ART_EXPOSED)
        if result.scan is not None:
            self.tracker.log_frame(self.run_id, result.scan.records, names.ART_SCAN)
        if result.shadow is not None:  # row ids, p-values and scores: never record values
            self.tracker.log_frame(self.run_id, result.shadow.records, names.ART_SHADOW)
            if result.shadow.evidence:
                self.tracker.log_json(
                    self.run_id, result.shadow.evidence, names.ART_SHADOW_EVIDENCE
                )
                self._figure(shadow_figure(result.shadow.evidence), names.ART_SHADOW_PLOT)
        if result.disclosure is not None:
            # attacker's columns, counts, rates and risks only: no predicate or secret value
            summary = result.disclosure.summary()
            self.tracker.log_json(self.run_id, summary, names.ART_DISCLOSURE)
            self._figure(disclosure_figure(summary["rows"]), names.ART_DISCLOSURE_PLOT)

    def _record_attacks(self, result: GateResult) -> None:
        targets = result.targets
        curves = []
        for o in result.outcomes:
            child = self.tracker.start_run(
                name=f"attack-{o.name}", kind="attack", parent=self.run_id
            )
            self.tracker.log_params(child, {"attack": o.name, **o.params})
            self.tracker.log_metrics(child, {**o.metrics, names.timing_metric("attack"): o.seconds})
            self.tracker.end_run(child)
            fpr, tpr = roc_curve_points(o.scores, targets.labels)
            curves.append((o.name, fpr, tpr, o.metrics["auc"]))
        self.tracker.log_frame(
            self.run_id, scores_frame(targets, result.outcomes), names.ART_SCORES
        )
        self._figure(roc_figure(curves), names.ART_ROC)

    def _record_mace(self, result: GateResult) -> None:
        mres = result.mace
        self.tracker.log_json(
            self.run_id,
            {"per_record_attack": mres.risk_attack, "estimates": mres.estimates},
            names.ART_MACE_ESTIMATES,
        )
        if mres.per_record is not None:
            self.tracker.log_frame(self.run_id, mres.per_record, names.ART_MACE)
            per = mres.per_record
            self._figure(
                risk_profile_figure(per["risk"], per.get("risk_lower"), per.get("risk_upper")),
                names.ART_MACE_PLOT,
            )

    def record_dp_audit(self, result: Any, *, cached: bool) -> str:
        """The DP audit as a nested run (params, metrics, its JSON and trade-off figure); the JSON
        and figure also on this run, for the report. Records no record values (the outlier target
        is named by row position and hash)."""
        from privacy_gate.studies.dp_audit_gate import audit_metrics

        child = self.tracker.start_run(
            name=f"dp-audit-{result.generator}", kind="dp_audit", parent=self.run_id
        )
        try:
            best = result.best
            self.tracker.log_params(
                child,
                {
                    "generator": result.generator,
                    "generator_version": result.version,
                    "epsilon": result.epsilon,
                    "delta": result.delta,
                    "runs": result.runs,
                    "mu_basis": result.mu_basis,
                    "best_score": best.score,
                    "best_target": best.target_label,
                },
            )
            self.tracker.log_metrics(child, audit_metrics(result, cached=cached))
            for run in (child, self.run_id):
                self.tracker.log_json(run, result.to_dict(), names.ART_DP_AUDIT)
                fig = dp_audit_figure(**dp_audit_figure_inputs(result.to_dict()))
                try:
                    self.tracker.log_figure(run, fig, names.ART_DP_AUDIT_PLOT)
                finally:
                    plt.close(fig)
        finally:
            self.tracker.end_run(child)
        self.tracker.set_tags(self.run_id, {names.TAG_DP_AUDIT: child})
        return child

    def _figure(self, fig: Any, path: str) -> None:
        try:
            self.tracker.log_figure(self.run_id, fig, path)
        finally:
            plt.close(fig)

    # ---- the decision
    def record_verdict(self, verdict: Verdict, *, timings: dict[str, float]) -> dict[str, Any]:
        """The headline metrics, every figure as ``metrics/all.json`` and tables, timings,
        ``verdict.json`` and the verdict tags; returns the verdict dict as read back from the store
        (what an approval will later be checked against). The figures are written before the
        verdict, so its seal covers them."""
        document = verdict.to_dict()
        figures = metric_records.recorded_figures(document, timings=timings)
        self.tracker.log_metrics(self.run_id, metric_records.headline_metrics(figures))
        self.tracker.log_json(self.run_id, figures, names.ART_METRICS_ALL)
        # every table, empty ones too: a verdict recorded again (a failure after the first) replaces
        # them all
        for path, table in metric_records.metric_tables(figures).items():
            self.tracker.log_text(self.run_id, metric_records.table_text(table), path)
        self.tracker.log_json(self.run_id, timings, names.ART_TIMINGS)
        self.tracker.log_verdict(self.run_id, document, seal=self.seal)
        return self.tracker.read_verified_verdict(self.run_id)

    def record_run_name(self, verdict: Verdict) -> None:
        """The verdict in the run's name (``REVIEW · gate-adult``); the ``gate.verdict`` tag holds
        it too."""
        self.tracker.name_with_verdict(self.run_id, verdict.decision)

    def record_summary(self, markdown: str) -> None:
        self.tracker.log_text(self.run_id, markdown, names.ART_SUMMARY)

    def record_description(self, verdict: Verdict, summary: str) -> None:
        """The run page's description (the UI shows its first lines folded): the decision, the
        evidence on each flagged group, the commands that decide a REVIEW, then the whole
        summary."""
        description = run_description(
            self.tracker, self.run_id, verdict, summary=summary, workdir=self.workdir
        )
        self.tracker.set_description(self.run_id, description)

    def summary_markdown(self, verdict: Verdict) -> str:
        return verdict_markdown(
            verdict,
            ui_hint=tracking.ui_command(self.tracker.uri),
            tracking_uri=self.tracker.uri,
            experiment_id=self.tracker.experiment_id,
        )

    def record_publishing(self, where: Any) -> None:
        record_publishing(self.tracker, self.run_id, where)

    def record_published(self, path: Any) -> None:
        self.tracker.set_tags(self.run_id, {names.TAG_PUBLISHED: str(path)})

    def end(self, *, failed: bool) -> None:
        self.tracker.end_run(self.run_id, failed=failed)
