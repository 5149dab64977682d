"""A run's record: everything a run leaves behind, and the one package that talks to an MLflow
store. The names it writes live in ``names.py``. Besides the store, the record's parts: the digest
of ``verdict.json`` (:mod:`.signing`), the seal over every artifact a reviewer sees
(:mod:`.artifact_seal`), which figures are MLflow metrics and the tables of the rest
(:mod:`.metric_records`), the decision records and the rules for accepting them
(:mod:`.review_records`) and the decision log they form (:mod:`.decision_log`).

Here :class:`Tracker`, the run's records through an explicit ``MlflowClient`` and run ids (no
global active run), because Prefect tasks log from worker threads; the records a review reads back
and appends (:mod:`.records`); the attempts of a retried release as nested runs
(:mod:`.attempt_runs`); a new workdir's store from a template (:mod:`.store`); and where the store
is, with the fast probe every command makes before importing MLflow or pandas (:mod:`.uri`, whose
names are re-exported here). MLflow and pandas are imported only when a store is used, so
importing :mod:`.uri` stays cheap. :class:`Tracker` is one module because it is one class,
the one client of MLflow every writer and reader goes through (its review records are in
:mod:`.records`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from privacy_gate.errors import IntegrityError, ReviewError, service_boundary
from privacy_gate.locking import file_lock
from privacy_gate.names import (
    ART_VERDICT,
    ARTIFACT_DIR,
    DERIVED_ARTIFACTS,
    ENV_SIGNING_KEY,
    ENV_USER,
    KIND_ATTEMPTS,
    KIND_REVIEW_RERUN,
    MAX_TAG_VALUE_LENGTH,
    SEAL,
    SEAL_ARTIFACTS,
    SEAL_SIGNED,
    TAG_APPROVAL_STATUS,
    TAG_ATTEMPT,
    TAG_BUDGET,
    TAG_DATASET,
    TAG_DISABLED,
    TAG_FLAGGED,
    TAG_FLAGGED_EFFECT,
    TAG_FLAGGED_THROUGH,
    TAG_HOST,
    TAG_KILLED_REASON,
    TAG_KIND,
    TAG_PID,
    TAG_PROCESS_START,
    TAG_SIGNED,
    TAG_STATUS,
    TAG_VERDICT,
    TAG_VERDICT_DIGEST,
    bounded_key,
    experiment_name,
    verdict_run_name,
)
from privacy_gate.processes import process_start, this_host
from privacy_gate.safe_text import mask_secrets, mask_uri
from privacy_gate.tracking import artifact_seal, attempt_runs
from privacy_gate.tracking.records import RunRecords
from privacy_gate.tracking.signing import (
    signed_tag,
    signing_key,
    verdict_digest,
    verify_verdict_text,
)

# the store's address, source and probe live in tracking.uri; re-exported: callers import them here
from privacy_gate.tracking.store import seed_store
from privacy_gate.tracking.uri import (  # noqa: F401
    LOCAL_UI,
    SOURCE_CONFIG,
    SOURCE_ENV,
    SOURCE_OPTION,
    SOURCE_WORKDIR,
    UI_WORKFLOW,
    artifact_url,
    check_reachable,
    default_tracking_uri,
    experiment_url,
    resolve_tracking_uri,
    run_url,
    sqlite_path,
    tracking_source,
    ui_command,
)
from privacy_gate.words.evidence import effect_headline, first_effect

if TYPE_CHECKING:
    import pandas as pd

#: MLflow's artifact upload/download progress bars (tqdm) flood a worker's log, one bar per
#: artifact: off in every process that talks to MLflow (flows, workers, library calls), not only
#: the CLI; an explicit setting in the environment wins.
ARTIFACTS_PROGRESS_BAR_ENV = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
os.environ.setdefault(ARTIFACTS_PROGRESS_BAR_ENV, "false")

#: MLflow 3's UI picks an experiment's layout from this experiment tag; without it an experiment
#: whose runs have no models may be shown as a GenAI "evaluation runs" view. Ours are classic runs.
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"
#: MLflow's run description (shown at the top of the run page), user and source tags.
NOTE_TAG = "mlflow.note.content"
USER_TAG = "mlflow.user"
SOURCE_NAME_TAG = "mlflow.source.name"
SOURCE_TYPE_TAG = "mlflow.source.type"


#: An HMAC key for verdict digests (see ``signing``): without it the digest is a plain SHA-256,
#: which catches an edited ``verdict.json`` but not someone who can also rewrite the run's tags.
SIGNING_KEY_ENV = ENV_SIGNING_KEY


class _NoStoreTracebacks(logging.Filter):
    """MLflow's SQL store logs every database error with its traceback (and the statement) before
    re-raising it; the gate classifies the re-raised error once (a full disk is named, anything
    else is a BLOCK with its type), so the dump is kept for ``PRIVACY_GATE_DEBUG=1`` only."""

    def filter(self, record: logging.LogRecord) -> bool:
        return bool(os.environ.get("PRIVACY_GATE_DEBUG"))


logging.getLogger("mlflow.store.db.utils").addFilter(_NoStoreTracebacks())


def _store_init_lock(uri: str):
    db = sqlite_path(uri)
    if db is not None:
        return file_lock(Path(f"{db}.init.lock"), timeout=120)
    return contextlib.nullcontext()


def run_user() -> str:
    """Who started the run: ``PRIVACY_GATE_USER`` (a deployment's service name), else the OS
    user."""
    import getpass

    explicit = os.environ.get(ENV_USER)
    if explicit:
        return explicit
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry (containers with arbitrary uids)
        return "unknown"


def _colspec_type(dtype: Any) -> str:
    kind = getattr(dtype, "kind", "O")
    return {"f": "double", "i": "long", "u": "long", "b": "boolean", "M": "datetime"}.get(
        kind, "string"
    )


class BoundaryClient:
    """An ``MlflowClient`` behind the store's service boundary: every call that fails because the
    store did not answer raises :class:`~privacy_gate.errors.InfrastructureError`, and one that
    fails because its disk is full :class:`~privacy_gate.errors.DiskFullError`, naming the store
    (its credentials masked); any other failure propagates as MLflow raised it. So the rest of the
    gate classifies failures by type, never by MLflow's class names or message text."""

    def __init__(self, client: Any, *, uri: str):
        self._client = client
        self._service = f"the MLflow store {mask_uri(uri)}"
        db = sqlite_path(uri)
        self._where = None if db is None else Path(db).parent

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not MLflow's API; and copy/pickle probe before _client is set
            raise AttributeError(name)
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            with service_boundary(self._service, where=self._where):
                return attr(*args, **kwargs)

        return call


class Tracker(RunRecords):
    """Thin wrapper over ``MlflowClient`` that applies our naming conventions."""

    def __init__(self, *, uri: str, experiment: str | None, artifact_root: Path | None = None):
        from mlflow.tracking import MlflowClient

        self.uri = uri
        self.experiment_id = None
        # MLflow creates (migrates) a sqlite store on first use; concurrent first runs on one
        # workdir would race that migration, so they take turns on a lock beside the file
        with _store_init_lock(uri):
            db = sqlite_path(uri)
            if db is not None:
                # a new store from the migrated template (seconds faster than MLflow's migrations)
                seed_store(db)
            self.client = BoundaryClient(MlflowClient(tracking_uri=uri), uri=uri)
            if experiment is None:  # only reading / appending to existing runs
                self.client.search_experiments(max_results=1)
                return
            self.experiment_id = self._experiment(experiment, artifact_root)

    def _experiment(self, name: str, artifact_root: Path | None) -> str:
        from mlflow.exceptions import MlflowException

        exp = self.client.get_experiment_by_name(name)
        if exp is not None:
            if exp.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
                self.client.set_experiment_tag(
                    exp.experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND
                )
            return exp.experiment_id
        location = None
        if artifact_root is not None and not self.uri.startswith(("http://", "https://")):
            location = (Path(artifact_root) / name.replace("/", "_")).resolve().as_uri()
        try:
            return self.client.create_experiment(
                name, artifact_location=location, tags={EXPERIMENT_KIND_TAG: EXPERIMENT_KIND}
            )
        except (
            MlflowException
        ):  # created meanwhile by another process (a server store has no file lock)
            exp = self.client.get_experiment_by_name(name)
            if exp is None:
                raise
            return exp.experiment_id

    @classmethod
    def for_workdir(
        cls, *, workdir: Path, dataset: str, uri: str | None = None, experiment: str | None = None
    ) -> Tracker:
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        return cls(
            uri=resolve_tracking_uri(uri, workdir),
            experiment=experiment_name(dataset, experiment),
            artifact_root=workdir / ARTIFACT_DIR,
        )

    # ---- reading back (review)
    def run_tags(self, run_id: str) -> dict[str, str]:
        from mlflow.exceptions import MlflowException

        try:
            return dict(self.client.get_run(run_id).data.tags)
        except MlflowException:
            raise ReviewError(f"no run {run_id} in the MLflow store {self.uri}") from None

    def read_text(self, run_id: str, path: str) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            return Path(self.client.download_artifacts(run_id, path, tmp)).read_text()

    def read_json(self, run_id: str, path: str) -> Any:
        return json.loads(self.read_text(run_id, path))

    def read_verified(self, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``verdict.json`` of a run, checked against the digest (or HMAC), signing state and
        verdict tag written with it (``signing.verify_verdict_text``), as (verdict, seal): an edited
        or downgraded artefact (say BLOCK turned into REVIEW) is refused, never acted on. The seal
        holds what publication uses (target, quarantine, hashes); empty for runs older than it."""
        tags = self.run_tags(run_id)
        try:
            text = self.read_text(run_id, ART_VERDICT)
        except Exception:  # noqa: BLE001 - no verdict, nothing to trust
            raise IntegrityError(
                f"run {run_id} has no {ART_VERDICT}; it is not a finished gate run"
            ) from None
        document = verify_verdict_text(run_id, text, tags)
        seal = document.pop(SEAL, None) or {}
        return document, seal

    def read_verified_verdict(self, run_id: str) -> dict[str, Any]:
        """The verified verdict of a run (see :meth:`read_verified`), without its seal."""
        return self.read_verified(run_id)[0]

    def read_frame(self, run_id: str, path: str) -> pd.DataFrame:
        """A parquet artifact of the run as a DataFrame."""
        import pandas as pd

        with tempfile.TemporaryDirectory() as tmp:
            return pd.read_parquet(self.client.download_artifacts(run_id, path, tmp))

    def artifact_exists(self, run_id: str, path: str) -> bool:
        folder = str(Path(path).parent)
        try:
            listed = self.client.list_artifacts(run_id, None if folder == "." else folder)
        except Exception:  # noqa: BLE001 - an unreadable folder holds nothing we can use
            return False
        return any(f.path == path and not f.is_dir for f in listed)

    def artifacts_in(self, run_id: str, folder: str) -> list[str]:
        """The paths of the files directly in ``folder`` of the run's artifacts (one listing)."""
        return sorted(f.path for f in self.client.list_artifacts(run_id, folder) if not f.is_dir)

    def experiment_of(self, run_id: str) -> str:
        return self.client.get_run(run_id).info.experiment_id

    def artifact_file(self, run_id: str, path: str) -> Path | None:
        """The local file of the run's artifact ``path`` when the store keeps artifacts on this
        machine (a ``file:`` or plain-path artifact root) and it exists; else None."""
        from urllib.parse import urlparse
        from urllib.request import url2pathname

        root = urlparse(self.client.get_run(run_id).info.artifact_uri)
        if root.scheme not in ("", "file"):
            return None
        local = Path(url2pathname(root.path)) / path
        return local if local.is_file() else None

    # ---- runs
    def start_run(
        self,
        *,
        name: str,
        kind: str,
        tags: Mapping[str, str] | None = None,
        parent: str | None = None,
    ) -> str:
        # who and what made the run, as the MLflow UI shows them ("Created by", "Source")
        pid = os.getpid()
        all_tags = {
            TAG_KIND: kind,
            USER_TAG: run_user(),
            SOURCE_NAME_TAG: f"privacy-gate {kind}",
            SOURCE_TYPE_TAG: "JOB",
            TAG_HOST: this_host(),
            TAG_PID: str(pid),
            TAG_PROCESS_START: process_start(pid) or "unknown",
            **(tags or {}),
        }
        group = attempt_runs.current()  # a retried release: attempts nest under one parent run
        top = (
            group is not None
            and not parent
            and attempt_runs.PARENT_TAG not in all_tags
            and kind != KIND_ATTEMPTS
        )
        if top:
            parent = group.parent_for(self, name, all_tags)
            if parent:
                all_tags[TAG_ATTEMPT] = str(group.attempt)
        if parent:
            all_tags[attempt_runs.PARENT_TAG] = parent
        run = self.client.create_run(
            self.experiment_id,
            run_name=mask_secrets(name),
            tags={k: mask_secrets(v) for k, v in all_tags.items()},
        )
        if top:
            group.record(run.info.run_id, self)
        return run.info.run_id

    def name_with_verdict(self, run_id: str, verdict: str, decided: str | None = None) -> None:
        """The verdict (and a REVIEW's decision) in the run's name: ``REVIEW approved · gate-x``."""
        name = self.client.get_run(run_id).info.run_name or ""
        self.client.update_run(run_id, name=verdict_run_name(name, verdict, decided))

    def runs_awaiting_review(self) -> list[dict[str, Any]]:
        """Every REVIEW run (of any experiment in the store) whose decision is pending, oldest
        first: run id, dataset, start time (UTC ISO), flagged groups. Review re-runs are judged
        only to publish their parent's decision and never await one of their own."""
        from datetime import UTC, datetime

        experiments = [e.experiment_id for e in self.client.search_experiments()]
        if not experiments:
            return []
        query = f"tags.`{TAG_APPROVAL_STATUS}` = 'pending' AND tags.`{TAG_VERDICT}` = 'REVIEW'"
        runs = []
        for i in range(0, len(experiments), 100):  # MLflow searches at most 100 experiments at once
            page_token = None
            while True:
                page = self.client.search_runs(
                    experiments[i : i + 100],
                    filter_string=query,
                    max_results=1000,
                    order_by=["attributes.start_time ASC"],
                    page_token=page_token,
                )
                runs += list(page)
                page_token = page.token
                if not page_token:
                    break
        out = []
        for run in runs:
            tags = run.data.tags
            if tags.get(TAG_KIND) == KIND_REVIEW_RERUN:
                continue
            flagged = tags.get(TAG_FLAGGED, "none")
            out.append(
                {
                    "run_id": run.info.run_id,
                    "dataset": tags.get(TAG_DATASET, "—"),
                    "started": datetime.fromtimestamp(run.info.start_time / 1000, UTC).isoformat(
                        timespec="seconds"
                    ),
                    "flagged": [] if flagged == "none" else flagged.split(","),
                }
            )
        return sorted(out, key=lambda r: r["started"])

    def end_run(self, run_id: str, *, failed: bool = False) -> None:
        self.client.set_terminated(run_id, status="FAILED" if failed else "FINISHED")

    def find_runs(
        self, filter_string: str = "", *, experiment_ids: list[str] | None = None
    ) -> list[Any]:
        """Every run (MLflow ``Run``) of the store (or of ``experiment_ids``) matching the
        filter."""
        from mlflow.entities import ViewType

        if experiment_ids is None:
            experiment_ids = [
                e.experiment_id for e in self.client.search_experiments(view_type=ViewType.ALL)
            ]
        runs: list[Any] = []
        if not experiment_ids:
            return runs
        token = None
        while True:
            page = self.client.search_runs(
                experiment_ids,
                filter_string,
                run_view_type=ViewType.ACTIVE_ONLY,
                max_results=1000,
                page_token=token,
            )
            runs += list(page)
            token = page.token
            if not token:
                return runs

    def experiment_id_named(self, name: str) -> str | None:
        exp = self.client.get_experiment_by_name(name)
        return exp.experiment_id if exp is not None else None

    def mark_killed(self, run_id: str, reason: str) -> None:
        """A run whose process is gone: the reason as a tag, then status KILLED."""
        self.set_tags(run_id, {TAG_KILLED_REASON: reason})
        self.client.set_terminated(run_id, status="KILLED")

    # ---- values
    def log_params(self, run_id: str, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(bounded_key(k), mask_secrets(v)[:6000]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(run_id, params=items[i : i + 100])

    def log_metrics(self, run_id: str, metrics: Mapping[str, float]) -> None:
        import time

        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [
            Metric(bounded_key(k), float(v), now, 0)
            for k, v in metrics.items()
            if v is not None and math.isfinite(float(v))
        ]
        for i in range(0, len(items), 500):
            self.client.log_batch(run_id, metrics=items[i : i + 500])

    def set_description(self, run_id: str, markdown: str) -> None:
        """The run page's description (MLflow renders it as markdown above everything else)."""
        self.set_tags(run_id, {NOTE_TAG: markdown})

    def log_dataset_inputs(
        self,
        run_id: str,
        tables: Mapping[str, pd.DataFrame],
        *,
        digests: Mapping[str, str],
        sources: Mapping[str, str],
    ) -> None:
        """The input tables as MLflow dataset inputs: name, digest, row count and column types only.

        No value profile (no min/max, no frequent values): a dataset input must not carry any
        value of a real record."""
        from mlflow.entities import Dataset, DatasetInput, InputTag

        inputs = []
        for name, df in tables.items():
            schema = {
                "mlflow_colspec": [
                    {"name": str(c), "type": _colspec_type(df[c].dtype)} for c in df.columns
                ]
            }
            dataset = Dataset(
                name=name,
                digest=digests[name][:36],
                source_type="privacy-gate",
                source=json.dumps({"uri": mask_secrets(sources.get(name, name))}),
                schema=json.dumps(schema),
                profile=json.dumps({"num_rows": int(len(df))}),
            )
            inputs.append(DatasetInput(dataset, tags=[InputTag("mlflow.data.context", name)]))
        self.client.log_inputs(run_id, datasets=inputs)

    def set_tags(self, run_id: str, tags: Mapping[str, Any]) -> None:
        """Every tag (the description too) with the credentials of any URI in it masked."""
        for k, v in tags.items():
            text = mask_secrets(v)
            if len(text) > MAX_TAG_VALUE_LENGTH:
                text = (
                    text[: MAX_TAG_VALUE_LENGTH - 40]
                    + f"… (+{len(text) - MAX_TAG_VALUE_LENGTH + 40} chars)"
                )
            self.client.set_tag(run_id, bounded_key(k), text)

    # ---- artifacts
    def log_json(self, run_id: str, obj: Any, path: str) -> str:
        """Log ``obj`` as JSON; returns the exact text logged (what a seal hashes)."""
        text = mask_secrets(json.dumps(obj, indent=2, default=str))
        self.client.log_text(run_id, text, path)
        return text

    def log_text(self, run_id: str, text: str, path: str) -> None:
        """A text artifact, credentials in URIs masked: the text a seal hashes is the text
        stored."""
        text = mask_secrets(text)
        self.client.log_text(run_id, text, path)
        if path in DERIVED_ARTIFACTS:  # a rendering made after the verdict: sealed on its own
            self.set_tags(
                run_id,
                artifact_seal.derived_tags(
                    run_id, self.run_tags(run_id), path, artifact_seal.text_sha256(text)
                ),
            )

    def log_figure(self, run_id: str, figure: Any, path: str) -> None:
        self.client.log_figure(run_id, figure, path)

    def log_frame(self, run_id: str, df: pd.DataFrame, path: str) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / Path(path).name
            df.to_parquet(local, index=False)
            folder = str(Path(path).parent)
            self.client.log_artifact(run_id, str(local), None if folder == "." else folder)

    def log_verdict(
        self, run_id: str, verdict_dict: Mapping[str, Any], seal: Mapping[str, Any] | None = None
    ) -> None:
        """The verdict artifact plus the tags the MLflow UI lists and filters runs by, and the
        artifact's digest (see :meth:`read_verified`). ``seal``: what publication will use (target,
        quarantine, hashes), written inside the digested document with whether it is signed."""
        signed = signing_key() is not None
        # every artifact written so far (the evidence a reviewer reads) is sealed with the verdict
        artifacts = artifact_seal.manifest(self.artifact_hashes(run_id))
        document = {
            **dict(verdict_dict),
            SEAL: {**dict(seal or {}), SEAL_SIGNED: signed, SEAL_ARTIFACTS: artifacts},
        }
        text = mask_secrets(json.dumps(document, indent=2, default=str))  # digested as stored
        self.log_text(run_id, text, ART_VERDICT)
        self.set_tags(
            run_id,
            {
                TAG_VERDICT_DIGEST: verdict_digest(text),
                TAG_SIGNED: signed_tag(signed),
                TAG_VERDICT: verdict_dict["verdict"],
                TAG_STATUS: verdict_dict["status"],
                TAG_FLAGGED: ",".join(verdict_dict.get("flagged_subgroups") or []) or "none",
                TAG_FLAGGED_THROUGH: ",".join(
                    f"{g} <- {s}" for g, s in (verdict_dict.get("explained") or {}).items()
                )
                or "none",
                TAG_FLAGGED_EFFECT: effect_headline(*shown)
                if (shown := first_effect(verdict_dict))
                else "none",
                TAG_APPROVAL_STATUS: "pending"
                if verdict_dict["verdict"] == "REVIEW"
                else "not_required",
                # default protections turned off, with their reasons
                # (config text, never record values)
                TAG_DISABLED: "; ".join(
                    f"{k}: {v}" for k, v in sorted((verdict_dict.get("disabled") or {}).items())
                )
                or "none",
                TAG_BUDGET: (
                    f"review {verdict_dict['budget']['review']:g}, block "
                    f"{verdict_dict['budget']['block']:g}"
                    if verdict_dict.get("budget")
                    else "none"
                ),
            },
        )

    def delete_tag(self, run_id: str, key: str) -> None:
        self.client.delete_tag(run_id, key)
