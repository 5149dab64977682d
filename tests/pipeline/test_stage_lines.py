"""Progress lines say what a stage really does."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from privacy_gate.generators import create_generator
from privacy_gate.runs.release import RELEASE_STAGES


def _line(state) -> str:
    stage = next(s for s in RELEASE_STAGES if s.name == "sample")
    return stage.describe(state)


def test_file_generator_line_says_it_releases_the_whole_file(small_adult, adult_spec, tmp_path):
    real = pd.read_csv(small_adult / "real.csv")
    real.iloc[:2025].to_csv(tmp_path / "synthetic.csv", index=False)
    generator = create_generator("file", path=str(tmp_path / "synthetic.csv")).fit(
        real.iloc[:100], adult_spec
    )
    state = SimpleNamespace(
        config=SimpleNamespace(generator=SimpleNamespace(n_samples=600)),
        splits=SimpleNamespace(train=real.iloc[:1000]),
        generator=generator,
    )
    line = _line(state)
    assert "2,025" in line and "sampling 600" not in line, line
    assert len(generator.sample(600)) == 2025  # what the line says is what happens

    sampled = create_generator(
        "file", path=str(tmp_path / "synthetic.csv"), whole_file=False, seed=1
    )
    state.generator = sampled.fit(real.iloc[:100], adult_spec)
    assert "sampling 600 of the 2,025 rows" in _line(state)


def test_other_generators_keep_the_plain_line_with_separators():
    state = SimpleNamespace(
        config=SimpleNamespace(generator=SimpleNamespace(n_samples=6000)),
        splits=SimpleNamespace(train=None),
        generator=object(),
    )
    assert _line(state) == "sampling 6,000 synthetic rows"


def test_a_failing_path_is_named_in_the_failure_verdict():
    """A read-only or vanished folder mid-run: the BLOCK names the path and the OS's reason (a path
    the operator chose, never a data value); other foreign errors still give only their type."""
    from privacy_gate.pipeline.stages import failure_verdict

    verdict = failure_verdict(
        PermissionError(13, "Permission denied", "/srv/releases/adult"), stage="publish"
    )
    assert verdict.decision == "BLOCK"
    assert verdict.reasons[0].message == "publish: Permission denied: /srv/releases/adult"
    quiet = failure_verdict(ValueError("age=37 is odd"), stage="fit")
    assert "37" not in quiet.reasons[0].message and "ValueError" in quiet.reasons[0].message
