"""Group labels that hide record values cannot be reversed.

A category value that may not be shown (held by too few records outside train) names its group by
a hash. It used to be an unsalted SHA-256 prefix: hashing a list of guesses (43 country names)
reversed 28 of 28 labels, and rare values are audited in every categorical column. The hash is now
an HMAC keyed with a per-store secret (``<workdir>/label-key``, 0600, never recorded): the same
dictionary reverses nothing, labels are stable within a workdir (``approve --suppress '#…'`` finds
the group) and differ across workdirs, and the secret appears in no file, record or output.

The end-to-end tests run one gate on Adult with ``native_country`` declared without categories (its
rare countries are hashed), then ``approve --suppress`` on the flagged group; the unit tests need no
gate.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
import threading

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from privacy_gate import names, tracking
from privacy_gate.cli import app
from privacy_gate.errors import ConfigError
from privacy_gate.label_key import LabelKey, matching_key

from ..conftest import ADULT, EXAMPLE, lighten, review_rules, write_group_leak

GROUP = "race=Asian-Pac-Islander"
TOKEN = re.compile(r"#([0-9a-f]{10})\b")
runner = CliRunner()

#: the issue's attack: a list of country names (every native_country of Adult, and more)
COUNTRIES = [
    "United-States",
    "Cambodia",
    "England",
    "Puerto-Rico",
    "Canada",
    "Germany",
    "Outlying-US(Guam-USVI-etc)",
    "India",
    "Japan",
    "Greece",
    "South",
    "China",
    "Cuba",
    "Iran",
    "Honduras",
    "Philippines",
    "Italy",
    "Poland",
    "Jamaica",
    "Vietnam",
    "Mexico",
    "Portugal",
    "Ireland",
    "France",
    "Dominican-Republic",
    "Laos",
    "Ecuador",
    "Taiwan",
    "Haiti",
    "Columbia",
    "Hungary",
    "Guatemala",
    "Nicaragua",
    "Scotland",
    "Thailand",
    "Yugoslavia",
    "El-Salvador",
    "Trinadad&Tobago",
    "Peru",
    "Hong",
    "Holand-Netherlands",
    "Spain",
    "Brazil",
]


def _dictionary() -> list[str]:
    """The attacker's guesses: the country list, and every category value of the whole Adult table
    (an attacker who knows the domain), with the missing-value label."""
    adult = pd.read_csv(ADULT)
    words = set(COUNTRIES) | {"(missing)"}
    for col in adult.columns:
        if adult[col].dtype == object:
            words |= set(adult[col].dropna().astype(str))
    return sorted(words)


def _unsalted(word: str) -> str:
    return hashlib.sha256(word.encode()).hexdigest()[:10]


# ------------------------------------------------------------------------------ the key itself


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_a_workdirs_key_is_made_once_private_and_differs_from_another_workdirs(tmp_path, umask):
    old = os.umask(umask)
    try:
        first = LabelKey.for_workdir(tmp_path / "a")
    finally:
        os.umask(old)
    path = tmp_path / "a" / names.LABEL_KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert LabelKey.for_workdir(tmp_path / "a") == first  # stable within a store
    other = LabelKey.for_workdir(tmp_path / "b")
    assert other != first and other.token("Laos") != first.token("Laos")  # differs across stores
    assert first.token("Laos") != "#" + _unsalted("Laos")
    secret = path.read_text().strip()
    assert (
        secret not in repr(first) and secret not in str(first) and first.fingerprint not in secret
    )


def test_concurrent_first_uses_agree_on_one_key(tmp_path):
    keys: list[LabelKey] = []
    threads = [
        threading.Thread(target=lambda: keys.append(LabelKey.for_workdir(tmp_path)))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(keys) == 8 and len({k.fingerprint for k in keys}) == 1
    assert [p.name for p in tmp_path.iterdir()] == [names.LABEL_KEY_FILE]  # no scratch file left


def test_a_readable_or_damaged_key_file_is_refused_naming_it(tmp_path):
    LabelKey.for_workdir(tmp_path)
    path = tmp_path / names.LABEL_KEY_FILE
    os.chmod(path, 0o644)
    with pytest.raises(
        ConfigError, match=re.escape(f"{path}: the label key may be read by other users")
    ):
        LabelKey.for_workdir(tmp_path)
    os.chmod(path, 0o600)
    path.write_text("not a key\n")
    with pytest.raises(ConfigError, match=re.escape(f"{path}: not a label key")):
        LabelKey.for_workdir(tmp_path)
    with pytest.raises(ConfigError, match="no label key in this workdir"):
        LabelKey.for_workdir(tmp_path / "elsewhere", create=False)


def test_a_gate_on_a_workdir_with_a_readable_key_exits_2_before_running(tmp_path, small_adult):
    LabelKey.for_workdir(tmp_path / "wd")
    path = tmp_path / "wd" / names.LABEL_KEY_FILE
    os.chmod(path, 0o644)
    real = pd.read_csv(small_adult / "real.csv")
    for name, part in {
        "train": real.iloc[:1500],
        "holdout": real.iloc[1500:2200],
        "reference": real.iloc[2200:],
    }.items():
        part.to_csv(tmp_path / f"{name}.csv", index=False)
    code, out, err = _invoke(
        [
            "gate",
            "--train",
            str(tmp_path / "train.csv"),
            "--holdout",
            str(tmp_path / "holdout.csv"),
            "--reference",
            str(tmp_path / "reference.csv"),
            "--synthetic",
            str(tmp_path / "train.csv"),
            "--spec",
            str(EXAMPLE),
            "--workdir",
            str(tmp_path / "wd"),
            "--orchestrator",
            "local",
        ]
    )
    assert (
        code == 2
        and f"{path}: the label key may be read by other users" in err
        and "chmod 600" in err
    ), (out, err)
    assert not (tmp_path / "wd" / names.SQLITE_FILE).exists()


def test_labels_are_resolved_only_with_the_key_that_made_them(tmp_path):
    key = LabelKey.for_workdir(tmp_path / "a")
    assert matching_key(tmp_path / "a", fingerprint=key.fingerprint, what="run r1") == key
    LabelKey.for_workdir(tmp_path / "b")
    with pytest.raises(ConfigError, match="run r1 hashed its group labels with another label key"):
        matching_key(tmp_path / "b", fingerprint=key.fingerprint, what="run r1")
    with pytest.raises(ConfigError, match="predates keyed labels"):
        matching_key(tmp_path / "a", fingerprint=None, what="run r1")


def test_a_hashed_label_needs_a_key():
    from privacy_gate.experiment.grouping import group_mask, value_token

    with pytest.raises(ValueError, match="label key"):
        value_token("Laos", None, key=None)
    assert value_token("Laos", frozenset({"Laos"}), key=None) == "Laos"  # a public value needs none
    key = LabelKey.ephemeral()
    df = pd.DataFrame({"c": ["Laos", "Peru"]})
    assert group_mask(df, f"c={key.token('Laos')}", key=key).tolist() == [True, False]
    with pytest.raises(ValueError, match="label key"):
        group_mask(df, f"c={key.token('Laos')}")


# ------------------------------------------------------------------------------ end to end


def _invoke(args: list[str]) -> tuple[int, str, str]:
    r = runner.invoke(app, args, catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture(scope="module")
def gated(small_adult, tmp_path_factory):
    """One gate (REVIEW: one race group's training rows copied) with native_country undeclared, then
    ``approve --suppress`` of that group. Returns the workdir, the run ids and every output."""
    folder = tmp_path_factory.mktemp("keyed")
    write_group_leak(small_adult, folder)
    spec = yaml.safe_load(EXAMPLE.read_text())["dataset"]["spec"]
    spec["columns"]["native_country"] = {
        "kind": "categorical"
    }  # no public list: rare countries are hashed
    (folder / "spec.yaml").write_text(yaml.safe_dump(spec))
    judging = lighten(
        {
            "gate": {"rules": review_rules(), "max_verbatim_copy_share": 0.05},
            "audit": {"intersections": []},
        }
    )
    (folder / "judging.yaml").write_text(yaml.safe_dump(judging))
    workdir = folder / "wd"
    code, out, err = _invoke(
        [
            "gate",
            "--train",
            str(folder / "train.csv"),
            "--holdout",
            str(folder / "holdout.csv"),
            "--reference",
            str(folder / "reference.csv"),
            "--synthetic",
            str(folder / "synthetic.csv"),
            "--spec",
            str(folder / "spec.yaml"),
            "--config",
            str(folder / "judging.yaml"),
            "--workdir",
            str(workdir),
            "--orchestrator",
            "local",
            "--json",
        ]
    )
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["verdict"] == "REVIEW" and GROUP in summary["flagged_subgroups"], summary[
        "reasons"
    ]
    outputs = [out, err]
    from prefect.settings import PREFECT_API_URL, temporary_settings

    # the re-gate in this process, as without a Prefect server: its stage lines on stderr (on a
    # worker that started the session's Prefect test server, `auto` would make it a flow, whose
    # INFO lines the suite's PREFECT_LOGGING_LEVEL=WARNING hides)
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        code, text, err = _invoke(
            [
                "approve",
                summary["run_id"],
                "--reviewer",
                "ana",
                "--suppress",
                GROUP,
                "--workdir",
                str(workdir),
            ]
        )
    assert code == 0, err
    outputs += [text, err]
    rerun = re.search(r"\(gate re-run ([0-9a-f]{32})\)", text).group(1)
    return {
        "folder": folder,
        "workdir": workdir,
        "run_id": summary["run_id"],
        "rerun_id": rerun,
        "summary": summary,
        "outputs": outputs,
        "synthetic": pd.read_csv(folder / "synthetic.csv"),
    }


def _tokens(gated) -> set[str]:
    """Every hashed label the run recorded (the audit's groups, the verdict)."""
    tracker = tracking.Tracker(
        uri=f"sqlite:///{gated['workdir'] / names.SQLITE_FILE}", experiment=None
    )
    text = tracker.read_text(gated["run_id"], names.ART_SUBGROUPS) + tracker.read_text(
        gated["run_id"], names.ART_VERDICT
    )
    return set(TOKEN.findall(text))


def test_the_dictionary_attack_reverses_no_label(gated):
    tokens = _tokens(gated)
    assert len(tokens) >= 5, tokens  # rare countries (and other rare values) were audited, hashed
    words = _dictionary()
    guesses = {_unsalted(w): w for w in words} | {_unsalted(w.lower()): w for w in words}
    reversed_ = {t: guesses[t] for t in tokens if t in guesses}
    assert reversed_ == {}, f"{len(reversed_)} of {len(tokens)} labels reversed: {reversed_}"


def test_labels_are_the_stores_keyed_hashes_and_resolve_only_with_its_key(gated, tmp_path):
    from privacy_gate.runs.regate import SuppressedRelease
    from privacy_gate.runs.run_record import RunRecord

    key = LabelKey.for_workdir(gated["workdir"], create=False)
    words = _dictionary()
    keyed = {key.token(w)[1:]: w for w in words}
    tokens = _tokens(gated)
    assert tokens <= set(keyed), tokens - set(
        keyed
    )  # every label is the store's keyed hash of a value
    other = LabelKey.ephemeral()
    assert not tokens & {
        other.token(w)[1:] for w in words
    }  # another store's key names nothing here
    # the run sealed which key hashed its labels; --suppress by a hashed label removes exactly its
    # rows
    tracker = tracking.Tracker(
        uri=f"sqlite:///{gated['workdir'] / names.SQLITE_FILE}", experiment=None
    )
    record = RunRecord(tracker, gated["run_id"])
    assert record.seal[names.SEAL_LABEL_KEY] == key.fingerprint
    token, country = next(
        (t, keyed[t])
        for t in sorted(tokens)
        if keyed[t] in set(gated["synthetic"]["native_country"])
    )
    label = f"native_country=#{token}"
    release = SuppressedRelease.read(record, suppress=[label], workdir=gated["workdir"])
    assert release.removed == int((gated["synthetic"]["native_country"] == country).sum()) > 0
    # from a workdir with another key (or none), the label is refused, never resolved to other rows
    elsewhere = tmp_path / "elsewhere"
    with pytest.raises(ConfigError, match="no label key in this workdir"):
        SuppressedRelease.read(record, suppress=[label], workdir=elsewhere)
    LabelKey.for_workdir(elsewhere)
    with pytest.raises(ConfigError, match="another label key"):
        SuppressedRelease.read(record, suppress=[label], workdir=elsewhere)


def test_the_secret_reaches_no_file_record_or_output(gated):
    workdir = gated["workdir"]
    key_file = workdir / names.LABEL_KEY_FILE
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    secret_hex = key_file.read_text().strip()
    raw = bytes.fromhex(secret_hex)
    forms = [
        secret_hex.encode(),
        secret_hex.upper().encode(),
        raw,
        base64.b64encode(raw),
        base64.urlsafe_b64encode(raw),
        base64.b64encode(secret_hex.encode()),
    ]
    leaks = [
        str(p.relative_to(workdir))
        for p in workdir.rglob("*")
        if p.is_file() and p != key_file and any(f in p.read_bytes() for f in forms)
    ]
    assert leaks == []
    assert not any(f.decode("latin-1") in text for f in forms for text in gated["outputs"])
    # the quarantine the gate and the re-gate wrote is private too (item 14, end to end)
    quarantine = workdir / "quarantine"
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in [quarantine, *quarantine.rglob("*")]}
    assert modes and all(m == (0o700 if p.is_dir() else 0o600) for p, m in modes.items()), modes


def test_a_regates_run_is_refused_alone_after_publication(gated):
    """Item 13, end to end: the run ``approve --suppress`` made is decided with its parent."""
    workdir, rerun, parent = gated["workdir"], gated["rerun_id"], gated["run_id"]
    published = sorted(p.name for p in (workdir / "published").iterdir())
    assert published
    for action in ("reject", "approve"):
        code, out, err = _invoke([action, rerun, "--reviewer", "bo", "--workdir", str(workdir)])
        assert code == 2, (code, out, err)
        assert (
            f"run {rerun} is the re-gate of run {parent}" in err and f"decide run {parent}" in err
        ), err
    tracker = tracking.Tracker(uri=f"sqlite:///{workdir / names.SQLITE_FILE}", experiment=None)
    assert tracker.decisions(rerun) == []
    assert sorted(p.name for p in (workdir / "published").iterdir()) == published


def test_approve_suppress_says_what_it_is_doing_and_what_it_dropped(gated):
    """Progress lines while it re-gates (the filtering, then the gate's own stages) and a
    summary: the rows dropped out of how many, per suppressed group, the new verdict and its run,
    and where the release was published (the published file has exactly the rows left)."""
    text, err = gated["outputs"][2:]
    synthetic, run_id, rerun_id = gated["synthetic"], gated["run_id"], gated["rerun_id"]
    assert f"▶ removing the rows of {GROUP} from the release of run {run_id} ..." in err
    assert (
        "▶ running" in err
        and "attack(s) concurrently" in err
        and "✔ recording the verdict done in" in err
    )
    lines = text.splitlines()
    dropped = int(
        re.search(r"^suppressed:  ([\d,]+) of ([\d,]+) synthetic rows", text, re.M)
        .group(1)
        .replace(",", "")
    )
    assert f"suppressed:  {dropped:,} of {len(synthetic):,} synthetic rows" in text
    group_rows = int((synthetic["race"] == "Asian-Pac-Islander").sum())
    assert f"  {GROUP}: {group_rows:,} rows" in lines and dropped >= group_rows > 0
    assert re.search(
        rf"^re-gate:     (APPROVE|REVIEW) \(status ok, run {rerun_id}\)$", text, re.M
    ), text
    published = next(line for line in lines if line.startswith("published: ")).split(": ", 1)[1]
    assert len(pd.read_parquet(published)) == len(synthetic) - dropped
