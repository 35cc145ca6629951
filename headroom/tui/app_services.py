"""What screens and widgets may ask of the app, as a typed Protocol.

`HeadroomApp` implements it; screens reach it through `HeadroomScreen.headroom` instead of
Textual's untyped `self.app`, and the app module is not imported by any screen (which would
be an import cycle: the app builds the screens).
"""

from __future__ import annotations

from typing import Protocol

from headroom.doctor.findings import Action
from headroom.tui.sources import DataSources
from headroom.tui.store import Store


class AppServices(Protocol):
    """The app as its screens see it."""

    @property
    def store(self) -> Store: ...

    @property
    def sources(self) -> DataSources: ...

    def propose_action(self, action: Action) -> None:
        """Open the restart dialog for a doctor action."""
        ...

    def reload_runs(self) -> None:
        """Read the run journal again."""
        ...
