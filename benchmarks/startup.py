"""Launch to first painted dashboard.

Starts `headroom attach URL` (the full app, from a fresh Python interpreter) in a
pseudo-terminal against a local server replaying a real vLLM /metrics page, reads what it
draws, and reports the time from launch until the dashboard is on screen ("1 Dashboard" in
the status bar) and until it shows data (the KV panel's "capacity"). Goal: under 1 s.

The baseline, measured in the same run and alternating with the app run by run (so a load
change hits both alike), is a bare Textual app drawing the same two words in the same
terminal: the floor any Textual app pays (interpreter, Textual's import, its first frame).
The ratio app / baseline is the figure to compare between machines and loads; the load
average is printed beside it.

Two bytecode conditions, both reported: "installed" (a bytecode cache, as a pip-installed
wheel has: pip compiles it at install; here a private PYTHONPYCACHEPREFIX filled by a
warm-up run) and "no bytecode" (PYTHONDONTWRITEBYTECODE=1 on an editable checkout: all of
Headroom's ~130 modules are compiled from source at every start). The goal is judged on
"installed", what a user runs.

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
import tempfile
import termios
import time

from overhead import APP, ROOT, replay_server

# The baseline: a bare Textual app that draws the two words the app run waits for.
BASELINE = r"""
from textual.app import App
from textual.widgets import Static


class Bare(App):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self):
        yield Static("1 Dashboard  capacity")


Bare().run()
"""

ANSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]")


def one_run(
    url: str,
    timeout: float = 20.0,
    size=(100, 30),
    *,
    code: str = APP,
    env: dict[str, str] | None = None,
) -> tuple[float | None, float | None]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    env = dict(os.environ if env is None else env, TERM="xterm-256color")
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, url, "1.0"],
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


def bytecode_env(cache_dir: str | None) -> dict[str, str]:
    """The environment of one condition: a bytecode cache in cache_dir, or none at all."""
    env = dict(os.environ)
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if cache_dir is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env["PYTHONPYCACHEPREFIX"] = cache_dir
    return env


def median_or_none(values: list[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return statistics.median(found) if found else None


def measure(url: str, runs: int, env: dict[str, str]) -> dict[str, list[float | None]]:
    """App and baseline runs, alternating (which goes first alternates too); one warm-up
    pair first, not counted (it fills a bytecode cache when there is one)."""
    out: dict[str, list[float | None]] = {"painted": [], "data": [], "base": []}
    for number in range(runs + 1):
        pair = [("app", APP), ("base", BASELINE)]
        for name, code in pair if number % 2 else pair[::-1]:
            painted, filled = one_run(url, code=code, env=env)
            if number == 0:
                continue
            if name == "app":
                out["painted"].append(painted)
                out["data"].append(filled)
            else:
                out["base"].append(painted)
    return out


def report(label: str, found: dict[str, list[float | None]]) -> float | None:
    painted, data, base = (median_or_none(found[k]) for k in ("painted", "data", "base"))
    if painted is None:
        print(f"startup [{label}]: the dashboard never appeared")
        return None
    best = min(v for v in found["painted"] if v is not None)
    line = f"startup [{label}]: first painted dashboard median {painted:.3f} s (best {best:.3f})"
    if data is not None:
        line += f", with live data {data:.3f} s"
    if base is not None:
        line += f"; baseline (bare Textual app) {base:.3f} s, ratio {painted / base:.2f}x"
    print(line)
    return painted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="headroom-startup-pyc-") as cache_dir:
        with replay_server() as (url, _, _):
            installed = measure(url, args.runs, bytecode_env(cache_dir))
            loads.append(os.getloadavg()[0])
            source = measure(url, args.runs, bytecode_env(None))
            loads.append(os.getloadavg()[0])
    print(
        f"startup: load average (1 min) {min(loads):.2f}-{max(loads):.2f} on "
        f"{os.cpu_count()} CPUs; {args.runs} runs per figure"
    )
    median = report("installed: bytecode cached", installed)
    report("no bytecode: PYTHONDONTWRITEBYTECODE=1", source)
    if median is None:
        return 1
    print(f"startup: goal <1 s (installed): {'within' if median < 1.0 else 'OVER'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
