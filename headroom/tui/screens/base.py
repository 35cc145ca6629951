"""The base every Headroom screen shares: a status bar on top, the footer of keys below,
and `show(store, what)`, called by the app when data arrives while the screen is visible."""

from __future__ import annotations

from typing import cast

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from headroom.tui.app_services import AppServices
from headroom.tui.screens import SCREEN_TITLES
from headroom.tui.store import Store
from headroom.tui.widgets.status_bar import StatusBar

COMPACT_FOOTER_BELOW = 120  # columns


class HeadroomScreen(Screen):
    """A data screen. Subclasses implement `compose_body` and `show`."""

    MODE = "dashboard"

    def compose(self) -> ComposeResult:
        yield StatusBar(SCREEN_TITLES[self.MODE], list(SCREEN_TITLES).index(self.MODE) + 1)
        yield from self.compose_body()
        narrow = self.app.size.width < COMPACT_FOOTER_BELOW
        yield Footer(compact=narrow, show_command_palette=not narrow)

    def compose_body(self) -> ComposeResult:
        yield from ()

    @property
    def headroom(self) -> AppServices:
        """The app, typed: a Headroom screen is only ever shown by `HeadroomApp`."""
        return cast(AppServices, self.app)

    @property
    def store(self) -> Store:
        return self.headroom.store

    def clock(self) -> float:
        return self.headroom.sources.clock()

    def on_mount(self) -> None:
        self.show(self.store, "all")

    def on_resize(self) -> None:
        # A narrow terminal gets the compact footer, so every key still fits on the line.
        # (ctrl+p is listed in the help, so it may leave the footer to make room.)
        narrow = self.size.width < COMPACT_FOOTER_BELOW
        footer = self.query_one(Footer)
        footer.compact, footer.show_command_palette = narrow, not narrow

    def on_screen_resume(self) -> None:
        self.show(self.store, "all")

    def show(self, store: Store, what: str) -> None:
        """Redraw from the store. `what` names the probe that changed ("all" on resume)."""
        if what == "theme":
            what = "all"
        if what in {"all", "metrics", "server"}:
            self.query_one(StatusBar).update_from(store, self.clock())
        self.show_body(store, what)

    def show_body(self, store: Store, what: str) -> None:
        pass

    def unavailable(self, store: Store, probe: str) -> str | None:
        return store.unavailable.get(probe)
