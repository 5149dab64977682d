from pathlib import Path

import pytest
import yaml

from privacy_gate.config import DEFAULT_RULES, GateConfig, load_release_config, load_rules, load_spec
from privacy_gate.errors import ConfigError

from .conftest import EXAMPLE


def test_example_config_loads_with_resolved_paths():
    cfg = load_release_config(EXAMPLE)
    assert cfg.dataset.path.is_absolute() and cfg.dataset.path.exists()
    assert cfg.dataset.spec.subgroups == ["sex", "race"]
    assert cfg.generator.name == "gaussian_copula"
    assert [a.name for a in cfg.attacks] == ["domias", "dcr", "dcr_ratio", "mama_mia"]
    assert len(cfg.config_hash()) == 16


def _write(tmp_path: Path, raw: dict, name="cfg.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(raw))
    return p


def _base() -> dict:
    return yaml.safe_load(EXAMPLE.read_text())


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda r: r["dataset"]["spec"]["columns"]["age"].update(kind="nume"), "dataset.spec.columns.age.kind"),
        (lambda r: r["dataset"]["spec"].update(subgroups=["sex", "nope"]), "unknown column 'nope'"),
        (lambda r: r.update(split={"train": 0.6, "holdout": 0.3, "reference": 0.3}), "must sum to 1"),
        (lambda r: r["dataset"]["spec"]["columns"]["age"].update(colour="red"), "columns.age.colour: unknown key"),
        (lambda r: r.update(bogus=1), "bogus: unknown key"),
        (lambda r: r["gate"]["rules"].append({"metric": "auc"}), "needs exactly one of 'max' or 'min'"),
        (lambda r: r["dataset"]["spec"]["columns"]["age"].update(min=50, max=10), "'min' (50.0) must be smaller"),
        (lambda r: r["dataset"]["spec"]["columns"]["sex"].update(categories=[]), "must not be empty"),
        (lambda r: r["dataset"]["spec"].update(entity_id="person"), "entity_id names unknown column 'person'"),
    ],
)
def test_config_errors_name_file_key_and_problem(tmp_path, mutate, expected):
    raw = _base()
    mutate(raw)
    path = _write(tmp_path, raw)
    with pytest.raises(ConfigError) as info:
        load_release_config(path)
    msg = str(info.value)
    assert str(path) in msg and expected in msg, msg
    assert "\n" not in msg


def test_missing_and_invalid_yaml(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_release_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1,\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_spec(bad)


def test_spec_in_separate_file_and_rules_file(tmp_path):
    raw = _base()
    spec_path = _write(tmp_path, raw["dataset"]["spec"], "spec.yaml")
    raw["dataset"]["spec"] = "spec.yaml"
    raw["dataset"]["path"] = str(Path(EXAMPLE).parent / raw["dataset"]["path"])
    cfg = load_release_config(_write(tmp_path, raw))
    assert cfg.dataset.spec == load_spec(spec_path)
    rules = load_rules(_write(tmp_path, {"rules": [{"metric": "auc", "attack": "any", "max": 0.7}]}, "r.yaml"))
    assert rules.rules[0].max == 0.7
    assert GateConfig().rules == list(DEFAULT_RULES)
