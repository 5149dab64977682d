"""Verbatim copies judged against the population's own twins.

A synthetic row equal to a training row is not by itself a leak: in a table of a few categorical
columns many people share all their values (natural twins), so an independent sample of the
population equals some training row often, and equals some holdout row about as often *at the
same size*. The test therefore compares the training split with the holdout at equal size (the
larger one subsampled, seeded): over the distinct synthetic rows that equal a record of exactly
one of the two, a row is as likely to match the training side as the holdout side when nothing
leaks (the two are exchangeable samples of the population; the synthetic data does not depend on
which is which). The one-sided binomial (sign) test of the training side's excess is the p-value.
Records of a random split are negatively associated, which only narrows the count's spread, so
the binomial tail is conservative.

**Panels** (``spec.entity_id``): the split made *people* exchangeable, not person-years, and a
person's rows are matched together (one synthetic person like a real one reproduces several of
their years at once), so the rows' sign test would count one coincidence several times. With an
entity id the two sides are equal numbers of whole people (the larger side's people subsampled,
seeded), and a person is *matched* when any of their rows equals a synthetic row. The matched
set ``M`` is a function of the sampled people and the release alone; given those, under no
leakage, which ``n`` of the ``2n`` people are the training ones is a uniformly random split (the
entity split and the draws are uniform over people), so the training people among ``M`` follow
the hypergeometric law ``H(2n, n, |M|)`` exactly: its upper tail is the p-value (no
approximation, twins on both sides included). ``train_only`` / ``holdout_only`` then count the
matched training / holdout people, ``compared`` the people per side; the shares and
``excess_share`` stay shares of synthetic rows (the block bar reads the release), scaled by the
people sampled.

``excess_share`` estimates the share of synthetic rows that copy a training record beyond the
twin rate (the subsample's excess scaled back to the whole training split): the block bar.

>>> import pandas as pd
>>> from privacy_gate.spec import DatasetSpec
>>> cols = {"a": {"kind": "categorical"}, "b": {"kind": "numeric"}}
>>> spec = DatasetSpec.model_validate({"name": "t", "columns": cols})
>>> train = pd.DataFrame({"a": list("xyzw") * 50, "b": range(200)})
>>> holdout = pd.DataFrame({"a": list("xyzw") * 50, "b": range(1000, 1200)})
>>> t = copy_test(train.iloc[:60], train, holdout, spec, seed=0)
>>> t.pvalue < 1e-9, t.train_only, t.holdout_only
(True, 60, 0)
>>> copy_test(holdout.iloc[:60], train, holdout, spec, seed=0).pvalue == 1.0
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from privacy_gate.data.split import unit_codes, unit_max
from privacy_gate.data.table import row_hashes
from privacy_gate.spec import DatasetSpec


@dataclass(frozen=True)
class CopyTest:
    pvalue: float
    # synthetic rows copying a training record beyond the twin rate (whole training split)
    excess_share: float
    excess_lower: float  # its one-sided 95% lower bound (normal approximation of the sign test)
    train_share: float  # synthetic rows equal to a row of the size-matched training sample
    holdout_share: float  # ... of the size-matched holdout sample
    train_only: int  # distinct synthetic rows matching the training sample only
    holdout_only: int  # ... the holdout sample only
    compared: int  # records per side
    n_pool: int  # training records

    def metrics(self) -> dict[str, float]:
        return {
            "pvalue": self.pvalue,
            "excess_share": self.excess_share,
            "excess_lower": self.excess_lower,
            "train_share": self.train_share,
            "holdout_share": self.holdout_share,
            "train_only": float(self.train_only),
            "holdout_only": float(self.holdout_only),
            "compared": float(self.compared),
            "n_pool": float(self.n_pool),
        }


def _sample(df: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    return df if len(df) <= n else df.iloc[np.sort(rng.choice(len(df), n, replace=False))]


def copy_test(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    spec: DatasetSpec,
    *,
    seed: int = 0,
) -> CopyTest:
    """The sign test of verbatim copies against twins (module docstring). All frames through
    ``conform()``; the entity id is left out (a copied record under a fresh id is a copy)."""
    cols = spec.attribute_columns
    n = min(len(train), len(holdout))
    if n == 0 or len(synthetic) == 0:
        raise ValueError("the copy test needs training, holdout and synthetic records")
    if spec.entity_id is not None:
        return _copy_test_people(synthetic, train, holdout, spec, seed=seed)
    rng = np.random.default_rng(seed)
    t_keys = row_hashes(_sample(train, n, rng)[cols])
    h_keys = row_hashes(_sample(holdout, n, rng)[cols])
    syn = row_hashes(synthetic[cols])
    in_t_rows, in_h_rows = np.isin(syn, t_keys), np.isin(syn, h_keys)
    distinct = np.unique(syn)
    in_t, in_h = np.isin(distinct, t_keys), np.isin(distinct, h_keys)
    b, c = int((in_t & ~in_h).sum()), int((~in_t & in_h).sum())
    p = float(stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue) if b + c else 1.0
    scale = (
        len(train) / n
    )  # a copy of a training record lands in the sample with probability n / len(train)
    excess_rows = float(in_t_rows.mean() - in_h_rows.mean())
    # the sign test's spread on rows: sd of (b - c) is sqrt(b + c) under the null, in distinct rows
    per_row = in_t_rows.sum() / max(
        1, int(in_t.sum())
    )  # synthetic rows per distinct matching value
    half = 1.645 * np.sqrt(b + c) * per_row / len(synthetic)
    return CopyTest(
        pvalue=p,
        excess_share=excess_rows * scale,
        excess_lower=(excess_rows - half) * scale,
        train_share=float(in_t_rows.mean()),
        holdout_share=float(in_h_rows.mean()),
        train_only=b,
        holdout_only=c,
        compared=n,
        n_pool=len(train),
    )


def _sample_people(
    df: pd.DataFrame, codes: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` whole people of ``df`` (all of them when there are no more), with their unit codes."""
    people = int(codes.max()) + 1
    if people <= n:
        return df, codes
    take = np.isin(codes, rng.choice(people, n, replace=False))
    return df[take], codes[take]


