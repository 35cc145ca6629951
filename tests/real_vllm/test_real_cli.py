"""The watching commands against the shared real vLLM, run as a user runs them:
`headroom attach URL --once --json` and `headroom doctor --log ... --metrics URL -- CMD`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from headroom.probes.vllm_log import digest_text

pytestmark = pytest.mark.real_vllm


def _headroom(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headroom", *args], capture_output=True, text=True, timeout=timeout
    )


def test_attach_once_json(real_vllm_server):
    done = _headroom("attach", real_vllm_server.url, "--once", "--json", "--interval", "0.5")
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(done.stdout)
    assert snapshot["state"] == "up"
    for key in ("kv_cache_usage", "kv_capacity_tokens", "kv_free_tokens", "requests_running",
                "requests_waiting", "preemptions_total", "ttft_p50_s", "itl_p50_s",
                "prompt_tokens_per_s", "generation_tokens_per_s", "engines", "models"):  # fmt: skip
        assert key in snapshot, key
    assert 0 <= snapshot["kv_cache_usage"] <= 1
    facts = digest_text(real_vllm_server.log_text()).facts()
    assert snapshot["kv_capacity_tokens"] == facts.kv_cache_tokens
    assert [m["model_name"] for m in snapshot["models"]] == [real_vllm_server.model_name]


def test_doctor_finds_nothing_wrong_with_a_healthy_server(real_vllm_server):
    done = _headroom(
        "doctor", "--log", str(real_vllm_server.log_path), "--metrics", real_vllm_server.url,
        "--interval", "0.5", "--json", "--", *real_vllm_server.argv,
    )  # fmt: skip
    assert done.stdout, done.stderr
    report = json.loads(done.stdout)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert errors == [], errors
    step1 = next(s for s in report["steps"] if s["step"] == 1)
    assert step1["status"] == "ok", step1
