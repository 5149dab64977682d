"""The remediation ladder's filter rung (``{filter: copies}``): the previous attempt's release,
re-gated as an attempt of its own without the rows that copy training records — the rows
``privacy-gate approve --suppress copies`` removes. Real MLflow stores, no mocks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from privacy_gate import names, tracking
from privacy_gate.config import load_release_config
from privacy_gate.data import conform, read_table
from privacy_gate.errors import ConfigError
from privacy_gate.experiment.agreement import copy_rows
from privacy_gate.experiment.inputs import load_real_data, split_release
from privacy_gate.generators import GeneratorCapabilities, register_generator
from privacy_gate.params import Component, Field, Fraction, Params, Seed
from privacy_gate.publication.publish import list_published, read_quarantined, verify_published
from privacy_gate.runs.remediation import (
    FilterRung,
    check_ladder,
    ladder_rungs,
    remediated_release_run,
)

from ..conftest import write_release_config

COPY_SHARE = 0.1


class PartCopyParams(Params):
    path: str = Field(description="rows of the population that are not in the private table")
    share: Fraction = Field(
        COPY_SHARE, description="share of the release that is training rows, verbatim"
    )
    rare: bool = Field(
        False, strict=True, description="copy the most unusual training rows (else a random draw)"
    )
    seed: Seed | None = Field(None, description="seed of the draw")


@register_generator("test_part_copy")
class PartCopyGenerator(Component):
    """A generator that memorises part of its training data: a release of independent rows of the
    same population in which ``share`` of the rows are training rows, verbatim — drawn at random,
    or (``rare``) the most unusual ones, the records an overfitted model memorises first."""

    params_model = PartCopyParams
    capabilities = GeneratorCapabilities()
    privacy = None

    def fit(self, train: pd.DataFrame, spec, *, reference=None) -> PartCopyGenerator:
        self.independent_ = conform(
            read_table(Path(self.path)), spec, source=self.path, check_identifiers=False
        )
        self.train_ = train.reset_index(drop=True)
        self.spec_ = spec
        return self

    def _unusual_first(self) -> np.ndarray:
        """Training rows by how unusual their categories are (the sum of -log frequencies)."""
        surprise = np.zeros(len(self.train_))
        for name, col in self.spec_.columns.items():
            if not col.is_numeric:
                freq = (
                    self.train_[name]
                    .map(self.train_[name].value_counts(normalize=True))
                    .to_numpy(dtype=float)
                )
                surprise -= np.log(freq)
        return np.argsort(-surprise, kind="stable")

    def sample(self, n: int, seed: int | None = None) -> pd.DataFrame:
        rng = np.random.default_rng(self.seed if seed is None else seed)
        k = round(self.share * n)
        copied = (
            self._unusual_first()[:k]
            if self.rare
            else rng.choice(len(self.train_), k, replace=False)
        )
        rows = pd.concat(
            [
                self.independent_.iloc[rng.choice(len(self.independent_), n - k, replace=False)],
                self.train_.iloc[copied],
            ],
            ignore_index=True,
        )
        return rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)


class BrokenParams(Params):
    seed: Seed | None = Field(None, description="unused")


@register_generator("test_broken_fit")
class BrokenGenerator(Component):
    """A generator whose fit fails: its attempt ends BLOCK before any release is quarantined."""

    params_model = BrokenParams
    capabilities = GeneratorCapabilities()
    privacy = None

    def fit(self, train, spec, *, reference=None):
        raise RuntimeError("the fit failed")


def _config(
    folder: Path, generator: dict, ladder: list[dict], name: str = "filter.yaml", **remediate
):
    return load_release_config(
        write_release_config(
            folder,
            generator,
            name=name,
            remediate={"ladder": ladder, **remediate},
            audit={"intersections": []},
            fast=True,
        )
    )


def _verbatim(frame: pd.DataFrame, train: pd.DataFrame) -> np.ndarray:
    """Which rows of ``frame`` are rows of ``train``, verbatim (every column)."""
    cols = list(train.columns)
    keys = set(map(tuple, train[cols].astype("string").fillna("\x00").to_numpy()))
    return np.array(
        [tuple(r) in keys for r in frame[cols].astype("string").fillna("\x00").to_numpy()],
        dtype=bool,
    )


def _memorising_ladder(folder: Path, workdir: Path, *, share: float, rare: bool):
    """A ladder ``[{filter: copies}]`` after a generator that copies ``share`` of its release from
    the training split; the outcome, the two attempts' runs, their quarantined releases, the
    splits, and which rows of the first release are copies."""
    generator = {
        "name": "test_part_copy",
        "path": str(folder / "independent.csv"),
        "share": share,
        "rare": rare,
        "seed": 3,
    }
    cfg = _config(folder, generator, [{"filter": "copies"}], name=f"filter-{share}-{rare}.yaml")
    result = remediated_release_run(cfg, workdir=workdir)
    client = MlflowClient(tracking.default_tracking_uri(workdir))
    runs = [client.get_run(a["run_id"]) for a in result.ladder["attempts"]]
    # as judged (the quarantined files are written in the input's types: 39, not 39.0)
    source, kept = (
        conform(
            read_quarantined(Path(r.data.tags[names.TAG_QUARANTINE])),
            cfg.dataset.spec,
            source="release",
            check_identifiers=False,
        )
        for r in runs
    )
    splits = split_release(cfg, *load_real_data(cfg))
    return cfg, result, client, runs, source, kept, splits, _verbatim(source, splits.train)


def test_filter_rung_removes_memorised_records_and_its_release_is_published(small_adult, tmp_path):
    """The generator memorised its most unusual training records (5% of the release): blocked; the
    filter rung removes those rows (the same ones ``approve --suppress copies`` removes) and the
    rest passes, is chosen and published, with the ladder and the count in its manifest."""
    cfg, result, client, runs, source, kept, splits, copied = _memorising_ladder(
        small_adult, tmp_path, share=0.05, rare=True
    )
    ledger = result.ladder
    first, filtered = ledger["attempts"]
    assert first["verdict"] == "BLOCK" and first["generator"]["name"] == "test_part_copy"
    assert (
        filtered["filter"] == "copies"
        and filtered["filtered_rung"] == 0
        and filtered["epsilon"] is None
    )
    assert filtered["run_id"] not in (None, first["run_id"]) and "generator" not in filtered
    assert ledger["total_epsilon"] is None and "adaptive" in ledger["caveat"]

    # the copies are gone, and few other rows (copy_rows' level is 1% of a clean release)
    assert copied.sum() >= int(0.05 * len(source))
    assert filtered["rows_before"] == len(source) and filtered["rows_removed"] == len(source) - len(
        kept
    )
    assert copied.sum() <= filtered["rows_removed"] <= copied.sum() + 0.02 * len(source)
    assert not _verbatim(kept, splits.train).any()
    spec = cfg.dataset.spec
    same = copy_rows(
        conform(source, spec, source="release", check_identifiers=False),
        splits.train,
        splits.holdout,
        splits.reference,
        spec,
    )
    assert (
        int(same.sum()) == filtered["rows_removed"]
    )  # the rows `approve --suppress copies` removes

    # its own nested run and verdict, with the count (never a row) recorded
    attempt = runs[1]
    assert attempt.data.tags[names.TAG_KIND] == names.KIND_LADDER_FILTER
    assert attempt.data.tags["mlflow.parentRunId"] == result.ladder_run_id
    assert (
        attempt.data.tags[names.TAG_LADDER_RUNG] == "1"
        and attempt.data.tags[names.TAG_RERUN_OF] == first["run_id"]
    )
    assert attempt.data.tags[names.TAG_VERDICT] == filtered["verdict"]
    assert attempt.data.params["rows_suppressed"] == str(filtered["rows_removed"])
    assert attempt.data.params["suppress"] == "copies"
    recorded = json.loads(
        Path(
            client.download_artifacts(result.ladder_run_id, names.ART_LADDER, str(tmp_path))
        ).read_text()
    )
    assert set(recorded["attempts"][1]) == {
        "rung",
        "filter",
        "filtered_rung",
        "rows_removed",
        "rows_before",
        "epsilon",
        "run_id",
        "verdict",
        "status",
        "utility_quality",
        "reasons",
    }

    # the filtered release passes; only it leaves quarantine
    assert filtered["verdict"] == "APPROVE", filtered["reasons"]
    assert result.verdict.decision == "APPROVE" and ledger["chosen_rung"] == 1
    published = list_published(tmp_path / "published")
    assert len(published) == 1
    manifest = verify_published(published[0])
    assert manifest["run_id"] == filtered["run_id"] and manifest["remediation"]["chosen_rung"] == 1
    assert manifest["attempts"][1] == {
        "rung": 1,
        "run_id": filtered["run_id"],
        "verdict": "APPROVE",
        "epsilon": None,
        "filter": "copies",
        "filtered_rung": 0,
        "rows_removed": filtered["rows_removed"],
    }


def test_filter_rung_that_leaves_copies_publishes_nothing(small_adult, tmp_path):
    """Copies of ordinary records (10%, drawn at random): the filter removes most of them, not the
    ones the population's own near-twins explain, and the gate still holds the rest back."""
    _, result, _, _, source, kept, splits, copied = _memorising_ladder(
        small_adult, tmp_path, share=COPY_SHARE, rare=False
    )
    first, filtered = result.ladder["attempts"]
    assert first["verdict"] == "BLOCK" and filtered["rows_removed"] == len(source) - len(kept)
    left = _verbatim(kept, splits.train).sum()
    assert copied.sum() - left >= 0.6 * copied.sum() and left > 0
    assert filtered["verdict"] != "APPROVE" and result.verdict.decision == filtered["verdict"]
    assert result.published is None and list_published(tmp_path / "published") == []
    if (
        filtered["verdict"] == "REVIEW"
    ):  # the filtered release waits for a reviewer like any REVIEW run
        pending = tracking.Tracker(uri=result.tracking_uri, experiment=None).runs_awaiting_review()
        assert filtered["run_id"] in [r["run_id"] for r in pending]


