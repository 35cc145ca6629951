"""Shared test helpers. Fixtures live in tests/fixtures/ (see each folder's SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fixtures import FIXTURES, read_fixture

__all__ = ["FIXTURES", "read_fixture"]


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(autouse=True)
def _no_hugging_face_hub(monkeypatch):
    """No hub is reachable here: model look-ups use the cache only unless a test points
    HF_ENDPOINT at its own loopback stand-in (and clears HF_HUB_OFFLINE)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
