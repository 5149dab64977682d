"""Reading config and spec files: YAML bounded in size and aliases, duplicate keys refused, and
every validation error in one line naming the file and each key (:func:`load_release_config`,
:func:`load_spec`, :func:`load_gate_only_config`, :func:`load_rules_config`, :func:`load_judging`,
:func:`load_gate_deployment`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from privacy_gate.config.gate_deployment import (
    DEPLOYMENT_SECTIONS,
    FILES_SECTION,
    GateDeploymentConfig,
)
from privacy_gate.config.release import GateOnlyConfig, ReleaseConfig
from privacy_gate.config.rules import GateConfig
from privacy_gate.errors import ConfigError
from privacy_gate.publication.objectstore import is_s3
from privacy_gate.spec import DatasetSpec

#: Bounds on what a config or spec file may make the loader build: a file larger than this is
#: refused unread, and YAML aliases (``*name``) are bounded in number and in what they expand to —
#: nested aliases ("billion laughs") make a few hundred bytes into billions of values.
MAX_YAML_BYTES = 5_000_000
MAX_YAML_ALIASES = 200
MAX_YAML_NODES = 200_000


class _YamlTooLarge(Exception):
    """Raised inside the loader; ``_read_yaml`` turns it into a ConfigError naming the file."""


def _expanded_size(root: yaml.Node) -> int:
    """How many nodes ``root`` stands for once every alias is expanded (aliases are shared nodes in
    the composed graph: each counts once per place it is used), stopping past ``MAX_YAML_NODES``."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            children = _children(node)
            sizes[key] = min(MAX_YAML_NODES + 1, 1 + sum(sizes[id(c)] for c in children))
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise _YamlTooLarge(
                "an alias refers to a node that contains it (a recursive structure)"
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)
    if sizes[id(root)] > MAX_YAML_NODES:
        raise _YamlTooLarge(f"its aliases expand to more than {MAX_YAML_NODES:,} values")
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a key given twice in one mapping is an error: with the plain
    loader the last one silently wins, so a second ``rules:`` or ``max:`` would replace the first.
    Aliases are bounded (``MAX_YAML_ALIASES``, ``MAX_YAML_NODES``) before anything is
    constructed."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise _YamlTooLarge(f"more than {MAX_YAML_ALIASES} aliases (*name)")
        return super().compose_node(parent, index)

    def construct_document(self, node: Any) -> Any:
        _expanded_size(node)
        return super().construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _read_yaml(path: Path) -> Any:
    if not path.exists():
        raise ConfigError(f"{path}: file not found")
    try:
        with path.open(
            "rb"
        ) as fh:  # read at most the budget: the size on disk may lie (a pipe, a growing file)
            data = fh.read(MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > MAX_YAML_BYTES:
        raise ConfigError(
            f"{path}: larger than {MAX_YAML_BYTES:,} bytes; a config or spec file is refused "
            "unread "
            "beyond that"
        )
    try:
        # UTF-8 (a UTF-8 byte-order mark allowed): other encodings are refused, not guessed
        return yaml.load(data.decode("utf-8-sig"), Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except _YamlTooLarge as exc:
        raise ConfigError(
            f"{path}: refused: {exc} (write the values out instead of nesting aliases)"
        ) from None
    except RecursionError:
        raise ConfigError(f"{path}: refused: nested too deeply") from None
    except yaml.MarkedYAMLError as exc:  # one line: file, line, column and the parser's complaint
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p) or "syntax error"
        raise ConfigError(f"{path}: not valid YAML: {where}{what}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid YAML ({type(exc).__name__})") from None


def _format_validation_error(
    path: Path, prefix: str, exc: ValidationError, *, gate_key: str = "gate"
) -> ConfigError:
    """One line naming the file and each problem's key. ``gate_key``: what the file calls the
    model's ``gate`` section (a bare ``rules:`` file has none: ``""``)."""
    problems = []
    for err in exc.errors():
        where = tuple(err["loc"])
        if gate_key != "gate" and where[:1] == ("gate",):
            where = ((gate_key,) if gate_key else ()) + where[1:]
        loc = ".".join(str(p) for p in (prefix, *where) if p != "")
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        problems.append(f"{loc}: {msg}" if loc else msg)
    return ConfigError(f"{path}: " + "; ".join(problems))


def _spec_from(raw: Any, path: Path, prefix: str = "") -> DatasetSpec:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {prefix or 'spec'}: expected a mapping")
    try:
        return DatasetSpec.model_validate(raw)
    except ValidationError as exc:
        raise _format_validation_error(path, prefix, exc) from None


def load_spec(path: str | Path) -> DatasetSpec:
    """Load a dataset spec from YAML; a file that holds a whole release config works too."""
    path = Path(path)
    raw = _read_yaml(path)
    if isinstance(raw, dict) and "dataset" in raw and isinstance(raw["dataset"], dict):
        return _spec_from(raw["dataset"].get("spec"), path, "dataset.spec")
    return _spec_from(raw, path)


def load_gate_only_config(path: str | Path) -> GateOnlyConfig:
    """Load the judging sections (targets, attacks, gate, audit, mace, exposure, disclosure) and the
    input limits (inputs) from YAML; a whole release
    config works too (its other sections are ignored)."""
    path = Path(path)
    raw = _read_yaml(path)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{path}: expected a mapping with keys targets, attacks, gate, audit, mace, exposure, "
            "disclosure, inputs"
        )
    return _judging_from({k: v for k, v in raw.items() if k not in _not_judging()}, path)


def _not_judging() -> set[str]:
    """Sections a gate-only run does not read: a release config's (``dataset``, ``generator``,
    ``review`` ...) and a gate-mode deployment's own (``files``, ``schedule``, ``publish``)."""
    others = set(ReleaseConfig.model_fields) | set(DEPLOYMENT_SECTIONS)
    return others - set(GateOnlyConfig.model_fields)


