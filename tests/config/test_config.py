from pathlib import Path

import pytest
import yaml

from privacy_gate.config import (
    DEFAULT_RULES,
    GateConfig,
    load_release_config,
    load_rules,
    load_spec,
)
from privacy_gate.errors import ConfigError
from tests.conftest import EXAMPLE


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
        (
            lambda r: r["dataset"]["spec"]["columns"]["age"].update(kind="nume"),
            "dataset.spec.columns.age.kind",
        ),
        (lambda r: r["dataset"]["spec"].update(subgroups=["sex", "nope"]), "unknown column 'nope'"),
        (
            lambda r: r.update(split={"train": 0.6, "holdout": 0.3, "reference": 0.3}),
            "must sum to 1",
        ),
        (
            lambda r: r["dataset"]["spec"]["columns"]["age"].update(colour="red"),
            "columns.age.colour: unknown key",
        ),
        (lambda r: r.update(bogus=1), "bogus: unknown key"),
        (
            lambda r: r["gate"].setdefault("rules", []).append({"metric": "auc"}),
            "needs exactly one of 'max' or 'min'",
        ),
        (
            lambda r: r["dataset"]["spec"]["columns"]["age"].update(min=50, max=10),
            "'min' (50.0) must be smaller",
        ),
        (
            lambda r: r["dataset"]["spec"]["columns"]["sex"].update(categories=[]),
            "must not be empty",
        ),
        (
            lambda r: r["dataset"]["spec"].update(entity_id="person"),
            "entity_id names unknown column 'person'",
        ),
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
    rules = load_rules(
        _write(tmp_path, {"rules": [{"metric": "auc", "attack": "any", "max": 0.7}]}, "r.yaml")
    )
    assert rules.rules[0].max == 0.7
    assert GateConfig().rules == [] and GateConfig().effective_rules == list(DEFAULT_RULES)


# ---- rules that could read nothing are refused at load time, whatever their scope
# -----------------


def _with_rules(tmp_path: Path, rules, **gate) -> Path:
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["gate"] = {"rules": rules, **gate}
    path = tmp_path / "release.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize(
    "rule, needle",
    [
        (
            {"metric": "acu", "attack": "any", "max": 0.7, "scope": "subgroup"},
            "'acu' is not a figure of an attack",
        ),
        (
            {"metric": "membership_test.p_adjustd", "min": 0.01, "scope": "subgroup"},
            "not a figure of a subgroup",
        ),
        (
            {"metric": "auc", "attack": "dcrr", "max": 0.7, "scope": "subgroup"},
            "attack 'dcrr' is not a configured attack",
        ),
        (
            {"metric": "auc", "attack": "dcrr", "max": 0.6},
            "attack 'dcrr' is not a configured attack",
        ),
        ({"metric": "dcrr.auc", "max": 0.6}, "attack 'dcrr' is not a configured attack"),
        (
            {"metric": "exposed.share_lowr", "max": 0.005},
            "'exposed.share_lowr' is not a figure the gate records",
        ),
        (
            {"metric": "utility.qualty", "min": 0.6},
            "'utility.qualty' is not a figure the gate records",
        ),
    ],
)
def test_a_rule_that_can_read_nothing_is_a_config_error(tmp_path, rule, needle):
    """A misspelled subgroup rule used to be skipped in every group (a leaky release approved)."""
    with pytest.raises(ConfigError, match="gate") as err:
        load_release_config(_with_rules(tmp_path, [*[r.model_dump() for r in DEFAULT_RULES], rule]))
    assert needle in str(err.value)


def test_every_figure_a_default_rule_reads_is_accepted(tmp_path):
    cfg = load_release_config(
        _with_rules(
            tmp_path,
            [
                {"metric": "auc", "attack": "dcr", "max": 0.6},
                {"metric": "dcr.tpr_at_fpr_0.001", "max": 0.6},
                {"metric": "mace.advantage_lower", "attack": "combined", "max": 0.1},
                {"metric": "strongest.tpr_at_fpr_0.01", "max": 0.1},
                {"metric": "validation.synthetic.copy_share", "max": 0.01},
                {"metric": "dependency.dp_bound_excess", "max": 0.0},
                {"metric": "exposed.scan_count", "max": 0},
                {"metric": "exposed.count", "max": 0, "scope": "subgroup"},
                {"metric": "n_members", "min": 1, "scope": "subgroup"},
                {"metric": "dcr.mace.advantage_upper", "max": 0.2, "scope": "subgroup"},
            ],
        )
    )
    assert len(cfg.gate.rules) == 10


