"""`headroom bench`'s client against a hostile server (issue 14, item 8).

Old: a /v1/models answer or a stream chunk nested 5000 levels raised RecursionError out of
the client (a crash of `headroom bench` instead of a BenchError or a skipped chunk), and a
huge or endless /v1/models was read whole, each read under its own timeout.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from support.hostile_json import deep_nesting
from support.hostile_server import HostileServer, fixed, huge, trickle

from headroom.bench.client import BenchError, OpenAIClient
from headroom.bench.stats import RequestResult


async def _models(behaviour):
    with HostileServer().route("/v1/models", behaviour) as server:
        async with httpx.AsyncClient() as http:
            client = OpenAIClient(server.url, http, endpoint="completions")
            started = time.monotonic()
            try:
                return await asyncio.wait_for(client.list_models(), 30), time.monotonic() - started
            except BenchError as error:
                return error, time.monotonic() - started


@pytest.mark.parametrize(
    "behaviour, expect",
    [
        (fixed(deep_nesting(5000), content_type="application/json"), "OpenAI model list"),
        (fixed('{"data": 5}', content_type="application/json"), "OpenAI model list"),
        (huge(64 << 20, line=b"[" * 100), "more than"),
        (trickle(b" ", every_s=0.05), "did not finish"),
    ],
    ids=["deep", "wrong-type", "huge", "endless"],
)
async def test_a_hostile_model_list_is_a_bench_error(behaviour, expect) -> None:
    outcome, took = await _models(behaviour)
    assert isinstance(outcome, BenchError) and expect in str(outcome)
    assert took < 15


def test_a_deep_stream_chunk_is_skipped() -> None:
    client = OpenAIClient("http://127.0.0.1:1", httpx.AsyncClient(), endpoint="completions")
    result = RequestResult(started_at=0.0)
    assert client._take_line("data: " + deep_nesting(5000), result)
    assert client._take_line('data: {"error": ' + deep_nesting(3000, "{") + "}", result)
    assert result.error is None or "stream error" in result.error
