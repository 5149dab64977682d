"""The locked environment: requirements.lock pins every package of pyproject.toml's
dependencies and its dev and production extras (`make lock` writes it, `make install` installs with
it as constraints), it agrees with pyproject.toml, and the venv running the suite is the locked one
— the golden figures were computed with these versions, so a drifted venv fails here, loudly, rather
than as a figure moved by 1e-6 in tests/pipeline/test_golden.py. No network."""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"
# the platform the lock is resolved for (Makefile, `make lock`: --python-version 3.11
# --python-platform x86_64-unknown-linux-gnu); markers of pyproject.toml are evaluated for it
TARGET = {
    **default_environment(),
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "os_name": "posix",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
}
LOCKED_EXTRAS = ("dev", "production")
# the libraries whose versions the golden figures depend on most
CORE = ("numpy", "pandas", "scipy", "scikit-learn", "torch")
REINSTALL = "run `make install` (it reinstalls from requirements.lock; the stamp depends on it)"


def parse_lock(text: str) -> tuple[dict[str, Version], list[str]]:
    """{canonical name: pinned version} of a lock file, and what is wrong with its lines: a line
    that is not `name==version` (a range, a wildcard, extras, a URL, a marker), a name pinned
    twice."""
    pins: dict[str, Version] = {}
    problems: list[str] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as e:
            problems.append(f"line {n}: not a requirement: {raw!r} ({e})")
            continue
        specs = list(req.specifier)
        if (
            len(specs) != 1
            or specs[0].operator != "=="
            or specs[0].version.endswith(".*")
            or req.extras
            or req.url
            or req.marker
        ):
            problems.append(f"line {n}: not pinned as name==version: {raw!r}")
            continue
        name = canonicalize_name(req.name)
        if name in pins:
            problems.append(f"line {n}: {name} pinned twice ({pins[name]} and {specs[0].version})")
            continue
        pins[name] = Version(specs[0].version)
    return pins, problems


def pyproject_requirements() -> list[tuple[str, Requirement]]:
    """(where, requirement) of the dependencies and of the locked extras."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    reqs = [("dependencies", Requirement(r)) for r in project["dependencies"]]
    for extra in LOCKED_EXTRAS:
        reqs += [
            (f"extra {extra}", Requirement(r)) for r in project["optional-dependencies"][extra]
        ]
    return reqs


def lock_problems(pins: dict[str, Version], reqs: list[tuple[str, Requirement]]) -> list[str]:
    """Each requirement that applies on the target platform is pinned, at a version it allows."""
    problems = []
    for where, req in reqs:
        if req.marker is not None and not req.marker.evaluate(TARGET):
            continue
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{req} ({where}) is not in requirements.lock")
        elif not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{req} ({where}): requirements.lock pins {name}=={pins[name]}")
    return problems


def venv_problems(pins: dict[str, Version], names) -> list[str]:
    problems = []
    for name in names:
        try:
            installed = Version(metadata.version(name))
        except metadata.PackageNotFoundError:
            problems.append(f"{name} is not installed (requirements.lock: {pins[name]})")
            continue
        if installed != pins[name]:
            problems.append(f"{name} {installed} is installed, requirements.lock pins {pins[name]}")
    return problems


@pytest.fixture(scope="module")
def pins() -> dict[str, Version]:
    pins, problems = parse_lock(LOCK.read_text())
    assert not problems, "requirements.lock:\n" + "\n".join(problems)
    return pins


def test_every_line_of_the_lock_is_one_exact_pin(pins):
    assert len(pins) > 100  # the whole environment, transitive packages included
    assert all(p in pins for p in CORE)
    assert str(pins["torch"]).endswith("+cpu"), "the lock names torch's CPU build"


def test_the_lock_satisfies_pyproject(pins):
    problems = lock_problems(pins, pyproject_requirements())
    assert not problems, (
        "requirements.lock does not match pyproject.toml — run `make lock`:\n" + "\n".join(problems)
    )


def test_the_lock_is_closed_under_the_installed_packages_requirements(pins):
    """What the locked packages require (their installed metadata, with the extras asked for
    anywhere in the graph, markers for the target platform) is in the lock too, at an allowed
    version: the lock holds the transitive packages, not only pyproject's."""
    todo = [
        req
        for _, req in pyproject_requirements()
        if req.marker is None or req.marker.evaluate(TARGET)
    ]
    problems, expanded = set(), set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.add(f"{req.name}{req.specifier} is not in requirements.lock")
            continue
        if not req.specifier.contains(pins[name], prereleases=True):
            problems.add(f"{req.name}{req.specifier}: requirements.lock pins {name}=={pins[name]}")
        extras = {""} | {canonicalize_name(e) for e in req.extras}
        if (name, frozenset(extras)) in expanded:
            continue
        expanded.add((name, frozenset(extras)))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            # only in the production extra (`make install` installs dev), or not for 3.11.7
            continue
        if Version(dist.version) != pins[name]:
            continue  # the venv tests below report it
        for line in dist.requires or []:
            sub = Requirement(line)
            if sub.marker is None or any(
                sub.marker.evaluate({**TARGET, "extra": e}) for e in extras
            ):
                todo.append(sub)
    assert not problems, "requirements.lock misses requirements of its packages:\n" + "\n".join(
        sorted(problems)
    )


