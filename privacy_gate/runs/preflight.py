"""Checks a command makes before it starts a run, so a mistake the operator can fix is one line
naming the file or folder (exit 2) instead of a recorded BLOCK minutes later.

The run repeats the checks that concern data (``experiment/inputs.py: check_disjoint``): a library
caller skips the command line, and a file can change between the check and the run.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> (folder / "a-file").write_text("x")
1
>>> require_writable_dir(folder / "a-file" / "workdir", setting="--workdir")
Traceback (most recent call last):
...
privacy_gate.errors.ConfigError: --workdir ...: ... is a file, not a folder; pass a folder the gate
may write to
>>> require_writable_dir(folder / "new" / "workdir", setting="--workdir")
>>> (folder / "new").exists()
False
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from privacy_gate.config import InputLimits
from privacy_gate.errors import ConfigError, DataError
from privacy_gate.publication.objectstore import is_s3
from privacy_gate.spec import DatasetSpec


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor or ".")


def require_writable_dir(path: str | Path | None, *, setting: str) -> None:
    """``path`` is, or can become, a folder this process may write into: its nearest existing
    ancestor is a folder that takes a probe write (created and removed at once). Nothing is left
    behind (a refused command must not leave a half-made workdir). ``s3://`` locations are checked
    by their store."""
    if path is None or is_s3(str(path)):
        return
    target = Path(path)
    base = _nearest_existing(target)
    if not base.is_dir():
        raise ConfigError(
            f"{setting} {target}: {base} is a file, not a folder; pass a folder the gate may write "
            "to"
        )
    try:  # a real write: permission bits say nothing to root, a read-only mount only to the kernel
        os.rmdir(tempfile.mkdtemp(prefix=".privacy-gate-probe-", dir=base))
    except OSError as exc:
        raise ConfigError(
            f"{setting} {target}: {base} is not writable ({exc.strerror or type(exc).__name__})"
        ) from None


def check_split_files(
    paths: dict[str, str | Path], spec: DatasetSpec, limits: InputLimits | None = None
) -> None:
    """Train, holdout and reference files given separately hold different records: the same file
    twice is refused at once, otherwise the tables are read (held to ``limits``, the run's
    ``inputs``) and compared by row hash and entity id (``check_disjoint``). Raises ConfigError
    naming both files and the count (never a value)."""
    from privacy_gate.errors import DataError
    from privacy_gate.experiment.inputs import check_disjoint, read_split_files

    resolved = {k: Path(p).resolve() for k, p in paths.items()}
    names = list(resolved)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if resolved[a] == resolved[b] or os.path.samefile(resolved[a], resolved[b]):
                raise ConfigError(
                    f"--{b} {paths[b]} is the --{a} file; the splits must hold different people"
                )
    try:
        parts = read_split_files(paths, spec, limits)
    except Exception:  # noqa: BLE001
        # an unreadable or non-conforming file is the run's to report (a recorded invalid_input
        # BLOCK)
        return
    try:
        check_disjoint(parts, spec, sources={k: Path(p).name for k, p in paths.items()})
    except DataError as exc:
        raise ConfigError(str(exc)) from None


def check_input_files(
    files: dict[str, str | Path | None],
    spec: DatasetSpec,
    limits: InputLimits,
    *,
    where: str,
    spec_source: str = "the spec",
) -> None:
    """Every local data file against the spec and the input budgets before anything runs
    (``data.guards.check_file``: size, header width, the header against the spec, longest field),
    from its size, its header and one pass over its bytes, never a parse. ``files``: label (the
    option or config key) -> path; ``s3://`` objects are checked by the run when it reads them.
    One ConfigError names every file with a problem and, for a header, every missing and extra
    column. ``where``: where the ``inputs`` settings are changed (named in a refusal)."""
    from privacy_gate.data.guards import check_file

    if len(spec.columns) > limits.max_columns:
        raise ConfigError(
            f"{spec_source}: spec '{spec.name}' has {len(spec.columns):,} columns, more than "
            f"inputs.max_columns ({limits.max_columns:,}); raise inputs.max_columns {where}, or "
            "split "
            "the table"
        )
    problems = []
    for label, path in files.items():
        if path is None or is_s3(str(path)):
            continue
        try:
            check_file(path, limits, where=where, spec=spec)
        except DataError as exc:
            problems.append(f"{label} {exc}")
    if problems:
        raise ConfigError("; ".join(problems))
