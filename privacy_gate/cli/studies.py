"""Studies beside the gate: ``dependency-study`` (dependent training data against its IID
counterpart) and ``audit-dp`` (a lower bound on the epsilon a DP generator delivers)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from privacy_gate.cli.checks import (
    check_components,
    check_dataset_inputs,
    load_release,
    preflight,
    require_files,
)
from privacy_gate.cli.common import (
    EXIT_BLOCK,
    JsonOpt,
    OrchestratorOpt,
    WorkdirOpt,
    app,
    cli_logger,
    exit_codes,
    probe_tracking,
    quiet_env,
    say,
    show,
    usage_error,
    use_prefect,
)


@app.command(
    "dependency-study",
    epilog=exit_codes((0, "the study completed"), (1, "the study failed")),
    short_help="Attack dependent splits and their IID counterparts.",
)
def dependency_study(
    config: Annotated[
        Path,
        typer.Argument(
            metavar="CONFIG",
            help="Release config with a dependency_study section "
            "(see examples/adult-dependency.yaml).",
        ),
    ],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    as_json: JsonOpt = False,
    orchestrator: OrchestratorOpt = "auto",
) -> None:
    """Retrain on dependent splits and their IID counterparts, attack both, compare with the DP
    bound."""
    quiet_env()
    from privacy_gate.errors import ConfigError, PrivacyGateError

    def check(cfg: Any) -> None:
        if cfg.dependency_study is None:
            raise ConfigError(
                f"{config}: no 'dependency_study' section (README: 'Dependency study')"
            )
        check_components(None, {}, cfg.attacks)

    cfg = load_release(config, check)
    require_files(**{"dataset.path": cfg.dataset.path})
    check_dataset_inputs(cfg, config)
    preflight(workdir=workdir)
    from privacy_gate.tracking.uri import tracking_source

    probe_tracking(*tracking_source(cfg.tracking.uri, workdir))
    try:
        if use_prefect(orchestrator):
            from privacy_gate.flows import dependency_study_flow

            result = dependency_study_flow(config_path=str(config), workdir=str(workdir))
        else:
            from privacy_gate.studies.dependency_study import run_dependency_study

            result = run_dependency_study(cfg, workdir=workdir, logger=cli_logger())
    except PrivacyGateError as exc:
        say(f"error: dependency study did not complete: {exc}", err=True)
        raise typer.Exit(1) from None
    from privacy_gate.studies.dependency_summary import invariant_lines
    from privacy_gate.tracking.uri import ui_command

    out = sys.stderr if as_json else sys.stdout
    show(
        "\n".join(
            [
                "",
                *invariant_lines(result["invariants"]),
                f"study run:   {result['run_id']}",
                f"MLflow UI:   {ui_command(result['tracking_uri'])}",
            ]
        ),
        file=out,
    )
    if as_json:
        show(
            json.dumps(
                {"run_id": result["run_id"], "invariants": result["invariants"]}, default=str
            )
        )


@app.command(
    "audit-dp",
    epilog=exit_codes(
        (0, "no violation shown (a lower bound never certifies DP)"),
        (4, "the epsilon lower bound exceeds the claim"),
        (1, "the audit failed"),
    ),
    short_help="Audit a DP generator's claim: a lower bound on epsilon.",
)
def audit_dp(
    config: Annotated[
        Path,
        typer.Argument(
            metavar="CONFIG",
            help="Release config of a DP generator (its audit_dp section, if any, "
            "gives the settings).",
        ),
    ],
    workdir: WorkdirOpt = Path(".privacy-gate"),
    runs: Annotated[
        int | None,
        typer.Option("--runs", help="Fits per side and target (default: audit_dp.runs, else 200)."),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Run the audit afresh even if cached.")
    ] = False,
    figure: Annotated[
        Path | None, typer.Option("--figure", help="Write the trade-off figure (PNG) here.")
    ] = None,
    as_json: JsonOpt = False,
    orchestrator: OrchestratorOpt = "auto",
) -> None:
    """Audit the DP claim of the config's generator: a lower bound on the epsilon it delivers."""
    quiet_env()
    from privacy_gate.errors import PrivacyGateError

    if runs is not None and runs < 4:
        usage_error(f"--runs must be at least 4, got {runs}")
    cfg = load_release(
        config, lambda cfg: check_components(cfg.generator.name, cfg.generator.params, [])
    )
    require_files(**{"dataset.path": cfg.dataset.path})
    check_dataset_inputs(cfg, config)
    try:
        if use_prefect(orchestrator):
            from privacy_gate.flows import audit_dp_flow

            record = audit_dp_flow(
                config_path=str(config), workdir=str(workdir), runs=runs, use_cache=not no_cache
            )
        else:
            from privacy_gate.studies.dp_audit_gate import run_dp_audit

            log = cli_logger()
            result, cached = run_dp_audit(
                cfg, workdir=workdir, progress=log.info, runs=runs, use_cache=not no_cache
            )
            record = {**result.to_dict(), "cached": cached}
    except PrivacyGateError as exc:
        say(f"error: DP audit did not complete: {exc}", err=True)
        raise typer.Exit(1) from None
    from privacy_gate.studies.dp_audit import DPAuditResult

    result = DPAuditResult.from_dict(record)
    if figure is not None:
        from privacy_gate.report.plots import dp_audit_figure, dp_audit_figure_inputs

        dp_audit_figure(**dp_audit_figure_inputs(record)).savefig(figure, dpi=110)
    b = result.best.bound
    out = sys.stderr if as_json else sys.stdout
    show(
        "\n".join(
            [
                f"generator:   {result.generator} (implementation {result.version}), claimed "
                f"epsilon {result.epsilon:g}, "
                f"delta {result.delta:g}, mu {result.claimed_mu:.3g} ({result.mu_basis})",
                f"strongest:   {result.best.score} score, {result.best.target_label}; "
                f"{result.runs} fits per side" + (" (cached)" if record.get("cached") else ""),
                f"epsilon >=   {b.epsilon_lower:.3g} at {100 * (1 - b.alpha):.0f}% confidence "
                f"(at most {result.max_certifiable_epsilon:.3g} can be shown with these runs)",
                f"mu:          {b.mu_estimate:.3g} [{b.mu_lower:.3g}, {b.mu_upper:.3g}] (claimed "
                f"{result.claimed_mu:.3g})",
                "verdict:     "
                + (
                    result.reason()
                    if result.exceeds()
                    else "no violation shown (a lower bound: this never certifies DP)"
                ),
            ]
        ),
        file=out,
    )
    if as_json:
        show(json.dumps(record, default=float))
    if result.exceeds():
        raise typer.Exit(EXIT_BLOCK)
