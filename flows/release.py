"""Deployment entry point of the ``release`` flow for ``prefect deploy`` (see prefect.yaml).

Thin on purpose: the flow is the package's (``privacy_gate.flows.release_flow``), so
``prefect deploy --all`` and ``privacy-gate deploy`` / ``serve`` register the same flow. Its
parameters: ``config_path`` (a release config) and ``workdir``.
"""

from privacy_gate.flows import release_flow

__all__ = ["release_flow"]
