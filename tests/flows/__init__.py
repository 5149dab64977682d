"""Tests of privacy_gate.flows: Prefect flows, deployments, the Dask cluster and the production
stack."""
