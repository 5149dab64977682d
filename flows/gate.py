"""Deployment entry point of the gate-only ``gate`` flow for ``prefect deploy`` (see prefect.yaml):
judge synthetic data produced elsewhere. Thin: the flow is ``privacy_gate.flows.gate_flow``."""

from privacy_gate.flows import gate_flow

__all__ = ["gate_flow"]
