"""Done-when: `headroom fleet --prometheus URL --once --json` against a real Prometheus
scraping four simulated servers (8 GPUs each, served in dcgm-exporter's format) reports
every server and GPU with the simulators' values, and finds an uneven load the test makes.

One Prometheus and four simulators for the whole module (about 10 s of set-up).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import httpx
import pytest
from support.fleet_lab import Lab, free_port

from headroom.probes.dcgm import parse_dcgm_text
from headroom.probes.metrics_parse import parse_exposition


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab(tmp_path_factory.mktemp("fleet"))
    try:
        for host, faults in (
            ("gpu-a", ""),
            ("gpu-b", ""),
            ("gpu-c", "2:xid=79,5:thermal"),
            ("gpu-d", ""),
        ):
            lab.start_sim(host, faults)
        lab.wait_sims()
        lab.down_port = free_port()
        lab.start_prometheus(down_ports=[lab.down_port])
        lab.wait_until(
            lambda: (
                len(lab.query("DCGM_FI_DEV_GPU_UTIL")) == 32
                and len(lab.query("vllm:num_requests_running")) == 4
            ),
            what="Prometheus to scrape 4 servers and 32 GPUs",
        )
        yield lab
    finally:
        lab.close()


def run_fleet(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run(
        [sys.executable, "-m", "headroom", "fleet", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def _metric(url: str, name: str) -> float:
    text = httpx.get(url + "/metrics", trust_env=False, timeout=5).text
    return sum(s.value for s in parse_exposition(text, [name]).samples)


class CounterWatch:
    """Reads a server's counter every 0.1 s in the background: the values seen over a span."""

    def __init__(self, url: str, name: str) -> None:
        self.url, self.name = url, name
        self.seen: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CounterWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.seen.append((time.monotonic(), _metric(self.url, self.name)))
            time.sleep(0.1)

    def between(self, start: float, end: float) -> tuple[float, float]:
        values = [v for t, v in self.seen if start <= t <= end]
        return min(values), max(values)


def test_fleet_once_json_reports_every_server_gpu_and_the_uneven_load(lab) -> None:
    loaded = lab.sims[1]
    lab.start_load(loaded)
    lab.wait_until(
        lambda: _metric(loaded.url, "vllm:num_preemptions_total") > 0, what="preemptions"
    )
    time.sleep(4)  # the rate window (4 scrape intervals) fills with preempting samples
    with CounterWatch(loaded.url, "vllm:num_preemptions_total") as watch:
        time.sleep(1.6)
        started = time.monotonic()
        done = run_fleet("--prometheus", lab.prom_url, "--once", "--json")
        ended = time.monotonic()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    servers = {s["instance"]: s for s in report["servers"]}

    # Every simulated server, and the target Prometheus cannot reach.
    assert set(servers) == {s.instance for s in lab.sims} | {f"127.0.0.1:{lab.down_port}"}
    assert servers[f"127.0.0.1:{lab.down_port}"]["state"] == "down"
    for sim in lab.sims:
        row = servers[sim.instance]
        assert row["state"] == "up" and row["model"] == "tiny-llama"
        assert row["host"] == sim.host
        assert row["max_model_len"] == 1024  # from /v1/models
        assert (
            row["vllm_version"]
            == httpx.get(sim.url + "/version", trust_env=False).json()["version"]
        )
        # cache_config_info: num_gpu_blocks x block_size, as the server reports it.
        text = httpx.get(sim.url + "/metrics", trust_env=False).text
        info = parse_exposition(text, ["vllm:cache_config_info"]).samples[0].labels
        assert row["kv_capacity_tokens"] == int(info["num_gpu_blocks"]) * int(info["block_size"])
        # Every GPU, with the values the simulator serves (idle GPUs hold still).
        served = {
            g.uuid: g
            for g in parse_dcgm_text(httpx.get(sim.url + "/dcgm-metrics", trust_env=False).text)
        }
        assert len(row["gpus"]) == 8
        assert {g["uuid"] for g in row["gpus"]} == set(served)
        for gpu in row["gpus"]:
            mine = served[gpu["uuid"]]
            assert gpu["host"] == sim.host
            assert gpu["memory_used_mib"] == mine.fb_used_mib
            assert gpu["memory_free_mib"] == mine.fb_free_mib
            if sim is not loaded:
                assert gpu["power_w"] == pytest.approx(mine.power_w)
                assert gpu["util_pct"] == mine.util_pct

    # The loaded server: Prometheus' value is at most one scrape interval (1 s) old.
    low, high = watch.between(started - 1.5, ended)
    assert low <= servers[loaded.instance]["preemptions_total"] <= high
    assert servers[loaded.instance]["preemptions_per_s"] > 0
    assert servers[loaded.instance]["requests_running"] > 0

    # The fleet findings: the uneven load names the preempting replica and an idle peer.
    by_id = {f["id"]: f for f in report["findings"]}
    uneven = by_id["fleet-uneven-load"]
    assert loaded.instance in uneven["servers"]
    assert lab.sims[0].instance in uneven["servers"]
    assert any(loaded.instance in line and "preemptions/s" in line for line in uneven["evidence"])
    assert "fleet-gpu-xid" in by_id and lab.sims[2].instance in by_id["fleet-gpu-xid"]["servers"]
    assert "fleet-gpu-throttled" in by_id
    assert "fleet-target-down" in by_id
    # Sorted by trouble: the down target first, a healthy idle replica last.
    assert report["servers"][0]["state"] == "down"
    assert report["servers"][-1]["instance"] in {lab.sims[0].instance, lab.sims[3].instance}


def test_fleet_text_and_csv_from_the_same_prometheus(lab) -> None:
    text = run_fleet("--prometheus", lab.prom_url, "--once", "--no-server-info")
    assert text.returncode == 0, text.stderr
    assert "XID79@2" in text.stdout and "thermal@5" in text.stdout
    assert all(sim.instance in text.stdout for sim in lab.sims)
    csv_out = run_fleet("--prometheus", lab.prom_url, "--once", "--csv")
    lines = csv_out.stdout.strip().splitlines()
    assert lines[0].startswith("instance,url,job,host,state")
    assert len(lines) == 1 + 5


def test_unreachable_prometheus_is_a_clear_error() -> None:
    done = run_fleet("--prometheus", f"http://127.0.0.1:{free_port()}", "--once")
    assert done.returncode == 1
    assert "cannot reach Prometheus" in done.stderr
