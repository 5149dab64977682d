"""What the marginal (DP) generators share: the public discretiser, turning data into codes, and
turning sampled codes back into a spec-shaped table. MST, PrivBayes and Private-GSD subclass
:class:`DiscretizedGenerator`; only their selection, measurement and synthesis differ.
"""

from __future__ import annotations

from typing import Self

import numpy as np
import pandas as pd

from privacy_gate.errors import ConfigError, DataError, InsufficientDataError
from privacy_gate.generators.accounting import cdp_rho
from privacy_gate.generators.base import GeneratorCapabilities, clip_to_spec
from privacy_gate.generators.discretize import Discretizer
from privacy_gate.params import Component
from privacy_gate.spec import DatasetSpec


class DiscretizedGenerator(Component):
    """Base of the marginal DP generators (MST, PrivBayes, Private-GSD)."""

    capabilities = GeneratorCapabilities(
        marginal=True, differentially_private=True, uses_reference=True
    )
    name: str  # set by @register_generator
    n_bins: int
    seed: int | None
    epsilon: float
    delta: float

    @property
    def privacy(self) -> dict[str, float]:
        """The (epsilon, delta) guarantee the gate compares its MACE bounds against."""
        return {"epsilon": float(self.epsilon), "delta": float(self.delta)}

    neighbours = "add_remove"  # the DP definition's neighbouring datasets (PrivBayes: replace_one)
    _min_rows = 1  # fewest rows select/fit accept (PrivBayes' score sensitivities need 2)

    def _check_spec(self, spec: DatasetSpec) -> None:
        """Hook: refuse specs the algorithm cannot handle (raise ConfigError)."""

    def configure(self, spec: DatasetSpec, *, reference: pd.DataFrame | None = None) -> Self:
        """Build the public discretiser from the spec and (optionally) the reference split —
        never from train. MAMA-MIA shadow runs call this once, then ``select_focal_points``."""
        self._check_spec(spec)
        try:
            self.discretizer_ = Discretizer(spec=spec, n_bins=self.n_bins).fit(reference)
        except ConfigError as exc:
            raise ConfigError(f"generator '{self.name}': {exc}") from None
        self.spec_ = spec
        return self

    def _start_fit(
        self, train: pd.DataFrame, spec: DatasetSpec, reference: pd.DataFrame | None
    ) -> tuple[np.random.Generator, np.ndarray]:
        """(Re)configure when needed, then the fit's rng (seed None: fresh OS entropy on every
        fit) and the train codes."""
        if (
            reference is not None
            or getattr(self, "spec_", None) != spec
            or not hasattr(self, "discretizer_")
        ):
            self.configure(spec, reference=reference)
        return np.random.default_rng(self.seed), self._codes(train, "train")

    def _codes(self, data: pd.DataFrame, what: str) -> np.ndarray:
        if not hasattr(self, "discretizer_"):
            raise ConfigError(
                f"generator '{self.name}': call configure(spec, reference=...) or fit() first"
            )
        missing = [c for c in self.discretizer_.columns_ if c not in data.columns]
        if missing:
            raise DataError(
                f"generator '{self.name}': column(s) {missing} are missing from the {what} data"
            )
        if len(data) < self._min_rows:
            raise InsufficientDataError(
                f"generator '{self.name}': the {what} data needs at least {self._min_rows} row(s), "
                f"has {len(data)}"
            )
        return self.discretizer_.transform(data)

    def _domain(self) -> np.ndarray:
        dz = self.discretizer_
        return np.array([dz.domain_[c] for c in dz.columns_], dtype=np.int64)

    def _sampling_rng(
        self, n: object, seed: int | None, *, fitted_attr: str
    ) -> np.random.Generator:
        """Checks before sampling; ``seed=None`` continues the stream spawned from the fit's rng
        (reproducible after a seeded fit, fresh after an unseeded one)."""
        if not hasattr(self, fitted_attr):
            raise ConfigError(f"generator '{self.name}': call fit() before sample()")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be an integer >= 0, got {n!r}")
        return self._sample_rng if seed is None else np.random.default_rng(seed)

    def _decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        """Codes -> the spec's columns and types (fresh entity ids, clipped to public ranges)."""
        df = self.discretizer_.inverse_transform(codes, rng=rng)
        spec = self.spec_
        if spec.entity_id is not None:
            df[spec.entity_id] = [f"syn-{i}" for i in range(len(codes))]
        return clip_to_spec(df[spec.column_names], spec)


class ZCDPGenerator(DiscretizedGenerator):
    """A marginal generator accounted in rho-zCDP (MST, Private-GSD)."""

    @property
    def rho(self) -> float:
        """The zCDP budget: the largest rho whose (epsilon, delta)-DP conversion fits."""
        return cdp_rho(float(self.epsilon), float(self.delta))
