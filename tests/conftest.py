"""Shared test helpers. Fixtures live in tests/fixtures/ (see each folder's SOURCES.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.fixtures import FIXTURES, read_fixture

__all__ = ["FIXTURES", "read_fixture"]


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


def pytest_configure(config: pytest.Config) -> None:
    # Also for module- and session-scoped fixtures (the autouse fixture below is per test):
    # a doctor run in a module fixture otherwise waits on an unreachable Hub for each model
    # id it does not know.
    os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture(autouse=True)
def _no_hugging_face_hub(monkeypatch):
    """No hub is reachable here: model look-ups use the cache only unless a test points
    HF_ENDPOINT at its own loopback stand-in (and clears HF_HUB_OFFLINE)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
