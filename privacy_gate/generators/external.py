"""Generators that do not learn a model: synthetic data made elsewhere, and canaries.

``file`` is gate-only mode inside a release config: the candidate release is read from a file
(made by another tool from the same train split). The canaries exist to check the gate itself:
``copy_train`` releases training rows verbatim and ``noisy_copy`` releases them with small noise,
both of which the gate must BLOCK. ``smote`` interpolates between neighbouring training records:
a memorising synthesizer the generator-aware test's power is measured on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from privacy_gate.data.table import conform, read_table
from privacy_gate.generators.base import GeneratorCapabilities, clip_to_spec, register_generator
from privacy_gate.params import (
    Component,
    Field,
    Fraction,
    NonNegativeNumber,
    Params,
    Seed,
)
from privacy_gate.spec import DatasetSpec


class FileParams(Params):
    path: str = Field(description="the synthetic file (CSV or Parquet) to release")
    seed: Seed | None = Field(None, description="seed of the row sample when whole_file is false")
    whole_file: bool = Field(
        True, strict=True, description="release every row of the file (else a sample of n rows)"
    )


@register_generator("file")
class FileGenerator(Component):
    """Release rows read from ``path`` (CSV or Parquet). The file *is* the release, so by default
    ``sample`` returns all of its rows whatever ``n`` is (``whole_file: false`` draws a seeded
    sample of ``n`` rows without replacement instead)."""

    params_model = FileParams
    # made elsewhere: no selection step, no guarantee, and a refit releases the same file
    capabilities = GeneratorCapabilities(refits=False)

    privacy = None

    def fit(
        self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None
    ) -> FileGenerator:
        self.data_ = conform(
            read_table(Path(self.path)), spec, source=str(self.path), check_identifiers=False
        )
        return self

    def describe_sample(self, n: int) -> str:
        """The progress line of ``sample(n)``: what it really releases (the whole file by
        default)."""
        rows, name = len(self.data_), Path(self.path).name
        if self.whole_file or n >= rows:
            why = "whole_file: true" if self.whole_file else "the file holds no more"
            return (
                f"releasing all {rows:,} rows of {name} ({why}; the {n:,} requested rows do not "
                "apply)"
            )
        return f"sampling {n:,} of the {rows:,} rows of {name} (seeded, without replacement)"

    def sample(self, n: int | None = None, seed: int | None = None) -> pd.DataFrame:
        if self.whole_file or n is None or n >= len(self.data_):
            return self.data_.reset_index(drop=True)
        rng = np.random.default_rng(self.seed if seed is None else seed)
        idx = rng.choice(len(self.data_), size=n, replace=False)
        return self.data_.iloc[np.sort(idx)].reset_index(drop=True)


class CopyTrainParams(Params):
    seed: Seed | None = Field(None, description="seed of the resampling of training rows")


@register_generator("copy_train")
class CopyTrainCanary(Component):
    """Canary: returns (resampled) training rows verbatim. The gate must BLOCK it."""

    params_model = CopyTrainParams
    capabilities = GeneratorCapabilities()

    privacy = None

    def fit(
        self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None
    ) -> CopyTrainCanary:
        self.train_ = train.reset_index(drop=True)
        self.spec_ = spec
        return self

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        rng = np.random.default_rng(self.seed if seed is None else seed)
        replace = n > len(self.train_)
        idx = rng.choice(len(self.train_), size=n, replace=replace)
        self.sampled_from_ = idx  # the training positions copied (what a benchmark checks)
        return self.train_.iloc[idx].reset_index(drop=True)


class NoisyCopyParams(Params):
    seed: Seed | None = Field(None, description="seed of the resampling and the noise")
    noise: NonNegativeNumber = Field(
        0.05, description="Gaussian noise on numerics, in standard deviations"
    )
    flip: Fraction = Field(0.05, description="share of categorical cells resampled")


@register_generator("noisy_copy")
class NoisyCopyCanary(CopyTrainCanary):
    """Canary: training rows with Gaussian noise of ``noise`` x the column's std on numerics and
    a ``flip`` chance of resampling each categorical cell. The gate must BLOCK it too."""

    params_model = NoisyCopyParams

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        rng = np.random.default_rng(self.seed if seed is None else seed)
        out = super().sample(n, seed=int(rng.integers(2**31)))
        for name, col in self.spec_.columns.items():
            if name == self.spec_.entity_id:
                continue
            if col.is_numeric and col.kind != "datetime":
                std = float(np.nanstd(out[name])) or 1.0
                out[name] = out[name] + rng.normal(0.0, self.noise * std, size=len(out))
            elif not col.is_numeric:
                flip = rng.random(len(out)) < self.flip
                donors = rng.integers(0, len(out), size=int(flip.sum()))
                out.loc[flip, name] = out[name].to_numpy()[donors]
        return clip_to_spec(out, self.spec_)


class SmoteParams(Params):
    seed: Seed | None = Field(None, description="seed of the interpolation")
    k_neighbours: int = Field(
        5, ge=1, le=100, description="training neighbours a row is interpolated towards"
    )
    step: Fraction = Field(
        1.0, description="largest share of the way towards the neighbour (0: verbatim copies)"
    )


@register_generator("smote")
class SmoteSynthesizer(Component):
    """SMOTE-style synthesizer: each row starts at a training record and moves a random share
    (at most ``step``) of the way towards one of its ``k_neighbours`` nearest training records;
    categorical cells come from the start record. Every row sits next to a training record: it
    memorises by design, as a leaf-per-record CART synthesizer does (a benchmark of the gate's
    power, not a recommendation)."""

    params_model = SmoteParams
    capabilities = GeneratorCapabilities()

    privacy = None

    def fit(
        self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None
    ) -> SmoteSynthesizer:
        from sklearn.neighbors import NearestNeighbors

        from privacy_gate.data.encoding import MixedEncoder

        self.train_ = train.reset_index(drop=True)
        self.spec_ = spec
        encoder = MixedEncoder(spec=spec, data_name="training data").fit(self.train_)
        x = encoder.transform(self.train_)
        k = min(self.k_neighbours, max(1, len(x) - 1))
        _, idx = NearestNeighbors(n_neighbors=k + 1).fit(x).kneighbors(x)
        self.neighbours_ = idx[:, 1:]  # the record itself first
        return self

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        rng = np.random.default_rng(self.seed if seed is None else seed)
        start = rng.integers(0, len(self.train_), size=n)
        self.sampled_from_ = start  # training positions the rows start at (a benchmark checks them)
        towards = self.neighbours_[start, rng.integers(0, self.neighbours_.shape[1], size=n)]
        self.towards_ = towards  # and the ones they move towards
        share = rng.random(n) * self.step
        out = self.train_.iloc[start].reset_index(drop=True).copy()
        other = self.train_.iloc[towards].reset_index(drop=True)
        for name, col in self.spec_.columns.items():
            if col.is_numeric and col.kind != "datetime" and name != self.spec_.entity_id:
                a = pd.to_numeric(out[name], errors="coerce").to_numpy(dtype=float)
                b = pd.to_numeric(other[name], errors="coerce").to_numpy(dtype=float)
                moved = np.where(np.isnan(b), a, a + share * (b - a))
                if pd.api.types.is_integer_dtype(self.train_[name]):
                    moved = np.round(moved)
                whole = not np.isnan(moved).any()
                out[name] = moved.astype(self.train_[name].dtype) if whole else moved
        return clip_to_spec(out, self.spec_)
