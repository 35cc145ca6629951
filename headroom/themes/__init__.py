"""Textual themes: dark (default), light and high-contrast.

Themes are data: each module defines one `textual.theme.Theme`. Stylesheets refer only to
semantic `$variables` (`$success`, `$warning`, `$error`, `$panel`, plus the few Headroom
variables below), so switching a theme never needs a CSS change.

Headroom's own variables, defined by every theme:
- `link-nvlink`, `link-pcie-switch`, `link-host-bridge`, `link-cross-socket`: topology link classes
- `gauge-ok`, `gauge-warn`, `gauge-full`: KV-cache gauge bands
- `panel-border`: panel frames (a computed `$panel-lighten-2` vanishes on a light background)
"""

from __future__ import annotations

from textual.theme import Theme

from headroom.themes.dark import THEME as DARK
from headroom.themes.high_contrast import THEME as HIGH_CONTRAST
from headroom.themes.light import THEME as LIGHT

DEFAULT_THEME = DARK.name

THEMES: dict[str, Theme] = {theme.name: theme for theme in (DARK, LIGHT, HIGH_CONTRAST)}

# Variables every Headroom theme must define; tests check each theme against this list.
REQUIRED_VARIABLES = (
    "link-nvlink",
    "link-pcie-switch",
    "link-host-bridge",
    "link-cross-socket",
    "gauge-ok",
    "gauge-warn",
    "gauge-full",
    "panel-border",
)


def resolve_theme_name(name: str | None) -> str:
    """Map a user's `--theme` value to a registered theme name.

    Accepts the full name (`headroom-light`) or the short one (`light`). Raises ValueError
    with the list of choices for anything else, so the CLI can print a clear message.
    """
    if name is None:
        return DEFAULT_THEME
    for candidate in (name, f"headroom-{name}"):
        if candidate in THEMES:
            return candidate
    choices = ", ".join(sorted(THEMES))
    raise ValueError(f"unknown theme {name!r}; choose one of: {choices}")


__all__ = ["DEFAULT_THEME", "REQUIRED_VARIABLES", "THEMES", "resolve_theme_name"]
