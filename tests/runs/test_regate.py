"""The suppression re-gate judges with the original run's recorded settings: the generator's
*actual* privacy guarantee (not a config value) and the same attacks, MAMA-MIA oracle included.

Runs the library pipeline directly (no Prefect): release_run with the local executor, then
regate_run on the recorded run.
"""

import json

import pytest
import yaml

from privacy_gate import names, tracking
from privacy_gate.config import load_release_config
from privacy_gate.generators import register_generator
from privacy_gate.generators.external import FileGenerator
from privacy_gate.generators.focal import FocalPoint
from privacy_gate.runs.regate import regate_run
from privacy_gate.runs.release import release_run

from ..conftest import EXAMPLE, lighten

ACTUAL_EPSILON = 0.7


@register_generator("test_dp_file")
class DPFileGenerator(FileGenerator):
    """A file release that reports a DP guarantee and focal points (as a marginal generator would):
    its epsilon comes from the generator, not from any config value."""

    privacy = {"epsilon": ACTUAL_EPSILON, "delta": 0.0}

    FOCAL = [FocalPoint("marginal", ("sex", "race")), FocalPoint("marginal", ("education",))]

    def select_focal_points(self, data, rng):
        return list(self.FOCAL)

    def fit(self, train, spec, *, reference=None):
        super().fit(train, spec, reference=reference)
        self.focal_points_ = self.select_focal_points(train, None)
        return self


@pytest.fixture(scope="module")
def recorded_run(small_adult, tmp_path_factory):
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw["dataset"]["path"] = str(small_adult / "real.csv")
    raw["generator"] = {"name": "test_dp_file", "path": str(small_adult / "independent.csv")}
    raw["attacks"] = [{"name": "dcr"}, {"name": "mama_mia", "n_shadow": 4}]
    raw["audit"] = {"intersections": []}
    cfg = small_adult / "regate.yaml"
    cfg.write_text(yaml.safe_dump(lighten(raw), sort_keys=False))
    workdir = tmp_path_factory.mktemp("regate-wd")
    result = release_run(load_release_config(cfg), workdir=workdir)
    assert result.verdict.status == "ok", result.verdict.reasons
    return result, workdir


def _settings(uri: str, run_id: str) -> dict:
    return tracking.Tracker(uri=uri, experiment=None).read_json(run_id, names.ART_SETTINGS)


def test_release_records_the_generators_actual_epsilon_and_the_oracle(recorded_run):
    result, _ = recorded_run
    settings = _settings(result.tracking_uri, result.run_id)
    assert settings["privacy"]["epsilon"] == ACTUAL_EPSILON
    assert [a.get("label") or a["name"] for a in settings["attacks"]] == [
        "dcr",
        "mama_mia",
        names.ORACLE_ATTACK,
    ]
    metrics = result.verdict.metrics
    assert "dcr.mace.dp_bound" in metrics and f"{names.ORACLE_ATTACK}.auc" in metrics


def test_regate_uses_the_recorded_epsilon_and_the_same_attacks(recorded_run):
    result, workdir = recorded_run
    rerun = regate_run(
        run_id=result.run_id,
        suppress=["sex=Female"],
        tracking_uri=result.tracking_uri,
        workdir=str(workdir),
    )
    assert rerun.verdict.status == "ok", rerun.verdict.reasons
    before, after = (_settings(result.tracking_uri, r.run_id) for r in (result, rerun))
    assert after["privacy"] == before["privacy"] and after["attacks"] == before["attacks"]
    assert after["oracle_focal_points"] == before["oracle_focal_points"]
    m0, m1 = result.verdict.metrics, rerun.verdict.metrics
    # the DP-bound check ran with the same epsilon, and the oracle attacked the filtered release too
    assert m1["dcr.mace.dp_bound"] == pytest.approx(m0["dcr.mace.dp_bound"])
    assert f"{names.ORACLE_ATTACK}.auc" in m1
    # and the re-gate really judged the filtered release (no Female rows left)
    assert (
        rerun.verdict.data_hashes["synthetic_sha256"]
        != result.verdict.data_hashes["synthetic_sha256"]
    )
    tags = tracking.Tracker(uri=result.tracking_uri, experiment=None).run_tags(rerun.run_id)
    assert tags[names.TAG_RERUN_OF] == result.run_id


def test_edited_verdict_is_refused(recorded_run):
    """Editing verdict.json in the artefact store (e.g. BLOCK -> REVIEW) is detected."""
    from privacy_gate.errors import IntegrityError

    result, _ = recorded_run
    tracker = tracking.Tracker(uri=result.tracking_uri, experiment=None)
    run_id = result.run_id
    verdict = tracker.read_verified_verdict(run_id)
    edited = dict(verdict, verdict="REVIEW" if verdict["verdict"] != "REVIEW" else "APPROVE")
    tracker.log_text(run_id, json.dumps(edited, indent=2), names.ART_VERDICT)
    with pytest.raises(IntegrityError, match="digest"):
        tracker.read_verified_verdict(run_id)
