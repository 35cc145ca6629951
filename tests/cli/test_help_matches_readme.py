"""README's command table against each command's --help: every option the table names is one
the command takes, and every command of `headroom --help` has a row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from headroom.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"


def _table_rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in README.read_text().splitlines():
        found = re.match(r"\| `headroom (\w+)([^|]*)\|(.*)\|$", line)
        if found:
            rows[found.group(1)] = found.group(2) + found.group(3)
    return rows


def _help(capsys, *argv: str) -> str:
    try:
        code = main(list(argv))
    except SystemExit as done:
        code = done.code
    assert code in (0, None)
    return capsys.readouterr().out


def test_every_command_has_a_row(capsys) -> None:
    listed = re.findall(r"^  (\w+)\s", _help(capsys, "--help"), re.M)
    assert listed and set(listed) == set(_table_rows())


@pytest.mark.parametrize("command", sorted(_table_rows()))
def test_the_options_a_row_names_are_in_the_commands_help(command, capsys) -> None:
    text = _help(capsys, command, "--help")
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", _table_rows()[command]))
    missing = {opt for opt in named if not re.search(rf"{opt}(?![\w-])", text)}
    assert not missing, f"headroom {command} --help lacks {sorted(missing)}"