def _copy_test_people(
    synthetic: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    spec: DatasetSpec,
    *,
    seed: int,
) -> CopyTest:
    """The panel's copy test (module docstring, "Panels"): people matched, hypergeometric tail."""
    cols = spec.attribute_columns
    codes = [unit_codes(train, spec.entity_id), unit_codes(holdout, spec.entity_id)]
    people = [int(c.max()) + 1 for c in codes]
    n = min(people)
    rng = np.random.default_rng(seed)
    (t_rows, t_codes), (h_rows, h_codes) = (
        _sample_people(df, c, n, rng) for df, c in zip((train, holdout), codes)
    )
    t_keys, h_keys = row_hashes(t_rows[cols]), row_hashes(h_rows[cols])
    syn = row_hashes(synthetic[cols])
    # a person is matched when any of their rows is in the release (unit_max of the row matches)
    b = int(unit_max(np.isin(t_keys, syn).astype(np.int64), t_codes).clip(0).sum())
    c = int(unit_max(np.isin(h_keys, syn).astype(np.int64), h_codes).clip(0).sum())
    p = float(stats.hypergeom.sf(b - 1, 2 * n, n, b + c)) if b else 1.0
    in_t_rows, in_h_rows = np.isin(syn, t_keys), np.isin(syn, h_keys)
    scale = (
        people[0] / n
    )  # a copied training person is among the sampled with probability n / people
    excess_rows = float(in_t_rows.mean() - in_h_rows.mean())
    # the spread of the matched people's difference (at most sqrt(b + c) under no leakage), in rows
    per_person = in_t_rows.sum() / max(1, b)  # synthetic rows per matched training person
    half = 1.645 * np.sqrt(b + c) * per_person / len(synthetic)
    return CopyTest(
        pvalue=p,
        excess_share=excess_rows * scale,
        excess_lower=(excess_rows - half) * scale,
        train_share=float(in_t_rows.mean()),
        holdout_share=float(in_h_rows.mean()),
        train_only=b,
        holdout_only=c,
        compared=n,
        n_pool=people[0],
    )


__all__ = ["CopyTest", "copy_test"]
