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


def top_action(app):
    """The live doctor's first action on the recorded inputs (the recordings hold no verdict
    of their own)."""
    return app.store.diagnosis.findings[0].actions[0]


async def test_doctor_shows_steps_and_evidence(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        text = screen_text(app)
        diagnosis = app.store.diagnosis
        for step in diagnosis.steps:
            assert step.name[:40] in text
        assert "warn" in text
        first = diagnosis.findings[0]
        assert "KV cache is full" in first.title  # the recorded KV pressure, as the doctor sees it
        assert first.evidence[0][:60] in text  # evidence of the highlighted finding
        assert f"cost: {top_action(app).cost[:40]}" in text  # ...and its first action


async def test_status_column_is_visible_at_80_columns(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("4")
        await settle(app, pilot)
        rows = [line for line in screen_text(app).splitlines()[2:7]]
        for step, row in zip(app.store.diagnosis.steps, rows, strict=True):
            word = {"unknown": "?"}.get(step.status, step.status)
            assert row.split()[:2] == [str(step.step), word]


async def test_confirm_restarts_and_shows_progress(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_dialog(app, pilot)
        action = top_action(app)
        text = screen_text(app)
        assert action.knob in text and f"→ {action.value}" in text
        assert f"cost: {action.cost[:30]}" in text
        await pilot.press("y")
        await settle(app, pilot)
        text = screen_text(app)
        assert "restarted: the server is ready with the new flags" in text
        assert app.sources.restarts and app.sources.restarts[0][action.knob] == action.value
        await pilot.press("enter")  # a finished dialog closes with enter, onto the dashboard
        await settle(app, pilot)
        assert not isinstance(app.screen, RestartDialog)
        assert app.current_mode == "dashboard"


async def test_failed_start_doctor_names_the_fix_from_the_real_log():
    from recorded_sources import RecordedSources

    from headroom.tui.app import HeadroomApp

    app = HeadroomApp(RecordedSources(story="failed"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert "start-up failed: ValueError: To serve at least one request" in screen_text(app)
        await pilot.press("4")
        await settle(app, pilot)
        finding = app.store.diagnosis.findings[0]
        assert finding.severity == "error" and "max_model_len 2,048" in finding.title
        knobs = {action.knob: action.value for action in finding.actions}
        assert knobs.get("max_model_len") == 768  # vLLM's own estimate in the captured log
        text = screen_text(app)
        assert "fail" in text and "(EngineCore pid=" not in text  # evidence without the prefix


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
        action = top_action(app)
        flag = "--" + action.knob.replace("_", "-")
        assert flag in text and str(action.value) in text
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
