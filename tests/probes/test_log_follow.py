"""Log followers: tail -F on files (late creation, truncation, rotation) and commands."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headroom.probes.log_follow import CommandFollower, FileFollower, LineSplitter, follow


async def _collect(follower, count: int, timeout: float = 5.0) -> list[str]:
    out: list[str] = []

    async def run():
        async with contextlib.aclosing(follower.lines()) as lines:
            async for line in lines:
                out.append(line)
                if len(out) >= count:
                    break

    await asyncio.wait_for(run(), timeout)
    return out


class _Reader:
    """Runs a follower in a task and gathers its lines; stopped at the end of each test."""

    def __init__(self, follower):
        self.follower = follower
        self.lines: list[str] = []
        self.task = asyncio.create_task(self._run())

    async def _run(self):
        async for line in self.follower.lines():
            self.lines.append(line)

    async def wait_for(self, count: int, timeout: float = 5.0) -> list[str]:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while len(self.lines) < count:
            assert loop.time() < end, f"only {self.lines}"
            await asyncio.sleep(0.02)
        return self.lines

    async def close(self):
        await self.follower.stop()
        await asyncio.wait_for(self.task, 5)


async def test_file_from_start_and_growth(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text("one\ntwo\npart")
    reader = _Reader(FileFollower(path, poll_s=0.02))
    try:
        assert await reader.wait_for(2) == ["one", "two"]
        with path.open("a") as f:
            f.write("ial\r\nthree\n")
        assert await reader.wait_for(4) == ["one", "two", "partial", "three"]
    finally:
        await reader.close()


async def test_file_from_end_skips_old_lines(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text("old\n")
    reader = _Reader(FileFollower(path, from_start=False, poll_s=0.02))
    try:
        await asyncio.sleep(0.1)
        with path.open("a") as f:
            f.write("new\n")
        assert await reader.wait_for(1) == ["new"]
    finally:
        await reader.close()


async def test_file_created_late_is_read_from_its_start_even_when_following_the_end(tmp_path):
    path = tmp_path / "late.log"
    reader = _Reader(FileFollower(path, from_start=False, poll_s=0.02))
    try:
        await asyncio.sleep(0.1)
        path.write_text("first\n")
        assert await reader.wait_for(1) == ["first"]
    finally:
        await reader.close()


async def test_file_created_late_truncated_and_rotated(tmp_path):
    path = tmp_path / "vllm.log"
    follower = FileFollower(path, poll_s=0.02)
    reader = _Reader(follower)
    try:
        await asyncio.sleep(0.1)  # the file does not exist yet: wait, do not fail
        path.write_text("a\nb\n")
        await reader.wait_for(2)
        path.write_text("c\n")  # truncated in place (shorter than what was read)
        await reader.wait_for(3)
        os.rename(path, tmp_path / "vllm.log.1")  # rotated: a new file takes the name
        with (tmp_path / "vllm.log.1").open("a") as f:
            f.write("d\n")  # written to the old file before the new one appears
        path.write_text("e\nf\n")
        assert await reader.wait_for(6) == ["a", "b", "c", "d", "e", "f"]
        assert follower.rotations == 2
    finally:
        await reader.close()


async def test_stop_ends_iteration_and_flushes_partial_line(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text("x\nno newline")
    reader = _Reader(FileFollower(path, poll_s=0.02))
    await reader.wait_for(1)
    await reader.close()
    assert reader.lines == ["x", "no newline"]
    assert reader.task.done()


async def test_long_lines_are_cut_to_bounded_pieces(tmp_path):
    path = tmp_path / "big.log"
    path.write_bytes(b"y" * 25 + b"\nend\n")
    lines = await _collect(FileFollower(path, poll_s=0.02, max_line=10), 4)
    assert lines == ["y" * 10, "y" * 10, "y" * 5, "end"]


async def test_command_lines_and_exit_code():
    code = "import sys; print('out1'); print('err1', file=sys.stderr, flush=True); print('out2'); sys.exit(3)"
    follower = CommandFollower([sys.executable, "-c", code])
    lines = [line async for line in follower.lines()]
    assert sorted(lines) == ["err1", "out1", "out2"]
    assert follower.returncode == 3


async def test_command_stop_kills_the_process_group(tmp_path):
    # A parent that starts a child and both print forever: stop() must end both.
    pidfile = tmp_path / "child.pid"
    code = (
        "import subprocess, sys, time\n"
        f"c = subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: time.sleep(0.05)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(c.pid))\n"
        "while True:\n    print('tick', flush=True); time.sleep(0.05)\n"
    )
    follower = CommandFollower([sys.executable, "-c", code], grace_s=2)
    lines = await _collect(follower, 2)
    assert lines == ["tick", "tick"]  # leaving the loop early closes the generator -> stop()
    assert follower.returncode is not None
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        await asyncio.sleep(0.05)
    assert not _alive(child)


async def test_command_stop_from_another_task():
    follower = CommandFollower(
        [sys.executable, "-c", "import time\nwhile True: print('x', flush=True); time.sleep(0.05)"]
    )
    reader = _Reader(follower)
    await reader.wait_for(1)
    await reader.close()
    assert follower.returncode is not None and follower.returncode != 0


async def test_missing_command_says_why():
    follower = CommandFollower(["/nonexistent/headroom-no-such-binary", "-f"])
    assert [line async for line in follower.lines()] == []
    assert "cannot run" in follower.error


def test_command_needs_an_argv_list():
    with pytest.raises(ValueError, match="argv list"):
        CommandFollower("docker logs -f vllm")
    assert isinstance(follow(["journalctl", "-fu", "vllm"]), CommandFollower)
    assert isinstance(follow("/tmp/x.log"), FileFollower)


@given(st.binary(max_size=300), st.lists(st.integers(1, 50), max_size=10))
def test_splitter_is_independent_of_chunking(data, cuts):
    whole = LineSplitter(max_line=10**6)
    expected = whole.feed(data) + whole.flush()
    splitter = LineSplitter(max_line=10**6)
    got: list[str] = []
    position = 0
    for cut in cuts:
        got += splitter.feed(data[position : position + cut])
        position += cut
    got += splitter.feed(data[position:]) + splitter.flush()
    assert got == expected


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie child of ours would still "exist"; read its state
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False
