"""`headroom sweep --tui`: the Bench screen's sweep view over a fake runner (a coroutine that
emits SweepProgress events like headroom.sweep.runner.run_sweep): progress i/N and phase, the
table as it fills with the chosen configuration marked, q ending with the rows, q during a
configuration stopping it first. Rows: the README's simulator sweep (4 simulated H100)."""

from __future__ import annotations

import asyncio

import pytest
from tui_helpers import screen_text, settle

from headroom.sweep.runner import SweepProgress
from headroom.sweep.table import SweepRow
from headroom.tui.sweep_app import SweepApp

ROWS = [
    SweepRow("TP=1", 1, "done", "r1", 3443.0, 1.21, 1.34, 0.149, 0.0090, None, 458_976, 73.3, 79.6),
    SweepRow("TP=2", 2, "done", "r2", 5183.0, 0.83, 0.92, 0.048, 0.0078, None, 1_012_496, 73.3, 79.6),
    SweepRow("PP=2", 2, "done", "r3", 5553.0, 1.21, 0.86, 0.070, 0.0082, None, 1_015_760, 73.3, 79.6),
    SweepRow(
        "TP=3", 3, "skipped",
        notes=("heads (step 2): 32 heads / 8 KV heads allow TP [1, 2, 4] within 4 GPUs",),
    ),
    SweepRow("TP=4", 4, "done", "r4", 5931.0, 0.76, 0.82, 0.041, 0.0061, None, 2_147_536, 73.3, 79.6),
]  # fmt: skip


def events_for(rows: list[SweepRow]) -> list[SweepProgress]:
    out = []
    for i, row in enumerate(rows):
        n = len(rows)
        if row.outcome == "skipped":
            out.append(SweepProgress(i, n, row.label, "skipped", row, row.notes[0]))
            continue
        out.append(SweepProgress(i, n, row.label, "starting", None, "vllm serve m"))
        out.append(SweepProgress(i, n, row.label, "ready"))
        out.append(SweepProgress(i, n, row.label, "bench"))
        out.append(SweepProgress(i, n, row.label, "stopping"))
        out.append(SweepProgress(i, n, row.label, "done", row))
    return out


class SteppedRunner:
    """Emits the events one `step()` at a time, so a test sees each stage."""

    def __init__(self, rows: list[SweepRow]) -> None:
        self.events = events_for(rows)
        self.rows = rows
        self.gate = asyncio.Event()
        self.cleaned_up = False

    def step(self) -> None:
        self.gate.set()

    async def __call__(self, on_progress) -> list[SweepRow]:
        try:
            for event in self.events:
                await self.gate.wait()
                self.gate.clear()
                on_progress(event)
            return list(self.rows)
        finally:
            self.cleaned_up = True  # where run_sweep stops the running server


async def finished_runner(on_progress) -> list[SweepRow]:
    for event in events_for(ROWS):
        on_progress(event)
    return list(ROWS)


async def advance(app, pilot, runner: SteppedRunner, times: int) -> None:
    for _ in range(times):
        runner.step()
        await pilot.pause()
        await pilot.pause()


async def test_progress_and_table_fill_in_and_q_returns_the_rows():
    runner = SteppedRunner(ROWS)
    app = SweepApp(runner, goal="latency", sweep_id="sw-test")
    async with app.run_test(size=(120, 30)) as pilot:
        await advance(app, pilot, runner, 1)  # TP=1 starting
        text = screen_text(app)
        assert "configuration 1/5 TP=1 · starting" in text
        assert "0/5 finished" in text
        await advance(app, pilot, runner, 4)  # TP=1 done
        text = screen_text(app)
        assert "configuration 1/5 TP=1 · done" in text and "1/5 finished" in text
        assert "*TP=1" in text and "baseline" in text  # the only row is chosen so far
        await advance(app, pilot, runner, 5 + 5 + 1 + 5)  # TP=2, PP=2, TP=3 skipped, TP=4
        await settle(app, pilot)
        text = screen_text(app)
        assert "*TP=4" in text and "*TP=1" not in text
        assert "goal latency: *TP=4 (lowest end-to-end p95 at concurrency 1: 0.76 s)" in text
        assert "runner-up: TP=2: 9% slower at concurrency 1" in text
        assert "sweep done: 5/5 configurations" in text
        assert "1.72x" in text and "skipped" in text
        await pilot.press("q")
    assert app.return_value == ROWS


async def test_quit_while_a_configuration_runs_stops_it_first():
    runner = SteppedRunner(ROWS)
    app = SweepApp(runner, goal="throughput", sweep_id="sw-test")
    async with app.run_test(size=(100, 30)) as pilot:
        await advance(app, pilot, runner, 2)  # TP=1 ready
        assert app.running
        await pilot.press("q")
        await pilot.pause()
    assert runner.cleaned_up
    assert app.return_value is None


async def test_a_runner_error_stays_on_screen():
    async def broken(on_progress):
        on_progress(events_for(ROWS)[0])
        raise RuntimeError("launcher vanished")

    app = SweepApp(broken, goal="throughput", sweep_id="sw-test")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert "sweep stopped: RuntimeError: launcher vanished" in screen_text(app)
        assert app.error == "RuntimeError: launcher vanished"


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_filled_table_snapshot(snap_compare, size):
    async def run_before(pilot):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    app = SweepApp(finished_runner, goal="latency", sweep_id="sw-1a2b3c4d")
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.slow
def test_cli_sweep_tui_runs_the_real_sweep_and_prints_the_table(tmp_path, monkeypatch, capsys):
    """`headroom sweep --tui` on the simulator: the app's worker runs the real sweep (one
    configuration), the view shows it finished, q ends the app and the table is printed."""
    import socket

    from headroom.cli import sweep as sweep_cli

    seen: dict[str, str] = {}

    async def drive(app: SweepApp):
        async with app.run_test(size=(120, 30)) as pilot:
            for _ in range(600):  # the sweep's worker: start, ramp, stop (well under 60 s)
                await pilot.pause(0.1)
                if not app.running:
                    break
            await settle(app, pilot)
            seen["screen"] = screen_text(app)
            await pilot.press("q")
        return app.return_value

    monkeypatch.setattr(SweepApp, "run", lambda self: asyncio.run(drive(self)))
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HEADROOM_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("HEADROOM_SIM_TIME_SCALE", "20")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = sweep_cli.main(
        ["meta-llama/Llama-3.1-8B-Instruct", "--try", "tp=1", "--launcher", "sim"]
        + ["--ramp", "1", "--step-duration", "1", "--warmup", "0.2", "--tui"]
        + ["--", "--port", str(port), "--max-model-len", "4096"]
    )
    out = capsys.readouterr().out
    assert "sweep done: 1/1 configurations" in seen["screen"]
    assert "*TP=1" in seen["screen"]
    assert code == 0
    assert out.splitlines()[1].startswith("*TP=1")
