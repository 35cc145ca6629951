"""The supervisor's loop against a real vLLM (CPU build, tiny local model):
start with a max_model_len the KV budget cannot hold -> vLLM refuses ("estimated maximum
model length is 768") -> the doctor names the cause -> `--auto-fix 1` restarts with the
fix (here the KV budget knob, --kv-cache-memory-bytes) -> ready -> SIGTERM stops the whole
group. Two real starts (~110 s each on 2 cores); no process outlives the test.

The environment comes from tests/real_vllm/conftest.py (`real_vllm_env`: built by
scripts/setup-real-vllm.sh; skips loudly when it cannot be built). This test starts its own
servers (it restarts them), never the shared one.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.real_vllm
# The shared start-up budget of tests/real_vllm/conftest.py (the machine is shared).
START_TIMEOUT_S = float(os.environ.get("HEADROOM_REAL_VLLM_START_TIMEOUT", "600"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def test_fail_diagnose_fix_ready_with_a_real_vllm(tmp_path, real_vllm_env):
    python, model = real_vllm_env.python, real_vllm_env.model
    port = _free_port()
    env = dict(
        os.environ,
        HEADROOM_DATA_DIR=str(tmp_path / "data"),
        HEADROOM_CONFIG=str(tmp_path / "none.toml"),
        # as conftest's real_vllm_environ(): no colour codes, nothing fetched
        VLLM_LOGGING_COLOR="0",
        NO_COLOR="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
    )
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)  # the size comes from --kv-cache-memory-bytes
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headroom",
            "serve",
            "--headless",
            "--json",
            "--auto-fix",
            "1",
            "--launcher",
            "api_server",
            "--python",
            python,
            model,
            "--port",
            str(port),
            "--max-model-len",
            "2048",
            "--kv-cache-memory-bytes",
            "1000000",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    events: list[dict] = []
    launched: list[int] = []
    try:
        deadline = time.monotonic() + 2 * START_TIMEOUT_S  # two starts
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            event = json.loads(line)
            events.append(event)
            if event["kind"] == "launch":
                launched.append(event["pid"])
            if event.get("new") == "ready" or (event.get("new") == "failed" and len(launched) > 1):
                break
        kinds = [(e["kind"], e.get("new") or e.get("event") or e.get("id")) for e in events]
        # 1. the first start fails with the classified cause, read from vLLM's own log
        assert ("failure", "max_seq_len_exceeds_kv") in kinds, kinds
        # 2. the doctor names it
        assert ("finding", "max-seq-len-exceeds-kv") in kinds, kinds
        # 3. one knob changes, shown as a diff, and the restart reaches ready
        (restart,) = [e for e in events if e["kind"] == "restart"]
        assert len(restart["diff"]) == 1, restart
        assert events[-1].get("new") == "ready", events[-1]
        assert len(launched) == 2
        assert _gone(launched[0])
        # 4. systemd-style stop: the whole group goes, the exit status is 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0
        assert _gone(launched[1])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in launched:
            if not _gone(pid):
                os.killpg(pid, signal.SIGKILL)
    from headroom.supervisor.journal import Journal

    records = Journal(tmp_path / "data" / "runs.jsonl").records()
    assert [r.outcome for r in records] == ["failed", "stopped"]
    assert records[1].parent_run_id == records[0].run_id
    assert records[1].time_to_ready_s and records[1].time_to_ready_s > 1
    assert records[1].kv_cache_tokens and records[1].kv_cache_tokens >= 2048
    assert records[1].vllm_version == "0.32.0"
    assert records[0].findings and records[0].findings[0]["id"] == "max-seq-len-exceeds-kv"
