"""A spec or config with nested YAML aliases ("billion laughs") is refused at once
with one line naming the file, as are too many aliases, recursive aliases and oversized files;
ordinary anchors still load."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from privacy_gate import config
from privacy_gate.config import load_rules, load_spec
from privacy_gate.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def laughs(levels: int = 9) -> str:
    """A flow list whose i-th element is 9 aliases of the one before: 9**levels strings."""
    parts = ['&l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    parts += [f"&l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


#: where each loader reads the list: the expansion is what validation walks (the hang of the issue)
DOCUMENTS = {
    "load_spec": "name: laughs\ncolumns:\n  c:\n    kind: categorical\n    categories: {}\n",
    "load_rules": "rules: {}\n",
    "load_release_config": "dataset:\n  spec:\n    name: laughs\n    columns:\n      c:\n        "
    "kind: categorical\n        categories: {}\n",
}


#: load in a fresh process: on a loader without bounds the expansion runs for minutes and grows to
#: gigabytes, so the outer timeout (not the assertion) is what a regression would hit
PROBE = """
import json, sys, time
from privacy_gate.config import {loader}
t = time.perf_counter()
try:
    {loader}(sys.argv[1])
    outcome = "loaded"
except Exception as exc:
    outcome = type(exc).__name__ + ": " + str(exc)
print(json.dumps({{"seconds": time.perf_counter() - t, "outcome": outcome}}))
"""


@pytest.mark.parametrize("loader", ["load_spec", "load_rules", "load_release_config"])
def test_billion_laughs_is_refused_quickly_naming_the_file(tmp_path, loader):
    path = tmp_path / "laughs.yaml"
    path.write_text(DOCUMENTS[loader].format(laughs()))
    try:
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(loader=loader), str(path)],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{loader} still expanding the aliases after 30 s")
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["seconds"] < 2, result
    assert result["outcome"].startswith("ConfigError: ") and str(path) in result["outcome"], result
    assert "alias" in result["outcome"] and "\n" not in result["outcome"]


def test_too_many_aliases_recursive_aliases_and_large_files_are_refused(tmp_path):
    many = tmp_path / "many.yaml"
    many.write_text("a: &a 1\nb: [" + ", ".join(["*a"] * (config.MAX_YAML_ALIASES + 1)) + "]\n")
    with pytest.raises(
        ConfigError, match=rf"{many}: refused: more than {config.MAX_YAML_ALIASES} aliases"
    ):
        load_spec(many)
    loop = tmp_path / "loop.yaml"
    loop.write_text("a: &a [1, *a]\n")
    with pytest.raises(ConfigError, match=rf"{loop}: refused: .*recursive"):
        load_spec(loop)
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * config.MAX_YAML_BYTES + "\nname: big\n")
    with pytest.raises(ConfigError, match=rf"{big}: larger than"):
        load_spec(big)
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match=rf"{deep}: "):
        load_spec(deep)


def test_ordinary_anchors_still_load(tmp_path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n  - {metric: auc, attack: &every any, max: &bar 0.6, action: block}\n"
        "  - {metric: tpr_at_fpr_0.01, attack: *every, max: *bar, action: block}\n"
    )
    gate = load_rules(rules)
    assert [(r.attack, r.max, r.action) for r in gate.rules] == [
        ("any", 0.6, "block"),
        ("any", 0.6, "block"),
    ]
