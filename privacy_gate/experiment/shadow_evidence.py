"""What the generator-aware test shows for a record: its score on the release against its own scores
in the shadow releases without it and with it (scores and row ids only, never record values)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

#: named (or most exposed) records whose shadow scores the report plots
EVIDENCE_RECORDS = 6


def record_evidence(
    records: pd.DataFrame, real: np.ndarray, shadow: np.ndarray, member: np.ndarray
) -> list[dict[str, Any]]:
    """The named records (else the most exposed by z), each with its real score and its scores in
    the shadows without it and with it: what the report plots and words."""
    order = np.lexsort((-records["z"].to_numpy(), ~records["named"].to_numpy()))[:EVIDENCE_RECORDS]
    out = []
    for i in order:
        outs, ins = shadow[i][~member[i]], shadow[i][member[i]]
        out.append(
            {
                "row_id": int(records["row_id"].iloc[i]),
                "named": bool(records["named"].iloc[i]),
                "p_value": float(records["p_value"].iloc[i]),
                "real": float(real[i]),
                "out": [float(v) for v in outs],
                "in": [float(v) for v in ins],
                "out_below": int(np.sum(outs < real[i])),
            }
        )
    return out


def evidence_sentence(item: Mapping[str, Any]) -> str:
    """One record's evidence in words.

    >>> item = {"row_id": 7, "real": 3.0, "out": [1.0, 2.0], "in": [3.5], "out_below": 2}
    >>> evidence_sentence(item)
    'record 7: its score on the release is higher than in all 2 shadow releases...'
    """
    n_out, below = len(item["out"]), item["out_below"]
    share = f"all {n_out}" if below == n_out else f"{below} of the {n_out}"
    text = (
        f"record {item['row_id']}: its score on the release is higher than in {share} shadow "
        "releases that never saw it"
    )
    if item["in"]:
        text += f" ({len(item['in'])} that did score {float(np.mean(item['in'])):.3g} on average)"
    return text


__all__ = ["EVIDENCE_RECORDS", "evidence_sentence", "record_evidence"]
