"""The baseline attacks of the DOMIAS paper (van Breugel et al., 2023, Table 1), black-box versions.

One module because these are the DOMIAS paper's baselines: each is small, they share the
encoding helpers, and they are compared as one family.

Each scores targets on the same standardised mixed encoding as DOMIAS (encoder fitted on the
reference data) and follows the Attack contract of :mod:`privacy_gate.attacks.base`:

- ``domias_eq1`` — ``log p_G(x)`` alone, the paper's "Eq. 1" ablation: the assumption behind
  most earlier black-box attacks that a member is where the generator's density is high. Without
  ``p_R`` it flags typical records rather than overfitted ones, and its ranking depends on the
  representation of the data (it is not invariant under invertible transforms; DOMIAS is).
- ``gan_leaks`` — GAN-Leaks "full black-box" (Chen et al., 2020): minus the distance to the
  closest synthetic record. This is exactly the ``dcr`` attack; ``gan_leaks`` is the same code
  under the paper's name.
- ``gan_leaks_cal`` — calibrated GAN-Leaks: ``d_ref(x) - d_syn(x)``, i.e. minus (distance to the
  closest synthetic record - distance to the closest reference record). The paper reads it as
  DOMIAS with infinitely narrow KDEs on equally large subsets; the reference records play the
  part of the calibrating generator's samples.
- ``mc_neighbourhood`` — Monte-Carlo integration (Hilprecht et al., 2019): how much of the
  synthetic data lies in an epsilon-ball around the target.
- ``logan_d1`` — LOGAN D1 (Hayes et al., 2019): a classifier trained to tell synthetic from
  reference records; a member's neighbourhood is over-represented in the synthetic data.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from privacy_gate.attacks.base import (
    DEFAULT_CHUNK_BYTES,
    EncodedAttack,
    ThreatModel,
    check_scores,
    register_attack,
)
from privacy_gate.attacks.density import as_matrix, chunked_products
from privacy_gate.attacks.distance import (
    DistanceToClosestRecord,
    nearest_distances,
    synthetic_and_reference_distances,
)
from privacy_gate.attacks.domias import (
    DensityParams,
    density_notes,
    make_density,
    resolve_density,
)
from privacy_gate.params import (
    Field,
    OpenFraction,
    Params,
    PositiveInt,
    Seed,
)

# --------------------------------------------------------------------------- Eq. 1


class DomiasEq1Params(DensityParams):
    """DOMIAS's density settings (p_G only: no reference density)."""


@register_attack("domias_eq1")
class DomiasEq1(EncodedAttack):
    """``log p_G(x)``: DOMIAS without the reference density (the paper's "Eq. 1" baseline).

    Parameters as :class:`privacy_gate.attacks.domias.DomiasAttack` (``density`` ``"kde"`` /
    ``"flow"`` / ``"auto"`` — here ``auto`` decides by the synthetic data's size — ``bandwidth``,
    ``chunk_bytes``, ``max_fit_rows``, ``flow_params``, ``seed``); there is no ``p_R``.

    Learned attributes: ``encoder_``, ``density_kind_``, ``density_synthetic_``, ``notes_``.
    """

    params_model = DomiasEq1Params

    name = "domias_eq1"

    def fit(self, threat: ThreatModel) -> DomiasEq1:
        """Fit the encoder on the reference data and ``p_G`` on the synthetic data."""
        notes = list(self._fit_encoder(threat).notes_)
        d = self.encoder_.n_effective_dims_
        X_syn = self.encoder_.transform(threat.synthetic)
        kind = resolve_density(self.density, n_rows=len(X_syn), n_dims=d)
        if self.density == "auto":
            notes.append(f"density 'auto' chose '{kind}' ({len(X_syn)} rows x {d} columns)")
        self.density_kind_ = kind
        self.density_synthetic_ = make_density(
            kind,
            bandwidth=self.bandwidth,
            chunk_bytes=self.chunk_bytes,
            flow_params=dict(self.flow_params or {}),
            seed=self.seed,
            max_fit_rows=self.max_fit_rows,
            precision=self.precision,
        ).fit(X_syn, n_effective_dims=d)
        self.notes_ = notes + density_notes("p_G (synthetic)", self.density_synthetic_)
        return self

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """``log p_G(x)`` per target row."""
        X = self._encode(targets)  # first: NotFittedError before fit
        scores = self.density_synthetic_.score_samples(X)
        return check_scores(scores, owner=f"attack '{self.name}'", n_targets=len(targets))


# --------------------------------------------------------------------------- GAN-Leaks


