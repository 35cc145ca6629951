"""Supervisor test fixtures: every test gets its own data/state dirs (never ~/.local)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def isolated_headroom_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HEADROOM_CONFIG", str(tmp_path / "config.toml"))
    return tmp_path / "data"
