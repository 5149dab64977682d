"""Contracts of the registered components beyond their parameter models (tests/test_components.py):
declared generator capabilities, the fit signatures the pipeline relies on (no inspect.signature
at call sites), registration refusing undeclared components, the density helpers' own models, and
no import cycles between attacks and generators."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
from pydantic import BaseModel, ConfigDict, Field

from privacy_gate.attacks import available_attacks, create_attack
from privacy_gate.attacks.density import (FlowParams, FlowSettings, GaussianDensity, GaussianDensityParams, GaussianKDE,
                                          KDEParams)
from privacy_gate.errors import ConfigError
from privacy_gate.generators import (GeneratorCapabilities, available_generators, create_generator,
                                     describe_generators, generator_capabilities, register_generator)
from privacy_gate.registry import Registry, validate_params

# the smallest valid settings of generators that need some
REQUIRED = {"file": {"path": "synthetic.csv"}}


@pytest.mark.parametrize("name", available_generators())
def test_every_generator_declares_capabilities_that_match_what_it_implements(name):
    caps = generator_capabilities(name)
    assert isinstance(caps, GeneratorCapabilities)
    gen = create_generator(name, **REQUIRED.get(name, {}))
    assert caps.marginal == callable(getattr(gen, "select_focal_points", None)), name
    assert caps.differentially_private == (gen.privacy is not None), name
    assert not caps.uses_reference or caps.marginal  # only the marginal generators bin on the reference split


@pytest.mark.parametrize("name", available_generators())
def test_every_generator_fit_takes_reference_as_a_keyword(name):
    params = inspect.signature(create_generator(name, **REQUIRED.get(name, {})).fit).parameters
    assert params["reference"].kind is inspect.Parameter.KEYWORD_ONLY and params["reference"].default is None


@pytest.mark.parametrize("name", available_attacks())
def test_every_attack_fit_takes_oracle_and_mapper_as_keywords(name):
    params = inspect.signature(create_attack(name).fit).parameters
    for key in ("oracle", "mapper"):
        assert params[key].kind is inspect.Parameter.KEYWORD_ONLY and params[key].default is None, (name, key)


def test_generator_capabilities_of_an_unknown_name_lists_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown generator 'gpt'; available generators: \['copy_train'"):
        generator_capabilities("gpt")


def test_registration_refuses_undeclared_or_mismatched_parameters():
    class WParams(BaseModel):
        model_config = ConfigDict(extra="forbid")
        size: int = Field(1, description="how big")

    reg = Registry("widget")
    with pytest.raises(ConfigError, match="widget 'a' .*declares no params_model"):
        @reg.register("a")
        class A:
            def __init__(self, *, size: int = 1):
                self.size = size
    with pytest.raises(ConfigError, match=r"widget 'b': WParams declares \['size'\] but __init__ takes \['colour', 'size'\]"):
        @reg.register("b")
        class B:
            params_model = WParams

            def __init__(self, *, size: int = 1, colour: str = "red"):
                self.size, self.colour = size, colour
    assert reg.names() == []


def test_register_generator_refuses_a_class_without_capabilities():
    with pytest.raises(ConfigError, match="generator 'nameless' .*declares no capabilities"):
        @register_generator("nameless")
        class Nameless:
            params_model = KDEParams  # any model: capabilities are checked first

    assert "nameless" not in available_generators()


def test_describe_shows_required_parameters_and_sequence_types():
    infos = {i.name: {p.name: p for p in i.params} for i in describe_generators()}
    assert infos["file"]["path"].default == "required"
    assert infos["ctgan"]["generator_dim"].type == "tuple[int, ...]"


@pytest.mark.parametrize("estimator", ["kde", "prior", "flow"])
def test_density_helpers_declare_their_parameters_once(estimator):
    if estimator == "flow":
        from privacy_gate.attacks.flow import MAFDensity  # imports torch

        cls, model = MAFDensity, FlowParams
    else:
        cls, model = {"kde": (GaussianKDE, KDEParams), "prior": (GaussianDensity, GaussianDensityParams)}[estimator]
    signature = inspect.signature(cls).parameters
    assert set(model.model_fields) == set(signature)
    for name, info in model.model_fields.items():
        assert info.get_default() == signature[name].default and info.description, name
    assert set(FlowSettings.model_fields) == set(FlowParams.model_fields) - {"seed"}


def test_nested_flow_settings_errors_name_the_setting():
    with pytest.raises(ConfigError, match=r"^attack 'domias': parameter 'flow_params': setting 'hidden', item 0: "):
        create_attack("domias", flow_params={"hidden": [0]})
    with pytest.raises(ConfigError, match=r"parameter 'flow_params': unknown setting 'hiden'; accepted settings: \["):
        create_attack("domias_eq1", flow_params={"hiden": [8]})
    with pytest.raises(ConfigError, match=r"^MAFDensity: parameter 'max_seconds': "):
        validate_params(FlowParams, {"max_seconds": -1.0}, owner="MAFDensity")


def test_checking_flow_settings_does_not_import_torch():
    code = ("import sys; from privacy_gate.attacks import create_attack; "
            "create_attack('domias', density='flow', flow_params={'max_epochs': 3, 'hidden': [8]}); "
            "create_attack('domias_eq1', density='auto'); "
            "assert 'torch' not in sys.modules, 'torch imported'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_no_import_cycles_between_attacks_and_generators():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("privacy_gate", cache_dir=None)
    modules = sorted(m for m in graph.modules if m.startswith(("privacy_gate.attacks", "privacy_gate.generators")))
    cycles = [(a, b) for i, a in enumerate(modules) for b in modules[i + 1:]
              if graph.chain_exists(importer=a, imported=b) and graph.chain_exists(importer=b, imported=a)]
    assert not cycles, cycles
    upward = [(m, t) for m in modules if m.startswith("privacy_gate.generators")
              for t in graph.find_modules_directly_imported_by(m) if t.startswith("privacy_gate.attacks")]
    assert not upward, upward