def test_listed_rules_add_to_the_defaults_and_replace_them_only_by_key(tmp_path):
    """A rule list no longer replaces the defaults: it adds to them, and a rule with a default's key
    replaces that one. Every default survives a config that lists rules."""
    cfg = load_release_config(
        _with_rules(
            tmp_path,
            [
                {"metric": "auc", "attack": "any", "max": 0.55},
                {"metric": "tpr_at_fpr_0.001", "attack": "any", "max": 0.02, "action": "review"},
            ],
        )
    )
    rules = {r.key: r for r in cfg.gate.effective_rules}
    assert {r.key for r in DEFAULT_RULES} <= set(rules)
    assert rules["any.auc"].max == 0.55 and rules["any.tpr_at_fpr_0.001"].action == "review"
    assert len(rules) == len(DEFAULT_RULES) + 1


def test_a_default_goes_only_through_disable_with_a_reason(tmp_path):
    cfg = load_release_config(
        _with_rules(
            tmp_path,
            [],
            disable=[
                {
                    "key": "inference.risk_lower",
                    "reason": "the table has no secret column worth protecting",
                },
                {"key": "test:scan", "reason": "scanned by the upstream team's own gate"},
            ],
        )
    )
    keys = {r.key for r in cfg.gate.effective_rules}
    assert "inference.risk_lower" not in keys and len(keys) == len(DEFAULT_RULES) - 1
    assert cfg.gate.disabled["test:scan"].startswith("scanned")
    with pytest.raises(ConfigError, match="reason"):
        load_release_config(_with_rules(tmp_path, [], disable=[{"key": "any.auc", "reason": ""}]))
    with pytest.raises(ConfigError, match="neither a rule key nor a test"):
        load_release_config(
            _with_rules(
                tmp_path, [], disable=[{"key": "any.acu", "reason": "a typo must not pass"}]
            )
        )


def test_a_rule_cannot_set_a_tests_level(tmp_path):
    with pytest.raises(ConfigError, match="error budget"):
        load_release_config(
            _with_rules(tmp_path, [{"metric": "exposed.scan_tail_pvalue", "min": 0.05}])
        )


def test_an_empty_rule_set_is_refused_unless_allowed(tmp_path):
    every = [{"key": r.key, "reason": "testing the empty rule set"} for r in DEFAULT_RULES]
    with pytest.raises(ConfigError, match="rules: empty"):
        load_release_config(_with_rules(tmp_path, [], disable=every))
    assert (
        load_release_config(
            _with_rules(tmp_path, [], disable=every, allow_no_rules=True)
        ).gate.effective_rules
        == []
    )


def test_a_key_given_twice_is_refused_with_its_line(tmp_path):
    """The plain YAML loader keeps the last of two equal keys: a second ``max`` silently loosened a
    rule."""
    path = tmp_path / "dup.yaml"
    text = EXAMPLE.read_text()
    assert "  budget: {review: 0.02, block: 0.001}" in text
    path.write_text(
        text.replace(
            "  budget: {review: 0.02, block: 0.001}",
            "  rules:\n    - {metric: exposed.share_lower, max: 0.005, max: 0.9, action: block}",
        )
    )
    with pytest.raises(
        ConfigError, match=r"dup.yaml: not valid YAML: line \d+, column \d+: .*duplicate key 'max'"
    ):
        load_release_config(path)


@pytest.mark.parametrize(
    "name, ok",
    [
        ("adult", True),
        ("Adult 2024", True),
        ("census_2020.v2 (Bayern)", True),
        ("ünïcode name", True),
        ("a" * 100, True),
        ("a" * 101, False),
        ("a" * 300, False),
        ("adult\x00", False),
        ("../adult", False),
        ("a/b", False),
        ("line\nbreak", False),
        (" lead", False),
        (".hidden", False),
    ],
)
def test_dataset_name_is_validated_without_repeating_it(tmp_path, name, ok):
    from privacy_gate.spec import DatasetSpec

    raw = {"name": name, "columns": {"a": {"kind": "numeric"}}}
    if ok:
        assert DatasetSpec.model_validate(raw).name == name
        return
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=rf"^{path}: name: dataset name ") as err:
        load_spec(path)
    assert name not in str(err.value) and "\x00" not in str(err.value)


