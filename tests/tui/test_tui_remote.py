"""Attached to a remote URL, GPU panels say the GPUs are not local."""

from __future__ import annotations

import pytest
from tui_helpers import screen_text, settle

from headroom.tui.live_sources import LiveSources
from headroom.tui.sources import url_is_local


@pytest.mark.parametrize(
    "url,local",
    [
        ("http://127.0.0.1:8000", True),
        ("http://localhost:8000/metrics", True),
        ("http://[::1]:8000", True),
        ("127.0.0.1:8000", True),
        ("http://gpu-node-7.example.com:8000", False),
        ("http://10.1.2.3:8000", False),
    ],
)
def test_url_is_local(url, local):
    assert url_is_local(url) is local


def test_live_sources_remote_says_why():
    sources = LiveSources("http://gpu-node-7.example.com:8000")
    assert sources.gpus_local is False
    assert "not local" in sources.gpus_remote_reason
    assert "gpu-node-7.example.com" in sources.gpus_remote_reason


async def test_remote_gpu_panels_say_not_local(recorded_app):
    app = recorded_app(gpus_local=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert "GPUs not local" in screen_text(app)
        assert "H100" not in screen_text(app)
        await pilot.press("2")
        await settle(app, pilot)
        assert "unavailable: GPUs not local" in screen_text(app)
        await pilot.press("3")
        await settle(app, pilot)
        assert "unavailable: GPUs not local" in screen_text(app)


async def test_live_remote_app_never_reads_local_gpus(monkeypatch):
    from headroom.tui.app import HeadroomApp

    sources = LiveSources("http://192.0.2.10:8000")

    async def no_scrape():
        return None

    async def must_not_run():
        raise AssertionError("read this machine's GPUs for a remote server")

    monkeypatch.setattr(sources, "scrape_metrics", no_scrape)
    monkeypatch.setattr(sources, "sample_gpus", must_not_run)
    monkeypatch.setattr(sources, "read_topology", must_not_run)
    app = HeadroomApp(sources, interval=0.2)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        assert "not local" in app.store.unavailable["gpus"]
        assert "GPUs not local" in screen_text(app)
