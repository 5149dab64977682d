"""The documentation site and the README: `make test` (what CI runs) builds the
site with `mkdocs build --strict` — every warning fails, a broken link or #anchor between pages
included — and checks that every table restating benchmark results is the one
`benchmarks/tables.py` renders from `benchmarks/results/*.json`, so that no table drifts from its
results. Each check is shown to fail on a broken page. No network: the theme and the search
plugin build from the installed packages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import tables  # noqa: E402

README_MAX_LINES = 300


def build(root: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of the project at ``root`` into ``site`` (the theme's end-of-life
    banner silenced: it is printed at start-up, it is not a build warning)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(root / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root,
    )


def warnings_of(out: subprocess.CompletedProcess) -> str:
    text = out.stdout + out.stderr
    return (
        "\n".join(line for line in text.splitlines() if re.match(r"(WARNING|ERROR)\b", line))
        or text
    )


def copy_site_sources(dst: Path) -> Path:
    dst.mkdir(parents=True)
    shutil.copy(ROOT / "mkdocs.yml", dst / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", dst / "docs")
    return dst


def test_the_site_builds_strict(tmp_path):
    out = build(ROOT, tmp_path / "site")
    assert out.returncode == 0, "mkdocs build --strict failed:\n" + warnings_of(out)
    pages = {
        p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("index.html")
    }
    assert "index.html" in pages and "benchmarks/index.html" in pages, sorted(pages)


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    """What the strict build is for: a link to a missing page, or to a missing heading of a page
    that exists, stops it and is named."""
    src = copy_site_sources(tmp_path / "src")
    gate = src / "docs" / "gate.md"
    gate.write_text(
        gate.read_text() + "\nSee [the old page](no-such-page.md) and "
        "[a moved section](configuration.md#no-such-section).\n"
    )
    out = build(src, tmp_path / "site")
    assert out.returncode != 0
    text = warnings_of(out)
    assert "no-such-page.md" in text and "no-such-section" in text, text


def test_every_page_is_in_the_nav_and_the_home_page_is_first():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["strict"] is True and config["docs_dir"] == "docs"

    def pages(nav):
        for item in nav:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            yield from (pages(value) if isinstance(value, list) else [value])

    listed = list(pages(config["nav"]))
    assert listed[0] == "index.md"
    assert sorted(listed) == sorted(p.name for p in (ROOT / "docs").glob("*.md")), (
        "mkdocs.yml's nav and docs/*.md differ"
    )
    assert len(listed) == len(set(listed))


def test_the_generated_tables_are_the_results():
    diffs = tables.drift()
    assert not diffs, (
        "a table differs from benchmarks/results — run `python benchmarks/tables.py --write`"
        " (or re-run the benchmark):\n" + "\n".join(diffs)
    )


def test_every_generated_table_is_on_a_page():
    marked = tables.marked()
    assert set(marked) == set(tables.TABLES), (sorted(marked), sorted(tables.TABLES))


def test_a_drifted_table_or_an_unknown_one_is_caught(tmp_path):
    for page in tables.PAGES:
        (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / page, tmp_path / page)
    assert tables.drift(tmp_path) == []
    page = tmp_path / "docs" / "benchmarks.md"
    text = page.read_text()
    assert "| 4,437 (5.1 %) |" in text
    page.write_text(text.replace("| 4,437 (5.1 %) |", "| 4,500 (5.1 %) |"))
    diffs = tables.drift(tmp_path)
    assert len(diffs) == 1 and "docs/benchmarks.md" in diffs[0] and "-| near copies 5 %" in diffs[0]
    # a hand edit outside the markers is not the generator's business
    page.write_text(text + "\nA figure in prose: 4,500.\n")
    assert tables.drift(tmp_path) == []
    page.write_text(text + "\n<!-- table:no_such_table -->\n<!-- /table -->\n")
    with pytest.raises(KeyError, match="no_such_table"):
        tables.drift(tmp_path)


def test_the_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_text()
    lines = readme.splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
    )
    headings = [line[3:] for line in lines if line.startswith("## ")]
    for wanted in (
        "Two commands",
        "Gate your own table",
        "Exit codes",
        "Reading a verdict",
        "The reviewer's path",
        "Where the rest lives",
    ):
        assert any(h.startswith(wanted) for h in headings), (
            f"README has no section {wanted!r}: {headings}"
        )
    missing = [
        link
        for link in re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
        if not (ROOT / link).exists()
    ]
    assert not missing, f"README links to missing pages: {missing}"
    linked = {Path(link).name for link in re.findall(r"\]\(docs/([^)#]+\.md)", readme)}
    unlinked = sorted(p.name for p in (ROOT / "docs").glob("*.md") if p.name not in linked)
    assert not unlinked, f"README's 'Where the rest lives' does not link {unlinked}"
