"""The app keeps running when any one probe fails; that panel says why, the rest update."""

from __future__ import annotations

import pytest
from recorded_sources import RecordedSources
from tui_helpers import screen_text, settle

PROBES = {
    "metrics": "scrape_metrics",
    "gpus": "sample_gpus",
    "topology": "read_topology",
    "logs": "read_log_lines",
    "runs": "read_runs",
}


class FailingSources(RecordedSources):
    def __init__(self, failing: str) -> None:
        self.failing = failing  # first: __getattribute__ below reads it
        super().__init__()

    def __getattribute__(self, name):
        if name == PROBES.get(object.__getattribute__(self, "failing")):

            async def boom(*args, **kwargs):
                raise RuntimeError(f"{name} exploded")

            return boom
        if name == "diagnose" and object.__getattribute__(self, "failing") == "doctor":

            def broken(store):
                raise ValueError("doctor exploded")

            return broken
        return super().__getattribute__(name)


@pytest.mark.parametrize("failing", [*PROBES, "doctor"])
async def test_one_failing_probe_leaves_the_rest(failing):
    from headroom.tui.app import HeadroomApp

    app = HeadroomApp(FailingSources(failing))
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        assert app.is_running
        assert failing in app.store.unavailable
        assert "exploded" in app.store.unavailable[failing]
        text = screen_text(app)
        if failing != "metrics":
            assert "capacity 412,160 tok" in text or app.store.metrics is None
        if failing == "gpus":
            assert "unavailable: RuntimeError: sample_gpus exploded" in text
        else:
            assert "H100" in text or "GPU" in text
        if failing == "doctor":
            assert "unavailable: ValueError: doctor exploded" in text
        for key in "234561":  # every screen still draws
            await pilot.press(key)
            await pilot.pause()
        assert app.is_running
