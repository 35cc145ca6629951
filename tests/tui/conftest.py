"""Fixtures for TUI tests: the app over recorded data."""

from __future__ import annotations

import pytest
from recorded_sources import RecordedSources

from headroom.tui.app import HeadroomApp


@pytest.fixture
def recorded_app():
    def make(**kwargs) -> HeadroomApp:
        keys = ("gpus_local", "restart_outcome")
        sources = RecordedSources(**{k: kwargs.pop(k) for k in keys if k in kwargs})
        return HeadroomApp(sources, **kwargs)

    return make
