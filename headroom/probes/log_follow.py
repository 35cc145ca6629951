"""Follow a vLLM log as it grows: a file (`tail -F`: waits for it, survives truncation and
rotation) or a command's output (`docker logs -f NAME`, `journalctl -fu UNIT`, run as an
argv list without a shell). Both yield lines without their newline, hold at most one read
chunk plus one partial line in memory, and stop cleanly.

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
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

__all__ = ["CommandFollower", "FileFollower", "LineSplitter", "follow"]

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


class FileFollower:
    """`tail -F` for one file, as an async iterator of lines.

    `from_start=True` reads what is already there first (a log of a run being watched from
    its beginning); False starts at the current end. A missing file is waited for. When the
    file shrinks (truncated) it is read again from the start; when the path points to a new
    file (rotated), the rest of the old one is read, then the new one from its start.
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
        self.rotations = 0  # times the file was replaced or truncated (for tests and the UI)

    async def stop(self) -> None:
        self._stopped.set()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    async def lines(self) -> AsyncIterator[str]:
        splitter = LineSplitter(self._max_line)
        handle = None
        identity: tuple[int, int] | None = None
        position = 0
        first_open = True
        try:
            while not self._stopped.is_set():
                if handle is None:
                    handle, identity = _open(self.path)
                    if handle is None:
                        first_open = False  # created later: all of it is new, read it all
                        await self._sleep()
                        continue
                    if first_open and not self.from_start:
                        handle.seek(0, os.SEEK_END)
                    first_open = False
                    position = handle.tell()
                data = handle.read(CHUNK_BYTES)
                if data:
                    position += len(data)
                    for line in splitter.feed(data):
                        yield line
                    await asyncio.sleep(0)  # let the UI breathe between chunks
                    continue
                # At the end: has the file been truncated or replaced?
                now = _stat(self.path)
                if now is None or (now[0], now[1]) != identity:
                    if now is not None:  # rotated: the old file is drained, take the new one
                        for line in splitter.flush():
                            yield line
                        handle.close()
                        handle = None
                        self.rotations += 1
                        continue
                elif now[2] < position:  # truncated in place
                    for line in splitter.flush():
                        yield line
                    handle.seek(0)
                    position = 0
                    self.rotations += 1
                    continue
                await self._sleep()
            for line in splitter.flush():
                yield line
        finally:
            if handle is not None:
                handle.close()

    async def _sleep(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), self.poll_s)


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size


def _open(path: Path):
    try:
        handle = open(path, "rb")  # noqa: SIM115 - kept open across iterations on purpose
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

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def lines(self) -> AsyncIterator[str]:
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
            self.error = f"cannot run {self.argv[0]!r}: {exc.strerror or exc}"
            return
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
    source: str | os.PathLike[str] | Sequence[str], **kwargs
) -> FileFollower | CommandFollower:
    """A follower for a path (str/Path) or a command (a list of argv strings)."""
    if isinstance(source, str | os.PathLike):
        return FileFollower(source, **kwargs)
    return CommandFollower(source, **kwargs)