@register_attack("gan_leaks")
class GanLeaks(DistanceToClosestRecord):
    """GAN-Leaks full black-box: ``-min_j ||x - s_j||`` — the ``dcr`` attack under the paper's
    name."""


class GanLeaksCalibratedParams(Params):
    match_sizes: bool = Field(
        True, strict=True, description="subsample synthetic and reference data to the same size"
    )
    chunk_bytes: PositiveInt = Field(
        DEFAULT_CHUNK_BYTES,
        description="memory budget in bytes for the temporary distance matrices",
    )
    seed: Seed = Field(0, description="seed of the subsampling")


@register_attack("gan_leaks_cal")
class GanLeaksCalibrated(EncodedAttack):
    """Calibrated GAN-Leaks: ``d_ref(x) - d_syn(x)`` (distances to the closest reference / synthetic
    row).

    A target close to a synthetic record is suspicious only if it is not just as close to real
    records of the population: the reference distance calibrates away the local density.

    Parameters
    ----------
    match_sizes:
        If True (default), the larger of the two sets is subsampled (seeded) to the size of the
        smaller before the distances are taken. Nearest-neighbour distances shrink with the set
        size (roughly as ``n ** (-1/d)``); with unequal sets the difference would mostly measure
        the size gap. The paper's reading is the same: both "KDEs" on ``k`` samples each.
    chunk_bytes:
        Memory budget in bytes for the temporary distance matrices.
    seed:
        Seed of the subsample (default 0).

    Learned attributes: ``encoder_``, ``synthetic_encoded_``, ``reference_encoded_``, ``notes_``.
    """

    params_model = GanLeaksCalibratedParams

    name = "gan_leaks_cal"

    def fit(self, threat: ThreatModel) -> GanLeaksCalibrated:
        """Encode the synthetic and reference data (subsampled to equal size if ``match_sizes``)."""
        X_syn, X_ref = self._fit_encoded(threat)
        notes = list(self.encoder_.notes_)
        if self.match_sizes and len(X_syn) != len(X_ref):
            rng = np.random.default_rng(self.seed)
            k = min(len(X_syn), len(X_ref))
            which = "synthetic" if len(X_syn) > k else "reference"
            notes.append(
                f"the {which} data was subsampled to {k} rows to match the other set (match_sizes)"
            )
            if len(X_syn) > k:
                X_syn = X_syn[np.sort(rng.choice(len(X_syn), k, replace=False))]
            else:
                X_ref = X_ref[np.sort(rng.choice(len(X_ref), k, replace=False))]
        self.synthetic_encoded_ = as_matrix(X_syn, owner=f"attack '{self.name}'")
        self.reference_encoded_ = as_matrix(X_ref, owner=f"attack '{self.name}'")
        self.notes_ = notes
        return self

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """``d_ref(x) - d_syn(x)`` per target row (higher = closer to synthetic than to real
        data)."""
        d_syn, d_ref = synthetic_and_reference_distances(self, targets)
        return check_scores(d_ref - d_syn, owner=f"attack '{self.name}'", n_targets=len(targets))


# ------------------------------------------------------------------------ Monte-Carlo neighbourhood


