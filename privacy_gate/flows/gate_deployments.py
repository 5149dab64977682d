"""Gate-mode deployments: a synthetic release made elsewhere, judged on a schedule by the ``gate``
flow from the files its config names (``config/gate_deployment.py``). ``privacy-gate deploy`` and
``serve`` take such a config (one with a ``files`` section) beside release configs
(``flows/deployments.py``, which dispatches here).

The deployment is named after the config file (``gate/<stem>``); its parameters are the files,
the spec, the config itself as the judging config (``gate --config``), the workdir and the
publication target; its schedule comes from the config's ``schedule`` section or ``--cron`` /
``--interval``; one active run at a time (``CANCEL_NEW``), as a release deployment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privacy_gate.config import load_gate_deployment, load_spec
from privacy_gate.errors import ConfigError
from privacy_gate.flows.gate_flows import gate_flow
from privacy_gate.publication.publish import dataset_slug

#: the tag every privacy-gate deployment carries (``flows.deployments.DEPLOYMENT_TAG``)
DEPLOYMENT_TAG = "privacy-gate"


def gate_deployment_dataset(config_path: Path) -> str:
    """The dataset a gate-mode config judges (its spec's name)."""
    return load_spec(load_gate_deployment(config_path).files.spec).name


def build_gate_deployment(
    config_path: Path, *, workdir: Path, schedule: Any, work_pool: str | None, concurrency: Any
) -> Any:
    """The ``gate`` flow as a deployment of the gate-mode config at ``config_path`` with
    ``schedule`` (from ``flows.deployments.deployment_schedule``) and ``concurrency``."""
    from prefect.deployments.runner import EntrypointType

    path = Path(config_path).resolve()
    config = load_gate_deployment(path)
    dataset = load_spec(config.files.spec).name
    target = config.publish.target
    if config.publish.format != "parquet":  # a setting the gate flow would not read: refused
        raise ConfigError(
            f"{path}: publish.format: a gate-mode deployment publishes Parquet (the gate flow "
            "reads no format); remove the key"
        )
    parameters = {
        **config.files.inputs(),
        "spec_path": config.files.spec,
        "config_path": str(path),
        "workdir": str(Path(workdir).resolve()),
        "publish_to": str(target) if target else None,
    }
    return gate_flow.to_deployment(
        name=path.stem,
        schedules=[schedule],
        work_pool_name=work_pool,
        parameters=parameters,
        description=f"privacy-gate gate of dataset {dataset!r}: "
        f"{Path(config.files.synthetic).name} judged from {path.name}",
        tags=[DEPLOYMENT_TAG, "mode:gate", f"dataset:{dataset_slug(dataset)}"],
        concurrency_limit=concurrency,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )


__all__ = ["build_gate_deployment", "gate_deployment_dataset"]
