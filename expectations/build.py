"""Rebuild the committed Great Expectations suites from the example release config.

    python expectations/build.py           # rewrite expectations/adult.{input,synthetic}.json
    python expectations/build.py --check   # exit 1 if a committed suite is stale

The suites are derived from the dataset spec (public domain knowledge) and the gate's
``max_verbatim_copy_share``; they are committed so reviewers can read exactly what is checked.
tests/validation/test_validation.py fails when a committed file differs from what this script
builds.
"""

from __future__ import annotations

import sys
from pathlib import Path

from privacy_gate.config import load_release_config
from privacy_gate.validation import build_input_suite, build_synthetic_suite, dump_suite, load_suite

HERE = Path(__file__).resolve().parent
CONFIGS = [HERE.parent / "examples" / "adult.yaml"]


def suites() -> dict[Path, dict]:
    """Target file -> suite, for every release config in CONFIGS."""
    out: dict[Path, dict] = {}
    for config_path in CONFIGS:
        cfg = load_release_config(config_path)
        spec = cfg.dataset.spec
        out[HERE / f"{spec.name}.input.json"] = build_input_suite(spec)
        out[HERE / f"{spec.name}.synthetic.json"] = build_synthetic_suite(
            spec, max_copy_share=cfg.gate.max_verbatim_copy_share
        )
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, suite in suites().items():
        if check:
            if not path.exists() or load_suite(path) != suite:
                stale.append(path.name)
        else:
            dump_suite(suite, path)
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print(
            f"stale suite(s): {', '.join(stale)}; run python expectations/build.py", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
