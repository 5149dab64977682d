"""``privacy_gate.evaluate``: the documented example runs without Prefect or MLflow imported."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "evaluate_in_python.py"

PROBE = f"""
import runpy, sys, json
runpy.run_path({str(EXAMPLE)!r}, run_name="__main__")
heavy = sorted(m for m in ("prefect", "mlflow") if m in sys.modules)
print("MODULES=" + json.dumps(heavy))
"""


def test_example_runs_without_prefect_or_mlflow():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=600, env=env
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert json.loads(lines[-1].removeprefix("MODULES=")) == []
    assert "decision: BLOCK" in lines  # 200 copied training rows are caught
    assert any(line.startswith("report:") and int(line.split()[1]) > 10_000 for line in lines)


def test_evaluate_result_has_the_verdict_and_the_parts(adult_full, adult_spec):
    import privacy_gate

    rows = adult_full.sample(n=2400, random_state=1).reset_index(drop=True)
    train, holdout, reference, outside = rows[:800], rows[800:1200], rows[1200:1600], rows[1600:]
    result = privacy_gate.evaluate(
        train=train,
        holdout=holdout,
        reference=reference,
        synthetic=outside,
        spec=adult_spec,
        attacks=[{"name": "dcr"}, {"name": "domias"}],
    )
    assert result.decision in ("APPROVE", "REVIEW") and result.verdict.status == "ok", result
    assert [o.name for o in result.outcomes] == ["dcr", "domias"]
    assert abs(result.metrics["dcr.auc"] - 0.5) < 0.1
    scores = result.scores()
    assert list(scores.columns) == [
        "row_id",
        "member",
        "dcr_score",
        "domias_score",
    ]  # keyed by row id, no values
    assert set(result.timings) >= {
        "validate_synthetic",
        "targets",
        "attacks",
        "mace",
        "audit",
        "decide",
    }


def test_evaluate_fails_closed_with_the_stage(adult_full, adult_spec):
    import privacy_gate

    rows = adult_full.sample(n=600, random_state=2).reset_index(drop=True)
    result = privacy_gate.evaluate(
        train=rows[:200],
        holdout=rows[200:220],
        reference=rows[220:400],
        synthetic=rows[400:],
        spec=adult_spec,
        attacks=[{"name": "dcr"}],
    )
    assert result.decision == "BLOCK" and result.verdict.status == "error"
    # 20 holdout rows: below the 30 targets per class anything needs (between 30 and
    # targets.min_per_class the gate runs and REVIEWs for insufficient evidence:
    # tests/gate/test_small_tables.py)
    assert result.verdict.reasons[0].message.startswith(
        "targets: only 20 member and 20 non-member targets"
    )


def test_an_attack_that_saw_too_few_columns_blocks(adult_full):
    """Most columns constant in the reference data: the encoders drop them; the gate must not
    read the resulting scores as 'no leakage'."""
    import privacy_gate
    from privacy_gate.spec import DatasetSpec

    numeric = ["age", "fnlwgt", "education_num", "capital_gain", "hours_per_week"]
    spec = DatasetSpec.model_validate(
        {
            "name": "narrow",
            "columns": {
                **{c: {"kind": "numeric"} for c in numeric},
                "sex": {"kind": "categorical", "categories": ["Female", "Male"]},
            },
        }
    )
    rows = adult_full[numeric + ["sex"]].sample(n=2400, random_state=3).reset_index(drop=True)
    reference = rows[1200:1600].copy()
    for col in numeric:
        reference[col] = reference[col].iloc[0]
    result = privacy_gate.evaluate(
        train=rows[:800],
        holdout=rows[800:1200],
        reference=reference,
        synthetic=rows[1600:],
        spec=spec,
        attacks=[{"name": "dcr"}, {"name": "domias"}],
    )
    assert result.decision == "BLOCK", result
    assert any(
        c.metric == "scores" and "dropped as constant" in c.message for c in result.verdict.reasons
    )


def test_scoring_in_chunks_gives_the_same_figures_and_uses_the_mapper(adult_full, adult_spec):
    """runner.score_chunks: each attack scores its targets in parts through the executor's map
    (one task per part on a cluster); every figure equals the one-call scoring."""
    import privacy_gate
    from privacy_gate.pipeline.executor import LocalExecutor

    class Counting(LocalExecutor):
        def __init__(self):
            super().__init__(max_workers=2)
            self.maps = []

        def map(self, name, fn, items, /):
            items = list(items)
            self.maps.append((name, len(items)))
            return super().map(name, fn, items)

    rows = adult_full.sample(n=2400, random_state=2).reset_index(drop=True)
    parts = dict(
        train=rows[:800],
        holdout=rows[800:1200],
        reference=rows[1200:1600],
        synthetic=rows[1600:],
        spec=adult_spec,
        attacks=[{"name": "dcr_ratio"}, {"name": "domias"}],
    )
    whole = privacy_gate.evaluate(**parts)
    ex = Counting()
    chunked = privacy_gate.evaluate(**parts, executor=ex, score_chunks=3)
    ex.shutdown()
    assert sorted(ex.maps) == [("score-dcr_ratio", 3), ("score-domias", 3)]
    assert chunked.metrics.keys() == whole.metrics.keys()
    assert all(chunked.metrics[k] == whole.metrics[k] for k in whole.metrics), [
        k for k in whole.metrics if chunked.metrics[k] != whole.metrics[k]
    ]
    assert chunked.decision == whole.decision
