"""A real Prometheus (Debian's package, installed by scripts/setup-prometheus.sh) and a few
simulated vLLM servers on 127.0.0.1, for the fleet tests.

Prometheus runs with a generated config, a temp storage directory and a 1 s scrape
interval, so a test waits a few seconds at most. Every process a test starts is killed by
process group at teardown. When no `prometheus` binary is found the tests SKIP, loudly.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

SKIP_BANNER = (
    "!!! Prometheus is not installed: the real-Prometheus fleet tests SKIP. "
    "Run scripts/setup-prometheus.sh (as root: apt-get install prometheus) !!!"
)
SCENARIO = """\
name = "fleet-node"
description = "the tiny model on an 8-GPU node"
[hardware]
gpu = "H100-SXM"
count = 8
interconnect = "nvswitch"
[model]
name = "tiny-llama"
[sim]
time_scale = 1.0
"""
# A small KV cache (3,904 tokens) so a modest load preempts, as in the real CPU capture.
SIM_FLAGS = [
    "--max-model-len",
    "1024",
    "--kv-cache-memory-bytes",
    "4000000",
    "--max-num-seqs",
    "64",
]


def prometheus_binary() -> str:
    path = os.environ.get("HEADROOM_PROMETHEUS") or shutil.which("prometheus")
    if not path:
        sys.stderr.write("\n" + SKIP_BANNER + "\n")
        pytest.skip(SKIP_BANNER)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout_s: float = 20.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process for {url} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=1.0, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} not ready after {timeout_s} s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@dataclass
class Sim:
    host: str  # the simulated host name (dcgm Hostname label, vLLM target label)
    port: int
    proc: subprocess.Popen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def instance(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Lab:
    """Simulators, optional extra scrape jobs and one Prometheus over them."""

    tmp: Path
    sims: list[Sim] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)
    prom_port: int | None = None

    @property
    def prom_url(self) -> str:
        return f"http://127.0.0.1:{self.prom_port}"

    def start_sim(
        self,
        host: str,
        faults: str = "",
        extra_flags: list[str] | None = None,
        env_extra: dict[str, str] | None = None,
    ) -> Sim:
        scenario = self.tmp / "fleet-node.toml"
        scenario.write_text(SCENARIO)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEADROOM_SIM_")}
        env.update(
            HEADROOM_SIM_SCENARIO=str(scenario),
            HEADROOM_SIM_TIME_SCALE="200",
            HEADROOM_SIM_HOSTNAME=host,
            HEADROOM_SIM_GPU_FAULTS=faults,
        )
        env.update(env_extra or {})
        argv = [
            sys.executable,
            "-m",
            "headroom.simulator",
            "serve",
            "tiny-llama",
            *SIM_FLAGS,
            *(extra_flags or []),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--disable-uvicorn-access-log",
        ]
        log = (self.tmp / f"sim-{host}.log").open("wb")
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(proc)
        sim = Sim(host, port, proc)
        self.sims.append(sim)
        return sim

    def wait_sims(self) -> None:
        for sim in self.sims:
            wait_http(sim.url + "/health", proc=sim.proc)

    def start_load(self, sim: Sim, concurrency: int = 32) -> subprocess.Popen:
        argv = [
            sys.executable,
            "-m",
            "headroom.simulator",
            "load",
            sim.url,
            "--model",
            "tiny-llama",
            "--concurrency",
            str(concurrency),
            "--requests",
            "0",
            "--prompt-tokens",
            "200:500",
            "--max-tokens",
            "400:400",
            "--ignore-eos",
        ]
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(proc)
        return proc

    def start_prometheus(
        self, extra_jobs: str = "", rule_files: list[str] | None = None, down_ports=()
    ) -> None:
        binary = prometheus_binary()
        self.prom_port = free_port()
        vllm_targets = "".join(
            f'      - targets: ["{s.instance}"]\n        labels: {{hostname: {s.host}}}\n'
            for s in self.sims
        )
        vllm_targets += "".join(
            f'      - targets: ["127.0.0.1:{p}"]\n        labels: {{hostname: gone-{p}}}\n'
            for p in down_ports
        )
        dcgm_targets = ", ".join(f'"{s.instance}"' for s in self.sims)
        rules = ""
        if rule_files:
            rules = "rule_files:\n" + "".join(f"  - {r}\n" for r in rule_files)
        config = (
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            f"{rules}scrape_configs:\n"
            f"  - job_name: vllm\n    static_configs:\n{vllm_targets}"
            "  - job_name: dcgm\n    metrics_path: /dcgm-metrics\n"
            f"    static_configs:\n      - targets: [{dcgm_targets}]\n{extra_jobs}"
        )
        path = self.tmp / "prometheus.yml"
        path.write_text(config)
        argv = [
            binary,
            f"--config.file={path}",
            f"--storage.tsdb.path={self.tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{self.prom_port}",
        ]
        log = (self.tmp / "prometheus.log").open("wb")
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs.append(proc)
        wait_http(self.prom_url + "/-/ready", proc=proc)

    def query(self, expr: str) -> list:
        answer = httpx.get(
            self.prom_url + "/api/v1/query", params={"query": expr}, trust_env=False, timeout=5
        ).json()
        return answer["data"]["result"]

    def wait_until(self, predicate, timeout_s: float = 20.0, what: str = "condition"):
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}: last={last!r}")

    def close(self) -> None:
        for proc in reversed(self.procs):
            stop(proc)