@pytest.mark.parametrize("path", ["examples/adult.yaml", "docker/deploy/adult.yaml"])
def test_every_example_and_deployment_runs_the_full_defaults(path):
    """What `make demo` and the production example run: every default rule and every budget test
    (disclosure, tail and scan tests included), nothing disabled."""
    from privacy_gate.config import (
        BUDGET_TESTS,
        RUN_DECIDED_TESTS,
        budget_tests,
        load_gate_only_config,
        protections_off,
    )

    cfg = load_gate_only_config(Path(__file__).resolve().parents[2] / path)
    off = protections_off(cfg.gate, cfg.exposure, cfg.disclosure)
    assert off == {} and budget_tests(off, ran=RUN_DECIDED_TESTS) == list(BUDGET_TESTS)
    assert {r.key for r in cfg.gate.effective_rules} == {r.key for r in DEFAULT_RULES}


def test_a_gate_only_config_names_the_sections_it_does_not_read(tmp_path):
    """A release config given to ``gate --config``: its review, generator, dataset ... sections are
    named (the CLI prints them), the judging sections are not."""
    from privacy_gate.config.loading import ignored_sections

    path = tmp_path / "judging.yaml"
    path.write_text("review: {timeout_minutes: 5}\ngate: {review: 0.02}\ntargets: {}\n")
    assert ignored_sections(path) == ["review"]
    path.write_text("gate: {review: 0.02}\n")
    assert ignored_sections(path) == []


def test_a_rules_file_names_the_sections_it_does_not_read(tmp_path):
    """A whole release config given as ``--rules``: only its gate section is read; the others are
    named (the CLI prints them), never dropped silently."""
    from privacy_gate.config.loading import ignored_rules_sections

    path = tmp_path / "rules.yaml"
    path.write_text("gate: {rules: []}\ntargets: {seed: 3}\nattacks: [{name: dcr}]\n")
    assert ignored_rules_sections(path) == ["attacks", "targets"]
    path.write_text(
        "rules: [{metric: auc, attack: any, max: 0.6}]\n"
    )  # a bare rules file: all of it read
    assert ignored_rules_sections(path) == []


def _gate_config(tmp_path: Path, **extra) -> Path:
    spec = yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"]
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    raw = {
        "files": {
            "train": "train.csv",
            "holdout": "holdout.csv",
            "reference": "ref/reference.csv",
            "synthetic": "s3://bucket/release.parquet",
            "spec": "spec.yaml",
        },
        "schedule": {"cron": "0 3 * * *"},
        "publish": {"target": "published"},
        "gate": {"budget": {"review": 0.02, "block": 0.001}},
        **extra,
    }
    path = tmp_path / "nightly-gate.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_gate_mode_deployment_config_resolves_its_own_files(tmp_path):
    from privacy_gate.config import is_gate_deployment, load_gate_deployment, load_gate_only_config
    from privacy_gate.config.loading import ignored_sections

    path = _gate_config(tmp_path)
    assert is_gate_deployment(path)
    cfg = load_gate_deployment(path)
    assert cfg.files.train == str(tmp_path / "train.csv")
    assert cfg.files.reference == str(tmp_path / "ref/reference.csv")
    assert cfg.files.synthetic == "s3://bucket/release.parquet"  # an object store address stays one
    assert (
        str(cfg.publish.target) == str(tmp_path / "published") and cfg.schedule.cron == "0 3 * * *"
    )
    # the same file is the gate flow's --config: its judging sections read, its own sections named
    assert load_gate_only_config(path).gate.budget.review == 0.02
    assert ignored_sections(path) == ["files", "publish", "schedule"]
    with pytest.raises(ConfigError, match=r"files\.sythetic: unknown key"):
        load_gate_deployment(
            _gate_config(
                tmp_path,
                files={
                    "train": "t",
                    "holdout": "h",
                    "reference": "r",
                    "sythetic": "s",
                    "spec": "spec.yaml",
                },
            )
        )
    with pytest.raises(ConfigError, match="needs a 'files' section"):
        load_gate_deployment(EXAMPLE)
    assert not is_gate_deployment(EXAMPLE)
