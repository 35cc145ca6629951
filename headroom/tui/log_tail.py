"""The TUI's two log sources, both the log follower's (headroom.probes.log_follow) with the
TUI's settings: `FileTail` reads a growing file without ever skipping a backlog, and
`CommandTail` keeps what a command such as `docker logs -f vllm` prints in a bounded buffer
until the Logs screen polls for it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections import deque

from headroom.probes.log_follow import CommandFollower
from headroom.probes.log_follow import FileTail as _FileTail

MAX_READ = 1 << 20  # at most 1 MiB per call, so a huge backlog cannot stall one poll


class FileTail(_FileTail):
    """Incremental reader of one text file."""

    def __init__(self, path: str | os.PathLike[str], *, from_start: bool = True) -> None:
        # The TUI shows every line, so never jump over a backlog; a line is only cut into
        # pieces past MAX_READ, which keeps memory bounded.
        super().__init__(
            path,
            from_end=not from_start,
            max_bytes=MAX_READ,
            max_line=MAX_READ,
            max_backlog_bytes=sys.maxsize,
        )

    def read_new(self) -> list[str]:
        return self.read_lines()


class CommandTail:
    """Follow the output (stdout and stderr) of a command such as `docker logs -f vllm`.
    argv is run directly, never through a shell. Lines wait in a bounded buffer until read."""

    MAX_PENDING = 20_000  # a command that floods faster than the UI reads loses its oldest lines

    def __init__(self, argv: list[str]) -> None:
        if not argv:
            raise ValueError("a log command needs at least the program name")
        self.argv = list(argv)
        self._follower = CommandFollower(self.argv)
        self._pending: deque[str] = deque(maxlen=self.MAX_PENDING)
        self._reader: asyncio.Task[None] | None = None
        self.ended: str | None = None  # why the command stopped, once it has

    async def start(self) -> None:
        if not await self._follower.start():
            error = self._follower.start_error
            why = (error.strerror if error is not None else None) or error
            self.ended = f"could not run {self.argv[0]!r}: {why}"
            return
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        async for line in self._follower.lines():
            self._pending.append(line)
        self.ended = f"log command exited with status {self._follower.returncode}"

    def read_new(self) -> list[str]:
        lines = list(self._pending)
        self._pending.clear()
        return lines

    async def stop(self) -> None:
        await self._follower.stop()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
