"""The gate run's ``shadow`` stage: whether the generator-aware test runs, and running it.

``shadow.enabled: auto`` runs it only where it is needed and affordable: the recipe is known and
refits (not a release read from a file), the table is not a panel, and the holdout-calibrated
tests alone could not give a verdict — the membership test's power check fails or a stage floor
was missed (the reasons a small table answers REVIEW for insufficient evidence). On a table with
enough targets it stays off, so the other tests keep their shares of the budget.
"""

from __future__ import annotations

from typing import Any

from privacy_gate.config import budget_tests
from privacy_gate.errors import ConfigError
from privacy_gate.experiment.shadow_evidence import evidence_sentence
from privacy_gate.experiment.shadow_gate import run_shadow_test
from privacy_gate.gate.budget import membership_power, test_levels
from privacy_gate.generators import generator_capabilities
from privacy_gate.names import SHADOW, metric_name


def shadow_reason(state: Any) -> str | None:
    """Why the test runs in this gate run, or None when it does not."""
    settings = state.settings
    cfg, gen = settings.shadow, settings.generator
    if cfg.enabled is False or "test:shadow" in settings.disabled or gen is None:
        return None
    if not generator_capabilities(gen.name).refits:
        return None
    if settings.spec.entity_id is not None:
        if cfg.enabled is True:
            raise ConfigError(
                "shadow.enabled is true, but the generator-aware test does not handle panels "
                "(spec.entity_id) yet; set shadow.enabled to auto or false"
            )
        return None
    if cfg.enabled is True:
        return "shadow.enabled is true"
    if state.shortfalls:
        return f"a stage floor was missed ({state.shortfalls[0].setting})"
    tests = budget_tests(settings.disabled, ran=(SHADOW,))
    attacks = settings.gated_attacks
    if "membership" in tests and attacks and state.targets is not None:
        level = test_levels(settings.gate.budget, tests)["membership"][0] / (len(attacks) + 1)
        n1 = int(state.targets.labels.sum())
        need = membership_power(
            n1,
            len(state.targets.labels) - n1,
            level=level,
            power=settings.gate.budget.power,
            promise_auc=settings.gate.budget.promise_auc,
        )
        if not need.sufficient:
            return (
                f"the targets detect an attack AUC of {need.detectable_auc:.3f}, "
                f"not {need.promise_auc:g}"
            )
    return None


def pool_has_reference(settings: Any) -> bool:
    """Whether the reference split joins the test's pool: when it is exchangeable with the holdout
    (``exposure.reference_calibrates``) and the recipe does not read it (a generator that takes
    its bins from the reference makes its release depend on which records the reference holds, so
    the permutation must keep the reference fixed: the pool is then train and holdout)."""
    reads = generator_capabilities(settings.generator.name).uses_reference
    return bool(settings.exposure.reference_calibrates) and not reads


def run_shadow_stage(state: Any, executor: Any, logger: Any) -> None:
    """Run the test when :func:`shadow_reason` says so; its figures go into ``state.metrics``."""
    reason = shadow_reason(state)
    if reason is None:
        return
    settings = state.settings
    tests = budget_tests(settings.disabled, ran=(SHADOW,))
    review_level = test_levels(settings.gate.budget, tests)[SHADOW][0]
    logger.info(
        "  generator-aware test (%s): refitting %s up to %d times (at most %g s, %d process(es))",
        reason,
        settings.generator.name,
        settings.shadow.max_fits,
        settings.shadow.max_seconds,
        settings.shadow.jobs,
    )
    state.shadow = r = executor.run(
        "shadow",
        run_shadow_test,
        state.inputs.splits,
        state.inputs.synthetic,
        settings.spec,
        generator=settings.generator.name,
        params=dict(settings.generator.params),
        config=settings.shadow,
        review_level=review_level,
        power=settings.gate.budget.power,
        q=settings.exposure.fdr,
        seed=settings.targets.seed,
        calibration_reference=pool_has_reference(settings),
        draw_reference=bool(settings.exposure.reference_calibrates),
        progress=lambda line: logger.info("  %s", line),
    )
    state.metrics.update({metric_name(SHADOW, k): v for k, v in r.metrics().items()})
    logger.info(
        "  generator-aware test: %d fits (%s), p %.4g; %d training records named at FDR %g; "
        "power %.2f against a release memorising %.0f%% of them%s",
        r.fits,
        r.stopped,
        r.pvalue,
        r.named,
        settings.exposure.fdr,
        r.power,
        100 * r.promise_share,
        ""
        if r.sufficient
        else f" (about {r.fits_needed} fits would reach {settings.gate.budget.power:.0%})"
        if r.fits_needed
        else " (no number of fits reaches it on this pool: more records are needed)",
    )
    for item in r.evidence[:3]:
        if item["named"]:
            logger.info("  %s", evidence_sentence(item))


__all__ = ["pool_has_reference", "run_shadow_stage", "shadow_reason"]
