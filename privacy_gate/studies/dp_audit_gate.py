"""The DP audit in a release (``audit_dp:`` in the config): run or re-use the cached audit of the
configured generator, record it (a nested MLflow run with the trade-off figure), and let it BLOCK.

Fail closed: the stage that runs it raises on any error (a generator without a DP claim, a
generator that releases no measurements for a white-box score, ...), and the release BLOCKs with
the stage's name. Only a release whose config has ``audit_dp`` runs this: other releases, and
their golden records, are unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from privacy_gate.config import ReleaseConfig
from privacy_gate.data.split import Splits
from privacy_gate.errors import ConfigError
from privacy_gate.gate.findings import dp_audit_check
from privacy_gate.gate.verdict import Verdict
from privacy_gate.generators import generator_capabilities
from privacy_gate.names import DP_AUDIT_METRICS
from privacy_gate.pipeline.executor import Executor
from privacy_gate.studies.dp_audit import DPAuditResult, DPAuditSettings, cached_audit


def audit_settings(config: ReleaseConfig) -> DPAuditSettings:
    a = config.audit_dp
    if a is None:
        raise ConfigError("audit_dp is not configured")
    return DPAuditSettings(
        runs=a.runs, alpha=a.alpha, seed=a.seed, targets=tuple(a.targets), scores=tuple(a.scores)
    )


def audit_for_release(
    config: ReleaseConfig,
    splits: Splits,
    *,
    workdir: Path,
    executor: Executor | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[DPAuditResult, bool]:
    """(result, from_cache) of the configured generator's audit on the train split (or a sample of
    ``audit_dp.rows`` of it), with the public domain from the spec and the reference split."""
    gen = config.generator
    if not generator_capabilities(gen.name).differentially_private:
        raise ConfigError(
            f"audit_dp: generator '{gen.name}' claims no DP guarantee to audit "
            "(remove audit_dp or use a DP generator)"
        )
    data = splits.train
    rows = config.audit_dp.rows
    if rows is not None and rows < len(data):
        data = data.sample(rows, random_state=config.audit_dp.seed)
    return cached_audit(
        workdir=workdir,
        generator=gen.name,
        params=dict(gen.params),
        data=data,
        spec=config.dataset.spec,
        reference=splits.reference,
        settings=audit_settings(config),
        executor=executor,
        progress=progress,
    )


def audit_metrics(result: DPAuditResult, *, cached: bool) -> dict[str, float]:
    b = result.best.bound
    values = (
        b.epsilon_lower,
        result.epsilon,
        b.mu_lower,
        b.mu_estimate,
        result.claimed_mu,
        result.max_certifiable_epsilon,
        result.runs,
        result.seconds,
        float(cached),
    )
    return {k: float(v) for k, v in zip(DP_AUDIT_METRICS, values, strict=True)}


def apply_audit(
    verdict: Verdict, result: DPAuditResult, *, max_ratio: float, cached: bool
) -> Verdict:
    """The verdict with the audit's check (and metrics); a violation BLOCKs."""
    message = (
        result.reason()
        if result.exceeds(max_ratio)
        else f"DP audit: empirical epsilon >= {result.epsilon_lower:.3g} (a lower bound) within "
        f"{max_ratio:g} x the claimed {result.epsilon:g}"
    )
    check = dp_audit_check(
        epsilon_lower=result.epsilon_lower,
        epsilon=result.epsilon,
        max_ratio=max_ratio,
        message=message,
    )
    changes: dict[str, Any] = {
        "checks": verdict.checks + (check,),
        "metrics": {**verdict.metrics, **audit_metrics(result, cached=cached)},
    }
    if not check.passed:
        changes |= {"decision": "BLOCK", "reasons": verdict.reasons + (check,)}
    return dataclasses.replace(verdict, **changes)


def run_dp_audit(
    config: ReleaseConfig,
    *,
    workdir: str | Path,
    executor: Executor | None = None,
    progress: Callable[[str], None] | None = print,
    runs: int | None = None,
    use_cache: bool = True,
) -> tuple[DPAuditResult, bool]:
    """``privacy-gate audit-dp CONFIG``: load and split the config's data as a release does, then
    audit its generator (``audit_dp`` settings, or the defaults; ``runs`` overrides). ``use_cache``
    False runs it afresh (and replaces the cache entry)."""
    from privacy_gate.config import DPAuditConfig
    from privacy_gate.experiment.inputs import load_real_data, split_release

    audit = config.audit_dp or DPAuditConfig()
    if runs is not None:
        audit = audit.model_copy(update={"runs": runs})
    config = config.model_copy(
        update={"audit_dp": DPAuditConfig.model_validate(audit.model_dump())}
    )
    real, public_reference = load_real_data(config)
    splits = split_release(config, real, public_reference)
    if not use_cache:
        for stale in (Path(workdir) / "dp_audits").glob("*.json"):
            try:
                if json.loads(stale.read_text()).get("generator") == config.generator.name:
                    stale.unlink()
            except ValueError:
                stale.unlink()
    return audit_for_release(
        config, splits, workdir=Path(workdir), executor=executor, progress=progress
    )
