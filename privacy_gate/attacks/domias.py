"""DOMIAS (van Breugel et al., AISTATS 2023): the density-ratio membership attack.

A generator that memorises its training data puts extra density on and around the training
records *relative to the population*. DOMIAS therefore scores a target ``x`` by
``p_G(x) / p_R(x)``: ``p_G`` a density fitted on the synthetic data, ``p_R`` one fitted on the
attacker's reference data (a sample of the population). Dividing by ``p_R`` is what makes the
attack find overfitting in sparse regions — the minorities the paper shows are most exposed —
instead of simply flagging typical records.

We return ``log p_G(x) - log p_R(x)``: monotone in the ratio, so AUC / TPR@FPR / advantage are
unchanged, and it stays finite where the ratio would under- or overflow.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from privacy_gate.attacks.base import DEFAULT_CHUNK_BYTES, ThreatModel, check_chunk_bytes, check_scores, register_attack
from privacy_gate.attacks.density import GaussianKDE, check_bandwidth
from privacy_gate.data.encoding import MixedEncoder
from privacy_gate.errors import ConfigError

_DENSITIES = ("kde",)
_PLANNED = {"flow": "a normalising-flow density comes later"}


@register_attack("domias")
class DomiasAttack:
    """DOMIAS with Gaussian KDE densities on the standardised mixed encoding.

    Parameters
    ----------
    density:
        ``"kde"`` (the only one so far; ``"flow"`` is planned).
    bandwidth:
        ``"scott"`` or a positive float in standardised units, used for both densities. With
        ``"scott"`` each density gets its own ``n ** (-1 / (d + 4))`` with ``d`` the number of
        encoded original columns (see :class:`GaussianKDE`).
    chunk_bytes:
        Memory budget in bytes for each temporary distance matrix.

    Learned attributes: ``encoder_`` (fitted on the reference data: the attacker's own data
    plus the spec's public categories), ``density_synthetic_``, ``density_reference_``.
    """

    name = "domias"

    def __init__(self, *, density: str = "kde", bandwidth: str | float = "scott", chunk_bytes: int = DEFAULT_CHUNK_BYTES):
        owner = "attack 'domias'"
        if density in _PLANNED:
            raise ConfigError(f"{owner}: parameter 'density' = {density!r} is not available yet ({_PLANNED[density]}); use 'kde'")
        if density not in _DENSITIES:
            raise ConfigError(f"{owner}: parameter 'density' must be one of {list(_DENSITIES)}, got {density!r}")
        check_bandwidth(bandwidth, owner=owner)
        check_chunk_bytes(chunk_bytes, owner=owner)
        self.density = density
        self.bandwidth = bandwidth
        self.chunk_bytes = chunk_bytes

    def fit(self, threat: ThreatModel) -> DomiasAttack:
        """Fit the encoder on the reference data, then ``p_G`` on synthetic and ``p_R`` on reference."""
        self.encoder_ = MixedEncoder(spec=threat.spec).fit(threat.reference)
        d = self.encoder_.n_effective_dims_
        kde = dict(bandwidth=self.bandwidth, chunk_bytes=self.chunk_bytes)
        self.density_synthetic_ = GaussianKDE(**kde).fit(self.encoder_.transform(threat.synthetic), n_effective_dims=d)
        self.density_reference_ = GaussianKDE(**kde).fit(self.encoder_.transform(threat.reference), n_effective_dims=d)
        return self

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """``log p_G(x) - log p_R(x)`` per target row (higher = more likely a member)."""
        if not hasattr(self, "encoder_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("attack 'domias' is not fitted yet; call fit() first")
        X = self.encoder_.transform(targets)
        scores = self.density_synthetic_.score_samples(X) - self.density_reference_.score_samples(X)
        return check_scores(scores, owner="attack 'domias'", n_targets=len(targets))
