"""Direct-scrape mode without Prometheus: `headroom fleet --targets FILE --once --json`
over two simulators and their /dcgm-metrics pages, concurrently, GPUs joined by the
targets file's host labels."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.fleet_lab import Lab


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab(tmp_path_factory.mktemp("direct"))
    try:
        lab.start_sim("node-1")
        # a newer exporter: lowercase `hostname` (dcgm-exporter d5e5f51)
        lab.start_sim(
            "node-2", faults="4:power", env_extra={"HEADROOM_SIM_DCGM_HOSTNAME_LABEL": "hostname"}
        )
        # the same model with twice the KV budget: a replica unlike its peers
        lab.start_sim("node-3", extra_flags=["--kv-cache-memory-bytes", "8000000"])
        lab.wait_sims()
        yield lab
    finally:
        lab.close()


def test_targets_file_once_json(lab, tmp_path) -> None:
    a, b, c = lab.sims
    targets = tmp_path / "fleet.json"
    groups = [{"targets": [s.instance], "labels": {"hostname": s.host}} for s in lab.sims]
    dcgm = {"job": "dcgm", "__metrics_path__": "/dcgm-metrics"}
    groups.append({"targets": [s.instance for s in lab.sims], "labels": dcgm})
    targets.write_text(json.dumps(groups))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "headroom",
            "fleet",
            "--targets",
            str(targets),
            "--once",
            "--json",
            "--interval",
            "0.5",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    servers = {s["instance"]: s for s in report["servers"]}
    assert set(servers) == {a.instance, b.instance, c.instance}
    for sim in lab.sims:
        row = servers[sim.instance]
        assert row["state"] == "up" and row["max_model_len"] == 1024
        assert [g["host"] for g in row["gpus"]] == [sim.host] * 8
    assert servers[a.instance]["kv_capacity_tokens"] == 3904
    assert servers[c.instance]["kv_capacity_tokens"] > 1.5 * 3904
    throttled = [g for g in servers[b.instance]["gpus"] if g["throttle"]]
    assert [(g["index"], g["throttle"]) for g in throttled] == [("4", ["power"])]
    assert all(g["throttle"] == [] for g in servers[a.instance]["gpus"])  # known: none
    assert report["requests_made"] == 6  # 3 servers + 3 exporters, concurrently
    by_id = {f["id"]: f for f in report["findings"]}
    assert "fleet-gpu-throttled" in by_id
    assert set(by_id["fleet-kv-capacity-differs"]["servers"]) == {
        a.instance,
        b.instance,
        c.instance,
    }


def test_a_server_that_does_not_answer_is_a_row_and_a_warning_free_exit(lab, tmp_path) -> None:
    from support.fleet_lab import free_port

    gone = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "headroom",
            "fleet",
            "--url",
            lab.sims[0].url,
            "--url",
            gone,
            "--once",
            "--interval",
            "0.2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert done.returncode == 0, done.stderr
    assert "1/2 servers up" in done.stdout and " down " in done.stdout
    assert "does not answer" in done.stdout and "Prometheus" not in done.stdout
