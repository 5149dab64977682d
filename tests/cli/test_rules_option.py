"""``gate --rules FILE`` is validated exactly like ``gate --config FILE``.

A subgroup rule naming an attack the gate does not run (a typo ``dcrr``, or ``dоmias`` with a
Cyrillic ``о``) could never read a figure. Through ``--config`` it was refused at once (exit 2,
naming the rule); through ``--rules`` it passed the CLI's checks and ended the run in exit 4
"unexpected ValidationError". Both options now go through one loader: exit 2 before anything
runs, one line naming the file and the rule, nothing recorded or published.
"""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.config import ConfigError, load_gate_only_config, load_rules
from tests.conftest import EXAMPLE

runner = CliRunner()

TYPOS = {"dcrr": "dcrr", "cyrillic-o": "d\u043emias"}  # 'dоmias': the second letter is U+043E


def _rule(attack: str) -> dict:
    return {"metric": "auc", "attack": attack, "max": 0.7, "action": "review", "scope": "subgroup"}


@pytest.fixture(scope="module")
def splits(small_adult, tmp_path_factory):
    folder = tmp_path_factory.mktemp("rules-option")
    real = pd.read_csv(small_adult / "real.csv")
    for name, part in {
        "train": real.iloc[:1500],
        "holdout": real.iloc[1500:2200],
        "reference": real.iloc[2200:],
    }.items():
        part.to_csv(folder / f"{name}.csv", index=False)
    return folder


def _files(tmp_path, splits) -> list[str]:
    return [
        "--train",
        str(splits / "train.csv"),
        "--holdout",
        str(splits / "holdout.csv"),
        "--reference",
        str(splits / "reference.csv"),
        "--synthetic",
        str(splits / "train.csv"),
        "--spec",
        str(EXAMPLE),
        "--workdir",
        str(tmp_path / "wd"),
        "--orchestrator",
        "local",
    ]


@pytest.mark.parametrize("layout", ["rules", "gate.rules"])
@pytest.mark.parametrize("typo", list(TYPOS), ids=list(TYPOS))
def test_a_rules_file_with_a_misspelled_attack_exits_2_naming_file_and_rule(
    tmp_path, splits, typo, layout
):
    attack = TYPOS[typo]
    raw = {"rules": [_rule(attack)]} if layout == "rules" else {"gate": {"rules": [_rule(attack)]}}
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    r = runner.invoke(app, ["gate", *_files(tmp_path, splits), "--rules", str(path)])
    assert r.exit_code == 2, (r.exit_code, r.stdout[-2000:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    msg = lines[0]
    assert str(path) in msg, msg
    assert f"{layout}[0]" in msg and "is not a configured attack" in msg, msg
    assert "ValidationError" not in r.stdout + r.stderr
    if not attack.isascii():  # the look-alike letter is spelled out
        assert "\\u043e" in msg, msg
    assert not (tmp_path / "wd" / "mlflow.db").exists()  # refused before any run was recorded
    assert not (tmp_path / "wd" / "published").exists()


@pytest.mark.parametrize("typo", list(TYPOS), ids=list(TYPOS))
def test_rules_and_config_files_refuse_the_same_rule_the_same_way(tmp_path, typo):
    """One code path: the --rules loader gives the --config loader's message for the same rule."""
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        yaml.safe_dump({"gate": {"rules": [_rule(TYPOS[typo])]}}, allow_unicode=True),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as via_rules:
        load_rules(rules)
    with pytest.raises(ConfigError) as via_config:
        load_gate_only_config(rules)
    assert str(via_rules.value) == str(via_config.value)
    assert str(rules) in str(via_rules.value)


def test_a_valid_rules_file_still_loads(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"rules": [_rule("dcr")]}))
    gate = load_rules(rules)
    assert [r.attack for r in gate.rules] == ["dcr"]