def ignored_sections(path: str | Path) -> list[str]:
    """The sections of a ``--config`` file that a gate-only run does not read: the CLI names them
    instead of dropping them silently."""
    raw = _read_yaml(Path(path))
    if not isinstance(raw, dict):
        return []
    return sorted(k for k in raw if k in _not_judging())


def ignored_rules_sections(path: str | Path) -> list[str]:
    """The sections of a ``--rules`` file other than ``gate``, which a ``--rules`` file is read
    for (a whole release config given as ``--rules``: its ``targets``, ``attacks`` ... are not
    read); the CLI names them instead of dropping them silently."""
    raw = _read_yaml(Path(path))
    if not isinstance(raw, dict) or "gate" not in raw:
        return []
    return sorted(str(k) for k in raw if k != "gate")


def has_section(path: str | Path, section: str) -> bool:
    """Whether the YAML mapping at ``path`` has ``section`` (False for a file that does not load:
    its loader says why)."""
    try:
        raw = _read_yaml(Path(path))
    except ConfigError:
        return False
    return isinstance(raw, dict) and section in raw


def is_gate_deployment(path: str | Path) -> bool:
    """Whether the YAML file at ``path`` is a gate-mode deployment's config (it has ``files``)."""
    return has_section(path, FILES_SECTION)


def load_gate_deployment(path: str | Path) -> GateDeploymentConfig:
    """A gate-mode deployment's config (``config.gate_deployment``), its files resolved against the
    config's folder, checked against its spec (which must load)."""
    path = Path(path)
    raw = _read_yaml(path)
    if not isinstance(raw, dict) or not isinstance(raw.get(FILES_SECTION), dict):
        raise ConfigError(
            f"{path}: a gate-mode deployment needs a '{FILES_SECTION}' section "
            "(train, holdout, reference, synthetic, spec)"
        )
    base = path.resolve().parent
    files = {
        k: v if not isinstance(v, str) or is_s3(v) else str((base / v).resolve())
        for k, v in raw[FILES_SECTION].items()
    }
    raw = {**raw, FILES_SECTION: files}
    pub = raw.get("publish")
    if isinstance(pub, dict) and isinstance(pub.get("target"), str) and not is_s3(pub["target"]):
        raw = {**raw, "publish": {**pub, "target": str((base / pub["target"]).resolve())}}
    try:
        config = GateDeploymentConfig.model_validate(raw, context={"rules_at": "gate.rules"})
    except ValidationError as exc:
        raise _format_validation_error(path, "", exc) from None
    config.check_against(load_spec(config.files.spec), str(path))
    return config


def _judging_from(raw: dict[str, Any], path: Path, *, gate_key: str = "gate") -> GateOnlyConfig:
    """The one validation of judging sections, for ``--config`` and ``--rules`` files alike.
    ``gate_key``: what the file calls the gate section (``""`` for a bare ``rules:`` file), so
    every message names the key as written."""
    try:
        return GateOnlyConfig.model_validate(
            raw, context={"rules_at": ".".join(p for p in (gate_key, "rules") if p)}
        )
    except ValidationError as exc:
        raise _format_validation_error(path, "", exc, gate_key=gate_key) from None


def load_rules_config(path: str | Path) -> GateOnlyConfig:
    """A ``--rules`` file (``gate: {rules: [...]}`` or just ``rules: [...]``) as the judging config
    it stands for: the gate section from the file, every other section at its default, validated by
    the same code as a ``--config`` file (a rule naming an attack that does not run is refused)."""
    path = Path(path)
    raw = _read_yaml(path)
    if isinstance(raw, dict) and "gate" in raw:
        return _judging_from({"gate": raw["gate"] if raw["gate"] is not None else {}}, path)
    return _judging_from({"gate": raw if raw is not None else {}}, path, gate_key="")


def load_rules(path: str | Path) -> GateConfig:
    """The gate section of a ``--rules`` file (:func:`load_rules_config`)."""
    return load_rules_config(path).gate


def load_judging(
    *, rules: str | Path | None = None, config: str | Path | None = None
) -> GateOnlyConfig | None:
    """The judging config of a gate-only run: from a ``--rules`` file or a ``--config`` file (not
    both: each sets the rules), None for neither (the defaults)."""
    if rules and config:
        raise ConfigError(
            f"{rules} and {config} both set the gate rules; put them in the gate section of "
            f"{config}"
        )
    if rules:
        return load_rules_config(rules)
    return load_gate_only_config(config) if config else None


def load_release_config(path: str | Path) -> ReleaseConfig:
    """Load a release config; relative paths in it are resolved against the config's folder."""
    path = Path(path)
    raw = _read_yaml(path)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping with keys dataset, generator, ...")
    base = path.resolve().parent
    ds = raw.get("dataset")
    if isinstance(ds, dict):
        ds = dict(ds)
        if isinstance(ds.get("spec"), str):  # spec kept in its own file
            spec_path = (base / ds["spec"]).resolve()
            ds["spec"] = load_spec(spec_path).model_dump()
        for key in ("path", "reference_path"):
            if isinstance(ds.get(key), str) and not is_s3(ds[key]):
                ds[key] = str((base / ds[key]).resolve())
        raw = {**raw, "dataset": ds}
    pub = raw.get("publish")
    if isinstance(pub, dict) and isinstance(pub.get("target"), str) and not is_s3(pub["target"]):
        raw = {**raw, "publish": {**pub, "target": str((base / pub["target"]).resolve())}}
    try:
        return ReleaseConfig.model_validate(raw)
    except ValidationError as exc:
        raise _format_validation_error(path, "", exc) from None
