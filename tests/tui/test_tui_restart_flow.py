"""Doctor → action → restart dialog (flag diff, confirm, progress, rollback)."""

from __future__ import annotations

from tui_helpers import screen_text, settle

from headroom.tui.screens.restart import RestartDialog


async def open_dialog(app, pilot):
    await settle(app, pilot)
    await pilot.press("4")
    await settle(app, pilot)
    await pilot.press("enter")  # the top finding's first action is highlighted on arrival
    await pilot.pause()
    assert isinstance(app.screen, RestartDialog)


async def test_doctor_shows_steps_and_evidence(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        text = screen_text(app)
        assert "Is the KV cache big enough?" in text
        assert "warn" in text
        assert "preemptions 0.4/s over 60 s" in text  # evidence of the highlighted finding
        assert "cost: peak throughput drops" in text  # ...and its first action, highlighted


async def test_confirm_restarts_and_shows_progress(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot)
        text = screen_text(app)
        assert "max_num_seqs" in text and "(default) → 32" in text
        assert "cost: peak throughput drops" in text
        await pilot.press("y")
        await settle(app, pilot)
        text = screen_text(app)
        assert "restarted: the server is ready with the new flags" in text
        assert app.sources.restarts == [{"max_num_seqs": 32}]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RestartDialog)


async def test_failed_restart_shows_rollback(recorded_app):
    app = recorded_app(restart_outcome="rollback")
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot)
        await pilot.press("y")
        await settle(app, pilot)
        text = screen_text(app)
        assert "rolled back" in text
        assert "rollback to the previous flags" in text
        assert "max_num_seqs must be at least 1" in text


async def test_cancel_does_not_restart(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot)
        await pilot.press("n")
        await settle(app, pilot)
        assert not isinstance(app.screen, RestartDialog)
        assert app.sources.restarts == []


async def test_attached_only_cannot_restart_but_shows_command(recorded_app):
    app = recorded_app()
    app.sources.can_restart = False
    async with app.run_test(size=(100, 30)) as pilot:
        await open_dialog(app, pilot)
        text = screen_text(app)
        assert "cannot restart it" in text
        assert "--max-num-seqs 32" in text
        await pilot.press("y")
        await settle(app, pilot)
        assert app.sources.restarts == []


async def test_enter_on_a_finding_with_several_actions_asks_to_pick(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press("up")  # from the first action to its finding (two actions)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, RestartDialog)
