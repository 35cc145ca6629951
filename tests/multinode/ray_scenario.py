"""A real two-node Ray cluster on loopback, read through Headroom's probe and doctor.

Run by tests/multinode/test_ray_real.py inside a fresh network namespace
(`unshare -n`), so every packet stays on that namespace's own loopback: Ray otherwise
registers the machine's outward address. Prints one JSON object with what was seen.

    unshare -n PYTHON ray_scenario.py RAY_BIN_DIR

Steps: start a head and a second node (2 GPUs each, declared with --num-gpus); read the
cluster; ask for a STRICT_PACK placement group of 3 GPUs (more than a node has) and
read the cause of the wait (also through `headroom doctor --ray-address --ray-dashboard` and the
supervisor's Ray preflight); kill the second node's raylet and time until the probe
reports it dead; stop everything.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.ray_cluster import RayClusterProbe
from headroom.supervisor import Supervisor, SupervisorSettings
from headroom.vllm_cmd import parse_command

GCS_PORT = 6391
DASHBOARD = "http://127.0.0.1:8299"
PG_DRIVER = """
import sys, time, ray
from ray.util.placement_group import placement_group
ray.init(address=sys.argv[1])
pg = placement_group([{"GPU": 1.0}] * 3, strategy="STRICT_PACK", name="headroom-test-pg")
print("placement group asked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def run(argv: list[str], env: dict[str, str], timeout: float = 90) -> None:
    subprocess.run(argv, env=env, check=True, timeout=timeout, capture_output=True)


def cluster_json(cluster) -> dict:
    return {
        "nodes": [
            {"id": n.node_id, "ip": n.ip, "state": n.state, "head": n.is_head, "gpus": n.gpus_total}
            for n in cluster.nodes or ()
        ],
        "status_gpus_total": cluster.status.gpus_total if cluster.status else None,
        "status_nodes": cluster.status.node_count if cluster.status else None,
        "problems": list(cluster.problems),
    }


async def main(ray_bin: Path) -> dict:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    temp = tempfile.mkdtemp(prefix="hr-ray-", dir="/tmp")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    ray = str(ray_bin / "ray")
    out: dict = {}
    driver = None
    try:
        t0 = time.monotonic()
        run(
            [
                ray,
                "start",
                "--head",
                "--node-ip-address=127.0.0.1",
                f"--port={GCS_PORT}",
                "--num-gpus=2",
                "--num-cpus=1",
                "--dashboard-host=127.0.0.1",
                "--dashboard-port=8299",
                "--disable-usage-stats",
                f"--temp-dir={temp}",
            ],
            env,
        )
        run(
            [
                ray,
                "start",
                f"--address=127.0.0.1:{GCS_PORT}",
                "--node-ip-address=127.0.0.1",
                "--num-gpus=2",
                "--num-cpus=1",
            ],
            env,
        )
        out["start_s"] = round(time.monotonic() - t0, 1)
        probe = RayClusterProbe(
            f"127.0.0.1:{GCS_PORT}", DASHBOARD, ray_executable=ray, env=env, timeout_s=20
        )
        for _ in range(30):  # the second node registers within a few seconds
            cluster = await probe.read()
            if len(cluster.alive_nodes) == 2 and (
                cluster.status and cluster.status.node_count == 2
            ):
                break
            await asyncio.sleep(1)
        out["up"] = cluster_json(cluster)

        driver = subprocess.Popen(
            [str(ray_bin / "python"), "-c", PG_DRIVER, f"127.0.0.1:{GCS_PORT}", "120"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert driver.stdout is not None
        driver.stdout.readline()
        findings = []
        for _ in range(20):
            cluster = await probe.read()
            findings = [f for f in diagnose(DoctorInputs(ray_cluster=cluster)).findings]
            if any(f.id.startswith("ray-") for f in findings):
                break
            await asyncio.sleep(1)
        out["wait"] = [
            {
                "id": f.id,
                "title": f.title,
                "evidence": list(f.evidence),
                "actions": [[a.knob, a.direction, a.value] for a in f.actions],
            }
            for f in findings
        ]
        # The same cluster through the user-facing paths: `headroom doctor --ray-address
        # --ray-dashboard` (a process of its own, as a user runs it) and the supervisor's
        # preflight for a Ray start that asks one node for 4 GPUs.
        doctor = subprocess.run(
            [sys.executable, "-m", "headroom", "doctor", "--ray-address",
             f"127.0.0.1:{GCS_PORT}", "--ray", ray, "--ray-dashboard", DASHBOARD,
             "--gpus", "2x2xGPU:16", "--json", "--", "vllm", "serve", "m", "-tp", "2",
             "--distributed-executor-backend", "ray"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        doc = json.loads(doctor.stdout) if doctor.stdout.strip().startswith("{") else {}
        out["doctor"] = {
            "exit": doctor.returncode,
            "shape": doc.get("shape"),
            "findings": [f["id"] for f in doc.get("findings", [])],
            "lacking": doc.get("lacking", []),
        }
        command = parse_command(
            ["vllm", "serve", "m", "-tp", "4", "--distributed-executor-backend", "ray"]
        )
        sup = Supervisor(
            command,
            SupervisorSettings(launcher="sim", data_dir=Path(temp) / "headroom"),
            nvml_probe=False,
            ray_probe=probe,
        )
        preflight = await sup.ray.preflight()
        await sup.close()
        out["preflight"] = {"failures": list(preflight.failures), "notes": list(preflight.notes)}

        worker = [
            p
            for p in psutil.process_iter(["cmdline"])
            if p.info["cmdline"]
            and p.info["cmdline"][0].endswith("raylet")
            and any(temp in arg for arg in p.info["cmdline"])
            and "--head" not in p.info["cmdline"]
        ]
        out["worker_raylets"] = len(worker)
        killed_at = time.monotonic()
        for p in worker:
            p.send_signal(signal.SIGKILL)
        noticed = None
        while time.monotonic() - killed_at < 60:
            cluster = await probe.read_nodes()
            if cluster.dead_nodes:
                noticed = time.monotonic() - killed_at
                break
            await asyncio.sleep(0.5)
        out["dead_noticed_s"] = round(noticed, 1) if noticed is not None else None
        cluster = await probe.read()
        out["after_kill"] = cluster_json(cluster)
        out["after_kill_findings"] = [
            f.id for f in diagnose(DoctorInputs(ray_cluster=cluster)).findings
        ]
    finally:
        if driver is not None:
            driver.kill()
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=60)
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(Path(sys.argv[1])))))