def test_the_core_numeric_packages_are_the_locked_ones(pins):
    problems = venv_problems(pins, CORE)
    assert not problems, f"this venv is not the locked environment — {REINSTALL}:\n" + "\n".join(
        problems
    )


def test_every_installed_package_of_the_lock_has_the_locked_version(pins):
    installed = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions()}
    problems = venv_problems(pins, sorted(installed & pins.keys()))
    assert not problems, (
        f"this venv has drifted from requirements.lock — {REINSTALL}:\n" + "\n".join(problems)
    )


def test_make_install_uses_the_lock():
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^LOCK := requirements\.lock$", make, re.M)
    assert re.search(r"^\$\(STAMP\): .*\$\(LOCK\)", make, re.M), (
        "the install stamp depends on the lock"
    )
    installs = re.findall(r"pip install [^\n]*-e '\.\[dev\]'", make)  # uv's and pip's
    assert len(installs) == 2 and all("-c $$CONS" in i for i in installs), installs
    assert "CONS=$(LOCK)" in make


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
@pytest.mark.parametrize("target", ["install", "lock"])
def test_the_make_recipes_parse_and_name_the_lock(target, tmp_path):
    """`make -n` (nothing run) prints the recipe as the shell gets it: bash parses it, and it
    constrains by requirements.lock and looks for the locked torch wheel."""
    venv = tmp_path / "venv"
    out = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    syntax = subprocess.run(
        ["bash", "-n"], input=out.stdout, capture_output=True, text=True, timeout=60
    )
    assert syntax.returncode == 0, syntax.stderr + out.stdout
    if target == "install":
        assert "CONS=requirements.lock" in out.stdout and "-c $CONS -e '.[dev]'" in out.stdout
    else:
        assert "-o requirements.lock" in out.stdout
    assert "torch-2.13.0+cpu-*.whl" in out.stdout
    assert not venv.exists()


def test_the_checks_catch_a_bad_lock():
    pins, problems = parse_lock(
        "numpy==2.4.6  # via pandas\nnumpy==2.4.5\npandas>=2.1\nscipy==1.*\n"
        "torch\nmoto[server]==5.2.5\n# a comment\n\n"
    )
    assert pins == {"numpy": Version("2.4.6")}
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 3", "line 4", "line 5", "line 6"]
    reqs = [
        ("dependencies", Requirement("numpy>=2.5")),
        ("dependencies", Requirement("pandas")),
        ("extra dev", Requirement("pgserver; platform_system == 'Windows'")),
    ]
    assert lock_problems(pins, reqs) == [
        "numpy>=2.5 (dependencies): requirements.lock pins numpy==2.4.6",
        "pandas (dependencies) is not in requirements.lock",
    ]
    drift = venv_problems({"numpy": Version("1.0")}, ["numpy"])
    assert drift and "requirements.lock pins 1.0" in drift[0]
