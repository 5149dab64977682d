"""PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao, TODS 42(4), 2017) under pure epsilon-DP.

PrivBayes approximates the data distribution by a Bayesian network of degree k and releases
noisy versions of its d conditional distributions; synthetic rows are drawn from the network.
Neighbouring datasets differ in one record with n public (bounded DP), as in the paper. All
counting is on the discretised data (``Discretizer``: public bins from the spec or the reference
split, never the train split).

Budget split (``beta`` = 0.5 by default, the paper's choice):

1. **Network learning, epsilon_1 = beta * epsilon** (GreedyBayes). The first attribute is drawn
   uniformly at random (no data, no cost). Each of the d - 1 following steps draws one
   attribute-parent pair (X, Pi) -- X not yet in the network V, Pi a subset of V of size
   min(k, |V|) -- with the exponential mechanism at epsilon_1 / (d - 1). The score is the mutual
   information I(X; Pi) in bits with the sensitivity of the paper's Lemma (n records):
   ``(1/n) log2 n + ((n-1)/n) log2(n/(n-1))`` when X or Pi has a binary domain, else
   ``(2/n) log2((n+1)/2) + ((n-1)/n) log2((n+1)/(n-1))``; or (``score="r"``) the R score of the
   paper's general-domain section, ``R = 1/2 ||P[X, Pi] - P[X] P[Pi]||_1``, with sensitivity
   ``3/n + 2/n^2``. Each candidate's score is divided by its own sensitivity (a score of
   sensitivity 1), so candidates with different domains compete fairly:
   P(X, Pi) ~ exp(epsilon_step * score / (2 * sensitivity)).
   Binary-ness is read off the *public* domain sizes, not off the data.
2. **Conditionals, epsilon_2 = (1 - beta) * epsilon.** For every AP pair the (|Pi|+1)-way
   normalised table P[X, Pi] (L1 sensitivity 2/n) gets Laplace noise of scale 2d / (n epsilon_2),
   i.e. epsilon_2 / d per table, d tables (the general-domain version of the paper and of the
   authors' code; the binary-only variant of Algorithm 1 derives the first k conditionals from the
   (k+1)-th table instead, which needs nested parent sets we do not have with heterogeneous
   domains). Negative cells are clipped to 0 and each parent configuration's row is normalised
   into P*(X | Pi); an all-zero row becomes uniform. The first attributes simply have fewer
   parents (attribute i has at most min(k, i - 1)), so their tables are smaller.

Degree k by theta-usefulness (theta = 4 by default). A noisy table is theta-useful when its
average cell mass, 1 / |dom(X, Pi)|, is at least theta times the noise scale 2d / (n epsilon_2),
i.e. ``|dom(X, Pi)| <= tau = n epsilon_2 / (2 d theta)``. For binary domains this is the paper's
rule ``n epsilon_2 / (d 2^(k+2)) >= theta`` (its SIGMOD form n epsilon / ((d-k) 2^(k+3)) uses the
total epsilon = 2 epsilon_2 and d - k tables). For general domains we take

    k = the largest k with  m^(k+1) <= tau,   m = geometric mean of the public domain sizes,

raised to 1 when some pair of attributes fits (|dom(X)| |dom(Y)| <= tau: "k >= 1 when possible"),
and, as in the paper's general-domain version (maximal parent sets), a candidate (X, Pi) is only
offered when |dom(X)| |dom(Pi)| <= tau; a child with no fitting parent set of size min(k, |V|) is
offered the largest smaller sets that fit (down to the empty set). So k and the table sizes shrink
as epsilon shrinks. ``degree=`` overrides k (tau still applies).

Deviation (documented): tau is also capped at n / theta -- the same usefulness ratio for the
*sampling* error, i.e. a table's average cell must hold at least theta records -- and at
``_MAX_CELLS`` cells for memory. The paper's rule only weighs the DP noise, so at large epsilon it
allows tables with more cells than records (e.g. 4,166 cells for 1,000 rows at epsilon 1000), on
which the plug-in mutual information is inflated and the conditionals memorise single records;
on Adult with 1,000 rows that made PrivBayes worse than independent marginals, with the cap it is
clearly better. n is public (bounded DP), so the cap costs no privacy.

Speed (deviation, documented): when V has more than ``max_parent_sets`` subsets of the wanted
size, a uniform random sample of that many distinct subsets is offered at that step (public
randomness, so still DP). All counting is vectorised with ``np.bincount`` on codes folded with
``np.ravel_multi_index``; sampling is ancestral and vectorised (inverse CDF per row).

Focal points (MAMA-MIA): one ``FocalPoint(kind="conditional", columns=(child, *parents))`` per AP
pair, parents in spec column order, including the first attribute with no parents.
``select_focal_points`` runs the network learning only and spends exactly epsilon_1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from math import comb
from typing import Literal, Self

import numpy as np
import pandas as pd

from privacy_gate.generators.accounting import PureDPAccountant
from privacy_gate.generators.base import register_generator
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.generators.marginal import DiscretizedGenerator
from privacy_gate.generators.measurements import NoisyMeasurement, identity_map
from privacy_gate.params import (
    Field,
    Fraction,
    NonNegativeInt,
    OpenFraction,
    Params,
    PositiveInt,
    PositiveNumber,
    Seed,
)
from privacy_gate.spec import DatasetSpec

_MAX_CELLS = 2**20  # memory cap on one (child, parents) table, whatever tau allows
_SCORES = ("mi", "r")


# ---------------------------------------------------------------------------------------- budget
def budget_split(epsilon: float, beta: float, d: int) -> tuple[float, float]:
    """(epsilon_1 for the network, epsilon_2 for the conditionals); one attribute: no network."""
    if d <= 1:
        return 0.0, float(epsilon)
    return beta * epsilon, (1.0 - beta) * epsilon


def mi_sensitivity(n: int, child_size: int, parents_size: int) -> float:
    """Sensitivity of I(X; Pi) in bits (PrivBayes, Lemma on the sensitivity of I; n >= 2)."""
    if child_size == 2 or parents_size == 2:
        return math.log2(n) / n + (n - 1) / n * math.log2(n / (n - 1))
    return 2 / n * math.log2((n + 1) / 2) + (n - 1) / n * math.log2((n + 1) / (n - 1))


def r_sensitivity(n: int) -> float:
    """Sensitivity of the R score 1/2 ||P[X, Pi] - P[X] P[Pi]||_1 (PrivBayes, general domains)."""
    return 3 / n + 2 / n**2


def theta_degree(*, n: int, epsilon2: float, theta: float, domain: list[int]) -> tuple[int, float]:
    """(k, tau): the theta-useful degree and cell budget of one noisy table (see the module doc)."""
    d = len(domain)
    # DP noise: average cell mass 1/cells >= theta * noise scale 2d/(n eps2); sampling error (our
    # addition, it dominates at large epsilon): average cell count n/cells >= theta
    tau = min(n * epsilon2 / (2 * d * theta), n / theta, float(_MAX_CELLS))
    if d <= 1:
        return 0, tau
    gmean = math.exp(sum(math.log(s) for s in domain) / d)
    k = 0
    while k + 1 <= d - 1 and gmean ** (k + 2) <= tau:
        k += 1
    if k == 0 and math.prod(sorted(domain)[:2]) <= tau:
        k = 1  # some pair is theta-useful: allow one parent where it fits
    return k, tau


# ------------------------------------------------------------------------------ network learning
@dataclass(frozen=True)
class Network:
    """AP pairs in network (sampling) order; parents are column indices in ascending order."""

    pairs: tuple[tuple[int, tuple[int, ...]], ...]
    degree: int
    tau: float


def _parent_pool(
    V: list[int], size: int, cap: int, rng: np.random.Generator
) -> list[tuple[int, ...]]:
    """All subsets of V of ``size``, or ``cap`` distinct ones drawn uniformly when there are
    more."""
    if size == 0:
        return [()]
    if comb(len(V), size) <= cap:
        return [tuple(sorted(c)) for c in combinations(V, size)]
    Va = np.asarray(V)
    found: dict[tuple[int, ...], None] = {}
    while len(found) < cap:  # random subsets = first `size` of a random permutation per row
        rows = np.sort(Va[np.argsort(rng.random((2 * cap, len(V))), axis=1)[:, :size]], axis=1)
        for row in rows:
            found.setdefault(tuple(int(v) for v in row), None)
            if len(found) == cap:
                break
    return list(found)


def _family_scores(
    codes: np.ndarray,
    dom: np.ndarray,
    parents: tuple[int, ...],
    children: list[int],
    score: str,
    clogc: np.ndarray,
) -> np.ndarray:
    """Score of (X, parents) for every X in ``children``, one bincount over all children at once."""
    n = codes.shape[0]
    if not parents:
        return np.zeros(len(children))
    pc = np.ravel_multi_index(codes[:, parents].T, dom[list(parents)])
    n_conf = int(np.prod(dom[list(parents)]))
    if n_conf > n:  # sparse parent configurations: compact them so the joint tables stay small
        _, pc = np.unique(pc, return_inverse=True)
        n_conf = int(pc.max()) + 1
    p_counts = np.bincount(pc, minlength=n_conf)
    sizes = dom[children]
    seg = n_conf * sizes
    offsets = np.concatenate([[0], np.cumsum(seg)[:-1]])
    joint = (offsets[:, None] + pc[None, :] * sizes[:, None] + codes[:, children].T).ravel()
    jc = np.bincount(joint, minlength=int(seg.sum()))
    if score == "mi":  # I = H(X) + H(Pi) - H(X, Pi), in bits, from sum c log2 c
        s_joint = np.add.reduceat(clogc[jc], offsets)
        s_child = np.array(
            [clogc[np.bincount(codes[:, x], minlength=dom[x])].sum() for x in children]
        )
        s_par = clogc[p_counts].sum()
        return np.maximum((n * math.log2(n) + s_joint - s_child - s_par) / n, 0.0)
    out = np.empty(len(children))
    pp = p_counts / n
    for i, x in enumerate(children):  # R = sum of the positive parts of P[X, Pi] - P[X] P[Pi]
        px = np.bincount(codes[:, x], minlength=dom[x]) / n
        diff = jc[offsets[i] : offsets[i] + seg[i]] / n - (pp[:, None] * px[None, :]).ravel()
        out[i] = diff[diff > 0].sum()
    return out


def learn_network(
    codes: np.ndarray,
    dom: np.ndarray,
    *,
    epsilon1: float,
    epsilon2: float,
    theta: float,
    degree: int | None,
    score: str,
    max_parent_sets: int,
    accountant: PureDPAccountant,
    rng: np.random.Generator,
) -> Network:
    """GreedyBayes with the exponential mechanism; charges epsilon_1 to ``accountant`` in d-1
    steps."""
    n, d = codes.shape
    k, tau = theta_degree(n=n, epsilon2=epsilon2, theta=theta, domain=[int(s) for s in dom])
    if degree is not None:
        k = min(degree, d - 1)
    first = int(rng.integers(d))  # uniform, data-independent: no privacy cost
    V, pairs = [first], [(first, ())]
    remaining = [j for j in range(d) if j != first]
    clogc = np.zeros(n + 1)
    clogc[1:] = np.arange(1, n + 1) * np.log2(np.arange(1, n + 1))
    eps_step = epsilon1 / (d - 1) if d > 1 else 0.0
    for step in range(1, d):
        size0 = min(k, len(V))
        pools: dict[int, list[tuple[int, ...]]] = {}
        by_parents: dict[tuple[int, ...], list[int]] = {}
        for x in remaining:  # the largest parent sets (<= size0) whose table fits tau
            for size in range(size0, -1, -1):
                if size not in pools:
                    pools[size] = _parent_pool(V, size, max_parent_sets, rng)
                fits = [p for p in pools[size] if dom[x] * math.prod(int(dom[q]) for q in p) <= tau]
                if fits or size == 0:
                    for p in fits or [()]:
                        by_parents.setdefault(p, []).append(x)
                    break
        cand, util = [], []
        for p, children in by_parents.items():
            scores = _family_scores(codes, dom, p, children, score, clogc)
            psize = math.prod(int(dom[q]) for q in p)
            for x, s in zip(children, scores):
                sens = mi_sensitivity(n, int(dom[x]), psize) if score == "mi" else r_sensitivity(n)
                cand.append((x, p))
                util.append(s / sens)  # a score of sensitivity 1
        logits = eps_step * np.asarray(util) / 2.0
        probs = np.exp(logits - logits.max())
        pick = int(rng.choice(len(cand), p=probs / probs.sum()))
        accountant.exponential(eps_step, step=f"network[{step}]")
        x, p = cand[pick]
        pairs.append((x, p))
        V.append(x)
        remaining.remove(x)
    return Network(pairs=tuple(pairs), degree=k, tau=tau)


# --------------------------------------------------------------------- conditionals and sampling
def measure_conditionals(
    codes: np.ndarray,
    dom: np.ndarray,
    network: Network,
    *,
    epsilon2: float,
    accountant: PureDPAccountant,
    rng: np.random.Generator,
    names: list[str],
    record: list[NoisyMeasurement] | None = None,
) -> list[np.ndarray]:
    """Noisy P*(X | Pi) per AP pair, shape (configurations of Pi, |X|); epsilon_2 / d per table."""
    n, d = codes.shape
    scale = 2 * d / (n * epsilon2)  # on the normalised table, whose L1 sensitivity is 2/n
    out = []
    for x, parents in network.pairs:
        axes = [*parents, x]  # parents first: rows are parent configurations
        dims = dom[axes]
        counts = np.bincount(
            np.ravel_multi_index(codes[:, axes].T, dims), minlength=int(np.prod(dims))
        )
        noisy = counts / n + rng.laplace(0.0, scale, counts.size)
        accountant.laplace(scale, step=f"conditional[{names[x]}]", sensitivity=2 / n)
        if record is not None:  # what sampling reads, before clipping (white-box DP audits)
            record.append(
                NoisyMeasurement(
                    columns=tuple(names[a] for a in axes),
                    index=tuple(axes),
                    maps=tuple(identity_map(s) for s in dims),
                    shape=tuple(int(s) for s in dims),
                    values=noisy.copy(),
                    noise="laplace",
                    scale=scale,
                    normaliser=float(n),
                )
            )
        table = np.clip(noisy, 0.0, None).reshape(-1, int(dom[x]))
        sums = table.sum(axis=1, keepdims=True)
        out.append(np.where(sums > 0, table / np.where(sums > 0, sums, 1.0), 1.0 / dom[x]))
    return out


def sample_codes(
    network: Network,
    conditionals: list[np.ndarray],
    dom: np.ndarray,
    n: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Ancestral sampling in network order, vectorised: inverse CDF of each row's conditional."""
    out = np.zeros((n, len(dom)), dtype=np.int64)
    for (x, parents), cond in zip(network.pairs, conditionals):
        conf = (
            np.ravel_multi_index(out[:, list(parents)].T, dom[list(parents)])
            if parents
            else np.zeros(n, dtype=np.int64)
        )
        cdf = np.cumsum(cond, axis=1)
        cdf[:, -1] = 1.0
        # rows laid end to end: row r occupies (r, r + 1], so one searchsorted serves every row
        flat = (cdf + np.arange(cdf.shape[0])[:, None]).ravel()
        idx = np.searchsorted(flat, conf + rng.random(n), side="right")
        out[:, x] = np.minimum(idx - conf * cond.shape[1], cond.shape[1] - 1)
    return out


