"""Static checks of docker/ (there is no Docker engine on our machines): the compose file against
the compose-spec JSON schema, the Dockerfile through hadolint, and cross-checks of service
references, health checks, volumes, COPY paths, interpolated variables, the environment names the
code reads and the served configs. Every check is a function returning problems, and each has a
negative test on a broken copy, so a broken file fails the suite."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
BIN = Path(sys.executable).parent
WORKER_ENV = ("MLFLOW_TRACKING_URI", "PREFECT_API_URL", "MLFLOW_S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
              "AWS_SECRET_ACCESS_KEY")
# read by third-party code (boto3, Prefect), not by ours
THIRD_PARTY_ENV = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "PREFECT_API_URL"}


def _compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def _tool(name: str) -> Path:
    exe = BIN / name
    if not exe.exists():
        pytest.skip(f"{name} not installed (pip install -e '.[dev]')")
    return exe


# ------------------------------------------------------------------------------ checks


def compose_problems(compose: dict) -> list[str]:
    """Service references, health-checked dependencies, volumes and pinned images."""
    problems = []
    services = compose.get("services", {})
    declared = set((compose.get("volumes") or {}).keys())
    used = set()
    for name, svc in services.items():
        deps = svc.get("depends_on") or {}
        deps = {d: {} for d in deps} if isinstance(deps, list) else deps
        for dep, cond in deps.items():
            if dep not in services:
                problems.append(f"{name}: depends_on unknown service {dep!r}")
                continue
            if (cond or {}).get("condition") == "service_healthy" and "healthcheck" not in services[dep]:
                problems.append(f"{name}: waits for {dep} to be healthy but {dep} has no healthcheck")
        for vol in svc.get("volumes") or []:
            source = vol.split(":", 1)[0] if isinstance(vol, str) else vol.get("source", "")
            if source and not source.startswith((".", "/", "~")):
                used.add(source)
                if source not in declared:
                    problems.append(f"{name}: named volume {source!r} is not declared")
        image = svc.get("image")
        if image and "build" not in svc and (":" not in image or image.endswith(":latest")):
            problems.append(f"{name}: image {image!r} is not pinned to a version")
        command = svc.get("command")
        text = " ".join(command) if isinstance(command, list) else str(command or "")
        if "pip install" in text:
            problems.append(f"{name}: installs packages at start-up")
    problems += [f"volume {v!r} is declared but never used" for v in sorted(declared - used)]
    return problems


def interpolation_problems(compose_text: str, env_example: str) -> list[str]:
    """Every ``${VAR}`` the compose file interpolates is in .env.example, and vice versa."""
    used = set(re.findall(r"(?<!\$)\$\{([A-Z_][A-Z0-9_]*)", compose_text))
    defined = {line.split("=", 1)[0].strip() for line in env_example.splitlines()
               if "=" in line and not line.lstrip().startswith("#")}
    return ([f"${{{v}}} is used in compose.yaml but not defined in .env.example" for v in sorted(used - defined)]
            + [f"{v} is defined in .env.example but never used" for v in sorted(defined - used)])


def _copies(dockerfile: str) -> list[tuple[list[str], str]]:
    out = []
    for line in dockerfile.splitlines():
        parts = line.split()
        if parts and parts[0] == "COPY" and not any(p.startswith("--from") for p in parts):
            args = [p for p in parts[1:] if not p.startswith("--")]
            out.append((args[:-1], args[-1]))
    return out


def dockerfile_problems(dockerfile: str, context: Path) -> list[str]:
    """COPY sources exist in the build context; the base image is pinned; the user is not root."""
    problems = []
    for sources, _ in _copies(dockerfile):
        problems += [f"COPY source {s!r} does not exist in the build context" for s in sources
                     if not (context / s).exists()]
    base = re.search(r"^FROM\s+(\S+)", dockerfile, re.M)
    if not base or ":" not in base.group(1) or base.group(1).endswith(":latest"):
        problems.append("the base image is not pinned to a version")
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append("the image runs as root (no non-root USER)")
    return problems


def _image_path(dockerfile: str, image_path: str) -> Path | None:
    """The repo path that a path inside the image comes from (via WORKDIR /app and the COPYs)."""
    for sources, dest in _copies(dockerfile):
        target = dest if dest.startswith("/") else "/app/" + dest.removeprefix("./")
        target = target.rstrip("/")
        if len(sources) == 1 and (image_path == target or image_path.startswith(target + "/")):
            return ROOT / sources[0] / image_path[len(target):].lstrip("/")
    return None


def worker_problems(compose: dict, dockerfile: str, code_text: str) -> list[str]:
    """The worker sets the variables the code reads, only names someone reads, and serves a
    folder of valid configs that exists in the image."""
    problems = []
    worker = compose["services"].get("worker")
    if worker is None:
        return ["no worker service"]
    env = worker.get("environment") or {}
    problems += [f"worker: {v} is not set" for v in WORKER_ENV if v not in env]
    for name in env:
        if name not in THIRD_PARTY_ENV and f'"{name}"' not in code_text:
            problems.append(f"worker: {name} is set but privacy_gate never reads it")
    command = worker.get("command") or []
    folder = command[command.index("serve") + 1] if "serve" in command else None
    source = _image_path(dockerfile, folder) if folder else None
    if source is None or not source.is_dir():
        return problems + [f"worker: serves {folder!r}, which no COPY puts in the image"]
    configs = sorted(source.glob("*.yaml"))
    if not configs:
        problems.append(f"worker: {source} holds no release configs")
    for cfg in configs:
        raw = yaml.safe_load(cfg.read_text())
        for key in ("path", "spec"):
            value = raw["dataset"][key]
            if isinstance(value, str) and value.startswith("/") and (_image_path(dockerfile, value) is None
                                                                     or not _image_path(dockerfile, value).exists()):
                problems.append(f"{cfg.name}: dataset.{key} {value} is not in the image")
        if not str((raw.get("publish") or {}).get("target", "")).startswith("s3://"):
            problems.append(f"{cfg.name}: publish.target is not on the object store")
        if "schedule" not in raw:
            problems.append(f"{cfg.name}: no schedule")
    return problems


def _code_text() -> str:
    return "\n".join(p.read_text() for p in (ROOT / "privacy_gate").rglob("*.py"))


# ------------------------------------------------------------------------------ the real files


def test_compose_file_matches_the_compose_spec():
    r = subprocess.run([str(_tool("check-jsonschema")), "--builtin-schema", "vendor.compose-spec",
                        str(DOCKER / "compose.yaml")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_dockerfile_passes_hadolint():
    r = subprocess.run([str(_tool("hadolint")), str(DOCKER / "Dockerfile")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_compose_cross_checks():
    compose_text = (DOCKER / "compose.yaml").read_text()
    assert compose_problems(_compose()) == []
    assert interpolation_problems(compose_text, (DOCKER / ".env.example").read_text()) == []
    build = _compose()["services"]["worker"]["build"]
    assert (DOCKER / build["context"] / build["dockerfile"]).resolve() == (DOCKER / "Dockerfile").resolve()
    assert "pip install" not in str(_compose()["services"]["mlflow"])


def test_dockerfile_cross_checks():
    assert dockerfile_problems((DOCKER / "Dockerfile").read_text(), ROOT) == []


def test_worker_environment_and_served_configs():
    assert worker_problems(_compose(), (DOCKER / "Dockerfile").read_text(), _code_text()) == []


def test_postgres_init_creates_the_databases_the_services_use():
    init = (DOCKER / "postgres-init.sql").read_text()
    services = _compose()["services"]
    for db, service in (("mlflow", "mlflow"), ("prefect", "prefect")):
        assert f"CREATE DATABASE {db};" in init
        assert f"@postgres:5432/{db}" in yaml.safe_dump(services[service])


# ------------------------------------------------------------------------------ the checks can fail


def test_broken_compose_file_fails_the_schema(tmp_path):
    broken = _compose()
    broken["services"]["mlflow"]["depends_on"]["postgres"]["condition"] = "when_ready"
    broken["services"]["worker"]["ports"] = 5
    path = tmp_path / "compose.yaml"
    path.write_text(yaml.safe_dump(broken))
    r = subprocess.run([str(_tool("check-jsonschema")), "--builtin-schema", "vendor.compose-spec", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0


def test_broken_dockerfile_fails_hadolint(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text("FROM python:latest\nRUN cd /app && pip install mlflow\nCMD python -m x\n")
    r = subprocess.run([str(_tool("hadolint")), str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "DL3007" in r.stdout


def test_compose_cross_checks_report_breakage():
    base = _compose()
    broken = copy.deepcopy(base)
    broken["services"]["worker"]["depends_on"]["tracking"] = {"condition": "service_healthy"}
    assert any("unknown service 'tracking'" in p for p in compose_problems(broken))
    broken = copy.deepcopy(base)
    del broken["services"]["prefect"]["healthcheck"]
    assert any("prefect has no healthcheck" in p for p in compose_problems(broken))
    broken = copy.deepcopy(base)
    broken["services"]["worker"]["volumes"] = ["scratch:/work"]
    problems = compose_problems(broken)
    assert any("'scratch' is not declared" in p for p in problems) and any("'work' is declared" in p for p in problems)
    broken = copy.deepcopy(base)
    broken["services"]["postgres"]["image"] = "postgres"
    broken["services"]["mlflow"]["command"] = ["sh", "-c", "pip install psycopg2 && mlflow server"]
    problems = compose_problems(broken)
    assert any("not pinned" in p for p in problems) and any("start-up" in p for p in problems)
    problems = interpolation_problems("x: ${NOT_DEFINED}", "UNUSED=1\n")
    assert problems == ["${NOT_DEFINED} is used in compose.yaml but not defined in .env.example",
                        "UNUSED is defined in .env.example but never used"]


def test_dockerfile_cross_checks_report_breakage():
    text = (DOCKER / "Dockerfile").read_text()
    assert any("'flows'" in p for p in dockerfile_problems(text + "COPY flows ./flows\n", ROOT))
    assert any("root" in p for p in dockerfile_problems(text.replace("USER 10001:10001", "USER root"), ROOT))
    assert any("pinned" in p for p in dockerfile_problems(re.sub(r"^FROM \S+", "FROM python", text, flags=re.M), ROOT))


def test_worker_cross_checks_report_breakage():
    base, text, code = _compose(), (DOCKER / "Dockerfile").read_text(), _code_text()
    broken = copy.deepcopy(base)
    del broken["services"]["worker"]["environment"]["MLFLOW_TRACKING_URI"]
    broken["services"]["worker"]["environment"]["PRIVACY_GATE_TYPO"] = "x"
    problems = worker_problems(broken, text, code)
    assert "worker: MLFLOW_TRACKING_URI is not set" in problems
    assert "worker: PRIVACY_GATE_TYPO is set but privacy_gate never reads it" in problems
    broken = copy.deepcopy(base)
    broken["services"]["worker"]["command"] = ["serve", "/app/nowhere"]
    assert any("no COPY puts in the image" in p for p in worker_problems(broken, text, code))
    no_copy = text.replace("COPY docker/deploy ./deploy\n", "")
    assert any("no COPY puts in the image" in p for p in worker_problems(base, no_copy, code))
