"""The TUI talks to the core through types (issue 11): at most 10 uses of `Any` in
headroom/tui, each on a line that says why, and no getattr/hasattr duck typing."""

from __future__ import annotations

import ast
from pathlib import Path

import headroom.tui

TUI = Path(headroom.tui.__file__).resolve().parent
MAX_ANY = 10


def _sources() -> list[tuple[Path, str]]:
    return [(path, path.read_text(encoding="utf-8")) for path in sorted(TUI.rglob("*.py"))]


def test_any_is_rare_and_explained() -> None:
    uses: list[str] = []
    unexplained: list[str] = []
    for path, text in _sources():
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            named = isinstance(node, ast.Name) and node.id == "Any"
            dotted = isinstance(node, ast.Attribute) and node.attr == "Any"
            if named or dotted:
                where = f"{path.relative_to(TUI)}:{node.lineno}"
                uses.append(where)
                if "#" not in lines[node.lineno - 1]:  # the reason, as a comment on the line
                    unexplained.append(where)
    assert len(uses) <= MAX_ANY, uses
    assert unexplained == []


def test_no_duck_typing_of_the_core() -> None:
    found = [
        f"{path.relative_to(TUI)}:{node.lineno}"
        for path, text in _sources()
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"getattr", "hasattr"}
    ]
    assert found == []
