"""Static checks of docker/ (there is no Docker engine on our machines): the compose file against
the compose-spec JSON schema, the Dockerfile through hadolint, and cross-checks of service
references, health checks, volumes, the build, COPY paths, interpolated variables, the environment
names the code reads, the PostgreSQL databases, the served configs and the Dask cluster they name.
Every check is a function returning problems, and each has a negative test on a broken copy, so a
broken file fails the suite."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
BIN = Path(sys.executable).parent
#: what the worker must set: the code (and MLflow, Prefect, boto3) reads them
WORKER_ENV = (
    "MLFLOW_TRACKING_URI",
    "PREFECT_API_URL",
    "MLFLOW_S3_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)
#: read by third-party code only (boto3, Prefect's client), not by ours: no literal in privacy_gate/
THIRD_PARTY_ENV = {
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "PREFECT_API_URL",
}
#: telemetry off in every container of the image
IMAGE_ENV = (
    "PYTHONUNBUFFERED",
    "MLFLOW_DISABLE_TELEMETRY",
    "DO_NOT_TRACK",
    "PREFECT_SERVER_ANALYTICS_ENABLED",
    "GX_ANALYTICS_ENABLED",
)
#: sections of a served config that decide the verdict: equal to the example's (examples/adult.yaml)
JUDGING = (
    "dataset",
    "generator",
    "split",
    "targets",
    "attacks",
    "gate",
    "audit",
    "mace",
    "exposure",
)
RESTART_ONE_SHOT = (None, "no", "on-failure")
#: what ``dask scheduler`` listens on without ``--port``
DASK_SCHEDULER_PORT = 8786


def _compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def _dockerfile() -> str:
    return (DOCKER / "Dockerfile").read_text()


def _tool(name: str) -> Path:
    exe = BIN / name
    if not exe.exists():
        pytest.skip(f"{name} is not installed next to {sys.executable} (pip install -e '.[dev]')")
    return exe


def _run(tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(_tool(tool)), *args], check=False, capture_output=True, text=True, timeout=120
    )


# ------------------------------------------------------------------------------ checks


def _image_unpinned(image: str) -> bool:
    """An image without a tag or digest, or tagged ``latest`` (``host:5000/name`` has no tag)."""
    if "@sha256:" in image:
        return False
    last = image.rsplit("/", 1)[-1]
    return ":" not in last or last.endswith(":latest")


def _deps(svc: dict) -> dict[str, dict]:
    deps = svc.get("depends_on") or {}
    return (
        {d: {} for d in deps} if isinstance(deps, list) else {d: (c or {}) for d, c in deps.items()}
    )


def compose_problems(compose: dict) -> list[str]:
    """Service references, health-checked dependencies, one-shot jobs, volumes, pinned images and
    nothing installed at start-up."""
    problems = []
    services = compose.get("services", {})
    declared = set((compose.get("volumes") or {}).keys())
    used = set()
    for name, svc in services.items():
        for dep, cond in _deps(svc).items():
            if dep not in services:
                problems.append(f"{name}: depends_on unknown service {dep!r}")
                continue
            condition = cond.get("condition")
            if condition == "service_healthy" and "healthcheck" not in services[dep]:
                problems.append(
                    f"{name}: waits for {dep} to be healthy but {dep} has no healthcheck"
                )
            if (
                condition == "service_completed_successfully"
                and services[dep].get("restart") not in RESTART_ONE_SHOT
            ):
                problems.append(
                    f"{name}: waits for {dep} to complete but {dep} restarts "
                    f"({services[dep].get('restart')}), so it never completes"
                )
        for vol in svc.get("volumes") or []:
            source = vol.split(":", 1)[0] if isinstance(vol, str) else (vol.get("source") or "")
            if isinstance(vol, dict) and vol.get("type", "volume") != "volume":
                continue
            if source and not source.startswith((".", "/", "~", "$")):
                used.add(source)
                if source not in declared:
                    problems.append(f"{name}: named volume {source!r} is not declared")
        image = svc.get("image")
        if image is None and "build" not in svc:
            problems.append(f"{name}: neither image nor build")
        elif image is not None and _image_unpinned(image):
            problems.append(f"{name}: image {image!r} is not pinned to a version")
        for key in ("command", "entrypoint"):
            value = svc.get(key)
            text = " ".join(map(str, value)) if isinstance(value, list) else str(value or "")
            if re.search(r"\bpip3?\s+install\b|\buv\s+pip\b|\bapt-get\s+install\b", text):
                problems.append(f"{name}: installs packages at start-up ({key})")
    problems += [f"volume {v!r} is declared but never used" for v in sorted(declared - used)]
    return problems


def build_problems(compose: dict, compose_dir: Path, dockerfile: Path) -> list[str]:
    """Every service built here builds our Dockerfile (context = the repo root) under one tag."""
    problems, tags = [], set()
    for name, svc in compose.get("services", {}).items():
        build = svc.get("build")
        if build is None:
            continue
        build = {"context": build} if isinstance(build, str) else build
        context = (compose_dir / build.get("context", ".")).resolve()
        path = (context / build.get("dockerfile", "Dockerfile")).resolve()
        if path != dockerfile.resolve():
            problems.append(f"{name}: builds {path}, not {dockerfile}")
        if context != ROOT:
            problems.append(f"{name}: build context {context} is not the repo root {ROOT}")
        tags.add(svc.get("image"))
    if len(tags) > 1:
        problems.append(
            "the services built from the Dockerfile use different image tags: "
            f"{sorted(map(str, tags))}"
        )
    return problems


def interpolation_problems(compose_text: str, env_example: str) -> list[str]:
    """Every ``${VAR}`` the compose file interpolates is in .env.example, and vice versa."""
    used = set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)", compose_text))
    defined = {
        line.split("=", 1)[0].strip()
        for line in env_example.splitlines()
        if "=" in line and not line.lstrip().startswith("#")
    }
    return [
        f"${{{v}}} is used in compose.yaml but not defined in .env.example"
        for v in sorted(used - defined)
    ] + [f"{v} is defined in .env.example but never used" for v in sorted(defined - used)]


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out, pending = [], ""
    for line in dockerfile.splitlines():
        if line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full:
            word, _, rest = full.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _copies(dockerfile: str) -> list[tuple[list[str], str]]:
    """(sources in the build context, absolute destination in the image) of each COPY/ADD from the
    context (not ``--from`` a stage), resolving relative destinations against the WORKDIR."""
    out, workdir = [], "/"
    for word, rest in _instructions(dockerfile):
        if word == "WORKDIR":
            workdir = rest if rest.startswith("/") else workdir.rstrip("/") + "/" + rest
        if word not in ("COPY", "ADD") or "--from" in rest:
            continue
        args = (
            json.loads(rest)
            if rest.startswith("[")
            else [a for a in rest.split() if not a.startswith("--")]
        )
        dest = args[-1]
        if not dest.startswith("/"):
            dest = workdir.rstrip("/") + "/" + dest.removeprefix("./")
        out.append((args[:-1], dest.rstrip("/") or "/"))
    return out


def dockerfile_problems(dockerfile: str, context: Path) -> list[str]:
    """COPY sources exist in the build context; the base image is pinned; a non-root USER is set
    before the ENTRYPOINT; telemetry is off; no editable install."""
    problems = []
    instructions = _instructions(dockerfile)
    for sources, _ in _copies(dockerfile):
        problems += [
            f"COPY source {s!r} does not exist in the build context"
            for s in sources
            if not (context / s).exists()
        ]
    bases = [
        rest.split()[-1] if " AS " not in rest.upper() else rest.split()[0]
        for word, rest in instructions
        if word == "FROM"
    ]
    if not bases or any(_image_unpinned(b) for b in bases):
        problems.append("the base image is not pinned to a version")
    words = [w for w, _ in instructions]
    users = [rest for w, rest in instructions if w == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problems.append("the image runs as root (no non-root USER)")
    elif "ENTRYPOINT" in words and max(i for i, w in enumerate(words) if w == "USER") > words.index(
        "ENTRYPOINT"
    ):
        problems.append("USER is set after the ENTRYPOINT")
    env = " ".join(rest for w, rest in instructions if w == "ENV")
    problems += [
        f"ENV {name} is not set" for name in IMAGE_ENV if not re.search(rf"\b{name}[= ]", env)
    ]
    runs = " ".join(rest for w, rest in instructions if w == "RUN")
    if re.search(r"pip3?\s+install\b[^&;]*\s(-e|--editable)\s", runs + " "):
        problems.append("an editable install (pip install -e) in the image")
    return problems


def _image_path(dockerfile: str, image_path: str) -> Path | None:
    """The repo path that a path inside the image comes from (via the COPYs)."""
    for sources, dest in _copies(dockerfile):
        if len(sources) == 1 and (image_path == dest or image_path.startswith(dest + "/")):
            return ROOT / sources[0] / image_path[len(dest) :].lstrip("/")
    return None


def served_config_problems(name: str, raw: object, dockerfile: str) -> list[str]:
    """A config the worker serves: a mapping with dataset (its image paths in the image), generator,
    a schedule and a publication target on the object store."""
    if not isinstance(raw, dict):
        return [f"{name}: not a YAML mapping"]
    problems = []
    dataset = raw.get("dataset")
    if not isinstance(dataset, dict) or "path" not in dataset or "spec" not in dataset:
        problems.append(f"{name}: no dataset with path and spec")
    else:
        for key in ("path", "spec", "reference_path"):
            value = dataset.get(key)
            if isinstance(value, str) and not value.startswith("s3://"):
                if not value.startswith("/"):
                    problems.append(
                        f"{name}: dataset.{key} {value!r} is relative (the folder differs in the "
                        "image)"
                    )
                elif (source := _image_path(dockerfile, value)) is None or not source.exists():
                    problems.append(f"{name}: dataset.{key} {value} is not in the image")
    if not isinstance(raw.get("generator"), dict) or "name" not in raw["generator"]:
        problems.append(f"{name}: no generator")
    if not str((raw.get("publish") or {}).get("target", "")).startswith("s3://"):
        problems.append(f"{name}: publish.target is not on the object store (s3://...)")
    if not isinstance(raw.get("schedule"), dict):
        problems.append(f"{name}: no schedule")
    if (raw.get("tracking") or {}).get("uri"):
        problems.append(
            f"{name}: tracking.uri is set (the worker's MLFLOW_TRACKING_URI must decide)"
        )
    return problems


def worker_problems(compose: dict, dockerfile: str, code_text: str) -> list[str]:
    """The worker sets the variables the code reads, only names someone reads, and serves a
    folder of valid configs that exists in the image."""
    problems = []
    worker = compose["services"].get("worker")
    if worker is None:
        return ["no worker service"]
    env = worker.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    problems += [f"worker: {v} is not set" for v in WORKER_ENV if v not in env]
    for name in env:
        if (
            name not in THIRD_PARTY_ENV
            and f'"{name}"' not in code_text
            and f"'{name}'" not in code_text
        ):
            problems.append(f"worker: {name} is set but privacy_gate never reads it")
    command = worker.get("command") or []
    command = command.split() if isinstance(command, str) else command
    folder = command[command.index("serve") + 1] if "serve" in command[:-1] else None
    if folder is None:
        return problems + ["worker: the command is not `serve FOLDER ...`"]
    source = _image_path(dockerfile, folder)
    if source is None or not source.is_dir():
        return problems + [f"worker: serves {folder!r}, which no COPY puts in the image"]
    configs = sorted([*source.glob("*.yaml"), *source.glob("*.yml")])
    if not configs:
        problems.append(f"worker: {source} holds no release configs")
    for cfg in configs:
        try:
            raw = yaml.safe_load(cfg.read_text())
        except yaml.YAMLError as exc:
            problems.append(f"{cfg.name}: not valid YAML: {exc}")
            continue
        problems += served_config_problems(cfg.name, raw, dockerfile)
    return problems


def _argv(svc: dict) -> list[str]:
    """The service's entrypoint followed by its command, as a list of words."""
    words = []
    for key in ("entrypoint", "command"):
        value = svc.get(key) or []
        words += value.split() if isinstance(value, str) else [str(v) for v in value]
    return words


