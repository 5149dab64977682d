"""Parameters declared once: every attack and generator has a pydantic parameter model whose
defaults are its constructor's; the registry validates through it with one-line errors and
`privacy-gate list` prints it."""

import inspect

import pytest
from typer.testing import CliRunner

from privacy_gate.attacks import available_attacks, create_attack, describe_attacks
from privacy_gate.attacks.base import _ATTACKS
from privacy_gate.cli import app
from privacy_gate.errors import ConfigError
from privacy_gate.generators import available_generators, create_generator, describe_generators
from privacy_gate.generators.base import _GENERATORS

REGISTRIES = [("attack", _ATTACKS, create_attack), ("generator", _GENERATORS, create_generator)]


@pytest.mark.parametrize("kind, registry, _", REGISTRIES)
def test_every_component_declares_a_model_with_the_constructors_defaults(kind, registry, _):
    for name in registry.names():
        cls = registry.get(name)
        model = getattr(cls, "params_model", None)
        assert model is not None, f"{kind} '{name}' declares no params_model"
        signature = inspect.signature(cls)
        assert set(model.model_fields) == {p for p in signature.parameters}, name
        for field, info in model.model_fields.items():
            default = signature.parameters[field].default
            if default is not inspect.Parameter.empty and info.is_required() is False:
                assert info.get_default() == default, f"{kind} '{name}': default of {field}"
            assert info.description, f"{kind} '{name}': parameter {field} has no description"


@pytest.mark.parametrize(
    "create, name, params, where",
    [
        (create_attack, "domias", {"bandwidth": True}, "bandwidth"),
        (create_attack, "mama_mia", {"n_shadow": 2.5}, "n_shadow"),
        (create_attack, "mama_mia", {"seed": True}, "seed"),
        (create_attack, "logan_d1", {"classifier": "svm"}, "classifier"),
        (create_attack, "dcr", {"chunk_bytes": -5}, "chunk_bytes"),
        (create_generator, "mst", {"epsilon": "lots"}, "epsilon"),
        (create_generator, "mst", {"n_bins": True}, "n_bins"),
        (create_generator, "privbayes", {"score": "bic"}, "score"),
        (
            create_generator,
            "private_gsd",
            {"one_way_share": 0.6, "select_share": 0.5},
            "select_share",
        ),
        (create_generator, "noisy_copy", {"flip": 2}, "flip"),
        (create_generator, "tvae", {"epochs": 0}, "epochs"),
        (create_generator, "ctgan", {"batch_size": 55}, "pac"),
    ],
)
def test_bad_parameters_are_one_line_naming_component_and_parameter(create, name, params, where):
    with pytest.raises(ConfigError) as err:
        create(name, **params)
    message = str(err.value)
    assert f"'{name}'" in message and where in message and "\n" not in message


def test_unknown_parameters_list_the_accepted_ones():
    with pytest.raises(
        ConfigError,
        match=r"unknown parameter\(s\) \['speed'\]; accepted parameters: \['chunk_bytes'\]",
    ):
        create_attack("dcr", speed=3)


def test_list_prints_every_component_and_parameter():
    runner = CliRunner()
    for kind, names, describe in (
        ("attacks", available_attacks(), describe_attacks),
        ("generators", available_generators(), describe_generators),
    ):
        result = runner.invoke(app, ["list", kind])
        assert result.exit_code == 0
        for info in describe():
            assert info.name in result.stdout and info.summary in result.stdout
            for p in info.params:
                assert p.name in result.stdout and p.description in result.stdout
        assert set(names) == {i.name for i in describe()}
    bad = runner.invoke(app, ["list", "widgets"])
    assert bad.exit_code == 2 and "attacks' or 'generators'" in bad.stderr