def test_filter_rung_after_an_attempt_without_a_release_blocks(small_adult, tmp_path):
    cfg = _config(
        small_adult, {"name": "test_broken_fit"}, [{"filter": "copies"}], name="broken.yaml"
    )
    result = remediated_release_run(cfg, workdir=tmp_path)
    first, filtered = result.ladder["attempts"]
    assert first["verdict"] == "BLOCK" and filtered["verdict"] == "BLOCK"
    assert any("made no release to filter" in r for r in filtered["reasons"]), filtered["reasons"]
    assert (
        "rows_removed" not in filtered
        and result.verdict.decision == "BLOCK"
        and result.published is None
    )
    client = MlflowClient(tracking.default_tracking_uri(tmp_path))
    run = client.get_run(
        filtered["run_id"]
    )  # recorded in a run of its own, nested under the ladder
    assert (
        run.data.tags[names.TAG_VERDICT] == "BLOCK"
        and run.data.tags[names.TAG_KIND] == names.KIND_LADDER_FILTER
    )
    assert run.data.tags["mlflow.parentRunId"] == result.ladder_run_id
    assert list_published(tmp_path / "published") == []


def test_filter_rungs_spend_no_epsilon(small_adult):
    cfg = _config(
        small_adult,
        {"name": "copy_train"},
        [{"filter": "copies"}, {"name": "mst", "epsilon": 1.0}, {"filter": "copies"}],
        max_total_epsilon=1.0,
    )
    assert ladder_rungs(cfg)[1] == FilterRung(filter="copies") and ladder_rungs(cfg)[
        3
    ] == FilterRung(filter="copies")
    assert check_ladder(cfg) == [None, None, 1.0, None]


@pytest.mark.parametrize(
    ("ladder", "message"),
    [
        (
            [{"noise": 0.1}, {"filter": "dupes"}],
            r"remediate\.ladder\[1\]: unknown filter 'dupes'; allowed: copies",
        ),
        (
            [{"filter": "Copies"}],
            r"remediate\.ladder\[0\]: unknown filter 'Copies'; allowed: copies",
        ),
        (
            [{"filter": ["copies"]}],
            r"remediate\.ladder\[0\]: unknown filter \['copies'\]; allowed: copies",
        ),
        (
            [{"filter": "copies", "noise": 0.1}],
            r"remediate\.ladder\[0\]: a filter rung has only the key 'filter', not noise",
        ),
        (
            [{"filter": "copies"}, {"filter": "copies"}],
            r"remediate\.ladder\[1\]: a filter rung must follow a generator attempt "
            r".*remediate\.ladder\[0\]",
        ),
    ],
)
def test_bad_filter_rungs_are_config_errors(small_adult, ladder, message):
    with pytest.raises(ConfigError, match=message):
        _config(small_adult, {"name": "noisy_copy"}, ladder, name="bad-filter.yaml")
