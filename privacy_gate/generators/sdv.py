"""SDV 2 adapters (GaussianCopula, CTGAN) with metadata built from the dataset spec.

SDV's auto-detected metadata would read min/max/category values off the private train data; we
build it from the spec instead, switch off SDV's learned min/max clipping (it clips samples to the
*train* range, which leaks it) and clip to the spec's public ranges ourselves.
"""

from __future__ import annotations

import contextlib
import random
import secrets
from typing import Any

import numpy as np
import pandas as pd
from pydantic import model_validator

from privacy_gate.errors import PrivacyGateError
from privacy_gate.generators.base import GeneratorCapabilities, clip_to_spec, register_generator
from privacy_gate.params import (
    Component,
    Field,
    NonNegativeNumber,
    Params,
    PositiveInt,
    PositiveNumber,
    Seed,
)
from privacy_gate.spec import DatasetSpec

_TABLE = "table"


def sdv_metadata(spec: DatasetSpec):
    """SDV ``Metadata`` for one table, from the spec alone."""
    from sdv.metadata import (
        Metadata,  # lazy: SDV (and torch under it) only when an SDV generator runs
    )

    columns: dict[str, dict[str, Any]] = {}
    for name, col in spec.columns.items():
        if name == spec.entity_id:
            columns[name] = {"sdtype": "id"}
        elif col.kind == "datetime":
            columns[name] = {"sdtype": "datetime"}
        elif col.is_numeric:
            columns[name] = {"sdtype": "numerical"}
        else:
            columns[name] = {"sdtype": "categorical"}
    return Metadata.load_from_dict({"tables": {_TABLE: {"columns": columns}}})


@contextlib.contextmanager
def _seeded(seed: int | None):
    """SDV and its torch models draw from the global RNGs; seed them for reproducible runs."""
    if seed is None:
        yield
        return
    import torch  # lazy: torch only when an SDV model is seeded

    np_state, py_state, torch_state = (
        np.random.get_state(),
        random.getstate(),
        torch.get_rng_state(),
    )
    np.random.seed(seed)
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
        torch.set_rng_state(torch_state)


class _SDVGenerator(Component):
    """Base of the SDV generators: every parameter but ``seed`` goes to the SDV synthesizer
    (``synth_params``; None values are left to SDV's defaults, sequences become tuples)."""

    capabilities = GeneratorCapabilities()  # no selection step to shadow, no formal guarantee
    privacy = None  # SDV models give no formal privacy guarantee
    _synth_cls: str = ""

    def _post_init(self) -> None:
        self.synth_params = {
            k: tuple(v) if isinstance(v, (list, tuple)) else v
            for k, v in self.get_params().items()
            if k != "seed" and v is not None
        }

    def _make(self, metadata):
        import sdv.single_table as st  # lazy: SDV only when an SDV generator runs

        cls = getattr(st, self._synth_cls)
        params = {"enforce_min_max_values": False, **self.synth_params}
        if self._synth_cls != "GaussianCopulaSynthesizer":
            params.setdefault("enable_gpu", False)
        return cls(metadata, **params)

    def fit(self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None):
        self.spec_ = spec
        self.columns_ = list(train.columns)
        try:
            self.model_ = self._make(sdv_metadata(spec))
            with _seeded(self.seed):
                self.model_.fit({_TABLE: train.reset_index(drop=True)})
        except Exception as exc:  # SDV raises many types; give one clear message
            raise PrivacyGateError(
                f"generator '{self.name}' failed to fit: {exc.__class__.__name__}: {exc}"
            ) from exc
        return self

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        seed = self.seed if seed is None else seed
        if seed is None:  # no seed given: fresh randomness, not SDV's fixed default seed
            seed = secrets.randbelow(2**31)
        with _seeded(seed):
            self.model_.reset_sampling()
            # SDV otherwise samples with its fixed FIXED_RNG_SEED; this is its own seeding hook
            self.model_._set_random_state(seed)
            out = self.model_.sample(num_rows=int(n))
        df = out[_TABLE] if isinstance(out, dict) else out
        return clip_to_spec(df[self.columns_].reset_index(drop=True), self.spec_)


class GaussianCopulaParams(Params):
    seed: Seed | None = Field(None, description="seed of SDV's sampling")
    default_distribution: str | None = Field(
        None, description="SDV default marginal distribution (e.g. beta, norm)"
    )
    numerical_distributions: dict[str, str] | None = Field(
        None, description="per-column SDV distributions"
    )


@register_generator("gaussian_copula")
class GaussianCopulaGenerator(_SDVGenerator):
    """SDV GaussianCopulaSynthesizer. Extra keys (e.g. ``default_distribution``) go to SDV."""

    params_model = GaussianCopulaParams

    _synth_cls = "GaussianCopulaSynthesizer"


class CTGANParams(Params):
    seed: Seed | None = Field(None, description="seed of training and sampling")
    epochs: PositiveInt = Field(300, description="training epochs")
    batch_size: PositiveInt = Field(500, description="batch size (a multiple of pac)")
    generator_dim: tuple[PositiveInt, ...] = Field(
        (256, 256), description="generator hidden layer sizes"
    )
    discriminator_dim: tuple[PositiveInt, ...] = Field(
        (256, 256), description="discriminator hidden layer sizes"
    )
    embedding_dim: PositiveInt = Field(128, description="noise embedding size")
    pac: PositiveInt = Field(10, description="samples per discriminator pack")
    verbose: bool = Field(False, strict=True, description="print SDV's training progress")

    @model_validator(mode="after")
    def _pac(self) -> CTGANParams:
        if self.batch_size % self.pac:
            raise ValueError(
                f"batch_size ({self.batch_size}) must be a multiple of pac ({self.pac})"
            )
        return self


@register_generator("ctgan")
class CTGANGenerator(_SDVGenerator):
    """SDV CTGANSynthesizer (CPU). ``epochs`` and the usual CTGAN settings are accepted."""

    params_model = CTGANParams

    _synth_cls = "CTGANSynthesizer"


class TVAEParams(Params):
    seed: Seed | None = Field(None, description="seed of training and sampling")
    epochs: PositiveInt = Field(300, description="training epochs")
    batch_size: PositiveInt = Field(500, description="batch size")
    embedding_dim: PositiveInt = Field(128, description="latent size")
    compress_dims: tuple[PositiveInt, ...] = Field(
        (128, 128), description="encoder hidden layer sizes"
    )
    decompress_dims: tuple[PositiveInt, ...] = Field(
        (128, 128), description="decoder hidden layer sizes"
    )
    l2scale: NonNegativeNumber = Field(1e-5, description="L2 weight decay")
    loss_factor: PositiveNumber = Field(2, description="weight of the reconstruction loss")


@register_generator("tvae")
class TVAEGenerator(_SDVGenerator):
    """SDV TVAESynthesizer (CPU). ``epochs`` and the usual TVAE settings are accepted."""

    params_model = TVAEParams

    _synth_cls = "TVAESynthesizer"
