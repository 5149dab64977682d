"""Reading configs and the registry: ``check-config`` (the effective gate of a config) and
``list`` (every attack or generator with its parameters)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from privacy_gate.cli.checks import require_files
from privacy_gate.cli.common import app, exit_codes, usage_error


@app.command(
    "check-config",
    epilog=exit_codes((0, "the config is valid: its effective gate is printed")),
    short_help="The effective gate of a config: budget, tests, rules.",
)
def check_config(
    config: Annotated[
        Path,
        typer.Argument(metavar="CONFIG", help="A release config or a gate-only config (YAML)."),
    ],
) -> None:
    """The effective gate of a config: error budget, each test's level, every rule, and what is
    off."""
    from privacy_gate.config import (
        active_rules,
        budget_tests,
        load_gate_only_config,
        protections_off,
    )
    from privacy_gate.errors import ConfigError
    from privacy_gate.gate.budget import describe_gate

    require_files(config=config)
    try:
        cfg = load_gate_only_config(config)
    except ConfigError as exc:
        usage_error(str(exc) if str(exc).startswith(str(config)) else f"{config}: {exc}")
    off = protections_off(cfg.gate, cfg.exposure, cfg.disclosure)
    typer.echo(
        describe_gate(
            cfg.gate, tests=budget_tests(off), disabled=off, rules=active_rules(cfg.gate, off)
        ),
        nl=False,
    )


@app.command(
    "list",
    epilog=exit_codes((0, "listed")),
    short_help="Every registered attack or generator and its parameters.",
)
def list_components(
    kind: Annotated[str, typer.Argument(metavar="attacks|generators", help="What to list.")],
) -> None:
    """Every registered attack or generator with its parameters, types, defaults and help."""
    from privacy_gate.registry import format_components

    if kind == "attacks":
        from privacy_gate.attacks import describe_attacks as describe
    elif kind == "generators":
        from privacy_gate.generators import describe_generators as describe
    else:
        usage_error(f"list: expected 'attacks' or 'generators', got {kind!r}")
    typer.echo(format_components(describe()), nl=False)
