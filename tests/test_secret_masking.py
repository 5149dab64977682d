"""Credentials in a store's URI never leave the process in clear: a password in the tracking URI's
userinfo, or a token or password in its query, is masked (``***``) in every file a gate, a review
and an approval leave in the workdir (the MLflow store, its artifacts, the report, the summary), in
every MLflow field (the run description, tags, params) and on stdout and stderr, the
unreachable-store error included. The commands run as processes, so MLflow's own log lines are
captured too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from privacy_gate.safe_text import mask_secrets, mask_uri

from . import stack
from .conftest import EXAMPLE, lighten, review_rules, write_group_leak

PASSWORD = "Pw-Planted-5c1e7e"
TOKEN = "Tk-Planted-8d02aa"
PLANTED = (PASSWORD, TOKEN)


def _cli(args: list[str], *, env: dict[str, str], timeout: float = 600) -> tuple[int, str, str]:
    """(exit code, stdout, stdout + stderr) of the command run as a process."""
    proc = subprocess.run(
        [sys.executable, "-m", "privacy_gate.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stdout + proc.stderr


def _leaks(folder: Path) -> list[str]:
    """Files under ``folder`` whose bytes (or name) hold a planted secret."""
    found = []
    for path in folder.rglob("*"):
        if any(v in str(path) for v in PLANTED) or (
            path.is_file() and any(v.encode() in path.read_bytes() for v in PLANTED)
        ):
            found.append(str(path.relative_to(folder)))
    return found


@pytest.mark.parametrize(
    "uri, shown",
    [
        ("postgresql://gate:s3cr3t@db:5432/mlflow", "postgresql://gate:***@db:5432/mlflow"),
        ("http://ana:pw@mlflow:5000", "http://ana:***@mlflow:5000"),
        ("https://TOKEN@mlflow.example.org", "https://***@mlflow.example.org"),
        ("mysql://u:p@ss@db/m", "mysql://u:***@db/m"),  # an unencoded @ in the password
        ("sqlite:////w/mlflow.db?token=t&mode=ro", "sqlite:////w/mlflow.db?token=***&mode=ro"),
        (
            "https://h/x?X-Amz-Signature=abc&X-Amz-Credential=c&part=1",
            "https://h/x?X-Amz-Signature=***&X-Amz-Credential=***&part=1",
        ),
        (
            "http://h/?password=p&api_key=k&sig=s&secret=z",
            "http://h/?password=***&api_key=***&sig=***&secret=***",
        ),
        ("s3://bucket/releases", "s3://bucket/releases"),
    ],
)
def test_a_uri_is_shown_with_its_credentials_masked(uri, shown):
    assert mask_uri(uri) == shown
    assert (
        mask_secrets(f"store {uri} (from --tracking-uri)") == f"store {shown} (from --tracking-uri)"
    )
    assert mask_secrets(mask_secrets(uri)) == shown  # masking twice changes nothing


def test_text_without_a_uri_is_untouched():
    text = "race=Black&key=x: AUC 0.68 [0.61, 0.75]; password=in a sentence"
    assert mask_secrets(text) == text


@pytest.mark.parametrize(
    "uri",
    [
        f"postgresql://gate:{PASSWORD}@127.0.0.1:{{port}}/mlflow?password={TOKEN}",
        f"http://ana:{PASSWORD}@127.0.0.1:{{port}}/?token={TOKEN}",
    ],
    ids=["postgresql", "http"],
)
@pytest.mark.parametrize("how", ["env", "option"])
def test_an_unreachable_store_is_named_without_its_password(uri, how, tmp_path):
    uri = uri.format(port=stack.free_port())
    workdir = tmp_path / "wd"
    workdir.mkdir()
    env = {"MLFLOW_TRACKING_URI": uri} if how == "env" else {}
    args = ["review", "0" * 32, "--workdir", str(workdir)] + (
        ["--tracking-uri", uri] if how == "option" else []
    )
    code, _, out = _cli(args, env=env, timeout=60)
    assert code == 2, out
    assert "not reachable" in out and "127.0.0.1" in out, out
    assert not any(v in out for v in PLANTED), out
    assert _leaks(workdir) == []


@pytest.fixture(scope="module")
def review_files(small_adult, tmp_path_factory):
    """train / holdout / reference and a release that copies one race group: a REVIEW."""
    folder = tmp_path_factory.mktemp("masked")
    write_group_leak(small_adult, folder)
    (folder / "spec.yaml").write_text(
        yaml.safe_dump(yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"])
    )
    judging = lighten(
        {
            "gate": {"rules": review_rules(), "max_verbatim_copy_share": 0.05},
            "audit": {"intersections": []},
        }
    )
    (folder / "judging.yaml").write_text(yaml.safe_dump(judging))
    return folder


def _mlflow_fields(uri: str, run_id: str) -> str:
    """The run's description, tags and params, as the store answers them."""
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=uri).get_run(run_id)
    return json.dumps({"tags": run.data.tags, "params": run.data.params, "name": run.info.run_name})


def test_a_token_and_a_password_in_the_tracking_uri_reach_no_file_field_or_line(
    review_files, tmp_path
):
    workdir = tmp_path / "wd"
    workdir.mkdir()
    uri = f"sqlite:///{workdir / 'mlflow.db'}?token={TOKEN}&password={PASSWORD}"
    env = {"MLFLOW_TRACKING_URI": uri, "PREFECT_API_URL": ""}
    code, stdout, out = _cli(
        [
            "gate",
            *(
                f"--{n}={review_files / f'{n}.csv'}"
                for n in ("train", "holdout", "reference", "synthetic")
            ),
            f"--spec={review_files / 'spec.yaml'}",
            f"--config={review_files / 'judging.yaml'}",
            f"--workdir={workdir}",
            "--orchestrator=local",
            "--json",
        ],
        env=env,
    )
    summary = json.loads(stdout.strip().splitlines()[-1]) if code in (0, 3, 4) else {}
    assert code == 3, out[-3000:]
    run_id = summary["run_id"]
    assert "MLflow UI:" in out and "token=***" in out  # the line is there, masked
    outputs = [out]
    # a reviewer's comment quoting a link with a token: masked in the record, and the approval still
    # reads back
    comment = f"checked, see https://wiki.example.org/gate?access_token={TOKEN}"
    for args in (
        ["review", run_id],
        ["approve", run_id, "--reviewer", "ana", "--comment", comment],
    ):
        code, _, text = _cli([*args, "--workdir", str(workdir)], env=env)
        assert code == 0, text
        outputs.append(text)
    assert "published: " in outputs[-1]
    assert [
        line for text in outputs for line in text.splitlines() if any(v in line for v in PLANTED)
    ] == []
    assert _leaks(workdir) == []
    fields = _mlflow_fields(uri, run_id)
    assert "tracking" in fields or "mlflow" in fields  # the fields were read
    assert not any(v in fields for v in PLANTED)
