"""The per-run log tail is the log follower's `FileTail` (headroom.probes.log_follow): one
file reader for the supervisor, the TUI and `FileFollower`. Kept as a name here because the
supervisor's modules import it from this place."""

from __future__ import annotations

from headroom.probes.log_follow import FileTail

__all__ = ["FileTail"]
