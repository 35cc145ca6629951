"""The base of Headroom's Textual apps (the dashboard, the fleet table, the sweep): every
Headroom theme offered in the palette, the chosen one (or the default) in use, and Headroom's
own theme variables underneath whatever theme is picked.
"""

from __future__ import annotations

from typing import TypeVar

from textual.app import App

from headroom.themes import DEFAULT_THEME, THEMES, resolve_theme_name

ResultT = TypeVar("ResultT")


class ThemedApp(App[ResultT]):
    def use_themes(self, theme: str | None) -> None:
        """Register every Headroom theme and switch to `theme` (the default when unknown)."""
        for registered in THEMES.values():
            self.register_theme(registered)
        self.theme = resolve_theme_name(theme)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # Headroom's own variables, so a non-Headroom theme picked in the palette still works.
        return dict(THEMES[DEFAULT_THEME].variables)
