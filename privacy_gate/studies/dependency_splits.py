"""Member / non-member splits that make the training set dependent (Humphries et al., "Investigating
membership inference attacks under data dependencies"), and their IID counterparts.

A membership experiment is IID when members and non-members are exchangeable: both drawn at
random from one pool. The splits here break that on purpose, the three ways the paper does:

- :func:`source_split`: members all from one source (hospital, region, sector), non-members from
  the others;
- :func:`cluster_split`: members from one k-means cluster, non-members from another (clusters
  fitted on the *reference* encoding, never on the pool the members come from);
- :func:`bias_split`: a share ``p`` of the members has an attribute value, non-members are half
  and half; the attribute is then dropped from everything the attacker sees (p = 0.5 is the IID
  case).

:func:`iid_counterpart` merges a split's members and non-members and re-splits them at random at
the same sizes: the same records, exchangeable again. Comparing the two isolates the effect of
the dependency.

>>> import pandas as pd
>>> pool = pd.DataFrame({"s": ["a"] * 6 + ["b"] * 6, "x": range(12)})
>>> sp = source_split(pool, source="s", value="a", n_members=4, n_non_members=4,
...                   rng=np.random.default_rng(0))
>>> sorted(set(sp.members["s"])), sorted(set(sp.non_members["s"]))
(['a'], ['b'])
>>> len(sp.members), len(sp.non_members)
(4, 4)
>>> iid = iid_counterpart(sp, rng=np.random.default_rng(0))
>>> len(iid.members), len(iid.non_members), set(iid.members.index) & set(iid.non_members.index)
(4, 4, set())
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from privacy_gate.data.encoding import MixedEncoder
from privacy_gate.errors import InsufficientDataError
from privacy_gate.experiment.grouping import most_frequent, value_labels
from privacy_gate.spec import DatasetSpec


@dataclass(frozen=True)
class StudySplit:
    """Members (the training set) and non-members of one experiment; ``dropped``: columns removed
    from everything the generator and the attacker see."""

    scenario: str
    setting: str
    members: pd.DataFrame
    non_members: pd.DataFrame
    dropped: tuple[str, ...] = ()
    iid: bool = False

    def __post_init__(self) -> None:
        if set(self.members.index) & set(self.non_members.index):
            raise ValueError(f"{self.setting}: members and non-members share rows")


def _take(rows: np.ndarray, n: int, rng: np.random.Generator, what: str) -> np.ndarray:
    if len(rows) < n:
        raise InsufficientDataError(
            f"{what}: only {len(rows)} records available, {n} needed "
            "(lower dependency_study.members / non_members)"
        )
    return np.sort(rng.choice(rows, size=n, replace=False))


def source_split(
    pool: pd.DataFrame,
    *,
    source: str,
    value: str | None,
    n_members: int,
    n_non_members: int,
    rng: np.random.Generator,
) -> StudySplit:
    """Members from ``source == value`` (default: the most frequent value), non-members from the
    other values."""
    value = value if value is not None else most_frequent(pool[source])
    inside = value_labels(pool[source]).to_numpy() == value
    mem = _take(np.flatnonzero(inside), n_members, rng, f"source {source}={value!r}")
    non = _take(np.flatnonzero(~inside), n_non_members, rng, f"source {source}!={value!r}")
    return StudySplit("source", f"{source}={value}", pool.iloc[mem], pool.iloc[non])


@dataclass(frozen=True)
class Clustering:
    """k-means on the reference encoding; ``assign`` maps any rows of the same spec to clusters."""

    encoder: MixedEncoder
    model: object  # sklearn KMeans

    @classmethod
    def fit(cls, reference: pd.DataFrame, spec: DatasetSpec, *, k: int, seed: int) -> Clustering:
        from sklearn.cluster import KMeans

        encoder = MixedEncoder(spec=spec, data_name="reference data").fit(reference)
        model = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(encoder.transform(reference))
        return cls(encoder, model)

    def assign(self, rows: pd.DataFrame) -> np.ndarray:
        return self.model.predict(self.encoder.transform(rows))


def cluster_split(
    pool: pd.DataFrame,
    labels: np.ndarray,
    *,
    clusters: tuple[int, int] | None,
    n_members: int,
    n_non_members: int,
    rng: np.random.Generator,
) -> StudySplit:
    """Members from one cluster, non-members from another (default: the two largest in the pool);
    ``labels``: each pool row's cluster (:meth:`Clustering.assign`, computed once for all
    repetitions)."""
    if clusters is None:
        sizes = np.bincount(labels)
        order = np.argsort(-sizes, kind="stable")
        clusters = (int(order[0]), int(order[1]))
    a, b = clusters
    mem = _take(np.flatnonzero(labels == a), n_members, rng, f"cluster {a}")
    non = _take(np.flatnonzero(labels == b), n_non_members, rng, f"cluster {b}")
    return StudySplit("cluster", f"cluster {a} vs {b}", pool.iloc[mem], pool.iloc[non])


def attribute_mask(
    pool: pd.DataFrame, attribute: str, *, value: str | None, at_least: float | None
) -> np.ndarray:
    """Rows with the attribute value (categorical) or at least the threshold (numeric)."""
    if at_least is not None:
        return pd.to_numeric(pool[attribute], errors="coerce").to_numpy() >= at_least
    return value_labels(pool[attribute]).to_numpy() == str(value)


def bias_split(
    pool: pd.DataFrame,
    *,
    attribute: str,
    value: str | None,
    at_least: float | None,
    share: float,
    n_members: int,
    n_non_members: int,
    rng: np.random.Generator,
) -> StudySplit:
    """``round(share * n_members)`` members with the attribute value, the rest without; non-members
    half with, half without; the attribute is dropped (``dropped``)."""
    has = attribute_mask(pool, attribute, value=value, at_least=at_least)
    what = f"{attribute}={value}" if value is not None else f"{attribute}>={at_least:g}"
    k_mem = int(round(share * n_members))
    k_non = n_non_members // 2
    with_attr, without = np.flatnonzero(has), np.flatnonzero(~has)
    # members and non-members are drawn together from each side, so they never share a row
    w = _take(with_attr, k_mem + k_non, rng, f"rows with {what}")
    o = _take(without, (n_members - k_mem) + (n_non_members - k_non), rng, f"rows without {what}")
    w, o = rng.permutation(w), rng.permutation(o)
    mem = np.sort(np.concatenate([w[:k_mem], o[: n_members - k_mem]]))
    non = np.sort(np.concatenate([w[k_mem:], o[n_members - k_mem :]]))
    return StudySplit(
        "bias", f"{what} p={share:g}", pool.iloc[mem], pool.iloc[non], dropped=(attribute,)
    )


def iid_counterpart(split: StudySplit, *, rng: np.random.Generator) -> StudySplit:
    """The same records merged and re-split at random at the same sizes."""
    merged = pd.concat([split.members, split.non_members])
    order = rng.permutation(len(merged))
    n = len(split.members)
    return replace(
        split,
        members=merged.iloc[np.sort(order[:n])],
        non_members=merged.iloc[np.sort(order[n:])],
        iid=True,
    )


def spec_without(spec: DatasetSpec, columns: tuple[str, ...]) -> DatasetSpec:
    """The spec with ``columns`` removed (and any reference to them)."""
    if not columns:
        return spec
    data = spec.model_dump()
    data["columns"] = {c: v for c, v in data["columns"].items() if c not in columns}
    data["subgroups"] = [c for c in data["subgroups"] if c not in columns]
    if data.get("source") in columns:
        data["source"] = None
    # the attacker's knowledge: a dropped column is neither known nor secret; an emptied list
    # falls back to the default (every attribute column), a linkability half left empty to none
    for key in ("quasi_identifiers", "sensitive"):
        if data.get(key) is not None:
            data[key] = [c for c in data[key] if c not in columns] or None
    if data.get("linkability") is not None:
        halves = [[c for c in half if c not in columns] for half in data["linkability"]]
        data["linkability"] = halves if all(halves) else None
    return DatasetSpec.model_validate(data)
