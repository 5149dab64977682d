"""The command line explains itself: ``--version``, the exit codes in ``--help``, plain
flags without a ``<bool>`` type, and help paragraphs that reflow to the terminal instead of keeping
the docstrings' own line breaks."""

from __future__ import annotations

import inspect
import re
from importlib.metadata import version

import pytest
from typer.testing import CliRunner

from privacy_gate.cli import app
from privacy_gate.gate.verdict import EXIT_CODES

runner = CliRunner()
COMMANDS = [c.name or c.callback.__name__.replace("_", "-") for c in app.registered_commands]


def _help(*args: str, width: int = 80) -> str:
    result = runner.invoke(app, [*args, "--help"], max_content_width=width, terminal_width=width)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_the_installed_version(flag):
    result = runner.invoke(app, [flag])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"privacy-gate {version('privacy-gate')}"


def _exit_codes(text: str) -> dict[str, str]:
    """The "Exit codes:" paragraph of a help text: code -> meaning."""
    block = text.split("Exit codes:", 1)[1]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s+(\d)\s+(.+)$", block, re.MULTILINE)}


@pytest.mark.parametrize("command", ["gate", "run"])
def test_gate_and_run_help_list_the_verdict_exit_codes(command):
    codes = _exit_codes(_help(command))
    assert set(codes) == {"0", "2", "3", "4"}, codes
    for decision, code in EXIT_CODES.items():  # the codes the verdict really exits with
        assert codes[str(code)].startswith(decision), (code, codes)
    assert "refused" in codes["2"] and "failure inside the gate" in codes["4"]


def test_approve_help_lists_what_approve_returns():
    codes = _exit_codes(_help("approve"))
    assert set(codes) == {"0", "2", "4"}, codes
    assert "published" in codes["0"] and "--suppress" in codes["4"] and "refused" in codes["2"]


def test_root_help_lists_the_exit_codes_of_every_kind_of_command():
    text = " ".join(_help().split())
    assert "Exit codes" in text and "-V, --version" in text
    for needle in (
        "0 APPROVE, 3 REVIEW, 4 BLOCK",
        "4 the re-gate after --suppress BLOCKs",
        "1 something found",
        "2 refused",
    ):
        assert needle in text, needle


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_help_lists_exit_codes_and_no_bool_type(command):
    text = _help(command)
    assert "<bool>" not in text
    assert "2" in _exit_codes(text), command  # every command can refuse


@pytest.mark.parametrize("command", COMMANDS)
def test_help_paragraphs_reflow_to_the_terminal(command):
    """On a wide terminal each paragraph of the command's docstring is one line: the docstring's
    own line breaks are not kept (they broke lines mid-sentence inside a narrower box)."""
    info = next(
        c
        for c in app.registered_commands
        if (c.name or c.callback.__name__.replace("_", "-")) == command
    )
    lines = {line.strip() for line in _help(command, width=2000).splitlines()}
    for paragraph in inspect.cleandoc(info.callback.__doc__).split("\n\n"):
        assert " ".join(paragraph.split()) in lines, paragraph
    narrow = _help(command, width=60).splitlines()
    assert (
        max(len(line) for line in narrow if not line.startswith("    ")) <= 60
    )  # exit-code rows are kept whole
