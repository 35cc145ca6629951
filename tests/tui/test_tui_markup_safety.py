"""Untrusted text (vLLM messages, log lines, command lines) inside Textual markup: it shows
as typed and never breaks a draw, even cut short in the middle of a "[...]"."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from recorded_sources import RecordedSources
from textual.markup import to_content
from tui_helpers import screen_text, settle

from headroom.tui.format import escape_markup

# vLLM 0.x with TP 8 on a 52-head model: pydantic's message, as the dashboard cut it.
PYDANTIC = (
    "Value error, Total number of attention heads (52) must be divisible by tensor parallel "
    "size (8). [type=value_error, input_value=ArgsKwargs((), {'model_co"
)


@given(
    st.text(
        # Control characters and bidi overrides are shown escaped (headroom.probes.safe_text,
        # tested in tests/hostile/test_terminal_escapes.py), so they do not read back as typed.
        alphabet=st.characters(
            blacklist_categories=("Cc", "Cs"),
            blacklist_characters="\\\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
        ),
        max_size=80,
    )
)
def test_escaped_text_reads_back_unchanged(text):
    assert to_content(f"[$error][b]{escape_markup(text)}[/b][/]").plain == text


async def test_a_cut_pydantic_error_in_the_notice_does_not_crash():
    from headroom.tui.app import HeadroomApp

    app = HeadroomApp(RecordedSources(story="failed"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.store.server.detail = PYDANTIC
        app._redraw("server")
        await pilot.pause()
        assert app.is_running
        assert "[type=value_error" in screen_text(app)
