"""What a first-time user reads on the dashboard: repeated worker lines merged, panels of a
supervised server that is not serving say why, demo wording for GPUs not yet simulated."""

from __future__ import annotations

import dataclasses

from recorded_sources import RecordedSources
from tui_helpers import screen_text, settle

# A real TP worker line (tests/fixtures/startup-logs, vLLM's gpu_model_runner.py); the
# catalog counts it only from the file that prints it, so the file name is the real one.
LOADED = (
    "(Worker_TP{n} pid=1{n}) INFO 09-03 00:39:33 [gpu_model_runner.py:2007] "
    "Model loading took 7.1217 GiB and 168.264821 seconds"
)


async def test_repeated_worker_lines_are_one_row_with_a_count(recorded_app):
    from headroom.tui.messages import LogLinesPending

    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        app.store.add_log_lines([LOADED.format(n=n) for n in range(8)])
        app.post_message(LogLinesPending())
        await settle(app, pilot)
        text = screen_text(app)
        assert text.count("Model loading took 7.1217 GiB") == 1
        assert "×8" in text


async def test_starting_server_panels_say_starting_not_cannot_reach():
    from headroom.tui.app import HeadroomApp

    app = HeadroomApp(RecordedSources(story="failed"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert "not serving: start-up failed (4 shows the doctor's fix)" in screen_text(app)
        app.store.server.state = "starting"
        app._redraw("server")
        await pilot.pause()
        text = screen_text(app)
        assert "the server is starting; figures appear once it answers /metrics" in text
        assert "cannot reach" not in text


async def test_demo_sources_word_missing_gpus_and_topology(tmp_path, monkeypatch):
    from headroom.probes.nvml import GpuSnapshot
    from headroom.probes.topology import parse_topo_text
    from headroom.tui import demo_sources
    from headroom.tui.live_sources import LiveSources

    async def no_driver(self):
        return GpuSnapshot(0.0, False, "NVIDIA driver not loaded", None, None, (), ())

    async def unreadable(self):
        matrix = dataclasses.replace(
            parse_topo_text(""), confidence="unreadable", problems=("nvidia-smi not found",)
        )
        return matrix, []

    monkeypatch.setattr(LiveSources, "sample_gpus", no_driver)
    monkeypatch.setattr(LiveSources, "read_topology", unreadable)
    sources = demo_sources.DemoSources(supervisor=None, scenario=None)
    snapshot = await sources.sample_gpus()
    assert snapshot.reason == demo_sources.DEMO_GPU_NOTE
    matrix, _ = await sources.read_topology()
    assert matrix.problems == (demo_sources.DEMO_TOPOLOGY_NOTE,)
    assert sources.topology_retry_s < 10


async def test_tp_verdict_without_a_gpu_set_has_no_question_mark(recorded_app):
    from headroom.probes.topology import TpVerdict

    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.store.verdicts = [
            TpVerdict(8, (), None, "impossible", ("only 4 GPU(s) in this matrix; TP=8 needs 8",))
        ]
        await pilot.press("3")
        await settle(app, pilot)
        text = screen_text(app)
        assert "TP=8: impossible" in text and "GPU ?" not in text
