"""The gate from Python (a notebook, Airflow, Dagster...): no Prefect, no MLflow, nothing written.

    python examples/evaluate_in_python.py

Splits a sample of the bundled Adult data (UCI, CC BY 4.0 — see data/README.md) into train /
holdout / reference, makes a deliberately leaky "synthetic" table (an independent sample plus
200 copied training rows), and asks the gate. In Jupyter, the returned result renders as the
full HTML report.
"""

from pathlib import Path

import pandas as pd

import privacy_gate

ROOT = Path(__file__).resolve().parents[1]
adult = (
    pd.read_csv(ROOT / "data/adult/adult.csv.gz")
    .sample(n=4000, random_state=0)
    .reset_index(drop=True)
)
train, holdout, reference, outside = adult[:1500], adult[1500:2000], adult[2000:2500], adult[2500:]
synthetic = pd.concat([outside.iloc[:1300], train.iloc[:200]])  # 200 verbatim copies: a leak

result = privacy_gate.evaluate(
    train=train,
    holdout=holdout,
    reference=reference,
    synthetic=synthetic,
    spec=ROOT / "examples/adult.yaml",
    attacks=[{"name": "dcr"}, {"name": "domias"}],
)
print(result)  # GateResult(BLOCK, ...)
print("decision:", result.decision)
print("dcr AUC:", round(result.metrics["dcr.auc"], 3))
print("reasons:", *[c.message for c in result.verdict.reasons], sep="\n  ")
html = result._repr_html_()  # what Jupyter shows
print("report:", len(html), "characters of self-contained HTML")
