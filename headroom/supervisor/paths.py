"""Where Headroom keeps its files (XDG), with environment overrides for tests and systemd.

- data dir (journal, per-run logs): $HEADROOM_DATA_DIR, else $XDG_DATA_HOME/headroom,
  else ~/.local/share/headroom
- state dir (state files of running servers): $HEADROOM_STATE_DIR, else
  $HEADROOM_DATA_DIR/state when that is set (so one tmp dir isolates a test), else
  $XDG_STATE_HOME/headroom, else ~/.local/state/headroom
- config file: $HEADROOM_CONFIG, else $XDG_CONFIG_HOME/headroom/config.toml, else
  ~/.config/headroom/config.toml
"""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, fallback: str) -> Path:
    value = os.environ.get(var)
    # XDG says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / fallback


def data_dir() -> Path:
    override = os.environ.get("HEADROOM_DATA_DIR")
    if override:
        return Path(override)
    return _xdg("XDG_DATA_HOME", ".local/share") / "headroom"


def state_dir() -> Path:
    override = os.environ.get("HEADROOM_STATE_DIR")
    if override:
        return Path(override)
    if os.environ.get("HEADROOM_DATA_DIR"):
        return Path(os.environ["HEADROOM_DATA_DIR"]) / "state"
    return _xdg("XDG_STATE_HOME", ".local/state") / "headroom"


def config_path() -> Path:
    override = os.environ.get("HEADROOM_CONFIG")
    if override:
        return Path(override)
    return _xdg("XDG_CONFIG_HOME", ".config") / "headroom" / "config.toml"


def journal_path(base: Path | None = None) -> Path:
    return (base or data_dir()) / "runs.jsonl"


def logs_dir(base: Path | None = None) -> Path:
    return (base or data_dir()) / "logs"


def private_dir(path: Path) -> Path:
    """Create `path` (and its parents) for Headroom's own files: the folder itself is 0700,
    as its per-run logs and state files may show what a server was started with. A folder
    Headroom made earlier with wider rights is narrowed; parents are left as they are."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if path.stat().st_mode & 0o077:
            path.chmod(0o700)
    except OSError:
        pass  # not ours to change (a shared folder given by the user): leave it
    return path
