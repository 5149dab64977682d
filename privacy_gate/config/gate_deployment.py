"""A gate-mode deployment's config: synthetic data made elsewhere, judged on a schedule from files
the config names itself (``privacy-gate deploy`` / ``serve`` turn it into a deployment of the
``gate`` flow, ``flows/gate_deployments.py``).

It is a ``privacy-gate gate --config`` file (the judging sections: targets, attacks, gate, audit,
mace, exposure, disclosure, inputs) with three more sections: ``files`` (the gate's own inputs:
train, holdout, reference, synthetic and the spec, relative to the config's folder or
``s3://``), ``schedule`` (as in a release config) and ``publish`` (where an approved release
goes). A config is a gate-mode one when it has a ``files`` section.

>>> cfg = GateDeploymentConfig.model_validate({"files": {"train": "/d/t.csv", "holdout": "/d/h.csv",
...     "reference": "/d/r.csv", "synthetic": "/d/s.csv", "spec": "/d/spec.yaml"},
...     "schedule": {"cron": "0 3 * * *"}})
>>> cfg.files.synthetic, cfg.schedule.cron, cfg.gate.budget.review
('/d/s.csv', '0 3 * * *', 0.02)
"""

from __future__ import annotations

from pydantic import Field

from privacy_gate.config.release import GateOnlyConfig
from privacy_gate.config.sections import PublishConfig, ScheduleConfig, Strict

#: the section that makes a config a gate-mode deployment's
FILES_SECTION = "files"
#: the sections a gate-mode deployment's config has beyond the judging sections
DEPLOYMENT_SECTIONS = (FILES_SECTION, "schedule", "publish")


class GateFiles(Strict):
    """The gate's own inputs: the training rows the generator saw, real rows it never saw (the
    holdout), real rows an attacker may know (the reference), the synthetic release and the
    dataset spec."""

    train: str
    holdout: str
    reference: str
    synthetic: str
    spec: str

    def inputs(self) -> dict[str, str]:
        """The data files by their ``privacy-gate gate`` option name (``train``, ...)."""
        return {
            "train": self.train,
            "holdout": self.holdout,
            "reference": self.reference,
            "synthetic": self.synthetic,
        }


class GateDeploymentConfig(GateOnlyConfig):
    """A gate-mode deployment: the judging sections and its own files, schedule and publication."""

    files: GateFiles
    schedule: ScheduleConfig | None = None
    publish: PublishConfig = Field(default_factory=PublishConfig)


__all__ = ["DEPLOYMENT_SECTIONS", "FILES_SECTION", "GateDeploymentConfig", "GateFiles"]