def ball_statistics(
    targets: np.ndarray, candidates: np.ndarray, radius: float, *, chunk_bytes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per target row: how many candidate rows lie within Euclidean ``radius``; the sum of
    ``log(radius / (d + radius/1000))`` over them (closer rows weigh more, a copy ~6.9); and the
    distance to the nearest candidate. Chunked over targets like the KDE (one buffer)."""
    n_t = targets.shape[0]
    sq_norms = np.einsum("ij,ij->i", candidates, candidates)
    t_norms = np.einsum("ij,ij->i", targets, targets)
    count = np.empty(n_t, dtype=np.int64)
    log_weight = np.empty(n_t, dtype=np.float64)
    nearest = np.empty(n_t, dtype=np.float64)
    r2, delta = radius * radius, radius * 1e-3
    for start, stop, B in chunked_products(targets, candidates, chunk_bytes):
        B *= -2.0
        B += sq_norms[None, :]
        B += t_norms[start:stop, None]
        np.maximum(B, 0.0, out=B)  # squared distances; clamp cancellation residues below 0
        nearest[start:stop] = np.sqrt(B.min(axis=1))
        inside = B < r2
        count[start:stop] = inside.sum(axis=1)
        rows, cols = np.nonzero(inside)
        w = np.log(radius / (np.sqrt(B[rows, cols]) + delta))
        log_weight[start:stop] = np.bincount(rows, weights=w, minlength=stop - start)
    return count, log_weight, nearest


class MonteCarloNeighbourhoodParams(Params):
    kind: Literal["smooth", "count"] = Field(
        "smooth", description="smooth kernel weight or hard count of synthetic neighbours"
    )
    epsilon_quantile: OpenFraction = Field(
        0.5, description="neighbourhood radius: this quantile of reference-to-synthetic distances"
    )
    chunk_bytes: PositiveInt = Field(
        DEFAULT_CHUNK_BYTES,
        description="memory budget in bytes for the temporary distance matrices",
    )


@register_attack("mc_neighbourhood")
class MonteCarloNeighbourhood(EncodedAttack):
    """Hilprecht et al.'s Monte-Carlo attack: the share of synthetic data near the target.

    ``epsilon`` is the ``epsilon_quantile`` (default: the median) of the distances from each
    *reference* record to its closest synthetic record: a real non-member then has at least one
    synthetic record within ``epsilon`` about as often as the quantile says, so the ball is
    neither empty for everyone nor full. (Reference-to-synthetic distances need no leave-one-out
    and use the attacker's own data; Hilprecht et al. chose epsilon by a median heuristic too.)

    Parameters
    ----------
    kind:
        ``"count"``: the fraction of synthetic records within distance ``epsilon`` — Hilprecht
        et al.'s estimate. Heavily tied: most targets have 0, 1 or 2 neighbours, and a block of
        tied scores cannot be split by any threshold (it costs TPR at low FPR).
        ``"smooth"`` (default): the log-distance-weighted count
        ``(1/n) sum_{j: d_j < epsilon} log(epsilon / (d_j + epsilon/1000))`` — each synthetic
        record in the ball counts more the closer it is (0 at the rim, ~6.9 for a copy), so
        scores rarely tie; targets with an empty ball score ``(1 - d_min / epsilon) / n`` < 0,
        ranked by the distance ``d_min`` to their closest synthetic record. On the test toy of
        verbatim copies: AUC 1.0 (hard count: 0.77 with the median epsilon). A
        Gaussian-weighted count (a KDE of bandwidth ``epsilon``) was tried and rejected: its
        long tails sum many far records and drown the one copy (AUC 0.53 there).
    epsilon_quantile:
        In (0, 1), default 0.5 (the median).
    chunk_bytes:
        Memory budget in bytes for the temporary distance matrices.

    Learned attributes: ``encoder_``, ``epsilon_``, ``synthetic_encoded_``, ``notes_``.
    """

    params_model = MonteCarloNeighbourhoodParams

    name = "mc_neighbourhood"

    def fit(self, threat: ThreatModel) -> MonteCarloNeighbourhood:
        """Encode the data and set ``epsilon`` from the reference-to-synthetic distances."""
        X_syn, X_ref = self._fit_encoded(threat)
        notes = list(self.encoder_.notes_)
        X_syn = as_matrix(X_syn, owner=f"attack '{self.name}'")
        d_ref, _ = nearest_distances(
            as_matrix(X_ref, owner=f"attack '{self.name}'"), X_syn, chunk_bytes=self.chunk_bytes
        )
        eps = float(np.quantile(d_ref, self.epsilon_quantile))
        if not eps > 0:
            positive = d_ref[d_ref > 0]
            eps = float(positive.min()) if positive.size else 1.0
            notes.append(
                f"epsilon: the {self.epsilon_quantile} quantile of reference-to-synthetic "
                "distances is 0 "
                "(reference records copied in the synthetic data); the smallest positive distance "
                "is used instead"
            )
        self.synthetic_encoded_ = X_syn
        self.epsilon_ = eps
        self.notes_ = notes
        return self

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """The (smoothed, log) share of synthetic records within ``epsilon`` of each target."""
        X = as_matrix(self._encode(targets), owner=f"attack '{self.name}'")
        count, log_weight, nearest = ball_statistics(
            X, self.synthetic_encoded_, self.epsilon_, chunk_bytes=self.chunk_bytes
        )
        n = len(self.synthetic_encoded_)
        if self.kind == "count":
            scores = count / n
        else:
            scores = np.where(count > 0, log_weight, 1.0 - nearest / self.epsilon_) / n
        return check_scores(scores, owner=f"attack '{self.name}'", n_targets=len(targets))


# --------------------------------------------------------------------------- LOGAN D1


def _one_thread():
    """Run the classifier single-threaded (OpenMP and BLAS pools limited to 1 thread, restored
    after).

    Histogram gradient boosting parallelises over features with OpenMP; with more threads than
    idle cores (the gate runs attacks concurrently; CI machines are shared) its spinning threads
    make it 10-40x slower — measured on a shared 2-core machine: 1.2 s single-threaded against
    44 s with the default pool, for the test toy. Single-threaded is the robust choice.
    """
    return threadpool_limits(limits=1)


class LoganD1Params(Params):
    classifier: Literal["hgb", "mlp"] = Field(
        "hgb", description="synthetic-vs-reference classifier: gradient boosting or an MLP"
    )
    seed: Seed = Field(0, description="seed of the classifier")


@register_attack("logan_d1")
class LoganD1(EncodedAttack):
    """LOGAN D1: a classifier of synthetic (1) vs reference (0) records; score = its log-odds of
    "synthetic".

    Where the generator memorised members, the synthetic data over-represents their
    neighbourhoods relative to the population, and a flexible classifier learns it. The score is
    the classifier's log-odds ``log p / (1 - p)`` of "synthetic" — monotone in the probability,
    so every ROC metric is the same, but it does not saturate into ties at ``p = 1``. Classes are
    weighted to balance (the set sizes differ), which does not change the ranking of a
    well-calibrated classifier.

    Parameters
    ----------
    classifier:
        ``"hgb"`` (default): scikit-learn ``HistGradientBoostingClassifier`` (200 trees, leaves of
        >= 5 rows so it can pick out small neighbourhoods, no early stopping — see ``fit``).
        ``"mlp"``: ``MLPClassifier`` with two hidden layers of 64 (the original LOGAN D1 uses an
        MLP), 200 epochs, no early stopping.
    seed:
        Seed of the classifier (default 0).

    Learned attributes: ``encoder_``, ``classifier_``, ``notes_``.
    """

    params_model = LoganD1Params

    name = "logan_d1"

    def fit(self, threat: ThreatModel) -> LoganD1:
        """Train the classifier on the encoded synthetic (label 1) and reference (label 0) rows."""
        X_syn, X_ref = self._fit_encoded(threat)
        X = np.vstack([X_syn, X_ref])
        y = np.r_[np.ones(len(X_syn), dtype=np.int8), np.zeros(len(X_ref), dtype=np.int8)]
        weight = np.where(y == 1, len(y) / (2.0 * len(X_syn)), len(y) / (2.0 * len(X_ref)))
        with _one_thread():
            clf = self._train(X, y, weight)
        self.classifier_ = clf
        self.notes_ = list(self.encoder_.notes_)
        return self

    def _train(self, X: np.ndarray, y: np.ndarray, weight: np.ndarray):
        if self.classifier == "hgb":
            from sklearn.ensemble import (
                HistGradientBoostingClassifier,  # lazy: scikit-learn imports in ~0.9 s
            )

            # no early stopping: a classifier stopped on held-out rows generalises — it learns
            # where the synthetic data is over-represented only at scales it can validate, and
            # misses single memorised records (verbatim copies in the test toy: AUC 0.91 with
            # early stopping, 0.997 without); the attacker wants exactly those
            clf = HistGradientBoostingClassifier(
                max_iter=200,
                learning_rate=0.1,
                min_samples_leaf=5,
                early_stopping=False,
                random_state=self.seed,
            )
            clf.fit(X, y, sample_weight=weight)
        else:
            from sklearn.exceptions import (
                ConvergenceWarning,  # lazy: scikit-learn imports in ~0.9 s
            )
            from sklearn.neural_network import MLPClassifier

            clf = MLPClassifier(
                hidden_layer_sizes=(64, 64),
                early_stopping=False,
                max_iter=200,
                random_state=self.seed,
            )
            # no sample weights (MLPClassifier has none in older scikit-learn): the class ratio
            # mostly shifts the log-odds by a constant, which leaves the ranking unchanged
            with warnings.catch_warnings():
                warnings.simplefilter(
                    "ignore", ConvergenceWarning
                )  # 200 epochs is the budget, not a failure
                clf.fit(X, y)
        return clf

    def score(self, targets: pd.DataFrame) -> np.ndarray:
        """Log-odds of "synthetic" per target row."""
        X = self._encode(targets)
        with _one_thread():
            if self.classifier == "hgb":
                scores = self.classifier_.decision_function(X)
            else:
                p = np.clip(self.classifier_.predict_proba(X)[:, 1], 1e-12, 1 - 1e-12)
                scores = np.log(p) - np.log1p(-p)
        return check_scores(scores, owner=f"attack '{self.name}'", n_targets=len(targets))
