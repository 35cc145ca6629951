"""Themes are data: three registered themes, Headroom variables in each, no hex in styles."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from headroom.themes import DEFAULT_THEME, REQUIRED_VARIABLES, THEMES, resolve_theme_name

TUI = Path(__file__).resolve().parents[2] / "headroom" / "tui"
HEX = re.compile(r"#[0-9a-fA-F]{3,8}\b")


def test_three_themes_dark_default():
    assert set(THEMES) == {"headroom-dark", "headroom-light", "headroom-high-contrast"}
    assert DEFAULT_THEME == "headroom-dark"
    assert THEMES["headroom-light"].dark is False


@pytest.mark.parametrize("name", list(THEMES))
def test_every_theme_defines_headroom_variables(name):
    assert set(REQUIRED_VARIABLES) <= set(THEMES[name].variables)


@pytest.mark.parametrize(
    "given,expected",
    [
        (None, "headroom-dark"),
        ("light", "headroom-light"),
        ("headroom-high-contrast", "headroom-high-contrast"),
    ],
)
def test_resolve_theme_name(given, expected):
    assert resolve_theme_name(given) == expected


def test_unknown_theme_lists_choices():
    with pytest.raises(ValueError, match="headroom-light"):
        resolve_theme_name("solarized")


def _styles() -> list[tuple[Path, str]]:
    found = [(path, path.read_text()) for path in TUI.rglob("*.tcss")]
    for path in TUI.rglob("*.py"):
        text = path.read_text()
        for block in re.findall(r'DEFAULT_CSS = """(.*?)"""', text, re.S):
            found.append((path, block))
    return found


def test_styles_use_theme_variables_only():
    styles = _styles()
    assert styles, "no stylesheets found"
    offenders = [(str(path), HEX.findall(text)) for path, text in styles if HEX.search(text)]
    assert offenders == []


def test_markup_in_widgets_uses_variables_not_hex():
    offenders = []
    for path in TUI.rglob("*.py"):
        for line in path.read_text().splitlines():
            if HEX.search(line) and "[" in line:
                offenders.append(f"{path.name}: {line.strip()}")
    assert offenders == []


async def test_app_switches_through_every_theme(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        for name in THEMES:
            app.theme = name
            await pilot.pause()
            assert app.theme_variables["gauge-full"] == THEMES[name].variables["gauge-full"]
