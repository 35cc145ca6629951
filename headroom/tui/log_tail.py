"""Follow a growing log file without blocking the UI: each `read_new()` returns the complete
lines appended since the last call. A file that shrinks (rotated or truncated by a restart)
is read again from the start. The reading itself is the supervisor's FileTail (which cuts
lines with the log follower's LineSplitter); this module only keeps the TUI's names."""

from __future__ import annotations

import os
import sys

from headroom.supervisor.log_tail import FileTail as _BoundedFileTail

MAX_READ = 1 << 20  # at most 1 MiB per call, so a huge backlog cannot stall one poll


class FileTail(_BoundedFileTail):
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
        self._pending: list[str] = []
        self._process = None
        self._reader = None
        self.ended: str | None = None  # why the command stopped, once it has

    async def start(self) -> None:
        import asyncio

        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            self.ended = f"could not run {self.argv[0]!r}: {exc.strerror or exc}"
            return
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        stream = self._process.stdout
        while True:
            raw = await stream.readline()
            if not raw:
                break
            self._pending.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
            if len(self._pending) > self.MAX_PENDING:
                del self._pending[: len(self._pending) - self.MAX_PENDING]
        code = await self._process.wait()
        self.ended = f"log command exited with status {code}"

    def read_new(self) -> list[str]:
        lines, self._pending = self._pending, []
        return lines

    async def stop(self) -> None:
        import asyncio
        import contextlib

        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 3)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
