"""SVG snapshots of every screen at 80×24 and 160×48, from recorded probe data and a fixed
clock (no live simulator), so they only change when the drawing does.

Update after an intended change: .venv/bin/pytest tests/tui/test_tui_snapshots.py --snapshot-update
(The Bench screen hosts the bench owner's widget and is covered by its own tests.)
"""

from __future__ import annotations

import pytest
from recorded_sources import RecordedSources

from headroom.tui.app import HeadroomApp

SIZES = [(80, 24), (160, 48)]
SCREENS = {"dashboard": "1", "gpus": "2", "topology": "3", "doctor": "4", "logs": "5", "runs": "6"}


async def settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def make_app(**kwargs) -> HeadroomApp:
    keys = ("gpus_local", "restart_outcome", "story", "ray")
    sources = RecordedSources(**{k: kwargs.pop(k) for k in keys if k in kwargs})
    return HeadroomApp(sources, **kwargs)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen(snap_compare, screen, size):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press(SCREENS[screen])
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("theme", ["headroom-light", "headroom-high-contrast"])
def test_dashboard_themes(snap_compare, theme):
    assert snap_compare(make_app(theme=theme), terminal_size=(80, 24), run_before=settle)


def test_dashboard_remote_gpus_not_local(snap_compare):
    assert snap_compare(make_app(gpus_local=False), terminal_size=(80, 24), run_before=settle)


@pytest.mark.parametrize("outcome", ["ok", "rollback"])
def test_restart_dialog(snap_compare, outcome):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)

    app = make_app(restart_outcome=outcome)
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_restart_dialog_before_confirm(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_help(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("screen", ["dashboard", "doctor"])
def test_failed_start(snap_compare, screen):
    """The demo's first act on a real capture: vLLM refused max_model_len 2048; the doctor's
    verdict is the live doctor's on that log."""

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press(SCREENS[screen])
        await settle(pilot)

    app = make_app(story="failed")
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_failed_start_restart_dialog(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        await pilot.press("down")  # the second action: lower max_model_len to vLLM's estimate
        await pilot.press("enter")
        await pilot.pause()

    app = make_app(story="failed")
    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_gpus_screen_with_ray_nodes(snap_compare, size):
    """A server on a Ray cluster: the nodes panel above the GPU tables (recorded `ray status
    -v` and state API of a real two-node cluster, a 3-GPU group waiting on nodes of 2)."""

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)

    assert snap_compare(make_app(ray=True), terminal_size=size, run_before=run_before)
