"""The small public domain of the fast DP audits (tests and ``bench_dp_audit.py --teeth``):
3 columns, one without public categories (they come from the reference, which holds a value,
'green', the private data never has); 200 private rows drawn with seed 7."""

from __future__ import annotations

import numpy as np
import pandas as pd

from privacy_gate.spec import DatasetSpec


def small_domain() -> tuple[DatasetSpec, pd.DataFrame, pd.DataFrame]:
    """(spec, private data, public reference)."""
    spec = DatasetSpec.model_validate(
        {
            "name": "dpaudit",
            "columns": {
                "colour": {"kind": "categorical", "nullable": False},
                "size": {"kind": "categorical", "categories": ["s", "m", "l"], "nullable": False},
                "age": {
                    "kind": "numeric",
                    "min": 0,
                    "max": 100,
                    "bins": [0, 25, 50, 75, 100],
                    "nullable": False,
                },
            },
        }
    )
    rng = np.random.default_rng(7)
    n = 200
    data = pd.DataFrame(
        {
            "colour": rng.choice(["red", "blue"], n),
            "size": rng.choice(["s", "m", "l"], n),
            "age": rng.integers(0, 100, n).astype(float),
        }
    )
    reference = pd.DataFrame(
        {
            "colour": ["red", "blue", "green"] * 10,
            "size": ["s", "m", "l"] * 10,
            "age": np.linspace(0, 100, 30),
        }
    )
    return spec, data, reference
