"""`headroom demo`'s default story, end to end on the simulator: start-up fails with
vLLM's message, the doctor proposes lowering max_model_len, the restart dialog shows the
diff, confirm, the server comes up, the built-in load fills the KV cache, preemptions."""

from __future__ import annotations

import asyncio

import pytest
from tui_helpers import screen_text

from headroom.cli import demo
from headroom.tui.app import HeadroomApp
from headroom.tui.demo_sources import DemoSources
from headroom.tui.screens.restart import RestartDialog

pytestmark = pytest.mark.slow


async def wait_for(predicate, pilot, timeout, what):
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.25)


def test_list_prints_scenarios(capsys):
    assert demo.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("kv-story")


def test_unknown_scenario_is_a_clear_error(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert demo.main(["no-such-scenario"]) == 2
    assert "unknown scenario" in capsys.readouterr().err


def test_bad_theme_is_a_clear_error(capsys):
    assert demo.main(["--theme", "neon"]) == 2
    assert "unknown theme" in capsys.readouterr().err


async def test_default_story(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_NVML_STANDIN", "")  # build_supervisor sets it for this test
    supervisor, scenario = demo.build_supervisor(None, tmp_path, time_scale=20.0)
    app = HeadroomApp(DemoSources(supervisor, scenario), interval=0.5)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(lambda: app.store.server.state == "failed", pilot, 60, "the failed start")
        await wait_for(lambda: "start-up failed" in screen_text(app), pilot, 5, "the notice")
        # The simulated machine's topology shows after a failed start too (not "no driver").
        await wait_for(
            lambda: (
                app.store.topology is not None and app.store.topology.confidence != "unreadable"
            ),
            pilot,
            10,
            "the simulated topology",
        )
        assert "driver not loaded" not in screen_text(app)
        await pilot.press("4")
        await wait_for(
            lambda: app.store.diagnosis is not None and app.store.diagnosis.findings,
            pilot,
            30,
            "a diagnosis",
        )
        await pilot.pause(0.5)
        doctor = app.screen
        targets = doctor._option_targets
        index = next(
            i
            for i, (_, action) in enumerate(targets)
            if action is not None and action.knob == "max_model_len"
        )
        doctor.query_one("#doctor-findings").highlighted = index
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, RestartDialog)
        assert "max_model_len" in screen_text(app) and "(default) →" in screen_text(app)
        await pilot.press("y")
        await wait_for(lambda: app.store.server.state == "ready", pilot, 90, "ready after restart")
        await wait_for(lambda: "restarted" in screen_text(app), pilot, 10, "the dialog's result")
        await pilot.press("enter")  # closes the finished dialog and shows the dashboard
        await wait_for(lambda: app.current_mode == "dashboard", pilot, 5, "the dashboard")

        def kv_full_and_preempting():
            metrics = app.store.metrics
            total = getattr(metrics, "total", None)
            return (
                total is not None
                and (total.kv_cache_usage or 0) > 0.5
                and (total.preemptions_total or 0) > 0
            )

        await wait_for(kv_full_and_preempting, pilot, 90, "KV pressure with preemptions")
        await pilot.press("q")
        await pilot.pause(2)
    assert not supervisor.process.alive()