def _dask_scheduler_port(svc: dict) -> int | None:
    """The port a service running ``dask scheduler`` listens on (its ``--port``, else dask's
    default 8786); None when the service runs no Dask scheduler."""
    argv = _argv(svc)
    if argv[:2] != ["dask", "scheduler"]:
        return None
    for i, word in enumerate(argv):
        if word == "--port" and i + 1 < len(argv):
            return int(argv[i + 1])
        if word.startswith("--port="):
            return int(word.split("=", 1)[1])
    return DASK_SCHEDULER_PORT


def _dask_worker_target(svc: dict) -> str | None:
    """The scheduler address (``host:port``) a service running ``dask worker ADDRESS`` joins."""
    argv = _argv(svc)
    if argv[:2] != ["dask", "worker"]:
        return None
    address = next((w for w in argv[2:] if not w.startswith("-")), None)
    return address.removeprefix("tcp://") if address else None


def dask_problems(compose: dict, served: dict[str, object]) -> list[str]:
    """A served config with ``runner.kind: dask`` names, in ``dask_address``, a compose service
    that runs ``dask scheduler`` on that port; the worker waits for it to be healthy; some
    service runs ``dask worker`` against it; and the scheduler and workers run the worker's image
    (the task code is the installed package, and dask's versions must match the flow's client).
    Without ``dask_address`` the flow would start a local cluster inside the worker container."""
    problems = []
    services = compose.get("services", {})
    worker = services.get("worker") or {}
    for name, raw in served.items():
        runner = raw.get("runner") if isinstance(raw, dict) else None
        if not isinstance(runner, dict) or runner.get("kind") != "dask":
            continue
        address = runner.get("dask_address")
        if not address:
            problems.append(
                f"{name}: runner.kind dask without dask_address starts a local cluster in the "
                "worker "
                "container, not on the stack's Dask services"
            )
            continue
        match = re.fullmatch(r"(?:tcp://)?([A-Za-z0-9_.-]+):(\d+)", str(address))
        if match is None:
            problems.append(f"{name}: runner.dask_address {address!r} is not tcp://SERVICE:PORT")
            continue
        host, port = match.group(1), int(match.group(2))
        scheduler = services.get(host)
        if scheduler is None:
            problems.append(f"{name}: runner.dask_address {address}: no compose service {host!r}")
            continue
        listens = _dask_scheduler_port(scheduler)
        if listens is None:
            problems.append(
                f"{name}: runner.dask_address {address}: {host} does not run `dask scheduler`"
            )
        elif listens != port:
            problems.append(
                f"{name}: runner.dask_address {address}: {host} listens on port {listens}, not "
                f"{port}"
            )
        if _deps(worker).get(host, {}).get("condition") != "service_healthy":
            problems.append(
                f"worker: does not wait for {host} to be healthy ({name} runs its tasks there)"
            )
        joining = [n for n, svc in services.items() if _dask_worker_target(svc) == f"{host}:{port}"]
        if not joining:
            problems.append(
                f"{name}: no service runs `dask worker tcp://{host}:{port}`, so its tasks never run"
            )
        problems += [
            f"{n}: image {services[n].get('image')!r} is not the worker's {worker.get('image')!r}"
            for n in [host, *joining]
            if services[n].get("image") != worker.get("image")
        ]
    return problems


