"""The KV-cache panel: the gauge, capacity and free tokens, headroom in requests, history."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from headroom.probes.metrics_types import EngineMetrics, ServerMetrics
from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.widgets.cheap_update import set_markup

WARN_AT = 0.80  # vLLM starts preempting near full; amber well before that
FULL_AT = 0.95


def gauge_variable(usage: float | None) -> str:
    if usage is None:
        return "$text-muted"
    if usage >= FULL_AT:
        return "$gauge-full"
    if usage >= WARN_AT:
        return "$gauge-warn"
    return "$gauge-ok"


class KvPanel(Vertical):
    """KV cache usage as a gauge with capacity in tokens, free tokens, how many more
    requests of the recent average size fit, and a usage sparkline."""

    DEFAULT_CSS = """
    KvPanel { height: auto; }
    KvPanel > #kv-gauge { height: auto; }
    KvPanel > #kv-detail { height: 1; }
    KvPanel > #kv-history { height: 1; }
    KvPanel > #kv-engines { height: auto; display: none; }
    KvPanel > #kv-engines.-shown { display: block; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="kv-gauge")
        yield Static(id="kv-detail")
        # A text sparkline, one cell per scrape: cheaper to draw than Textual's Sparkline
        # (which blends a colour per cell) and it never averages a spike away.
        yield Static(id="kv-history")
        yield Static(id="kv-engines")

    def on_mount(self) -> None:
        self.border_title = "KV cache"

    def show_engines(self, metrics: ServerMetrics | None) -> None:
        """One line per data-parallel engine (or served model) when there is more than one:
        an imbalance between engines is invisible in the totals."""
        widget = self.query_one("#kv-engines", Static)
        rows: list[str] = []
        groups = (("engine", metrics.engines), ("model", metrics.models)) if metrics else ()
        for label, items in groups:
            if len(items) > 1:
                rows += [_engine_row(label, item) for item in items]
        widget.set_class(bool(rows), "-shown")
        set_markup(widget, "\n".join(rows))

    def show(
        self, engine: EngineMetrics | None, history: list[float], unavailable: str | None
    ) -> None:
        gauge = self.query_one("#kv-gauge", Static)
        detail = self.query_one("#kv-detail", Static)
        sparkline = self.query_one("#kv-history", Static)
        if engine is None:
            set_markup(gauge, f"[$text-muted]unavailable: {unavailable or 'no scrape yet'}[/]")
            set_markup(detail, "")
            set_markup(sparkline, "")
            return
        usage = engine.kv_cache_usage
        width = max(10, self.size.width - 12) if self.size.width else 40
        colour = gauge_variable(usage)
        set_markup(gauge, f"[{colour}]{fmt.bar(usage, width)}[/] [b]{fmt.percent(usage):>4}[/b]")
        set_markup(detail, _detail_text(engine))
        values = list(history) or [0.0]
        line = fmt.spark(values, width + 5)
        set_markup(
            sparkline,
            f"[{gauge_variable(max(values[-len(line) :]))}]{line}[/] [$text-muted]history[/]",
        )


def _detail_text(engine: EngineMetrics) -> str:
    capacity = engine.kv_capacity_tokens
    free = engine.kv_free_tokens
    headroom = engine.headroom_requests
    avg = engine.avg_request_tokens
    parts = [
        f"capacity [b]{fmt.count(capacity)}[/b] tok"
        if capacity is not None
        else "capacity unknown",
        f"free [b]{fmt.count(free)}[/b] tok" if free is not None else "free N/A",
    ]
    if headroom is not None:
        size = f" of {fmt.compact(avg)} tok" if avg else ""
        count = f"{headroom:,.0f}" if headroom >= 100 else f"{headroom:.1f}"
        parts.append(f"headroom [b]{count}[/b] req{size}")
    elif not avg:
        parts.append("[$text-muted]headroom: sized once requests finish[/]")
    else:
        parts.append("headroom N/A")
    return "  ".join(parts)


def _engine_row(label: str, item: EngineMetrics) -> str:
    name = item.engine if label == "engine" else item.model_name
    usage = item.kv_cache_usage
    return (
        f"[$text-muted]{label}[/] [b]{escape(str(name))}[/] "
        f"[{gauge_variable(usage)}]{fmt.bar(usage, 10)}[/] {fmt.percent(usage):>4}  "
        f"running {fmt.count(item.requests_running)}  waiting {fmt.count(item.requests_waiting)}  "
        f"preempt {fmt.rate(item.preemptions_per_s)}"
    )
