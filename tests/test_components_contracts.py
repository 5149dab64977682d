"""Contracts of the registered components beyond their parameter models (tests/test_components.py):
parameters declared once (constructor, signature, get_params, repr and errors all from the
model), declared generator capabilities, the fit signatures the pipeline relies on (no
inspect.signature at call sites: fit_attack passes oracle / mapper by the declared flags),
registration refusing undeclared components, the density helpers' own models, and no import
cycles between attacks and generators."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
from pydantic import BaseModel, ConfigDict, Field

from privacy_gate.attacks import AttackBase, available_attacks, create_attack, fit_attack
from privacy_gate.attacks.density import (
    FlowParams,
    FlowSettings,
    GaussianDensity,
    GaussianDensityParams,
    GaussianKDE,
    KDEParams,
)
from privacy_gate.errors import ConfigError
from privacy_gate.generators import (
    GeneratorCapabilities,
    available_generators,
    create_generator,
    describe_generators,
    generator_capabilities,
    register_generator,
)
from privacy_gate.params import Component
from privacy_gate.registry import Registry, validate_params

# the smallest valid settings of generators that need some
REQUIRED = {"file": {"path": "synthetic.csv"}}
# one valid setting per component that differs from its defaults (get_params round trip, repr)
NON_DEFAULT = {
    "dcr": {"chunk_bytes": 2**20},
    "dcr_ratio": {"chunk_bytes": 2**20},
    "copy_count": {"neighbours": 16},
    "gan_leaks": {"chunk_bytes": 2**20},
    "domias": {
        "density": "auto",
        "bandwidth": 0.5,
        "flow_params": {"max_epochs": 3, "hidden": [8]},
    },
    "domias_eq1": {"max_fit_rows": 100, "seed": 3},
    "gan_leaks_cal": {"match_sizes": False, "seed": 1},
    "mc_neighbourhood": {"kind": "count", "epsilon_quantile": 0.25},
    "logan_d1": {"classifier": "mlp"},
    "mama_mia": {"n_shadow": 4, "variant": "generic", "tau": 0.9, "seed": 2},
    "gen_lra": {"neighbours": 10, "bandwidth": 0.5, "precision": "float64"},
    "copy_train": {"seed": 1},
    "noisy_copy": {"noise": 0.2},
    "smote": {"k_neighbours": 3},
    "file": {"path": "other.csv", "whole_file": False},
    "mst": {"epsilon": 2.0, "n_bins": 8},
    "privbayes": {"score": "r", "degree": 1},
    "private_gsd": {"k": 3, "n_syn": 100},
    "privgan": {"epochs": 3, "hidden": [16]},
    "gan": {"epochs": 3},
    "gaussian_copula": {"default_distribution": "norm"},
    "ctgan": {"batch_size": 20, "pac": 2},
    "tvae": {"compress_dims": [32], "loss_factor": 1.5},
}
#: the package's own components (test modules register throwaway ones, e.g. tests/pipeline/
#: test_regate.py's ``test_dp_file``: whether those are registered depends on collection order)
ATTACKS = [name for name in available_attacks() if not name.startswith("test_")]
GENERATORS = [name for name in available_generators() if not name.startswith("test_")]
COMPONENTS = [("attack", name, create_attack) for name in ATTACKS] + [
    ("generator", name, create_generator) for name in GENERATORS
]


class _Bad:
    """A value no parameter accepts."""

    def __repr__(self) -> str:
        return "<bad>"


@pytest.mark.parametrize("kind, name, create", COMPONENTS)
def test_parameters_are_declared_once_in_the_model(kind, name, create):
    cls = type(create(name, **REQUIRED.get(name, {})))
    model = cls.params_model
    assert issubclass(cls, Component) and "__init__" not in vars(cls), (
        f"{name}: a second list of defaults"
    )
    signature = inspect.signature(cls).parameters
    assert list(signature) == list(model.model_fields), name
    for field, info in model.model_fields.items():
        p = signature[field]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, (name, field)
        if info.is_required():
            assert p.default is inspect.Parameter.empty, (name, field)
        else:
            assert p.default == info.get_default() and type(p.default) is type(
                info.get_default()
            ), (name, field)
    with pytest.raises(TypeError):
        cls(0, **REQUIRED.get(name, {}))  # keyword-only
    assert cls.owner() == f"{kind} '{name}'"


@pytest.mark.parametrize("kind, name, create", COMPONENTS)
def test_get_params_round_trips_and_repr_shows_only_non_defaults(kind, name, create):
    cls = type(create(name, **REQUIRED.get(name, {})))
    plain = cls(**REQUIRED.get(name, {}))
    defaults = {
        f: i.get_default() for f, i in cls.params_model.model_fields.items() if not i.is_required()
    }
    assert plain.get_params() == {**defaults, **REQUIRED.get(name, {})}
    for field, default in defaults.items():  # the attributes the rest of the code reads
        assert getattr(plain, field) == default, (name, field)
    shown = ", ".join(f"{k}={v!r}" for k, v in REQUIRED.get(name, {}).items())
    assert repr(plain) == f"{cls.__name__}({shown})"
    assert NON_DEFAULT.get(name), f"add a non-default setting of {kind} '{name}' to NON_DEFAULT"
    params = {**REQUIRED.get(name, {}), **NON_DEFAULT[name]}
    obj = create(name, **params)
    assert cls.params_model(**obj.get_params()) == cls.params_model(
        **params
    )  # as given (a list may be kept as a tuple)
    copy = cls(**obj.get_params())
    assert copy.get_params() == obj.get_params() and repr(copy) == repr(obj) == repr(cls(**params))
    assert repr(obj) == (
        f"{cls.__name__}"
        f"({', '.join(f'{k}={v!r}' for k, v in obj.get_params().items() if k in params)})"
    )


@pytest.mark.parametrize("kind, name, create", COMPONENTS)
def test_a_bad_parameter_is_the_same_config_error_from_the_class_and_the_registry(
    kind, name, create
):
    cls = type(create(name, **REQUIRED.get(name, {})))
    for field in cls.params_model.model_fields:
        params = {**REQUIRED.get(name, {}), field: _Bad()}
        with pytest.raises(ConfigError) as direct:
            cls(**params)
        with pytest.raises(ConfigError) as registry:
            create(name, **params)
        message = str(direct.value)
        assert message == str(registry.value) and "\n" not in message, (name, field)
        assert message.startswith(f"{kind} '{name}': parameter '{field}': "), message
    with pytest.raises(
        ConfigError, match=rf"^{kind} '{name}': unknown parameter\(s\) \['colour'\]; accepted"
    ):
        cls(**REQUIRED.get(name, {}), colour="red")


@pytest.mark.parametrize("name", GENERATORS)
def test_every_generator_declares_capabilities_that_match_what_it_implements(name):
    caps = generator_capabilities(name)
    assert isinstance(caps, GeneratorCapabilities)
    gen = create_generator(name, **REQUIRED.get(name, {}))
    assert caps.marginal == callable(getattr(gen, "select_focal_points", None)), name
    assert caps.differentially_private == (gen.privacy is not None), name
    assert (
        not caps.uses_reference or caps.marginal
    )  # only the marginal generators bin on the reference split


@pytest.mark.parametrize("name", GENERATORS)
def test_every_generator_fit_takes_reference_as_a_keyword(name):
    params = inspect.signature(create_generator(name, **REQUIRED.get(name, {})).fit).parameters
    assert (
        params["reference"].kind is inspect.Parameter.KEYWORD_ONLY
        and params["reference"].default is None
    )


@pytest.mark.parametrize("name", ATTACKS)
def test_attack_fit_takes_oracle_and_mapper_only_when_declared(name):
    attack = create_attack(name)
    params = inspect.signature(attack.fit).parameters
    assert list(params)[0] == "threat", name
    for key in ("oracle", "mapper"):
        if getattr(attack, f"uses_{key}"):
            assert (
                params[key].kind is inspect.Parameter.KEYWORD_ONLY and params[key].default is None
            ), (name, key)
        else:
            assert key not in params, (name, key)
    assert not [p for p in params.values() if p.kind is inspect.Parameter.VAR_KEYWORD], name


def test_fit_attack_passes_oracle_and_mapper_only_to_attacks_that_declare_them():
    seen = []

    class Plain(AttackBase):
        params_model = KDEParams  # any model

        def fit(self, threat):
            seen.append(("plain", threat))
            return self

    class Both(Plain):
        uses_oracle = uses_mapper = True

        def fit(self, threat, *, oracle=None, mapper=None):
            seen.append(("both", threat, oracle, mapper))
            return self

    plain, both = Plain(), Both()
    assert fit_attack(plain, "threat", oracle="oracle", mapper=map) is plain
    assert fit_attack(both, "threat", oracle="oracle", mapper=map) is both
    assert fit_attack(both, "threat") is both
    assert seen == [
        ("plain", "threat"),
        ("both", "threat", "oracle", map),
        ("both", "threat", None, None),
    ]
    assert create_attack("mama_mia").uses_oracle and create_attack("mama_mia").uses_mapper


def test_generator_capabilities_of_an_unknown_name_lists_the_known_ones():
    with pytest.raises(
        ConfigError, match=r"unknown generator 'gpt'; available generators: \['copy_train'"
    ):
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

    with pytest.raises(
        ConfigError,
        match=r"widget 'b': WParams declares \['size'\] but __init__ takes \['colour', 'size'\]",
    ):

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
        cls, model = {
            "kde": (GaussianKDE, KDEParams),
            "prior": (GaussianDensity, GaussianDensityParams),
        }[estimator]
    signature = inspect.signature(cls).parameters
    assert set(model.model_fields) == set(signature)
    for name, info in model.model_fields.items():
        assert info.get_default() == signature[name].default and info.description, name
    assert set(FlowSettings.model_fields) == set(FlowParams.model_fields) - {"seed"}


def test_nested_flow_settings_errors_name_the_setting():
    with pytest.raises(
        ConfigError, match=r"^attack 'domias': parameter 'flow_params': setting 'hidden', item 0: "
    ):
        create_attack("domias", flow_params={"hidden": [0]})
    with pytest.raises(
        ConfigError,
        match=r"parameter 'flow_params': unknown setting 'hiden'; accepted settings: \[",
    ):
        create_attack("domias_eq1", flow_params={"hiden": [8]})
    with pytest.raises(ConfigError, match=r"^MAFDensity: parameter 'max_seconds': "):
        validate_params(FlowParams, {"max_seconds": -1.0}, owner="MAFDensity")


def test_checking_flow_settings_does_not_import_torch():
    code = (
        "import sys; from privacy_gate.attacks import create_attack; "
        "create_attack('domias', density='flow', flow_params={'max_epochs': 3, 'hidden': [8]}); "
        "create_attack('domias_eq1', density='auto'); "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_no_import_cycles_between_attacks_and_generators():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("privacy_gate", cache_dir=None)
    modules = sorted(
        m
        for m in graph.modules
        if m.startswith(("privacy_gate.attacks", "privacy_gate.generators"))
    )
    cycles = [
        (a, b)
        for i, a in enumerate(modules)
        for b in modules[i + 1 :]
        if graph.chain_exists(importer=a, imported=b) and graph.chain_exists(importer=b, imported=a)
    ]
    assert not cycles, cycles
    upward = [
        (m, t)
        for m in modules
        if m.startswith("privacy_gate.generators")
        for t in graph.find_modules_directly_imported_by(m)
        if t.startswith("privacy_gate.attacks")
    ]
    assert not upward, upward
