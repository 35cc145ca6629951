"""Reading files under tests/fixtures/ (see each folder's SOURCES.md). A module of its own,
since `from conftest import ...` resolves to whichever conftest.py was imported first."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def read_fixture(*parts: str) -> str:
    return FIXTURES.joinpath(*parts).read_text(encoding="utf-8")
