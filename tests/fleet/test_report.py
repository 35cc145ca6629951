"""The fleet's text and CSV outputs carry server-provided strings (model names, finding
titles, Prometheus warnings): control characters reach no terminal; JSON keeps them exact."""

from __future__ import annotations

import json
from dataclasses import replace

from headroom.fleet.doctor import diagnose_fleet
from headroom.fleet.model import FleetServer, FleetSnapshot
from headroom.fleet.report import render_text, snapshot_to_csv, snapshot_to_json
from headroom.probes.metrics_types import EngineMetrics, ServerMetrics

EVIL = "m\x1b]0;pwned\x07\x1b[2J"


def snapshot() -> FleetSnapshot:
    total = replace(EngineMetrics.empty(EVIL), kv_cache_usage=0.5, kv_capacity_tokens=1000)
    row = FleetServer(
        "h:1", "http://h:1", "vllm", "h", ServerMetrics(0.0, "u", "up", None, total, (), ())
    )
    servers, findings = diagnose_fleet([row], [])
    return FleetSnapshot(
        0.0,
        "prometheus http://p:9090",
        servers,
        findings=findings,
        warnings=("warning from \x1b[31mPrometheus",),
    )


def test_text_and_csv_show_escapes_instead_of_running_them() -> None:
    snap = snapshot()
    for out in (render_text(snap), snapshot_to_csv(snap)):
        assert "\x1b" not in out and "\x07" not in out
    assert "pwned" in render_text(snap)  # shown, escaped


def test_json_keeps_the_exact_string() -> None:
    data = snapshot_to_json(snapshot())
    assert data["servers"][0]["model"] == EVIL
    assert "\\u001b" in json.dumps(data)
