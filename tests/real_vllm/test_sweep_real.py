"""`headroom sweep` end to end against the real vLLM (CPU build, tiny model): two
configurations (--max-num-seqs 2 and 4) are started one after the other under the
supervisor, driven through the same short ramp, stopped, and land in the table and in the
journal under one sweep id. Two real starts (~110 s each on 2 cores)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from headroom.supervisor.journal import Journal

pytestmark = pytest.mark.real_vllm


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_configuration_sweep_with_a_real_vllm(tmp_path, real_vllm_env):
    env = dict(
        os.environ,
        HEADROOM_DATA_DIR=str(tmp_path / "data"),
        HEADROOM_CONFIG=str(tmp_path / "none.toml"),
        VLLM_LOGGING_COLOR="0",
        NO_COLOR="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
    )
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)
    argv = [
        sys.executable, "-m", "headroom", "sweep", real_vllm_env.model,
        "--launcher", "api_server", "--python", real_vllm_env.python,
        "--try", "max_num_seqs=2", "--try", "max_num_seqs=4",
        "--ramp", "1,4", "--step-duration", "4", "--warmup", "0.5", "--max-duration", "60",
        "--sweep-id", "sw-real", "--goal", "throughput", "--json",
        "--", "--port", str(_free_port()), "--host", "127.0.0.1", "--served-model-name", "tiny",
        "--max-model-len", "1024", "--kv-cache-memory-bytes", "16M",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1100)
    assert done.returncode == 0, done.stderr[-4000:]
    doc = json.loads(done.stdout)
    assert doc["sweep_id"] == "sw-real"
    labels = [row["label"] for row in doc["rows"]]
    assert sorted(labels) == ["max_num_seqs=2", "max_num_seqs=4"]
    for row in doc["rows"]:
        assert row["outcome"] == "done", row
        assert row["throughput_tok_s"] > 0 and row["p95_e2e_c1_s"] > 0
        assert row["kv_capacity_tokens"] and row["run_id"]
    assert doc["chosen"] in labels
    records = [
        r for r in Journal(tmp_path / "data" / "runs.jsonl").records() if r.extra.get("sweep")
    ]
    assert {r.extra["sweep"]["label"] for r in records} == set(labels)
    assert all(r.extra["sweep"]["id"] == "sw-real" and r.bench for r in records)
    assert all(r.outcome == "stopped" for r in records)
