"""The Bench view: run a ramp from the keyboard against the scripted fake server, and draw a
recorded result (deterministic)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_fake_server import FakeServer  # noqa: E402

from headroom.bench.knee import find_knee  # noqa: E402
from headroom.bench.ramp import BenchConfig, BenchResult  # noqa: E402
from headroom.bench.stats import StepResult  # noqa: E402
from headroom.bench.workload import Distribution, Mix  # noqa: E402
from headroom.tui.widgets.bench_panel import BenchPanel, plot_markup  # noqa: E402

SMALL = Distribution("small", "t", mix=Mix("small", "t", (8, 16), (10, 20)), fingerprint="s")


class Host(App):
    def __init__(self, panel: BenchPanel) -> None:
        super().__init__()
        self.panel = panel

    def compose(self) -> ComposeResult:
        yield self.panel


def _text(widget: Static) -> str:
    return str(widget.render())


async def test_start_key_runs_the_ramp_and_shows_the_knee() -> None:
    async with FakeServer(slots=2, token_s=0.02) as srv:
        config = BenchConfig(
            srv.url,
            ramp=(1, 2, 4),
            # 2 s steps: with 1 s, a loaded machine's noise in a step with cut requests was
            # enough to read the flat 2 -> 4 step as still growing (seen once in CI)
            step_duration_s=2.0,
            warmup_s=0.1,
            distribution=SMALL,
            read_gpus=False,
            sample_interval_s=0.1,
        )
        panel = BenchPanel(config=config)
        app = Host(panel)
        async with app.run_test(size=(100, 40)) as pilot:
            panel.focus()
            await pilot.press("s")
            for _ in range(200):
                await asyncio.sleep(0.1)
                if panel.result is not None or "failed" in _text(panel.query_one("#bench-status")):
                    break
            await pilot.pause()
            assert panel.result is not None, _text(panel.query_one("#bench-status"))
            table = panel.query_one(DataTable)
            assert table.row_count == 3
            assert panel.result.knee.concurrency == 2
            knee = _text(panel.query_one("#bench-knee"))
            assert "concurrency 2" in knee
            assert "output tok/s" in _text(panel.query_one("#bench-throughput"))
            assert not panel.running


async def test_unreachable_server_says_why() -> None:
    panel = BenchPanel(config=BenchConfig("http://127.0.0.1:9", warmup_s=0, read_gpus=False))
    async with Host(panel).run_test() as pilot:
        panel.focus()
        await pilot.press("s")
        for _ in range(50):
            await asyncio.sleep(0.05)
            if not panel.running:
                break
        await pilot.pause()
        assert "cannot reach" in _text(panel.query_one("#bench-status"))


async def test_without_a_url_it_is_unavailable_and_s_does_nothing() -> None:
    panel = BenchPanel(url=None)
    async with Host(panel).run_test() as pilot:
        panel.focus()
        await pilot.press("s")
        assert not panel.running
        assert "unavailable" in _text(panel.query_one("#bench-status"))


def _step(c: int, tok: float) -> StepResult:
    return StepResult(
        c,
        10,
        10,
        0,
        0,
        1.0,
        tok,
        20,
        30,
        0.1,
        0.2,
        0.01,
        0.02,
        1.0,
        1.5 * c,
        0.5,
        0,
        0,
        None,
        None,
        None,
    )


async def test_recorded_result_draws_table_plot_and_knee() -> None:
    steps = (_step(1, 100), _step(2, 200), _step(4, 390), _step(8, 400))
    result = BenchResult({"model": "m"}, steps, find_knee(steps), 0.0, 1.0)
    panel = BenchPanel(url="http://127.0.0.1:8000")
    async with Host(panel).run_test(size=(80, 24)) as pilot:
        panel.show_result(result)
        await pilot.pause()
        assert panel.query_one(DataTable).row_count == 4
        assert "concurrency 4" in _text(panel.query_one("#bench-knee"))
        assert "e2e p95" in _text(panel.query_one("#bench-latency"))


def test_plot_markup_uses_theme_variables_only() -> None:
    steps = [_step(1, 100), _step(2, 200)]
    markup = plot_markup("t", steps, [100, 200], 1, lambda v: f"{v:.0f}")
    assert "$accent" in markup and "$primary" in markup
    assert "#" not in markup  # no hard-coded colours
    assert markup.count("\n") == 1 + 5 + 1  # title, 5 rows, axis, tick labels


async def test_j_saves_the_result_to_the_journal(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path))
    steps = (_step(1, 100), _step(2, 200))
    workload = {"model": "m", "url": "http://127.0.0.1:8000"}
    result = BenchResult(workload, steps, find_knee(steps), 0.0, 1.0)
    panel = BenchPanel(url="http://127.0.0.1:8000")
    async with Host(panel).run_test() as pilot:
        panel.focus()
        await pilot.press("j")
        assert "nothing to save" in _text(panel.query_one("#bench-status"))
        panel.show_result(result)
        await pilot.press("j")
        for _ in range(50):
            await asyncio.sleep(0.05)
            if "recorded as run" in _text(panel.query_one("#bench-status")):
                break
        assert "recorded as run" in _text(panel.query_one("#bench-status"))
    from headroom.supervisor.journal import Journal

    records = Journal(tmp_path / "runs.jsonl").records()
    assert len(records) == 1 and records[0].bench["workload"]["model"] == "m"


async def test_m_cycles_the_request_mix() -> None:
    panel = BenchPanel(url="http://127.0.0.1:8000")
    async with Host(panel).run_test() as pilot:
        panel.focus()
        assert panel.config.distribution.name == "chat"
        await pilot.press("m")
        assert panel.config.distribution.name == "long-document"
        assert "long-document" in _text(panel.query_one("#bench-head"))
        await pilot.press("m", "m")
        assert panel.config.distribution.name == "chat"


async def test_url_known_only_later_is_picked_up_on_start() -> None:
    known = {"url": None}
    panel = BenchPanel(url=None, late_url=lambda: known["url"])
    app = Host(panel)
    known["url"] = "http://127.0.0.1:9"  # the server's URL became known after mount
    async with app.run_test() as pilot:
        panel.focus()
        await pilot.press("s")
        assert panel.config is not None and panel.config.url == "http://127.0.0.1:9"
        for _ in range(50):
            await asyncio.sleep(0.05)
            if not panel.running:
                break
        await pilot.pause()
        assert "cannot reach" in _text(panel.query_one("#bench-status"))
