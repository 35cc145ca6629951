"""Follow a vLLM log as it grows, in one place: a file (`tail -F`: waits for it, survives
truncation and rotation) or a command's output (`docker logs -f NAME`, `journalctl -fu UNIT`,
run as an argv list without a shell). Both yield lines without their newline, hold at most
one read chunk plus one partial line in memory, and stop cleanly. `FileTail` is the
synchronous, bounded step underneath (the supervisor and the TUI poll it);
`FileFollower`/`CommandFollower` are the async iterators.

    follower = FileFollower("/var/log/vllm.log")
    async for line in follower.lines():
        digest.feed(line)
    ...
    await follower.stop()        # from another task; the loop above then ends

Leaving the loop early with `break` does not close an async generator at once: wrap it in
`contextlib.aclosing(follower.lines())`, or call `stop()`, so a command ends right away.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

__all__ = ["CommandFollower", "FileFollower", "FileTail", "LineSplitter", "follow"]

CHUNK_BYTES = 256 * 1024
MAX_LINE_BYTES = 64 * 1024  # a longer line is cut into pieces of this size (bounded memory)


class LineSplitter:
    """Bytes in, complete text lines out; keeps one partial line, never more than max_line."""

    def __init__(self, max_line: int = MAX_LINE_BYTES, encoding: str = "utf-8") -> None:
        self._partial = b""
        self._max_line = max_line
        self._encoding = encoding

    def feed(self, data: bytes) -> list[str]:
        data = self._partial + data
        parts = data.split(b"\n")
        self._partial = parts.pop()
        out: list[str] = []
        for part in parts:
            while len(part) > self._max_line:
                out.append(self._decode(part[: self._max_line]))
                part = part[self._max_line :]
            out.append(self._decode(part))
        while len(self._partial) > self._max_line:  # a runaway line: pass it on in pieces
            out.append(self._decode(self._partial[: self._max_line]))
            self._partial = self._partial[self._max_line :]
        return out

    def flush(self) -> list[str]:
        """The last line when the stream ended without a newline."""
        rest, self._partial = self._partial, b""
        return [self._decode(rest)] if rest else []

    def _decode(self, raw: bytes) -> str:
        return raw.decode(self._encoding, errors="replace").rstrip("\r")


class FileTail:
    """`tail -F` for one file, one bounded, synchronous step per `read_lines()` call.

    The one file reader of Headroom: the supervisor polls it for its run's log, the TUI for
    `attach --log-from`, and `FileFollower` wraps it as an async iterator. A missing file is
    waited for (and read from its start once it appears, even with `from_end`). When the
    file shrinks (truncated, copytruncate) it is read again from the start; when the path
    points to a new file (rotated), the rest of the old one is read first. Each call reads at
    most `max_bytes`; a line longer than `max_line` comes in pieces; when more than
    `max_backlog_bytes` wait unread (a flooding server), the tail jumps to the end and
    counts what it skipped in `skipped_bytes`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
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
        self.rotations = 0  # times the file was replaced or truncated
        self.last_read_bytes = 0  # bytes the last call read (0: at the end for now)
        self._splitter = LineSplitter(max_line)
        self._handle: BinaryIO | None = None
        self._identity: tuple[int, int] | None = None
        # Opened now, so "from the end" means the end as it is at construction.
        if self._open() and from_end:
            self.position = os.fstat(self._fileno()).st_size

    def _open(self) -> bool:
        self._handle, self._identity = _open(self.path)
        return self._handle is not None

    def _fileno(self) -> int:
        assert self._handle is not None
        return self._handle.fileno()

    def backlog(self) -> int:
        """Bytes written and not read yet."""
        if self._handle is None:
            return 0
        return max(os.fstat(self._fileno()).st_size - self.position, 0)

    def read_lines(self, *, final: bool = False) -> list[str]:
        """New complete lines since the last call (final=True also returns a last partial)."""
        lines = self._step()
        if final:
            lines += self._splitter.flush()
        self.lines_read += len(lines)
        return lines

    def _step(self) -> list[str]:
        self.last_read_bytes = 0
        if self._handle is None and not self._open():
            return []
        lines: list[str] = []
        size = os.fstat(self._fileno()).st_size
        if size < self.position:  # truncated in place: start again from the top
            lines += self._splitter.flush()
            self.position = 0
            self.rotations += 1
        if size - self.position > self.max_backlog_bytes:
            jump_to = size - self.max_bytes
            self.skipped_bytes += jump_to - self.position
            self.position = jump_to
            self._splitter = LineSplitter(self.max_line)
        chunk = os.pread(self._fileno(), self.max_bytes, self.position)
        self.position += len(chunk)
        self.last_read_bytes = len(chunk)
        lines += self._splitter.feed(chunk)
        if not chunk and self._rotated():
            # The old file is drained: its last partial line, then the new file from its start.
            lines += self._splitter.flush()
            self.close()
            self.position = 0
            self.rotations += 1
            if self._open():
                lines += self._step()
        return lines

    def _rotated(self) -> bool:
        now = _stat(self.path)
        return now is not None and (now[0], now[1]) != self._identity

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.close()

    def __del__(self) -> None:
        # A dropped tail closes its file (the supervisor replaces its tail on each run).
        with contextlib.suppress(Exception):
            self.close()


