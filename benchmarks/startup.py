"""Launch to first painted dashboard.

Starts `headroom attach URL` (the full app, from a fresh Python interpreter) in a
pseudo-terminal against a local server replaying a real vLLM /metrics page, reads what it
draws, and reports the time from launch until the dashboard is on screen ("1 Dashboard" in
the status bar) and until it shows data (the KV panel's "capacity"). Goal: under 1 s.

    .venv/bin/python benchmarks/startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pty
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import termios
import time

from overhead import APP, ROOT, replay_server

ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]")


def one_run(url: str, timeout: float = 20.0, size=(100, 30)) -> tuple[float | None, float | None]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", APP, url, "1.0"],
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        cwd=ROOT,
        start_new_session=True,
    )
    os.close(slave)
    screen = b""
    painted = data = None
    try:
        while time.monotonic() - started < timeout and data is None:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            screen += ANSI.sub(b"", chunk)
            now = time.monotonic() - started
            if painted is None and b"1 Dashboard" in screen:
                painted = now
            if b"capacity" in screen:
                data = now
    finally:
        with contextlib.suppress(OSError):
            os.write(master, b"q")
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with contextlib.suppress(OSError):
            os.close(master)
    return painted, data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    painted, data = [], []
    with replay_server() as (url, _, _):
        for _ in range(args.runs):
            first, filled = one_run(url)
            if first is not None:
                painted.append(first)
            if filled is not None:
                data.append(filled)
    if not painted:
        print("startup: the dashboard never appeared")
        return 1
    median = statistics.median(painted)
    print(
        f"startup: first painted dashboard median {median:.3f} s, best {min(painted):.3f} s "
        f"over {len(painted)} runs ({'within' if median < 1.0 else 'OVER'} goal <1 s)"
    )
    if data:
        print(f"startup: dashboard with live data median {statistics.median(data):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
