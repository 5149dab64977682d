"""DOMIAS (van Breugel et al., AISTATS 2023): the density-ratio membership attack.

A generator that memorises its training data puts extra density on and around the training
records *relative to the population*. DOMIAS therefore scores a target ``x`` by
``p_G(x) / p_R(x)``: ``p_G`` a density fitted on the synthetic data, ``p_R`` one fitted on the
attacker's reference data (a sample of the population). Dividing by ``p_R`` is what makes the
attack find overfitting in sparse regions — the minorities the paper shows are most exposed —
instead of simply flagging typical records. The ratio is also invariant under any invertible
change of representation of the data (the paper's Theorem 1: both densities pick up the same
Jacobian), which ``p_G`` alone — the baseline ``domias_eq1`` — is not.

We return ``log p_G(x) - log p_R(x)``: monotone in the ratio, so AUC / TPR@FPR / advantage are
unchanged, and it stays finite where the ratio would under- or overflow.

Density estimators (``density``):

- ``"kde"`` (default): :class:`GaussianKDE`, Scott's bandwidth from the number of original columns.
- ``"flow"``: :class:`privacy_gate.attacks.flow.MAFDensity`, a masked autoregressive flow
  trained with early stopping (torch, CPU; settings via ``flow_params``).
- ``"auto"``: KDE while ``rows x columns <= AUTO_FLOW_THRESHOLD`` (1,000,000; ``rows`` = the
  larger of the synthetic and reference sets, ``columns`` = encoded original columns), the flow
  above (the measurements behind the threshold are at its definition). Both
  densities always use the same estimator: mixing them would put different smoothing in the
  numerator and the denominator, and the ratio would measure that difference.

``reference_density="prior"`` replaces ``p_R`` by one Gaussian with a shrinkage covariance
(:class:`GaussianDensity`), for a reference set too small for a non-parametric density
(paper, Sec. 6 and App. C).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import field_validator

from privacy_gate.attacks.base import (
    DEFAULT_CHUNK_BYTES,
    EncodedAttack,
    ThreatModel,
    check_scores,
    register_attack,
)
from privacy_gate.attacks.density import (
    FLOAT32_ROWS,
    PRECISION_HELP,
    FlowSettings,
    GaussianDensity,
    GaussianKDE,
    Precision,
)
from privacy_gate.params import Field, Params, PositiveInt, PositiveNumber, Seed

#: ``density="auto"`` switches from KDE to the flow above this many ``rows x columns`` (rows: the
#: larger fit set; columns: encoded original columns) — for Adult's 15 columns, above ~66,000 rows.
#: Up to there the KDE is both fast enough and the stronger estimator, by measurement:
#: - speed (benchmarks/results/domias_speed.json, one core): 20,000 synthetic x 20,000 targets on
#:   Adult (300,000 rows x columns) take 9.6 s with 0.6 GB peak RSS, against 111 s for the two
#:   flows. KDE time grows as fit rows x targets, so with as many targets as fit rows it reaches
#:   about a minute near 1,000,000 rows x columns, where the flow (linear in rows) catches up;
#: - accuracy: on the same data (noisy copies of members) KDE AUC 0.672, flow 0.504 — a flow
#:   does not see (near-)copies (privacy_gate.attacks.flow); and against an overfitted TVAE at
#:   5,000 rows (benchmarks/bench_domias_paper.py) KDE 0.692, flow 0.641. The paper's ablation
#:   (Sec. 5.2) also prefers KDE on little data; its flow gains only with much more (Fig. 4).
#: Above the threshold the flow keeps DOMIAS's cost linear; run ``dcr`` / ``gan_leaks_cal``
#: alongside, since the flow is blind to copies.
AUTO_FLOW_THRESHOLD = 1_000_000

#: ``max_fit_rows`` (opt-in; default None = exact): the KDE's fit rows capped by a seeded random
#: subsample, so the cost per target is bounded at any size. Measured against the exact KDE on
#: Adult (benchmarks/bench_kde_subsample.py): the figures agree when the release is independent
#: or has 5% noisy copies and half the rows are kept, but a subsample loses the copies it drops —
#: at 50% noisy copies AUC 0.66 exact, 0.60 with half, 0.55 with a quarter of the rows. So it is
#: not the default; near-copies are caught by ``dcr`` / ``dcr_ratio``, which stay exact.
DEFAULT_MAX_FIT_ROWS = None


def resolve_density(density: str, *, n_rows: int, n_dims: int) -> str:
    """The estimator ``"auto"`` picks for a fit set of ``n_rows`` rows and ``n_dims`` original
    columns."""
    if density != "auto":
        return density
    return "flow" if n_rows * n_dims > AUTO_FLOW_THRESHOLD else "kde"


def make_density(
    kind: str,
    *,
    bandwidth: Any,
    chunk_bytes: int,
    flow_params: Mapping[str, Any],
    seed: int,
    max_fit_rows: int | None = None,
    precision: str = "auto",
):
    """A fresh, unfitted density estimator of the resolved ``kind`` (``"kde"`` or ``"flow"``)."""
    if kind == "kde":
        return GaussianKDE(
            bandwidth=bandwidth,
            chunk_bytes=chunk_bytes,
            max_fit_rows=max_fit_rows,
            seed=int(seed),
            precision=precision,
        )
    from privacy_gate.attacks.flow import (
        MAFDensity,  # lazy: imports torch, only when a flow is fitted
    )

    return MAFDensity(**flow_params, seed=int(seed))


def subsample_note(what: str, estimator: Any) -> str | None:
    """How far a subsampled KDE's densities at the targets may be from the full KDE's."""
    rel = getattr(estimator, "rel_se_", None)
    if rel is None or not len(rel):
        return None
    return (
        f"{what}: KDE on a random {estimator.n_samples_:,} of {estimator.n_total_:,} rows "
        "(max_fit_rows); relative "
        "standard error of the density at the targets vs the full KDE: median "
        f"{np.median(rel):.1%}, 95th "
        f"percentile {np.quantile(rel, 0.95):.1%} (about the same error in the log-ratio score)"
    )


def precision_note(*estimators: Any) -> str | None:
    """Say so when a KDE scored the targets in float32 (``precision="auto"`` on a large job)."""
    which = [e.n_samples_ for e in estimators if getattr(e, "precision_", None) == "float32"]
    if not which:
        return None
    return (
        f"KDE computed in float32 (precision '{estimators[0].precision}'; float32 from "
        f"{FLOAT32_ROWS:,} fit rows, "
        f"here {', '.join(f'{n:,}' for n in which)}); log densities within ~3e-4 of float64, "
        "ranking unchanged "
        "(benchmarks/bench_nn_index.py)"
    )


def density_notes(what: str, estimator: Any) -> list[str]:
    """Notes on a fitted density worth showing to a user (flow training that did not converge)."""
    stopped = getattr(estimator, "stopped_by_", None)
    if stopped in (None, "patience"):
        return []
    note = (
        f"{what}: the flow stopped training by '{stopped}' after {estimator.n_epochs_} epoch(s) "
        f"(best epoch {estimator.best_epoch_}); it may be under-fitted — raise flow_params "
        "max_epochs / max_seconds"
    )
    return [note]


class DensityParams(Params):
    """The density settings DOMIAS and its p_G-only baseline share."""

    density: Literal["kde", "flow", "auto"] = Field(
        "kde",
        description="density estimator: Gaussian KDE, a masked autoregressive flow, or auto by "
        "data size",
    )
    bandwidth: Literal["scott"] | PositiveNumber = Field(
        "scott", description="KDE bandwidth: Scott's rule or a positive number (standardised units)"
    )
    chunk_bytes: PositiveInt = Field(
        DEFAULT_CHUNK_BYTES,
        description="memory budget in bytes for the temporary distance matrices",
    )
    max_fit_rows: PositiveInt | None = Field(
        DEFAULT_MAX_FIT_ROWS,
        description="KDE only: fit each density on a seeded random subsample of at most this many "
        "rows (None, the default: all); the error is reported",
    )
    flow_params: FlowSettings | None = Field(
        None,
        description="settings of the flow density (MAFDensity), e.g. max_epochs, hidden; not its "
        "seed",
    )
    seed: Seed = Field(0, description="seed of the flow's training and of the KDE's subsample")
    precision: Precision = Field("auto", description=PRECISION_HELP)

    @field_validator("flow_params", mode="before")
    @classmethod
    def _flow_settings(cls, value: Any) -> Any:
        if value is None or isinstance(value, FlowSettings):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(
                f"must be a mapping of MAFDensity settings, got {type(value).__name__}"
            )
        if "seed" in value:
            raise ValueError("must not set 'seed'; use the attack's own 'seed' parameter")
        return dict(value)


class DomiasParams(DensityParams):
    reference_density: Literal["same", "prior"] = Field(
        "same", description="p_R: the same estimator as p_G, or a shrinkage Gaussian prior"
    )


@register_attack("domias")
class DomiasAttack(EncodedAttack):
    """DOMIAS: ``log p_G(x) - log p_R(x)`` on the standardised mixed encoding.

    Parameters
    ----------
    density:
        ``"kde"`` (default), ``"flow"`` or ``"auto"`` (see the module docstring).
    reference_density:
        ``"same"`` (default: ``p_R`` uses the same estimator as ``p_G``) or ``"prior"`` (one
        shrinkage Gaussian, :class:`GaussianDensity`, for a small reference set).
    bandwidth:
        KDE only: ``"scott"`` or a positive float in standardised units, used for both densities.
        With ``"scott"`` each density gets its own ``n ** (-1 / (d + 4))`` with ``d`` the number
        of encoded original columns (see :class:`GaussianKDE`).
    chunk_bytes:
        KDE only: memory budget in bytes for each temporary distance matrix.
    max_fit_rows:
        KDE only: each density is fitted on a seeded random subsample of at most this many rows
        (default None: all rows, exact); the subsample's error against the full KDE is measured
        at the targets and reported in ``notes_``. It bounds the cost per target but weakens the
        attack against near-copies (see :data:`DEFAULT_MAX_FIT_ROWS`).
    flow_params:
        Flow only: settings of :class:`privacy_gate.attacks.flow.MAFDensity` (e.g.
        ``{"max_epochs": 50, "hidden": [32, 32]}``); anything but ``seed``.
    seed:
        Seed of the flows and of the KDE's subsample (default 0); the prior is deterministic.
    precision:
        KDE only: ``"auto"`` (float32 arithmetic for large fits, see :data:`FLOAT32_ROWS`),
        ``"float64"`` or ``"float32"``; noted in ``notes_`` when float32 was used.

    Learned attributes: ``encoder_`` (fitted on the reference data: the attacker's own data
    plus the spec's public categories), ``density_kind_`` (the resolved ``"kde"`` / ``"flow"``),
    ``density_synthetic_``, ``density_reference_``, ``notes_`` (encoder and density notes).
    """

    params_model = DomiasParams

    name = "domias"

    def _density(self, kind: str):
        return make_density(
            kind,
            bandwidth=self.bandwidth,
            chunk_bytes=self.chunk_bytes,
            flow_params=dict(self.flow_params or {}),
            seed=self.seed,
            max_fit_rows=self.max_fit_rows,
            precision=self.precision,
        )

    def fit(self, threat: ThreatModel) -> DomiasAttack:
        """Fit the encoder on the reference data, then ``p_G`` on synthetic and ``p_R`` on
        reference."""
        X_syn, X_ref = self._fit_encoded(threat)
        notes = list(self.encoder_.notes_)
        d = self.encoder_.n_effective_dims_
        n_rows = max(len(X_syn), len(X_ref)) if self.reference_density == "same" else len(X_syn)
        kind = resolve_density(self.density, n_rows=n_rows, n_dims=d)
        if self.density == "auto":
            notes.append(
                f"density 'auto' chose '{kind}' ({n_rows} rows x {d} columns; threshold "
                f"{AUTO_FLOW_THRESHOLD})"
            )
        self.density_kind_ = kind
        self.density_synthetic_ = self._density(kind).fit(X_syn, n_effective_dims=d)
        if self.reference_density == "prior":
            self.density_reference_ = GaussianDensity().fit(X_ref)
        else:
            self.density_reference_ = self._density(kind).fit(X_ref, n_effective_dims=d)
        notes += density_notes("p_G (synthetic)", self.density_synthetic_)
        notes += density_notes("p_R (reference)", self.density_reference_)
        self.notes_ = notes
        return self

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """``log p_G(x) - log p_R(x)`` per target row (higher = more likely a member)."""
        X = self._encode(targets)
        scores = self.density_synthetic_.score_samples(X) - self.density_reference_.score_samples(X)
        if not getattr(
            self, "_subsample_noted", False
        ):  # the first target set scored (the gate's own targets)
            self._subsample_noted = True
            self.notes_ = self.notes_ + [
                n
                for n in (
                    subsample_note("p_G (synthetic)", self.density_synthetic_),
                    subsample_note("p_R (reference)", self.density_reference_),
                    precision_note(self.density_synthetic_, self.density_reference_),
                )
                if n
            ]
        return check_scores(scores, owner=f"attack '{self.name}'", n_targets=len(targets))
