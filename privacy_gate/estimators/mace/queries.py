"""MACE for a gate run (Liu et al.): confidence-bounded advantage per attack and for the combined
query, the comparison with the DP bound, and per-record risk. Numbers only: the gate decides what
they mean (``gate.findings``).

Metric names (``names.mace_metric``): ``<attack>.mace.advantage`` (the estimate, always inside
its bounds: :func:`point_estimate`), ``.advantage_lower``, ``.advantage_upper``,
``.advantage_plugin`` (the raw plug-in), ``.ppv_upper`` (at the configured prior), ``.bias`` (the
label-permutation null mean of the plug-in estimate: what "no leakage" looks like at this N) and
``.radius``. The combined query (the vector of all gated attacks' scores, which can be stronger than
each alone) is reported as the pseudo-attack ``combined``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt
import pandas as pd

from privacy_gate.data.split import unit_scores
from privacy_gate.estimators.mace.advantage import estimate_advantage, individual_risk
from privacy_gate.estimators.mace.dp import DPComparison, compare_to_dp
from privacy_gate.estimators.mace.generalized import generalized_metrics
from privacy_gate.names import COMBINED, mace_metric

MAX_COMBINED_DIMS = 4  # the multi-d estimators are validated up to 4 dimensions


@dataclass(frozen=True)
class MaceResult:
    metrics: dict[str, float]  # "<attack>.mace.<name>" -> value
    dp: dict[str, DPComparison]  # query -> comparison with the DP bound (DP generators only)
    per_record: (
        pd.DataFrame | None
    )  # row_id, risk, risk_lower, risk_upper, f, attack (max over attacks)
    risk_attack: str | None  # the attack that gives most records their maximum risk
    estimates: dict[str, dict[str, Any]] = field(default_factory=dict)  # full to_dict() per query


def point_estimate(est: Any) -> float:
    """The advantage estimate reported with ``[lower, upper]``: the plug-in, moved into its own
    interval. The plug-in (``estimate``) is smoothed or binned, which loses advantage; at strong
    leakage it can fall below the certified (split) lower bound — a classifier that provably does
    better — and an estimate outside its own interval is no estimate a reader can use.

    >>> from types import SimpleNamespace
    >>> point_estimate(SimpleNamespace(estimate=0.937, lower=0.983, upper=0.997))
    0.983
    >>> point_estimate(SimpleNamespace(estimate=0.41, lower=0.30, upper=0.52))
    0.41
    """
    return float(min(max(est.estimate, est.lower), est.upper))


def _metrics_of(name: str, est: Any, ppv_upper: float | None) -> dict[str, float]:
    out = {
        mace_metric(name, "advantage"): point_estimate(est),
        mace_metric(name, "advantage_lower"): est.lower,
        mace_metric(name, "advantage_upper"): est.upper,
        mace_metric(name, "advantage_plugin"): est.estimate,
        mace_metric(name, "bias"): est.bias,
        mace_metric(name, "radius"): est.radius,
    }
    if ppv_upper is not None:
        out[mace_metric(name, "ppv_upper")] = ppv_upper
    return {
        k: float(v) for k, v in out.items() if v is not None
    }  # bias is None without permutations


def combined_query(scores: dict[str, np.ndarray]) -> np.ndarray | None:
    """The query that combines the gated attacks: None for one attack; the score vector for 2 to
    ``MAX_COMBINED_DIMS`` attacks (the multi-d estimators are validated up to 4 dimensions); for
    more, the per-record maximum of the rank-normalised scores — a 1-d query whose estimator bias
    does not grow with the number of attacks.

    >>> combined_query({"a": np.array([1.0, 2.0])}) is None
    True
    >>> combined_query({k: np.array([0.0, 1.0, 2.0]) for k in "abcde"}).tolist()
    [0.0, 0.5, 1.0]
    """
    if len(scores) < 2:
        return None
    if len(scores) <= MAX_COMBINED_DIMS:
        return np.column_stack([scores[a] for a in scores])
    ranks = [
        pd.Series(np.asarray(s, dtype=float)).rank(method="average").to_numpy()
        for s in scores.values()
    ]
    n = len(ranks[0])
    # pandas is untyped (its ranks Any): the maximum of float rank shares
    return cast("npt.NDArray[np.float64]", np.max([(r - 1) / max(n - 1, 1) for r in ranks], axis=0))


def per_record_risk(
    scores: dict[str, np.ndarray],
    labels: np.ndarray,
    row_ids: np.ndarray,
    *,
    prior: float,
    delta: float,
    seed: int = 0,
) -> tuple[pd.DataFrame | None, str | None]:
    """Each record's MACE risk as the maximum over the attacks, so a record exposed to any one
    attack shows up. Each attack's intervals are computed at ``delta / k`` (Bonferroni over the
    k attacks), so the [max lower, max upper] interval of a record covers the maximum of its true
    risks with probability at least 1 - delta."""
    if not scores:
        return None, None
    per_attack = {
        a: individual_risk(
            s, labels, method="discrete", prior=prior, delta=delta / len(scores), seed=seed
        ).to_frame(row_ids)
        for a, s in scores.items()
    }
    names = list(per_attack)
    stacked = {
        col: np.column_stack([per_attack[a][col].to_numpy() for a in names])
        for col in ("risk", "risk_lower", "risk_upper", "f")
    }
    best = np.argmax(stacked["risk"], axis=1)
    rows = np.arange(len(best))
    frame = pd.DataFrame(
        {
            "row_id": np.asarray(row_ids),
            "risk": stacked["risk"][rows, best],
            "risk_lower": stacked["risk_lower"].max(axis=1),
            "risk_upper": stacked["risk_upper"].max(axis=1),
            "f": stacked["f"][rows, best],
            "attack": np.asarray(names, dtype=object)[best],
        }
    )
    return frame, str(pd.Series(frame["attack"]).mode().iloc[0])


def mace_for_attacks(
    scores: dict[str, np.ndarray],
    labels: np.ndarray,
    row_ids: np.ndarray,
    *,
    prior: float,
    delta: float,
    n_permutations: int,
    epsilon: float | None,
    seed: int = 0,
    units: np.ndarray | None = None,
) -> MaceResult:
    """MACE estimates for each gated attack's scores and for their combination.

    ``units`` (a panel: each target's person,
    :attr:`~privacy_gate.experiment.targets.Targets.units`): the advantage estimates and their
    bounds are over people, a person's score per attack the maximum over their target rows
    (:func:`~privacy_gate.data.split.unit_scores`, as the exposed targets): the McDiarmid radius and
    the split bound take the targets as independent, and a person's years are not. The per-record
    risks stay per row (each row's risk read from the rows' class densities: a description of the
    rows, not a bound the gate tests)."""
    labels = np.asarray(labels)
    query_scores, query_labels = dict(scores), labels
    if units is not None:
        query_scores, unit_labels, _ = unit_scores(scores, labels, units)
        query_labels = unit_labels.astype(labels.dtype)
    queries: dict[str, np.ndarray] = dict(query_scores)
    combined = combined_query(query_scores)
    if combined is not None:
        queries[COMBINED] = combined
    metrics: dict[str, float] = {}
    estimates: dict[str, Any] = {}
    dp: dict[str, DPComparison] = {}
    for name, q in queries.items():
        est = estimate_advantage(
            q, query_labels, prior=prior, delta=delta, seed=seed, n_permutations=n_permutations
        )
        ppv: float | None = None
        if q.ndim == 1:
            general = generalized_metrics(q, query_labels, prior=prior, delta=delta, seed=seed)
            ppv = float(general["ppv_upper"])
        metrics.update(_metrics_of(name, est, ppv))
        estimates[name] = est
        if epsilon is not None:
            dp[name] = compare_to_dp(est, epsilon=epsilon, p=prior)
            metrics[mace_metric(name, "dp_bound")] = float(dp[name].bound)
    per_record, risk_attack = per_record_risk(
        scores, labels, row_ids, prior=prior, delta=delta, seed=seed
    )
    return MaceResult(
        metrics=metrics,
        dp=dp,
        per_record=per_record,
        risk_attack=risk_attack,
        estimates={k: v.to_dict() for k, v in estimates.items()},
    )


def mace_group_metrics(
    scores: np.ndarray, labels: np.ndarray, *, prior: float, delta: float
) -> dict[str, float]:
    """Bounds for one subgroup (no permutations: groups are small and only the bounds are used)."""
    est = estimate_advantage(scores, labels, prior=prior, delta=delta, n_permutations=0)
    return {
        "mace.advantage": point_estimate(est),
        "mace.advantage_lower": float(est.lower),
        "mace.advantage_upper": float(est.upper),
        "mace.advantage_plugin": float(est.estimate),
    }