# ------------------------------------------------------------------------------------ generator
class PrivBayesParams(Params):
    epsilon: PositiveNumber = Field(1.0, description="privacy budget epsilon (finite, > 0)")
    delta: Fraction = Field(
        1e-9, lt=1, description="ignored: PrivBayes is pure epsilon-DP (accepted in [0, 1))"
    )
    n_bins: PositiveInt = Field(
        20,
        ge=2,
        description="equal-depth bins per continuous column (from public knowledge or the "
        "reference split)",
    )
    seed: Seed | None = Field(
        None,
        description="seed of the generator's randomness (None: fresh entropy; DP noise is always "
        "fresh)",
    )
    beta: OpenFraction = Field(0.5, description="share of epsilon spent on learning the network")
    theta: PositiveNumber = Field(4.0, description="theta-usefulness that picks the degree k")
    score: Literal["mi", "r"] = Field(
        "mi", description="network score: mutual information or the R score"
    )
    degree: NonNegativeInt | None = Field(
        None, description="parents per attribute (None: chosen by theta-usefulness)"
    )
    max_parent_sets: PositiveInt = Field(
        300, description="candidate parent sets scored per attribute"
    )


@register_generator("privbayes")
class PrivBayesGenerator(DiscretizedGenerator):
    """PrivBayes (Zhang et al., TODS 2017) under pure epsilon-DP; see the module doc.

    ``beta``: share of epsilon for the network; ``theta``: usefulness threshold choosing the degree
    k; ``score``: "mi" (mutual information) or "r"; ``degree``: fixed k instead of theta-usefulness;
    ``max_parent_sets``: parent sets offered per step at most (sampled when there are more).
    ``delta`` is accepted for a uniform generator API and ignored: PrivBayes is pure DP (delta 0).
    """

    neighbours = "replace_one"  # bounded DP: n is public (as in the paper)
    params_model = PrivBayesParams

    _min_rows = 2  # the score sensitivities need n >= 2

    @property
    def privacy(self) -> dict[str, float]:
        return {
            "epsilon": float(self.epsilon),
            "delta": 0.0,
        }  # pure DP: the delta setting is unused

    def _learn(
        self, codes: np.ndarray, accountant: PureDPAccountant, rng: np.random.Generator
    ) -> Network:
        """The selection step shared by fit() and select_focal_points()."""
        eps1, eps2 = budget_split(float(self.epsilon), float(self.beta), codes.shape[1])
        return learn_network(
            codes,
            self._domain(),
            epsilon1=eps1,
            epsilon2=eps2,
            theta=float(self.theta),
            degree=self.degree,
            score=self.score,
            max_parent_sets=int(self.max_parent_sets),
            accountant=accountant,
            rng=rng,
        )

    def _focal_points(self, network: Network) -> list[FocalPoint]:
        cols = self.discretizer_.columns_
        return sorted(
            FocalPoint(kind="conditional", columns=(cols[x], *(cols[p] for p in parents)))
            for x, parents in network.pairs
        )

    def select_focal_points(self, data: pd.DataFrame, rng: np.random.Generator) -> list[FocalPoint]:
        """Network learning only, on ``data``, with a fresh accountant: spends beta * epsilon.

        (With a single attribute there is no network and nothing is spent.) The accountant and
        the network are kept in ``selection_accountant_`` / ``selection_network_`` for audits.
        """
        codes = self._codes(data, "shadow")
        eps1, _ = budget_split(float(self.epsilon), float(self.beta), codes.shape[1])
        accountant = PureDPAccountant(eps1 if eps1 > 0 else float(self.epsilon))
        network = self._learn(codes, accountant, rng)
        self.selection_accountant_, self.selection_network_ = accountant, network
        return self._focal_points(network)

    def fit(
        self, train: pd.DataFrame, spec: DatasetSpec, *, reference: pd.DataFrame | None = None
    ) -> Self:
        rng, codes = self._start_fit(train, spec, reference)
        accountant = PureDPAccountant(float(self.epsilon))
        network = self._learn(codes, accountant, rng)
        eps2 = accountant.remaining  # what the network left: (1 - beta) * epsilon
        measured: list[NoisyMeasurement] = []
        cols = self.discretizer_.columns_
        self.conditionals_ = measure_conditionals(
            codes,
            self._domain(),
            network,
            epsilon2=eps2,
            accountant=accountant,
            rng=rng,
            names=cols,
            record=measured,
        )
        self.network_ = network
        self.degree_ = network.degree
        self.parents_ = {cols[x]: tuple(cols[p] for p in parents) for x, parents in network.pairs}
        self.order_ = [cols[x] for x, _ in network.pairs]
        self.focal_points_ = self._focal_points(network)
        self.accountant_ = accountant
        self.measurements_ = tuple(measured)
        self._sample_rng = rng.spawn(1)[
            0
        ]  # sample(seed=None) after a seeded fit stays reproducible
        return self

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        rng = self._sampling_rng(n, seed, fitted_attr="network_")
        return self._decode(
            sample_codes(self.network_, self.conditionals_, self._domain(), int(n), rng), rng
        )
