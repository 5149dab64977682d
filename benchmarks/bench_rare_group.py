"""A rare group near-copied with no subgroups declared: is it held back, and named first?

    nice -n 10 python benchmarks/bench_rare_group.py [--seeds 10]

Adult (bundled, UCI CC BY 4.0) with the example spec's ``subgroups`` removed, shuffled per seed:
12,000 training rows, 6,000 holdout, 6,000 reference, and a release of 12,000 rows drawn from the
remaining records (an independent population sample). In the leak scenario the release's rows of
one race category holding about 1 % of Adult (``Amer-Indian-Eskimo``) are replaced by its training
records, near-copied (Gaussian noise of 0.01 standard deviations on the numeric columns, clipped to
the spec's public ranges; categorical columns exact). The null scenario is the same release
without the copies. Records per seed: the decision, whether the group is flagged, named in the
reasons and named first, the subgroup test's p-value, and the groups flagged (labels only: public
category names or keyed hashes, never a record value).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from _common import ROOT, record

GROUP = (
    "race",
    "Amer-Indian-Eskimo",
)  # a public category (the spec lists it): its name may be shown


def scenario(seed: int, *, leak: bool):
    from privacy_gate.config import load_spec

    spec = load_spec(ROOT / "examples/adult.yaml").model_copy(update={"subgroups": []})
    adult = (
        pd.read_csv(ROOT / "data/adult/adult.csv.gz")
        .sample(frac=1, random_state=seed)
        .reset_index(drop=True)
    )
    train, holdout, reference, rest = (
        adult[:12000],
        adult[12000:18000],
        adult[18000:24000],
        adult[24000:],
    )
    release = rest.sample(n=12000, random_state=seed).reset_index(drop=True)
    n_copied = 0
    if leak:
        col, value = GROUP
        copies = train[train[col] == value].copy()
        rng = np.random.default_rng(seed)
        for c, cs in spec.columns.items():
            if cs.is_numeric:
                noisy = copies[c] + rng.normal(0, 0.01 * adult[c].std(), len(copies))
                copies[c] = noisy.clip(cs.min, cs.max)
        n_copied = len(copies)
        release = (
            pd.concat([release[release[col] != value], copies])
            .sample(frac=1, random_state=seed)
            .reset_index(drop=True)
        )
    return spec, train, holdout, reference, release, n_copied


def run(seed: int, *, leak: bool) -> dict:
    import privacy_gate

    spec, train, holdout, reference, release, n_copied = scenario(seed, leak=leak)
    t0 = time.perf_counter()
    r = privacy_gate.evaluate(
        train=train, holdout=holdout, reference=reference, synthetic=release, spec=spec
    )
    label = "=".join(GROUP)
    v = r.verdict
    sub = next((t for t in v.budget.get("tests", ()) if t["name"] == "subgroups"), {})
    return {
        "seed": seed,
        "leak": leak,
        "copied": n_copied,
        "decision": v.decision,
        "flagged": label in v.flagged_subgroups,
        "named": any(label in c.message for c in v.reasons),
        "named_first": bool(v.reasons) and v.reasons[0].group == label,
        "first_reason": v.reasons[0].message if v.reasons else None,
        "subgroups_pvalue": sub.get("pvalue"),
        "subgroups_level": sub.get("review_level"),
        "audited_groups": sum(1 for k in r.metrics if k.endswith("/membership_test.p_adjusted")),
        "flagged_subgroups": list(v.flagged_subgroups),
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    rows = []
    for leak in (True, False):
        for seed in range(args.seeds):
            row = run(seed, leak=leak)
            rows.append(row)
            print(
                f"{'leak' if leak else 'null'} seed {seed}: {row['decision']}, flagged "
                f"{row['flagged']}, "
                f"named first {row['named_first']}, subgroup p {row['subgroups_pvalue']}, "
                f"flagged groups {row['flagged_subgroups']} ({row['seconds']} s)",
                flush=True,
            )

    def tally(leak: bool) -> dict:
        part = [r for r in rows if r["leak"] == leak]
        return {
            "runs": len(part),
            **{d: sum(r["decision"] == d for r in part) for d in ("APPROVE", "REVIEW", "BLOCK")},
            "group_flagged": sum(r["flagged"] for r in part),
            "group_named": sum(r["named"] for r in part),
            "group_named_first": sum(r["named_first"] for r in part),
            "any_group_flagged": sum(bool(r["flagged_subgroups"]) for r in part),
        }

    record(
        "rare_group",
        {
            "command": f"nice -n 10 python benchmarks/bench_rare_group.py --seeds {args.seeds}",
            "setting": "Adult, spec without subgroups, "
            "12,000 train / 6,000 holdout / 6,000 reference, "
            "release 12,000 rows from the rest; leak: race=Amer-Indian-Eskimo training "
            "records near-copied (0.01 sd)",
            "leak": tally(True),
            "null": tally(False),
            "runs": rows,
        },
    )


if __name__ == "__main__":
    main()
