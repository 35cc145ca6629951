"""Every global key binding, driven with Pilot over recorded data."""

from __future__ import annotations

from tui_helpers import screen_text, settle

from headroom.themes import THEMES
from headroom.tui.screens import SCREEN_TITLES
from headroom.tui.screens.help import HelpScreen


async def test_number_keys_switch_screens(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for number, mode in reversed(list(enumerate(SCREEN_TITLES, start=1))):
            await pilot.press(str(number))
            await settle(app, pilot)
            assert app.current_mode == mode
            assert f"{number} {SCREEN_TITLES[mode]}" in screen_text(app).splitlines()[0]


async def test_switching_back_keeps_dashboard(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for key in "234561":
            await pilot.press(key)
        await settle(app, pilot)
        assert app.current_mode == "dashboard"
        assert "KV cache" in screen_text(app)


async def test_question_mark_opens_and_closes_help(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "command palette" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_t_cycles_through_headroom_themes(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        seen = [app.theme]
        for _ in THEMES:
            await pilot.press("t")
            seen.append(app.theme)
        assert set(seen) == set(THEMES)
        assert seen[-1] == seen[0]


async def test_theme_argument_selects_theme(recorded_app):
    app = recorded_app(theme="light")
    async with app.run_test(size=(80, 24)):
        assert app.theme == "headroom-light"


async def test_palette_offers_theme_and_screen_commands(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Theme: headroom-high-contrast" in titles
        assert "Screen: Doctor" in titles
        command = next(
            c for c in app.get_system_commands(app.screen) if c.title == "Theme: headroom-light"
        )
        command.callback()
        await pilot.pause()
        assert app.theme == "headroom-light"
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert "CommandPalette" in type(app.screen).__name__


async def test_q_quits(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code in (0, None)
    assert not app.is_running


class FakeProcess:
    def __init__(self):
        self.alive_flag = True

    def alive(self):
        return self.alive_flag


class FakeSupervisor:
    """The members of headroom.tui.supervised.SupervisedServer these tests reach."""

    def __init__(self):
        from headroom.probes.vllm_log import LogDigest

        self.process, self.pid, self.calls = FakeProcess(), 4242, []
        self.command = None
        self.url = "http://127.0.0.1:9"
        self.state = "ready"
        self.adopted = False
        self.failure_reason = None
        self.listeners = []
        self.digest = LogDigest()
        self.log_lines = ()

    def subscribe_log(self, callback):
        pass

    def subscribe(self, listener):
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, event):
        for listener in list(self.listeners):
            listener(event)

    async def stop(self):
        self.calls.append("stop")
        self.process.alive_flag = False

    async def detach(self):
        self.calls.append("detach")


def supervised_app(stop_on_exit=False):
    from headroom.tui.app import HeadroomApp
    from headroom.tui.live_sources import LiveSources

    sources = LiveSources(supervisor=FakeSupervisor(), stop_on_exit=stop_on_exit)

    async def nothing(*args):
        return None

    for name in ("scrape_metrics", "sample_gpus", "read_topology", "read_runs"):
        setattr(sources, name, nothing)
    sources.has_logs = False
    return HeadroomApp(sources, interval=0.2), sources.supervisor


async def test_quit_asks_and_s_stops_the_server():
    from headroom.tui.screens.quit import QuitDialog

    app, sup = supervised_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, QuitDialog)
        assert "pid 4242" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, QuitDialog) and app.is_running
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("s")
        await pilot.pause(0.2)
    assert sup.calls == ["stop"]


async def test_quit_d_detaches_and_leaves_it_running():
    app, sup = supervised_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
        await pilot.press("d")
        await pilot.pause(0.2)
    assert sup.calls == ["detach"]
    assert sup.process.alive()


async def test_demo_quit_stops_without_asking():
    app, sup = supervised_app(stop_on_exit=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause(0.2)
    assert sup.calls == ["stop"]


async def test_supervisor_events_reach_the_dashboard_events_panel():
    from types import SimpleNamespace

    app, sup = supervised_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        sup.emit(SimpleNamespace(kind="restart", message="restart: + max_num_seqs 32"))
        sup.emit(SimpleNamespace(kind="state", message="ready -> stopping"))  # not a notice
        await pilot.pause()
        kinds = [entry.kind for entry in app.store.events]
        assert kinds == ["headroom restart"]
        await pilot.pause()
        assert "restart: + max_num_seqs 32" in screen_text(app)
        await pilot.press("q", "d")
        await pilot.pause(0.2)
