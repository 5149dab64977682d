"""Known-broken DP generators, to prove the DP audit has teeth (never in the registry).

- ``TenthNoiseMST``: MST whose every noise scale is divided by 10 (rho x 100: sigma = 1 /
  sqrt(2 rho)), while ``privacy`` still claims the configured epsilon.
- ``CopyingGenerator``: "DP" at epsilon 1 by its claim, it releases training rows (the one-run
  audit's leaky case).
- ``TrainBinsPrivBayes``: PrivBayes whose discretisation comes from the *training* split instead
  of the public domain (spec + reference): the domain itself then depends on the private data,
  as in 4 of the 6 implementations Annamalai et al. (USENIX Security 2024) audited.
"""

from __future__ import annotations

from privacy_gate.generators.accounting import cdp_rho
from privacy_gate.generators.mst import MSTGenerator
from privacy_gate.generators.privbayes import PrivBayesGenerator


class TenthNoiseMST(MSTGenerator):
    name = "mst-tenth-noise"

    @property
    def rho(self) -> float:
        return 100 * cdp_rho(float(self.epsilon), float(self.delta))


class TrainBinsPrivBayes(PrivBayesGenerator):
    name = "privbayes-train-bins"

    def fit(self, train, spec, *, reference=None):
        self.configure(spec, reference=train)  # the bug: bins and categories from the private split
        return super().fit(train, spec, reference=None)


class CopyingGenerator:
    """Claims (1, 1e-9)-DP; samples its training rows with replacement."""

    name = "copying"

    def __init__(self, seed: int | None = None):
        self.seed = seed

    @property
    def privacy(self):
        return {"epsilon": 1.0, "delta": 1e-9}

    def fit(self, train, spec, *, reference=None):
        self.train_ = train.reset_index(drop=True)
        return self

    def sample(self, n, seed=None):
        import numpy as np

        rng = np.random.default_rng(self.seed if seed is None else seed)
        return self.train_.iloc[rng.integers(0, len(self.train_), n)].reset_index(drop=True)
