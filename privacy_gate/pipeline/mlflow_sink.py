"""The MLflow record of a gate run: one parent run per release, a child run per attack, the
verdict as tags and ``verdict.json``. All names come from :mod:`privacy_gate.names`; all MLflow
calls go through :class:`privacy_gate.tracking.Tracker`.

Never logged: values of real records. Per-record results are keyed by row id.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: figures are rendered to PNG artefacts, never shown
import matplotlib.pyplot as plt  # noqa: E402

from privacy_gate import names, tracking  # noqa: E402
from privacy_gate.estimators.metrics import roc_curve_points  # noqa: E402
from privacy_gate.gate import Verdict  # noqa: E402
from privacy_gate.experiment.attack_runs import scores_frame  # noqa: E402
from privacy_gate.pipeline.result import GateResult  # noqa: E402
from privacy_gate.report.plots import disclosure_figure, risk_profile_figure, roc_figure  # noqa: E402
from privacy_gate.report.summary import verdict_markdown  # noqa: E402


def table_digest(df: Any) -> str:
    """A content digest of a table (row ids and values, hashed): identifies it, reveals nothing."""
    import hashlib

    import pandas as pd

    return hashlib.sha256(pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes()).hexdigest()


def text_sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


class MlflowSink:
    """Records one gate run in the MLflow run ``run_id`` of ``tracker``."""

    def __init__(self, tracker: tracking.Tracker, run_id: str, *, dataset: str | None = None):
        self.tracker = tracker
        self.run_id = run_id
        # what publication will use, sealed into verdict.json (under its digest) with the verdict
        self.seal: dict[str, Any] = {names.SEAL_DATASET: dataset} if dataset is not None else {}

    @classmethod
    def start(cls, tracker: tracking.Tracker, *, name: str, kind: str, dataset: str,
              tags: dict[str, str] | None = None) -> MlflowSink:
        run_id = tracker.start_run(name=name, kind=kind, tags={names.TAG_DATASET: dataset, **(tags or {})})
        return cls(tracker, run_id, dataset=dataset)

    # ---- before the gate
    def record_params(self, params: dict[str, Any]) -> None:
        self.tracker.log_params(self.run_id, params)

    def record_json(self, obj: Any, path: str) -> None:
        text = self.tracker.log_json(self.run_id, obj, path)
        sealed = {names.ART_CONFIG: names.SEAL_CONFIG_SHA, names.ART_SETTINGS: names.SEAL_SETTINGS_SHA}.get(path)
        if sealed:  # the config and settings a re-gate and publication read back are checked against these
            self.seal[sealed] = text_sha256(text)

    def record_validation(self, report: Any) -> None:
        self.tracker.log_json(self.run_id, report.to_dict(), names.validation_artifact(report.suite_name))

    def record_inputs(self, tables: dict[str, Any], *, sources: dict[str, str]) -> None:
        """The tables the gate judged as MLflow dataset inputs (digest, rows, schema; no values)."""
        self.tracker.log_dataset_inputs(self.run_id, tables, digests={k: table_digest(df) for k, df in tables.items()},
                                        sources=sources)

    def record_quarantine(self, quarantined: Any, *, target: Any) -> None:
        where = {names.SEAL_SYNTHETIC_SHA: quarantined.sha256, names.SEAL_QUARANTINE: str(quarantined.path.resolve()),
                 names.SEAL_PUBLISH_TARGET: str(target)}
        self.seal.update(where)
        self.tracker.set_tags(self.run_id, {names.SEAL_TAGS[k]: v for k, v in where.items()})

    # ---- the gate (Sink protocol)
    def record_gate(self, result: GateResult) -> None:
        if result.validation is not None:
            self.record_validation(result.validation)
        self.tracker.set_tags(self.run_id, {names.strongest_tag(k): v for k, v in result.strongest.items()})
        if result.targets is not None and result.outcomes:
            self._record_attacks(result)
        if result.utility is not None:
            self.tracker.log_json(self.run_id, result.utility, names.ART_UTILITY)
        if result.audit is not None:
            self.tracker.log_json(self.run_id, result.audit.group_rows, names.ART_SUBGROUPS)
        if result.mace is not None:
            self._record_mace(result)
        if result.exposure is not None:
            # row ids and p-values only: which training records are exposed, never their values
            self.tracker.log_frame(self.run_id, result.exposure.records, names.ART_EXPOSED)
        if result.scan is not None:
            self.tracker.log_frame(self.run_id, result.scan.records, names.ART_SCAN)
        if result.disclosure is not None:
            # attacker's columns, counts, rates and risks only: no predicate or secret value
            summary = result.disclosure.summary()
            self.tracker.log_json(self.run_id, summary, names.ART_DISCLOSURE)
            self._figure(disclosure_figure(summary["rows"]), names.ART_DISCLOSURE_PLOT)

    def _record_attacks(self, result: GateResult) -> None:
        targets = result.targets
        curves = []
        for o in result.outcomes:
            child = self.tracker.start_run(name=f"attack-{o.name}", kind="attack", parent=self.run_id)
            self.tracker.log_params(child, {"attack": o.name, **o.params})
            self.tracker.log_metrics(child, {**o.metrics, names.timing_metric("attack"): o.seconds})
            self.tracker.end_run(child)
            fpr, tpr = roc_curve_points(o.scores, targets.labels)
            curves.append((o.name, fpr, tpr, o.metrics["auc"]))
        self.tracker.log_frame(self.run_id, scores_frame(targets, result.outcomes), names.ART_SCORES)
        self._figure(roc_figure(curves), names.ART_ROC)

    def _record_mace(self, result: GateResult) -> None:
        mres = result.mace
        self.tracker.log_json(self.run_id, {"per_record_attack": mres.risk_attack, "estimates": mres.estimates},
                              names.ART_MACE_ESTIMATES)
        if mres.per_record is not None:
            self.tracker.log_frame(self.run_id, mres.per_record, names.ART_MACE)
            per = mres.per_record
            self._figure(risk_profile_figure(per["risk"], per.get("risk_lower"), per.get("risk_upper")),
                         names.ART_MACE_PLOT)

    def _figure(self, fig: Any, path: str) -> None:
        try:
            self.tracker.log_figure(self.run_id, fig, path)
        finally:
            plt.close(fig)

    # ---- the decision
    def record_verdict(self, verdict: Verdict, *, timings: dict[str, float]) -> dict[str, Any]:
        """Metrics, timings, ``verdict.json`` and the verdict tags; returns the verdict dict as read
        back from the store (what an approval will later be checked against)."""
        self.tracker.log_metrics(self.run_id, {**verdict.metrics,
                                               **{names.timing_metric(k): v for k, v in timings.items()}})
        self.tracker.log_json(self.run_id, timings, names.ART_TIMINGS)
        self.tracker.log_verdict(self.run_id, verdict.to_dict(), seal=self.seal)
        return self.tracker.read_verified_verdict(self.run_id)

    def record_run_name(self, verdict: Verdict) -> None:
        """The verdict in the run's name (``gate-adult · REVIEW``); the ``gate.verdict`` tag holds it too."""
        self.tracker.name_with_verdict(self.run_id, verdict.decision)

    def record_summary(self, markdown: str) -> None:
        self.tracker.log_text(self.run_id, markdown, names.ART_SUMMARY)

    def record_description(self, verdict: Verdict, summary: str) -> None:
        """The run page's description: the decision in one line (the UI shows the first lines
        folded), then the whole summary."""
        flagged = ", ".join(f"`{g}`" for g in verdict.flagged_subgroups) or "none"
        head = (f"**{verdict.decision}** (status {verdict.status}) · flagged subgroups: {flagged} · "
                f"{len(verdict.reasons)} reason(s) below · full report: artifact `{names.ART_REPORT}`")
        self.tracker.set_description(self.run_id, f"{head}\n\n{summary}")

    def summary_markdown(self, verdict: Verdict) -> str:
        return verdict_markdown(verdict, ui_hint=tracking.ui_command(self.tracker.uri), tracking_uri=self.tracker.uri,
                                experiment_id=self.tracker.experiment_id)

    def record_published(self, path: Any) -> None:
        self.tracker.set_tags(self.run_id, {names.TAG_PUBLISHED: str(path)})

    def end(self, *, failed: bool) -> None:
        self.tracker.end_run(self.run_id, failed=failed)
