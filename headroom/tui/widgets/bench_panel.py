"""The Bench view (screen 7): run a concurrency ramp against the watched server and watch
throughput and p95 latency per step, the knee, and the step table fill in.

The ramp runs in an async worker (`headroom.bench.ramp.run_bench`); it reports through
messages, and only the message handlers touch widgets. Colours come from theme variables
only ($primary for bars, $accent for the knee, $text-muted for axes).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import replace

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, ProgressBar, Static

from headroom.bench.journal import record_bench
from headroom.bench.ramp import BenchConfig, BenchError, BenchProgress, BenchResult, run_bench
from headroom.bench.report import NA, column_cells, fmt, latency_series
from headroom.bench.stats import StepResult
from headroom.bench.workload import BUILTIN_MIXES, builtin_distribution
from headroom.tui.format import escape_markup

StepValue = Callable[[StepResult], float | None]

# (header, the step's value, format kind): the columns that fit 80 columns.
TABLE_COLUMNS: tuple[tuple[str, StepValue, str], ...] = (
    ("conc", lambda s: s.concurrency, "int"),
    ("out tok/s", lambda s: s.output_tokens_per_s, "rate0"),
    ("req/s", lambda s: s.requests_per_s, "rate"),
    ("TTFT p95", lambda s: s.ttft_p95, "ms"),
    ("ITL p95", lambda s: s.itl_p95, "ms"),
    ("e2e p95", lambda s: s.e2e_p95, "s"),
    ("err", lambda s: s.errors, "int"),
    ("KV peak", lambda s: s.kv_usage_peak, "pct"),
    ("preempt", lambda s: s.preemptions, "int"),
    ("wait", lambda s: s.waiting_peak, "int"),
    ("GPU mem", lambda s: s.gpu_memory_peak_bytes, "gib"),
)
# latency_series' choice of plotted latency -> the step's value
LATENCY_VALUE: dict[str, StepValue] = {
    "e2e_p95": lambda s: s.e2e_p95,
    "ttft_p95": lambda s: s.ttft_p95,
}
PLOT_HEIGHT = 5


def plot_markup(
    title: str,
    steps: Sequence[StepResult],
    values: Sequence[float | None],
    knee_index: int | None,
    unit_fmt: Callable[[float], str],
    height: int = PLOT_HEIGHT,
) -> str:
    """A column chart as Textual content markup: one column per step, the knee highlighted."""
    labels = [str(s.concurrency) for s in steps]
    top, rows = column_cells(values, height)
    col = max([3, *(len(label) + 1 for label in labels)])
    axis_w = max(len(unit_fmt(top)), len(unit_fmt(0.0)))
    lines = [f"[b]{title}[/b]"]
    for r, cells in enumerate(rows):
        label = unit_fmt(top) if r == 0 and values else ""
        body = "".join(
            f"[{'$accent' if i == knee_index else '$primary'}]{c.rjust(col - 1).ljust(col)}[/]"
            for i, c in enumerate(cells)
        )
        lines.append(f"[$text-muted]{label.rjust(axis_w)} ┤[/]{body}")
    lines.append(f"[$text-muted]{unit_fmt(0.0).rjust(axis_w)} └{'─' * (col * len(labels))}[/]")
    ticks = "".join(
        (
            f"[$accent]{lab.rjust(col - 1).ljust(col)}[/]"
            if i == knee_index
            else lab.rjust(col - 1).ljust(col)
        )
        for i, lab in enumerate(labels)
    )
    lines.append(" " * (axis_w + 2) + ticks)
    return "\n".join(lines)


def default_config(url: str) -> BenchConfig:
    """The quick look: a short doubling ramp (about a minute against the simulator)."""
    return BenchConfig(url=url, api_key=os.environ.get("VLLM_API_KEY") or None)


class BenchPanel(VerticalScroll):
    """Runs `headroom bench` against the watched server and shows it as it goes.

    Keys: s start (or run again), x stop, m next request mix, j save the result to the run journal (on the run
    of the server under test). Without a server URL it says why it cannot run.
    """

    DEFAULT_CSS = """
    BenchPanel { height: 1fr; }
    BenchPanel > #bench-head { height: auto; color: $text-muted; }
    BenchPanel > ProgressBar { height: 1; }
    BenchPanel > #bench-status { height: auto; }
    BenchPanel > #bench-plots { height: auto; }
    BenchPanel #bench-throughput, BenchPanel #bench-latency { width: auto; margin: 0 4 0 0; }
    BenchPanel > DataTable { height: auto; max-height: 12; }
    BenchPanel > #bench-knee { height: auto; margin: 1 0 0 0; }
    BenchPanel > .unavailable { color: $text-muted; }
    """

    BINDINGS = [
        Binding("s", "start", "Start bench"),
        Binding("x", "stop", "Stop bench"),
        Binding("j", "journal", "Save to journal"),
        Binding("m", "next_mix", "Request mix"),
    ]

    class Progressed(Message):
        """A ramp step advanced (posted by the worker)."""

        def __init__(self, progress: BenchProgress) -> None:
            super().__init__()
            self.progress = progress

        def can_replace(self, message: Message) -> bool:
            # Ticks are frequent; only the newest matters unless a step just completed.
            return isinstance(message, BenchPanel.Progressed) and message.progress.last_step is None

    class Journaled(Message):
        """The result was written to the run journal (or why not)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class Finished(Message):
        """The ramp ended: a result, or why there is none."""

        def __init__(self, result: BenchResult | None, error: str | None) -> None:
            super().__init__()
            self.result = result
            self.error = error

    def __init__(
        self,
        url: str | None = None,
        *,
        config: BenchConfig | None = None,
        sampler=None,
        late_url: Callable[[], str | None] | None = None,
        **kwargs,
    ) -> None:
        """`late_url`: asked on `s` when no URL was known at mount (a server starting)."""
        super().__init__(**kwargs)
        self._url_source = late_url
        self.url = url or (config.url if config else None)
        self.config = config if config is not None else (default_config(url) if url else None)
        self._sampler = sampler
        self._stop: asyncio.Event | None = None
        self.running = False
        self.steps: list[StepResult] = []
        self.result: BenchResult | None = None

    def compose(self) -> ComposeResult:
        yield Static(self._head_text(), id="bench-head")
        yield ProgressBar(total=1.0, show_eta=False, id="bench-progress")
        yield Static(self._idle_text(), id="bench-status")
        with Horizontal(id="bench-plots"):
            yield Static(id="bench-throughput")
            yield Static(id="bench-latency")
        yield DataTable(id="bench-steps", cursor_type="row", zebra_stripes=True)
        yield Static(id="bench-knee")

    def on_mount(self) -> None:
        self.border_title = "Bench"
        table = self.query_one(DataTable)
        for header, _, _ in TABLE_COLUMNS:
            table.add_column(header, key=header)
        self._draw()

    def _head_text(self) -> str:
        cfg = self.config
        if cfg is None:
            return "no server URL: start Headroom with `headroom attach URL` or `headroom serve`"
        hold = (
            f"{cfg.step_requests} requests" if cfg.step_requests else f"{cfg.step_duration_s:g} s"
        )
        return (
            f"{cfg.base_url}  ramp {','.join(map(str, cfg.ramp))}  {hold} per step  "
            f"mix {cfg.distribution.name}  (s start, x stop, m mix, j save)"
        )

    def _idle_text(self) -> str:
        if self.config is None:
            return "[$text-muted]unavailable: no server to bench[/]"
        return "[$text-muted]idle: press s to run the ramp[/]"

    # -- actions --------------------------------------------------------------------------
    def _late_url(self) -> str | None:
        """The watched server's URL when it was not known at mount (a server starting)."""
        url = self._url_source() if self._url_source is not None else None
        return url or None

    def action_next_mix(self) -> None:
        """Cycle the built-in request mixes (chat -> long-document -> code)."""
        if self.config is None or self.running:
            return
        names = list(BUILTIN_MIXES)
        current = self.config.distribution.name
        nxt = names[(names.index(current) + 1) % len(names)] if current in names else names[0]
        self.config = replace(self.config, distribution=builtin_distribution(nxt))
        self.query_one("#bench-head", Static).update(self._head_text())

    def action_start(self) -> None:
        if self.config is None and (url := self._late_url()):
            self.url, self.config = url, default_config(url)
            self.query_one("#bench-head", Static).update(self._head_text())
        if self.config is None or self.running:
            return
        self.running = True
        self.steps = []
        self.result = None
        self._stop = asyncio.Event()
        self.query_one(ProgressBar).update(progress=0.0)
        self.query_one("#bench-status", Static).update("starting…")
        self._draw()
        self._run(self.config, self._stop)

    def action_stop(self) -> None:
        if self._stop is not None and self.running:
            self._stop.set()
            self.query_one("#bench-status", Static).update("stopping after the current step…")

    @work(exclusive=True, group="bench", exit_on_error=False)
    async def _run(self, config: BenchConfig, stop: asyncio.Event) -> None:
        try:
            result = await run_bench(
                config, on_progress=self._relay, sampler=self._sampler, stop=stop
            )
        except BenchError as exc:
            self.post_message(self.Finished(None, str(exc)))
        except Exception as exc:  # the view must survive a bench bug
            self.post_message(self.Finished(None, f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(self.Finished(result, None))

    def action_journal(self) -> None:
        if self.result is None or self.running:
            self.query_one("#bench-status", Static).update("nothing to save yet: run the ramp")
            return
        self._save(self.result)

    @work(thread=True, exclusive=True, group="bench-journal", exit_on_error=False)
    def _save(self, result: BenchResult) -> None:
        # File locking and fsync: off the event loop.
        try:
            text = record_bench(result)
        except Exception as exc:
            text = f"[$error]could not save: {_escape(str(exc))}[/]"
        self.post_message(self.Journaled(text))

    def on_bench_panel_journaled(self, message: Journaled) -> None:
        self.query_one("#bench-status", Static).update(message.text)

    def _relay(self, progress: BenchProgress) -> None:
        self.post_message(self.Progressed(progress))

    # -- messages -------------------------------------------------------------------------
    def on_bench_panel_progressed(self, message: Progressed) -> None:
        p = message.progress
        self.query_one(ProgressBar).update(progress=p.fraction)
        if p.phase == "warmup":
            text = f"warm-up at concurrency {p.concurrency}"
        elif p.phase == "step":
            text = (
                f"step {(p.step_index or 0) + 1}/{p.steps_total}: concurrency "
                f"{p.concurrency}, {p.requests_done} done, {p.errors} errors"
            )
        else:
            text = "finishing…"
        self.query_one("#bench-status", Static).update(text)
        if len(p.steps) != len(self.steps):
            self.steps = list(p.steps)
            self._draw()

    def on_bench_panel_finished(self, message: Finished) -> None:
        self.running = False
        status = self.query_one("#bench-status", Static)
        if message.result is None:
            status.update(f"[$error]bench failed: {message.error}[/]")
            return
        self.show_result(message.result)

    def show_result(self, result: BenchResult) -> None:
        """Draw a finished result (also used to show a recorded one)."""
        self.result = result
        self.steps = list(result.steps)
        self.query_one(ProgressBar).update(progress=1.0)
        done = "stopped early: " + result.stopped_reason if result.stopped_reason else "done"
        model = result.workload.get("model")
        self.query_one("#bench-status", Static).update(f"{done}  (model {model})")
        self._draw()

    # -- drawing --------------------------------------------------------------------------
    def _draw(self) -> None:
        knee = self.result.knee if self.result is not None else None
        knee_index = knee.step_index if knee is not None else None
        steps = self.steps
        thr = self.query_one("#bench-throughput", Static)
        lat = self.query_one("#bench-latency", Static)
        if steps:
            thr.update(
                plot_markup(
                    "output tok/s",
                    steps,
                    [s.output_tokens_per_s for s in steps],
                    knee_index,
                    lambda v: f"{v:.0f}",
                )
            )
            name, attr = latency_series(steps)
            lat.update(
                plot_markup(
                    f"{name} p95 (s)",
                    steps,
                    [LATENCY_VALUE[attr](s) for s in steps],
                    knee_index,
                    lambda v: f"{v:.2f}",
                )
            )
        else:
            thr.update("")
            lat.update("")
        self._fill_table(steps, knee.concurrency if knee else None)
        knee_text = self.query_one("#bench-knee", Static)
        if knee is None:
            knee_text.update("")
        elif knee.concurrency is None:
            knee_text.update(f"[b]knee:[/b] {_escape(knee.reason)}")
        else:
            knee_text.update(
                f"[b]knee:[/b] [$accent]concurrency {knee.concurrency}[/] {_escape(knee.reason)}"
            )

    def _fill_table(self, steps: Sequence[StepResult], knee_concurrency: int | None) -> None:
        table = self.query_one(DataTable)
        keep = {str(s.concurrency) for s in steps}
        for stale in [k for k in table.rows if k.value not in keep]:
            table.remove_row(stale)
        for step in steps:
            key = str(step.concurrency)
            cells = [fmt(value(step), kind) for _, value, kind in TABLE_COLUMNS]
            if step.concurrency == knee_concurrency:
                cells[0] += "*"
            if key in {k.value for k in table.rows}:
                for (header, _, _), cell in zip(TABLE_COLUMNS, cells, strict=True):
                    table.update_cell(key, header, cell)
            else:
                table.add_row(*cells, key=key)


def _escape(text: str) -> str:
    return escape_markup(text)


__all__ = ["BenchPanel", "NA", "default_config", "plot_markup"]
