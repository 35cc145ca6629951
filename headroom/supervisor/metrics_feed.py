"""One metrics probe per supervised server, shared by the supervisor and the TUI.

Under `headroom serve` both want the server's /metrics: the supervisor for the run's summary
(every metrics_interval_s), the dashboard for its panels (every second). Each asks for a
snapshot no older than its own interval; a fresh enough one is handed out again instead of
scraping, and a scrape in flight is shared (MetricsProbe.scrape is single-flight), so the
server sees one scrape per interval of the most eager reader, not one per reader.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from headroom.probes.metrics import MetricsProbe, ServerMetrics


class MetricsFeed:
    """The shared /metrics reader of one supervised server (its URL can change on restart)."""

    def __init__(
        self, *, window_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window_s = window_s
        self._clock = clock
        self._probe: MetricsProbe | None = None
        self._url: str | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last: ServerMetrics | None = None
        self._last_at: float | None = None
        self.scrapes = 0  # how many scrapes actually went to the server (for tests/benchmarks)

    async def latest(self, url: str, max_age_s: float) -> ServerMetrics:
        """A snapshot of `url` taken at most max_age_s ago (scraping only when needed)."""
        probe = await self._probe_for(url)
        now = self._clock()
        if (
            self._last is not None
            and self._last_at is not None
            and now - self._last_at < max_age_s
            and self._last.url == probe.url
        ):
            return self._last
        self.scrapes += 1
        snapshot = await probe.scrape()
        self._last, self._last_at = snapshot, self._clock()
        return snapshot

    def reset(self) -> None:
        """Forget the history (a new run: its rates and quantiles start over)."""
        self._url = None
        self._last = self._last_at = None

    async def _probe_for(self, url: str) -> MetricsProbe:
        loop = asyncio.get_running_loop()
        if self._probe is None or self._url != url or self._loop is not loop:
            old, self._probe = self._probe, None
            if old is not None and self._loop is loop:
                await old.aclose()
            self._probe = MetricsProbe(url, window_s=self.window_s)
            self._url, self._loop = url, loop
            self._last = self._last_at = None
        return self._probe

    async def aclose(self) -> None:
        probe, self._probe = self._probe, None
        if probe is not None:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                return
            if self._loop is running:
                await probe.aclose()
