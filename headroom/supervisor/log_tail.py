"""Tail the per-run log file vLLM writes to: complete lines only, bounded work per poll.

A server that floods its log (megabytes a second) must not stall the supervisor: each poll
reads at most max_bytes, very long lines are cut, and when the backlog grows beyond
max_backlog_bytes the tail jumps to the end and says how much it skipped. Lines are cut
and decoded by the log follower's LineSplitter (headroom.probes.log_follow), the same code
that splits a followed file or command for the TUI; this class only adds the bounded,
synchronous read per step the supervisor's loop needs.
"""

from __future__ import annotations

import os
from pathlib import Path

from headroom.probes.log_follow import LineSplitter


class FileTail:
    """Incremental reader of a growing file; handles truncation (copytruncate rotation)."""

    def __init__(
        self,
        path: Path,
        *,
        from_end: bool = False,
        max_bytes: int = 1 << 20,
        max_line: int = 16 << 10,
        max_backlog_bytes: int = 64 << 20,
    ) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.max_line = max_line
        self.max_backlog_bytes = max_backlog_bytes
        self.position = 0
        self.skipped_bytes = 0
        self.lines_read = 0
        self._splitter = LineSplitter(max_line)
        if from_end:
            try:
                self.position = self.path.stat().st_size
            except OSError:
                self.position = 0

    def backlog(self) -> int:
        try:
            return max(self.path.stat().st_size - self.position, 0)
        except OSError:
            return 0

    def read_lines(self, *, final: bool = False) -> list[str]:
        """New complete lines since the last call (final=True also returns a last partial)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return []
        try:
            size = os.fstat(fd).st_size
            if size < self.position:  # truncated under us: start again from the top
                self.position = 0
                self._splitter = LineSplitter(self.max_line)
            if size - self.position > self.max_backlog_bytes:
                jump_to = size - self.max_bytes
                self.skipped_bytes += jump_to - self.position
                self.position = jump_to
                self._splitter = LineSplitter(self.max_line)
            chunk = os.pread(fd, self.max_bytes, self.position)
        finally:
            os.close(fd)
        self.position += len(chunk)
        lines = self._splitter.feed(chunk)  # a line longer than max_line comes in pieces
        if final:
            lines += self._splitter.flush()
        self.lines_read += len(lines)
        return lines
