"""Digest a saved vLLM log without holding it in memory.

`headroom doctor --log big.log` feeds the file line by line into a LogDigest, which keeps only
its last few thousand lines and a bounded list of events; a line longer than
MAX_LINE_BYTES (a dumped tensor, a base64 blob) is cut there, and the rest of it skipped, so
one pathological line cannot make the reader hold megabytes either. Memory stays flat
whatever the file size (benchmarks/doctor_log_memory.py measures it).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from headroom.probes.vllm_log import LogDigest

MAX_LINE_BYTES = 16 * 1024  # vLLM's longest real lines (non-default args, configs) are a few KiB


class LogFileError(OSError):
    """The log file could not be opened or read; the message says which and why."""


def iter_lines(stream: BinaryIO, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[str]:
    """Decoded lines of a binary stream, each at most `max_line_bytes` (the rest of a longer
    line is read and dropped, never kept)."""
    while True:
        raw = stream.readline(max_line_bytes)
        if not raw:
            return
        if not raw.endswith(b"\n") and len(raw) >= max_line_bytes:
            while True:  # skip the remainder of an over-long line in bounded pieces
                rest = stream.readline(max_line_bytes)
                if not rest or rest.endswith(b"\n"):
                    break
        yield raw.decode("utf-8", errors="replace")


def digest_file(path: str, *, max_line_bytes: int = MAX_LINE_BYTES) -> LogDigest:
    """The LogDigest of a log file ('-' = standard input), read as a stream."""
    digest = LogDigest()
    if path == "-":
        digest.feed_many(iter_lines(sys.stdin.buffer, max_line_bytes))
        return digest
    try:
        with Path(path).open("rb") as fh:
            digest.feed_many(iter_lines(fh, max_line_bytes))
    except OSError as exc:
        raise LogFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return digest