def database_problems(compose: dict, init_sql: str, compose_dir: Path = DOCKER) -> list[str]:
    """The init script exists, is mounted into the postgres entrypoint and creates every database
    the services connect to."""
    problems = []
    postgres = compose["services"].get("postgres") or {}
    mounts = [
        v.split(":") for v in postgres.get("volumes") or [] if isinstance(v, str) and ":" in v
    ]
    init = [src for src, dest, *_ in mounts if dest.startswith("/docker-entrypoint-initdb.d")]
    if not init:
        problems.append("postgres: no init script in /docker-entrypoint-initdb.d")
    problems += [
        f"postgres: the init script {src} does not exist"
        for src in init
        if not (compose_dir / src).is_file()
    ]
    created = set(re.findall(r"CREATE\s+DATABASE\s+\"?(\w+)", init_sql, re.IGNORECASE))
    wanted = set(re.findall(r"@postgres:5432/(\w+)", yaml.safe_dump(compose)))
    problems += [
        f"database {db!r} is used but the init script does not create it"
        for db in sorted(wanted - created)
    ]
    return problems


def _code_text() -> str:
    return "\n".join(p.read_text() for p in (ROOT / "privacy_gate").rglob("*.py"))


def _served_configs() -> list[Path]:
    return sorted((DOCKER / "deploy").glob("*.yaml"))


