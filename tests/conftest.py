"""Shared test helpers. Fixtures live in tests/fixtures/ (see each folder's SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.fixtures import FIXTURES, read_fixture

__all__ = ["FIXTURES", "read_fixture"]


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
