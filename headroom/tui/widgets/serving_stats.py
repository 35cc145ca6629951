"""Serving figures: queue, preemptions, latency percentiles and token throughput."""

from __future__ import annotations

from textual.widgets import Static

from headroom.probes.metrics_types import EngineMetrics
from headroom.tui import format as fmt
from headroom.tui.widgets.cheap_update import set_markup


class ServingStats(Static):
    """Running/waiting requests, preemptions per second, TTFT and ITL p50/p95 (or "< 10 ms"
    and the mean when every token came faster than the first ITL bucket), tokens/s."""

    DEFAULT_CSS = """
    ServingStats { height: auto; }
    """

    def on_mount(self) -> None:
        self.border_title = "Serving"

    def show(self, engine: EngineMetrics | None, unavailable: str | None) -> None:
        if engine is None:
            set_markup(self, f"[$text-muted]unavailable: {unavailable or 'no scrape yet'}[/]")
            return
        preempt = engine.preemptions_per_s
        preempt_style = "$error" if preempt else "$text"
        lines = [
            f"running [b]{fmt.count(engine.requests_running)}[/b]   "
            f"waiting [b]{fmt.count(engine.requests_waiting)}[/b]   "
            f"preemptions [{preempt_style}][b]{fmt.rate(preempt)}[/b][/]",
            f"TTFT p50/p95 [b]{fmt.latency_pair(engine.ttft)}[/b]   "
            f"ITL [b]{fmt.latency_pair(engine.itl)}[/b]",
            f"tokens/s  prompt [b]{fmt.compact(engine.prompt_tokens_per_s)}[/b]   "
            f"generation [b]{fmt.compact(engine.generation_tokens_per_s)}[/b]",
        ]
        set_markup(self, "\n".join(lines))
