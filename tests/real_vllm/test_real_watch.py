"""The read side against the shared real vLLM: the log reader on its live start-up log, the
file follower on that log while requests arrive, and /metrics through the metrics probe."""

from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.request

import pytest

from headroom.probes.log_follow import FileFollower
from headroom.probes.metrics import MetricsProbe
from headroom.probes.vllm_log import LogDigest, digest_text
from headroom.vllm_cmd import parse_command

pytestmark = pytest.mark.real_vllm


def test_log_reader_classifies_the_live_startup(real_vllm_server):
    facts = digest_text(real_vllm_server.log_text()).facts()
    assert facts.failures == (), [e.line for e in facts.failures]
    assert facts.vllm_version == "0.32.0"
    assert facts.ready and not facts.engine_dead
    assert facts.device == "CPU"
    assert facts.kv_cache_tokens and facts.kv_cache_tokens > 1024
    assert facts.max_concurrency_tokens == 1024  # --max-model-len 1024
    # capacity / per-request length, as vLLM prints it with two decimals
    assert facts.max_concurrency == pytest.approx(facts.kv_cache_tokens / 1024, abs=0.01)
    assert facts.server_url and str(real_vllm_server.port) in facts.server_url
    # vLLM's own reading of "--kv-cache-memory-bytes 16M" agrees with headroom.vllm_cmd's
    command = parse_command(real_vllm_server.argv)
    assert facts.non_default_args["kv_cache_memory_bytes"] == command.get("kv_cache_memory_bytes")
    assert facts.non_default_args["max_model_len"] == command.get("max_model_len") == 1024
    assert facts.model == command.model


async def test_metrics_endpoint_is_parseable_and_agrees_with_the_log(real_vllm_server):
    facts = digest_text(real_vllm_server.log_text()).facts()
    async with MetricsProbe(real_vllm_server.url) as probe:
        snapshot = await probe.scrape()
    assert snapshot.state == "up", snapshot.message
    total = snapshot.total
    assert total.kv_cache_usage is not None and 0 <= total.kv_cache_usage <= 1
    assert total.kv_capacity_tokens == facts.kv_cache_tokens
    assert total.requests_running is not None and total.requests_waiting is not None
    assert [m.model_name for m in snapshot.models] == [real_vllm_server.model_name]


async def test_file_follower_sees_the_live_log_grow(real_vllm_server):
    follower = FileFollower(real_vllm_server.log_path, poll_s=0.1)
    digest = LogDigest()
    seen_request = asyncio.Event()

    async def read() -> None:
        async with contextlib.aclosing(follower.lines()) as lines:
            async for line in lines:
                digest.feed(line)
                if digest.facts().ready and "POST /v1/completions" in line:
                    seen_request.set()

    reader = asyncio.create_task(read())
    try:
        body = json.dumps({"model": "tiny", "prompt": "hello", "max_tokens": 4}).encode()
        request = urllib.request.Request(
            f"{real_vllm_server.url}/v1/completions", body, {"Content-Type": "application/json"}
        )
        reply = await asyncio.to_thread(urllib.request.urlopen, request, timeout=120)
        assert reply.status == 200
        await asyncio.wait_for(seen_request.wait(), 30)
        assert (
            digest.facts().kv_cache_tokens
            == digest_text(real_vllm_server.log_text()).facts().kv_cache_tokens
        )
    finally:
        await follower.stop()
        await asyncio.wait_for(reader, 10)
