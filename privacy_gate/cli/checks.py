"""Checks made before a command runs anything: files exist, the config loads, folders are
writable, data files match the spec and the input budgets, registry names exist. Each failure is
one line naming the file, option or setting, and exit 2 — not a BLOCK minutes later."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privacy_gate.cli.common import usage_error


def require_files(**paths: Path | None) -> None:
    """``name=path``: options are named ``--name``, config keys (with a dot) by their key."""
    for name, path in paths.items():
        if path is not None and not Path(path).is_file():
            label = name if "." in name else f"--{name.replace('_', '-')}"
            usage_error(f"{label}: file not found: {path}")


def load_release(config: Path, check: Any = None) -> Any:
    """The release config at ``config``, then ``check(cfg)``; a ConfigError from either is a usage
    error (exit 2, one line naming the file)."""
    from privacy_gate.config import load_release_config
    from privacy_gate.errors import ConfigError

    try:
        cfg = load_release_config(config)
        if check is not None:
            check(cfg)
    except ConfigError as exc:
        usage_error(str(exc) if str(exc).startswith(str(config)) else f"{config}: {exc}")
    return cfg


def preflight(
    *,
    workdir: Path | None = None,
    publish_to: Any = None,
    publish_setting: str = "--publish-to",
    split_files: dict[str, Path] | None = None,
    spec: Any = None,
    limits: Any = None,
) -> None:
    """Folders the run writes and split files it compares (read within the run's input ``limits``),
    checked before it starts (exit 2, one line naming the path) rather than as a BLOCK minutes
    later."""
    from privacy_gate.errors import ConfigError
    from privacy_gate.label_key import LabelKey
    from privacy_gate.names import LABEL_KEY_FILE
    from privacy_gate.runs.preflight import check_split_files, require_writable_dir

    try:
        require_writable_dir(workdir, setting="--workdir")
        if workdir is not None and (Path(workdir) / LABEL_KEY_FILE).exists():
            # a label key others may read, or a damaged one: refused now, not as a BLOCK after the
            # run
            LabelKey.for_workdir(workdir, create=False)
        require_writable_dir(publish_to, setting=publish_setting)
        if split_files is not None:
            check_split_files(split_files, spec, limits)
    except ConfigError as exc:
        usage_error(str(exc))


def check_dataset_inputs(cfg: Any, config: Path) -> None:
    """A release config's data files (dataset.path, dataset.reference_path): ``check_inputs``."""
    check_inputs(
        {"dataset.path": cfg.dataset.path, "dataset.reference_path": cfg.dataset.reference_path},
        cfg.dataset.spec,
        cfg.inputs,
        where=f"in {config}",
        spec_source=f"{config}: dataset.spec",
    )


def check_inputs(
    files: dict[str, Any], spec: Any, limits: Any, *, where: str, spec_source: str
) -> None:
    """Data files against the spec's columns and the input budgets (size, width, longest field),
    from their headers and sizes, before anything runs: exit 2, one line naming every file with a
    problem, every missing and extra column, or the figure and the setting to change."""
    from privacy_gate.errors import ConfigError
    from privacy_gate.runs.preflight import check_input_files

    try:
        check_input_files(files, spec, limits, where=where, spec_source=spec_source)
    except ConfigError as exc:
        usage_error(str(exc))


def check_components(generator: str | None, generator_params: dict, attacks: Any) -> None:
    """Registry names and parameters, checked before anything runs (a ConfigError names them)."""
    from privacy_gate.attacks import create_attack
    from privacy_gate.generators import create_generator

    if generator is not None:
        create_generator(generator, **generator_params)
    for a in attacks:
        create_attack(a.name, **a.params)
