"""Headroom as an exporter: the real Prometheus scrapes `headroom fleet --export N`, loads
examples/prometheus/headroom-alerts.yml as its rule file, and HeadroomFindingError fires for
the XID finding the test provokes (a simulated GPU reporting XID 79). Also: `headroom serve
--headless --metrics-port N` exports the supervisor's state, and the Grafana example only
queries series Headroom exports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from support.fleet_lab import Lab, free_port, stop, wait_http

from headroom.fleet.export import ExportedFinding, ExportState, ServerGauge, render

EXAMPLES = Path(__file__).parents[2] / "examples"
ALERTS = EXAMPLES / "prometheus" / "headroom-alerts.yml"
DASHBOARD = EXAMPLES / "grafana" / "headroom-dashboard.json"


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))


@pytest.fixture
def lab(tmp_path):
    lab = Lab(tmp_path)
    try:
        yield lab
    finally:
        lab.close()


def test_alert_from_the_example_file_fires_for_a_provoked_finding(lab) -> None:
    sim = lab.start_sim("gpu-x", faults="3:xid=79")
    lab.wait_sims()
    export_port = free_port()
    job = (
        "  - job_name: headroom\n"
        f'    static_configs:\n      - targets: ["127.0.0.1:{export_port}"]\n'
    )
    lab.start_prometheus(extra_jobs=job, rule_files=[str(ALERTS)])
    fleet = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headroom",
            "fleet",
            "--prometheus",
            lab.prom_url,
            "--plain",
            "--interval",
            "1",
            "--export",
            str(export_port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
        start_new_session=True,
    )
    lab.procs.append(fleet)
    wait_http(f"http://127.0.0.1:{export_port}/metrics", proc=fleet)

    # Real Prometheus loaded every rule of the example file.
    rules = httpx.get(lab.prom_url + "/api/v1/rules", trust_env=False).json()["data"]["groups"]
    names = {r["name"] for g in rules for r in g["rules"]}
    assert {"HeadroomFindingError", "HeadroomKvHeadroomLow", "HeadroomServerFailed"} <= names

    def firing():
        alerts = httpx.get(lab.prom_url + "/api/v1/alerts", trust_env=False).json()
        return [
            a
            for a in alerts["data"]["alerts"]
            if a["labels"]["alertname"] == "HeadroomFindingError" and a["state"] == "firing"
        ]

    (alert,) = lab.wait_until(firing, timeout_s=30, what="HeadroomFindingError firing")
    assert alert["labels"]["id"] == "fleet-gpu-xid"
    assert alert["labels"]["server"] == sim.instance
    assert alert["labels"]["severity"] == "critical"  # the rule's own label wins
    assert "fleet-gpu-xid" in alert["annotations"]["summary"]
    # The exporter's own series, as Prometheus stored them.
    headroom = lab.query('headroom_gpus{job="headroom"}')
    assert [(r["metric"]["server"], r["value"][1]) for r in headroom] == [(sim.instance, "8")]
    assert lab.query('headroom_server_up{job="headroom"}')[0]["value"][1] == "1"


def test_serve_headless_metrics_port_exports_the_supervisor(tmp_path) -> None:
    metrics_port, vllm_port = free_port(), free_port()
    env = dict(
        _env(),
        HEADROOM_DATA_DIR=str(tmp_path / "data"),
        HEADROOM_CONFIG=str(tmp_path / "none.toml"),
        HEADROOM_NVML_STANDIN="",
        HEADROOM_SIM_TIME_SCALE="200",
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headroom",
            "serve",
            "--headless",
            "--json",
            "--no-preflight",
            "--metrics-port",
            str(metrics_port),
            "--launcher",
            "sim",
            "tiny-llama",
            "--max-model-len",
            "1024",
            "--port",
            str(vllm_port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            event = json.loads(line)
            if event.get("kind") == "state" and event.get("new") == "ready":
                break
        else:
            raise AssertionError("never ready")
        text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", trust_env=False).text
        assert 'headroom_supervisor_state{state="ready"} 1' in text
        assert 'headroom_supervisor_state{state="failed"} 0' in text
        assert "headroom_restarts_total 0" in text and "headroom_rollbacks_total 0" in text
        assert re.search(
            r'headroom_server_up\{server="http://127\.0\.0\.1:\d+",model="tiny-llama"\} 1', text
        )
    finally:
        stop(proc)


def test_promtool_accepts_the_example_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian's prometheus package) is not installed")
    done = subprocess.run(
        [promtool, "check", "rules", str(ALERTS)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 6 rules found" in done.stdout


def test_render_escapes_labels_and_skips_unknown_values() -> None:
    state = ExportState(
        supervisor_state="degraded",
        restarts=2,
        rollbacks=1,
        findings=(
            ExportedFinding('odd"id', 4, "warning", "s\\1"),
            ExportedFinding("x", None, "error", "s2"),
        ),
        servers=(ServerGauge("s1", "m", True, None, 0.5, 8),),
    )
    text = render(state)
    assert r'headroom_finding{id="odd\"id",step="4",severity="warning",server="s\\1"} 1' in text
    assert 'headroom_finding{id="x",step="other",severity="error",server="s2"} 1' in text
    assert 'headroom_findings{severity="error"} 1' in text
    assert 'headroom_supervisor_state{state="degraded"} 1' in text
    assert "headroom_kv_headroom_requests{" not in text  # unknown is absent, not 0
    assert 'headroom_kv_cache_usage_ratio{server="s1"} 0.5' in text
    assert "headroom_rollbacks_total 1" in text


def test_the_grafana_example_queries_only_exported_series() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    used = set(re.findall(r"\bheadroom_[a-z_]+", " ".join(exprs)))
    full = render(
        ExportState(
            "ready",
            0,
            0,
            (ExportedFinding("a", 1, "error", "s"),),
            (ServerGauge("s", "m", True, 3.0, 0.5, 8),),
        )
    )
    exported = set(re.findall(r"^# TYPE (\S+)", full, re.M))
    assert used and used <= exported, used - exported
    rules = ALERTS.read_text()
    assert set(re.findall(r"\bheadroom_[a-z_]+(?=[{ )\[])", rules)) <= exported