def _served_raw() -> dict[str, object]:
    return {p.name: yaml.safe_load(p.read_text()) for p in _served_configs()}


# ------------------------------------------------------------------------------ the real files


def test_compose_file_matches_the_compose_spec():
    r = _run(
        "check-jsonschema", "--builtin-schema", "vendor.compose-spec", str(DOCKER / "compose.yaml")
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_dockerfile_passes_hadolint():
    r = _run("hadolint", str(DOCKER / "Dockerfile"))
    assert r.returncode == 0, r.stdout + r.stderr


def test_compose_cross_checks():
    assert compose_problems(_compose()) == []
    assert build_problems(_compose(), DOCKER, DOCKER / "Dockerfile") == []
    assert (
        interpolation_problems(
            (DOCKER / "compose.yaml").read_text(), (DOCKER / ".env.example").read_text()
        )
        == []
    )
    mlflow = _compose()["services"]["mlflow"]
    assert "pip install" not in json.dumps(mlflow)
    assert mlflow["entrypoint"] == ["mlflow"] and mlflow["command"][0] == "server"


def test_dockerfile_cross_checks():
    assert dockerfile_problems(_dockerfile(), ROOT) == []


def test_worker_environment_and_served_configs():
    assert worker_problems(_compose(), _dockerfile(), _code_text()) == []


def test_served_configs_run_their_tasks_on_the_compose_dask_cluster():
    served = _served_raw()
    assert any((raw.get("runner") or {}).get("dask_address") for raw in served.values())
    assert dask_problems(_compose(), served) == []
    dask = _compose()["services"]
    assert dask["dask-scheduler"]["ports"] == [
        "127.0.0.1:8787:8787"
    ]  # the dashboard, on loopback only
    assert "8786" not in json.dumps(
        dask["dask-scheduler"].get("ports")
    )  # the scheduler stays inside
    # the dashboard page needs bokeh, which the image installs with the production extra
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(re.match(r"bokeh\b", dep) for dep in extras["production"]), extras["production"]
    assert '".[production]"' in _dockerfile()


def test_postgres_init_creates_the_databases_the_services_use():
    assert database_problems(_compose(), (DOCKER / "postgres-init.sql").read_text()) == []


@pytest.mark.parametrize("config", _served_configs(), ids=lambda p: p.name)
def test_served_configs_load_and_judge_like_the_example(config, tmp_path):
    """The served config passes privacy-gate's own loader (with the image's /app paths mapped to the
    repo through the Dockerfile's COPYs) and judges exactly like examples/adult.yaml."""
    from privacy_gate.config import load_release_config

    dockerfile = _dockerfile()
    text = config.read_text()
    for image_path in sorted(set(re.findall(r"(/app/[\w./-]+)", text)), key=len, reverse=True):
        text = text.replace(image_path, str(_image_path(dockerfile, image_path)))
    mapped = tmp_path / config.name
    mapped.write_text(text)
    served, example = (
        load_release_config(mapped),
        load_release_config(ROOT / "examples" / "adult.yaml"),
    )
    assert served.schedule is not None
    for section in JUDGING:
        assert getattr(served, section) == getattr(example, section), section


# ------------------------------------------------------------------------------ the checks can fail


def test_broken_compose_file_fails_the_schema(tmp_path):
    broken = _compose()
    broken["services"]["mlflow"]["depends_on"]["postgres"]["condition"] = "when_ready"
    path = tmp_path / "compose.yaml"
    path.write_text(yaml.safe_dump(broken))
    assert (
        _run("check-jsonschema", "--builtin-schema", "vendor.compose-spec", str(path)).returncode
        != 0
    )
    broken = _compose()
    broken["services"]["worker"]["ports"] = 5
    path.write_text(yaml.safe_dump(broken))
    assert (
        _run("check-jsonschema", "--builtin-schema", "vendor.compose-spec", str(path)).returncode
        != 0
    )


def test_broken_dockerfile_fails_hadolint(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text("FROM python:latest\nRUN cd /app && pip install mlflow\nCMD python -m x\n")
    r = _run("hadolint", str(path))
    assert r.returncode != 0
    assert "DL3007" in r.stdout and "DL3013" in r.stdout and "DL3003" in r.stdout, r.stdout


def test_compose_cross_checks_report_breakage():
    base = _compose()
    broken = copy.deepcopy(base)
    broken["services"]["worker"]["depends_on"]["tracking"] = {"condition": "service_healthy"}
    assert "worker: depends_on unknown service 'tracking'" in compose_problems(broken)
    broken = copy.deepcopy(base)
    del broken["services"]["prefect"]["healthcheck"]
    assert (
        "worker: waits for prefect to be healthy but prefect has no healthcheck"
        in compose_problems(broken)
    )
    broken = copy.deepcopy(base)
    broken["services"]["createbuckets"]["restart"] = "always"
    assert any("waits for createbuckets to complete" in p for p in compose_problems(broken))
    broken = copy.deepcopy(base)
    broken["services"]["worker"]["volumes"] = ["scratch:/work"]
    problems = compose_problems(broken)
    assert "worker: named volume 'scratch' is not declared" in problems
    assert "volume 'work' is declared but never used" in problems
    broken = copy.deepcopy(base)
    broken["services"]["postgres"]["image"] = "postgres"
    broken["services"]["minio"]["image"] = "minio/minio:latest"
    broken["services"]["createbuckets"]["image"] = "registry.local:5000/minio/mc"
    broken["services"]["mlflow"]["command"] = ["sh", "-c", "pip install psycopg2 && mlflow server"]
    problems = compose_problems(broken)
    assert {p.split(":")[0] for p in problems if "not pinned" in p} == {
        "postgres",
        "minio",
        "createbuckets",
    }
    assert "mlflow: installs packages at start-up (command)" in problems
    problems = interpolation_problems(
        "x: ${NOT_DEFINED}\ny: $${ESCAPED}", "UNUSED=1\n# COMMENTED=1\n"
    )
    assert problems == [
        "${NOT_DEFINED} is used in compose.yaml but not defined in .env.example",
        "UNUSED is defined in .env.example but never used",
    ]


def test_build_cross_checks_report_breakage():
    broken = _compose()
    broken["services"]["worker"]["build"] = {"context": "..", "dockerfile": "docker/Dockerfile.dev"}
    broken["services"]["prefect"]["build"] = {"context": ".", "dockerfile": "Dockerfile"}
    broken["services"]["mlflow"]["image"] = "privacy-gate:0.0.9"
    problems = build_problems(broken, DOCKER, DOCKER / "Dockerfile")
    assert any(p.startswith("worker: builds") for p in problems)
    assert any(p.startswith("prefect: build context") for p in problems)
    assert any("different image tags" in p for p in problems)


def test_dockerfile_cross_checks_report_breakage():
    text = _dockerfile()
    assert (
        "COPY source 'no-such-folder' does not exist in the build context"
        in dockerfile_problems(text + "COPY no-such-folder ./no-such-folder\n", ROOT)
    )
    assert any(
        "root" in p
        for p in dockerfile_problems(text.replace("USER 10001:10001", "USER root"), ROOT)
    )
    moved = text.replace("USER 10001:10001\n", "") + "USER 10001:10001\n"
    assert "USER is set after the ENTRYPOINT" in dockerfile_problems(moved, ROOT)
    unpinned = re.sub(r"^FROM \S+", "FROM python", text, flags=re.MULTILINE)
    assert "the base image is not pinned to a version" in dockerfile_problems(unpinned, ROOT)
    assert "ENV DO_NOT_TRACK is not set" in dockerfile_problems(
        text.replace("DO_NOT_TRACK=true", "X=1"), ROOT
    )
    editable = text.replace('".[production]"', '-e ".[production]"')
    assert editable != text
    assert "an editable install (pip install -e) in the image" in dockerfile_problems(
        editable, ROOT
    )


def test_worker_cross_checks_report_breakage():
    base, text, code = _compose(), _dockerfile(), _code_text()
    broken = copy.deepcopy(base)
    del broken["services"]["worker"]["environment"]["MLFLOW_TRACKING_URI"]
    broken["services"]["worker"]["environment"]["PRIVACY_GATE_TYPO"] = "x"
    problems = worker_problems(broken, text, code)
    assert "worker: MLFLOW_TRACKING_URI is not set" in problems
    assert "worker: PRIVACY_GATE_TYPO is set but privacy_gate never reads it" in problems
    broken = copy.deepcopy(base)
    broken["services"]["worker"]["command"] = ["serve", "/app/nowhere"]
    assert "worker: serves '/app/nowhere', which no COPY puts in the image" in worker_problems(
        broken, text, code
    )
    no_copy = text.replace("COPY docker/deploy ./deploy\n", "")
    assert no_copy != text
    assert any("no COPY puts in the image" in p for p in worker_problems(base, no_copy, code))


def test_served_config_checks_report_breakage():
    text = _dockerfile()
    good = yaml.safe_load(_served_configs()[0].read_text())
    assert served_config_problems("x.yaml", good, text) == []
    broken = copy.deepcopy(good)
    broken["publish"]["target"] = "/work/published"
    del broken["generator"], broken["schedule"]
    broken["dataset"]["path"] = "../../data/adult/adult.csv.gz"
    broken["dataset"]["spec"] = "/app/examples/missing.yaml"
    broken["tracking"]["uri"] = "http://elsewhere:5000"
    problems = served_config_problems("x.yaml", broken, text)
    assert "x.yaml: publish.target is not on the object store (s3://...)" in problems
    assert "x.yaml: no generator" in problems and "x.yaml: no schedule" in problems
    assert any("dataset.path" in p and "relative" in p for p in problems)
    assert "x.yaml: dataset.spec /app/examples/missing.yaml is not in the image" in problems
    assert any("tracking.uri is set" in p for p in problems)
    assert served_config_problems("x.yaml", ["not", "a", "mapping"], text) == [
        "x.yaml: not a YAML mapping"
    ]


def test_dask_checks_report_breakage():
    base, served = _compose(), _served_raw()
    name = next(n for n, raw in served.items() if (raw.get("runner") or {}).get("kind") == "dask")

    def with_address(address):
        broken = copy.deepcopy(served)
        broken[name]["runner"]["dask_address"] = address
        return broken

    assert dask_problems(base, with_address("tcp://dask:8786")) == [
        f"{name}: runner.dask_address tcp://dask:8786: no compose service 'dask'"
    ]
    problems = dask_problems(base, with_address("tcp://dask-scheduler:8788"))
    assert (
        f"{name}: runner.dask_address tcp://dask-scheduler:8788: dask-scheduler listens on port "
        "8786, not 8788"
    ) in problems
    assert (
        f"{name}: no service runs `dask worker tcp://dask-scheduler:8788`, so its tasks never run"
        in problems
    )
    assert dask_problems(base, with_address("tcp://mlflow:5000"))[0].endswith(
        "mlflow does not run `dask scheduler`"
    )
    assert (
        "is not tcp://SERVICE:PORT" in dask_problems(base, with_address("tls://dask-scheduler"))[0]
    )
    assert "starts a local cluster" in dask_problems(base, with_address(None))[0]
    broken = copy.deepcopy(base)
    del broken["services"]["worker"]["depends_on"]["dask-scheduler"]
    del broken["services"]["dask-worker"]
    broken["services"]["dask-scheduler"]["image"] = "ghcr.io/dask/dask:2026.8.0"
    broken["services"]["dask-scheduler"]["command"] = ["scheduler", "--port=8787"]
    problems = dask_problems(broken, served)
    assert (
        f"{name}: runner.dask_address tcp://dask-scheduler:8786: dask-scheduler listens on port "
        "8787, not 8786"
    ) in problems
    assert (
        f"worker: does not wait for dask-scheduler to be healthy ({name} runs its tasks there)"
        in problems
    )
    assert (
        f"{name}: no service runs `dask worker tcp://dask-scheduler:8786`, so its tasks never run"
        in problems
    )
    assert any(p.startswith("dask-scheduler: image 'ghcr.io/dask/dask:2026.8.0'") for p in problems)
    thread = copy.deepcopy(served)
    thread[name]["runner"] = {"kind": "thread", "workers": 4}
    assert dask_problems(broken, thread) == []  # a thread-pool config needs no cluster


def test_database_checks_report_breakage():
    base = _compose()
    assert database_problems(base, "CREATE DATABASE mlflow;\n") == [
        "database 'prefect' is used but the init script does not create it"
    ]
    broken = copy.deepcopy(base)
    broken["services"]["postgres"]["volumes"] = ["pgdata:/var/lib/postgresql/data"]
    init_sql = (DOCKER / "postgres-init.sql").read_text()
    assert "postgres: no init script in /docker-entrypoint-initdb.d" in database_problems(
        broken, init_sql
    )
    broken["services"]["postgres"]["volumes"] = [
        "./postgres-init.sh:/docker-entrypoint-initdb.d/10.sh:ro"
    ]
    assert database_problems(broken, init_sql) == [
        "postgres: the init script ./postgres-init.sh does not exist"
    ]