class FileFollower:
    """`FileTail` as an async iterator of lines, polling every `poll_s` at the end.

    `from_start=True` reads what is already there first (a log of a run being watched from
    its beginning); False starts at the current end.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        from_start: bool = True,
        poll_s: float = 0.2,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        self.path = Path(path)
        self.from_start = from_start
        self.poll_s = poll_s
        self._max_line = max_line
        self._stopped = asyncio.Event()
        self._tail: FileTail | None = None

    @property
    def rotations(self) -> int:
        """Times the file was replaced or truncated (for tests and the UI)."""
        return self._tail.rotations if self._tail is not None else 0

    async def stop(self) -> None:
        self._stopped.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    async def lines(self) -> AsyncIterator[str]:
        tail = self._tail = FileTail(
            self.path,
            from_end=not self.from_start,
            max_bytes=CHUNK_BYTES,
            max_line=self._max_line,
            max_backlog_bytes=sys.maxsize,  # a follower reads everything, however far behind
        )
        try:
            while not self._stopped.is_set():
                for line in tail.read_lines():
                    yield line
                if tail.last_read_bytes:
                    await asyncio.sleep(0)  # let the UI breathe between chunks
                else:
                    await self._sleep()
            for line in tail.read_lines(final=True):
                yield line
        finally:
            tail.close()

    async def _sleep(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), self.poll_s)


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size


def _open(path: Path) -> tuple[BinaryIO | None, tuple[int, int] | None]:
    try:
        handle = open(path, "rb", buffering=0)  # noqa: SIM115 - kept open across reads on purpose
    except OSError:
        return None, None
    st = os.fstat(handle.fileno())
    return handle, (st.st_dev, st.st_ino)


class CommandFollower:
    """Run a command (argv list, no shell) and yield its output lines (stdout + stderr).

    The command runs in its own process group, so `stop()` ends it and anything it started
    (SIGTERM, then SIGKILL after `grace_s`). `returncode` is set once it has ended.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        grace_s: float = 3.0,
        max_line: int = MAX_LINE_BYTES,
    ) -> None:
        if isinstance(argv, str) or not argv:
            raise ValueError(
                "CommandFollower needs an argv list, e.g. ['docker', 'logs', '-f', 'vllm']"
            )
        self.argv = [str(a) for a in argv]
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.grace_s = grace_s
        self._max_line = max_line
        self._process: asyncio.subprocess.Process | None = None
        self._stopping = False
        self._stopped = False
        self.returncode: int | None = None
        self.error: str | None = None  # why the command could not start
        self.start_error: OSError | None = None  # the same, as raised

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def start(self) -> bool:
        """Start the command (lines() does this itself when needed); False: it could not
        start, and `error` says why."""
        if self._process is not None or self.start_error is not None:
            return self._process is not None
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            self.start_error = exc
            self.error = f"cannot run {self.argv[0]!r}: {exc.strerror or exc}"
            return False
        return True

    async def lines(self) -> AsyncIterator[str]:
        if not await self.start():
            return
        assert self._process is not None
        splitter = LineSplitter(self._max_line)
        stream = self._process.stdout
        assert stream is not None
        try:
            while True:
                data = await stream.read(CHUNK_BYTES)
                if not data:
                    break
                for line in splitter.feed(data):
                    yield line
            for line in splitter.flush():
                yield line
            self.returncode = await self._process.wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        """End the command and its children; safe to call more than once."""
        process = self._process
        if process is None or self._stopping or self._stopped:
            return
        self._stopping = True
        try:
            if process.returncode is None:
                _signal_group(process.pid, signal.SIGTERM)
                try:
                    await asyncio.wait_for(process.wait(), self.grace_s)
                except TimeoutError:
                    _signal_group(process.pid, signal.SIGKILL)
                    await process.wait()
            else:
                # the leader is gone; children it left in the group must not outlive us
                _signal_group(process.pid, signal.SIGKILL)
            self.returncode = process.returncode
            self._stopped = True
        finally:
            self._stopping = False


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def follow(
    source: str | os.PathLike[str] | Sequence[str], **kwargs: Any
) -> FileFollower | CommandFollower:
    """A follower for a path (str/Path) or a command (a list of argv strings)."""
    if isinstance(source, str | os.PathLike):
        return FileFollower(source, **kwargs)
    return CommandFollower(source, **kwargs)
