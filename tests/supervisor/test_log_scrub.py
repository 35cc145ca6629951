"""The per-run log scrubbed in place: the secret values become as many "*", at the same
offsets, wherever they fall (across a read step too), and vLLM's appends are untouched."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.supervisor import log_scrub
from headroom.supervisor.log_scrub import LogScrubber

KEY = "sk-scrub-test-0042"


def test_values_become_stars_of_the_same_length(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(f"non-default args: {{'api_key': ['{KEY}']}}\nnothing here\n")
    size = log.stat().st_size
    scrubber = LogScrubber(log, [KEY, "short"])  # "short" is under 8 characters: left alone
    assert scrubber.scrub() == 1
    text = log.read_text()
    assert KEY not in text and "*" * len(KEY) in text and log.stat().st_size == size
    with log.open("a") as more:  # vLLM appends; the next call finds the new occurrence
        more.write(f"again {KEY} and short\n")
    assert scrubber.scrub() == 1
    assert KEY not in log.read_text() and "short" in log.read_text()


@settings(max_examples=60, deadline=None)
@given(
    chunks=st.lists(st.text(alphabet="ab \n", max_size=30), min_size=1, max_size=8),
    step=st.integers(min_value=8, max_value=64),
)
def test_a_value_cut_by_a_read_step_or_a_write_is_still_found(tmp_path_factory, chunks, step):
    log = tmp_path_factory.mktemp("s") / "run.log"
    log.write_bytes(b"")
    original, log_scrub.STEP_BYTES = log_scrub.STEP_BYTES, step
    try:
        scrubber = LogScrubber(log, [KEY])
        written = ""
        for index, chunk in enumerate(chunks):
            piece = chunk + (KEY if index % 2 == 0 else "")
            # Write the value in two halves with a scrub between: a write cut mid-value.
            half = len(piece) // 2
            for part in (piece[:half], piece[half:]):
                with log.open("a") as out:
                    out.write(part)
                scrubber.scrub()
            written += piece
        scrubber.scrub(final=True)
    finally:
        log_scrub.STEP_BYTES = original
    text = log.read_text()
    assert KEY not in text and len(text) == len(written)
